//! A store type defined outside every crate's `src` plugs into the facade and the worker
//! through `Docket::with_backend`, with no engine change.

mod support;

use std::time::Duration;

use docket::core::model::{RunStatus, ValueMap};
use docket::engine::Worker;
use docket::{AwaitOptions, Docket, StartOptions};

use support::graphs::steps;
use support::scripted::Scripted;

#[tokio::test]
async fn a_custom_delegating_store_runs_graphs_through_with_backend() {
    // `Scripted` is this test suite's own `Backend`: a call-counting wrapper.
    let store = Scripted::new();
    let docket = Docket::with_backend(store.clone(), docket::nodes::registry()).expect("facade");
    let graph_ref = docket
        .save_graph_json(&steps(3).to_string())
        .await
        .expect("save");
    let run = docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    let worker = Worker::start(docket.engine());
    let done = docket
        .await_run(
            &run.id,
            AwaitOptions {
                timeout: Duration::from_secs(10),
                poll_interval: Duration::from_millis(10),
            },
        )
        .await
        .expect("the worker finishes the run");
    worker.shutdown().await;
    assert_eq!(done.status, RunStatus::Done);
    assert!(Scripted::count(&store.claims) >= 1);
    assert!(Scripted::count(&store.claimed_commits) >= 4);
}
