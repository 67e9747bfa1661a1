//! A Docket worker embedded in a tokio service, stopped gracefully on Ctrl-C (or SIGTERM).
//!
//! ```text
//! cargo run -p docket --example embedded_worker              # does its work, then stops
//! cargo run -p docket --example embedded_worker -- --serve   # serves until Ctrl-C
//! ```
//!
//! The service owns one [`Docket`] handle and one [`Worker`] for its whole life. Requests
//! (here: a task standing in for a queue consumer) start runs; the worker advances them in
//! the background. On Ctrl-C the service stops taking work, then shuts the worker down
//! gracefully: the moments in flight are committed, and whatever is left is picked up by the
//! next worker to start on the same database — this program again, or another process.
//!
//! Without `--serve` it stops by itself once the runs it started are finished, so it can run
//! unattended (CI runs it this way).

use std::error::Error;
use std::time::Duration;

use docket::core::model::{RunId, RunStatus};
use docket::core::node::{FnNode, NodeOutcome};
use docket::engine::WorkerConfig;
use docket::{AwaitOptions, Docket, DocketError, StartOptions};
use serde_json::json;

/// Runs the stand-in request source starts.
const RUNS: usize = 12;

/// The graph: reserve stock, then (after a short wait for a warehouse) confirm.
const ORDER_GRAPH: &str = r#"{
    "schema_version": 1,
    "id": "order",
    "inputs": {"sku": {"schema": {"type": "string"}, "required": true},
               "quantity": {"schema": {"type": "integer", "min": 1}, "required": true}},
    "fields": {"reserved": {"schema": {"type": "integer"}}, "status": {"schema": {"type": "string"}}},
    "outputs": {"reserved": {}, "status": {}},
    "nodes": {
        "reserve": {"implementation": "app.reserve"},
        "warehouse": {"implementation": "std.sleep_ms", "config": {"ms": 20}},
        "confirm": {"implementation": "std.set", "config": {"values": {"status": "confirmed"}}}
    },
    "edges": {
        "begin": {"from": "$start", "to": "reserve"},
        "ship": {"from": "reserve", "to": "warehouse"},
        "done": {"from": "warehouse", "to": "confirm"},
        "end": {"from": "confirm", "to": "$finish"}
    }
}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let serve = std::env::args().skip(1).any(|arg| arg == "--serve");

    // The application's own node beside the standard library.
    let nodes = docket::nodes::registry().with(
        "app.reserve",
        FnNode::new(|state, _, _| {
            let quantity = state["quantity"].as_i64().unwrap_or(0);
            NodeOutcome::update(json!({"reserved": quantity}))
        }),
    )?;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("service.db").display());
    let docket = Docket::builder(docket::connect_backend(&url).await?, nodes)
        .config(WorkerConfig {
            concurrency: 4,
            // How long a graceful shutdown may wait for the moments in flight.
            drain_timeout_ms: 10_000,
            ..WorkerConfig::default()
        })
        .build()?;
    let graph = docket.publish_graph_json(ORDER_GRAPH).await?.graph_ref;

    let mut worker = docket.start_worker();
    println!("service up on {url}: worker started");

    // Stand-in for the service's request handling: start a run per incoming order.
    let requests = {
        let docket = docket.clone();
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in 0..RUNS {
                let input = docket::parse_input(&format!(
                    r#"{{"sku": "sku-{n}", "quantity": {}}}"#,
                    n + 1
                ))?;
                ids.push(
                    docket
                        .start_run(&graph, input, StartOptions::default())
                        .await?
                        .id,
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok::<_, DocketError>(ids)
        })
    };

    let finished = async {
        let ids = requests.await??;
        Ok::<_, Box<dyn Error>>(all_finished(&docket, &ids).await?)
    };
    let stop_reason = tokio::select! {
        () = shutdown_signal() => "a shutdown signal".to_owned(),
        // A worker whose background task dies must not leave the service idling.
        failure = worker.failure() => return Err(failure.into()),
        done = finished, if !serve => format!("{} runs finished", done?),
    };

    println!("stopping after {stop_reason}: shutting the worker down gracefully");
    let report = worker.shutdown().await;
    println!(
        "worker stopped in {:?} (drained: {}, vehicles aborted: {})",
        report.duration, report.drained, report.vehicles_remaining
    );
    if !report.drained {
        return Err("the worker did not drain before its timeout".into());
    }
    Ok(())
}

/// Awaits every run (each to a terminal status) and checks it confirmed; returns how many.
async fn all_finished(docket: &Docket, ids: &[RunId]) -> Result<usize, DocketError> {
    let wait = AwaitOptions {
        timeout: Duration::from_secs(60),
        poll_interval: Duration::from_millis(20),
    };
    for id in ids {
        let run = docket.await_run(id, wait).await?;
        let status = run.output.as_ref().and_then(|o| o.get("status"));
        if run.status != RunStatus::Done || status != Some(&json!("confirmed")) {
            return Err(DocketError::InvalidOptions(format!(
                "run {id} ended as {:?} with {status:?}",
                run.status
            )));
        }
    }
    Ok(ids.len())
}

/// Ctrl-C anywhere; SIGTERM too on Unix (what a service manager or container runtime sends).
/// A signal that cannot be listened for never fires (the service then runs until killed).
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
