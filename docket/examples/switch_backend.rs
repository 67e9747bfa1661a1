//! The same program on SQLite, PostgreSQL or Redis: only the URL changes.
//!
//! ```text
//! cargo run -p docket --example switch_backend                       # a temporary SQLite file
//! cargo run -p docket --example switch_backend -- --backend memory://
//! cargo run -p docket --features postgres --example switch_backend -- \
//!     --backend 'postgres://postgres@127.0.0.1:5432/test?schema=docket_example'
//! cargo run -p docket --features redis --example switch_backend -- \
//!     --backend 'redis://127.0.0.1:6379?namespace=docket-example'
//! ```
//!
//! Nothing below names a backend: [`Docket::connect`] picks the store from the URL's scheme
//! (each backend is a cargo feature of `docket`; a URL whose feature is off is refused with
//! the feature to enable). The program publishes a fan-out graph, starts a batch of runs,
//! drives them with two workers and checks every history — on whichever store it was given.
//! It only reads back what it wrote itself, so it can run again on the same schema or
//! namespace.

use std::error::Error;
use std::time::{Duration, Instant};

use docket::connect::redact;
use docket::core::model::{EventType, RunStatus};
use docket::{AwaitOptions, BackendUrl, Docket, StartOptions};

/// Runs started per invocation.
const RUNS: usize = 20;

/// `$start → a, b (in parallel) → join (a barrier: waits for both) → $finish`.
const FANOUT_GRAPH: &str = r#"{
    "schema_version": 1,
    "id": "switch-backend-fanout",
    "fields": {"a": {"schema": {"type": "integer"}}, "b": {"schema": {"type": "integer"}},
               "total": {"schema": {"type": "integer"}, "default": 0}},
    "outputs": {"a": {}, "b": {}, "total": {}},
    "nodes": {
        "a": {"implementation": "std.set", "config": {"values": {"a": 1}}},
        "b": {"implementation": "std.set", "config": {"values": {"b": 2}}},
        "join": {"implementation": "std.increment", "config": {"field": "total", "by": 3}}
    },
    "edges": {
        "to_a": {"from": "$start", "to": "a"},
        "to_b": {"from": "$start", "to": "b"},
        "both": {"from": ["a", "b"], "to": "join"},
        "end": {"from": "join", "to": "$finish"}
    }
}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let mut backend = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--backend" => backend = Some(args.next().ok_or("--backend needs a URL")?),
            other => {
                return Err(format!("unknown argument {other:?} (usage: [--backend URL])").into())
            }
        }
    }
    // Default: a fresh SQLite file, removed at exit.
    let dir = tempfile::tempdir()?;
    let url =
        backend.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("switch.db").display()));

    let started = Instant::now();
    // The only line that depends on the store, and it only reads the URL.
    let docket = Docket::connect(&url).await?;
    let scheme = BackendUrl::parse(&url)?.scheme();
    println!("connected to {} ({scheme})", redact(&url));

    let graph = docket.publish_graph_json(FANOUT_GRAPH).await?.graph_ref;
    let mut ids = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        ids.push(
            docket
                .start_run(&graph, Default::default(), StartOptions::default())
                .await?
                .id,
        );
    }
    // Two workers share the runs (claims never hand one run to both at once).
    let workers = [docket.start_worker(), docket.start_worker()];
    let wait = AwaitOptions {
        timeout: Duration::from_secs(60),
        ..AwaitOptions::default()
    };
    for id in &ids {
        let run = docket.await_run(id, wait).await?;
        let total = run.output.as_ref().and_then(|o| o.get("total")).cloned();
        if run.status != RunStatus::Done || total != Some(3.into()) {
            return Err(format!("run {id} ended as {:?} with total {total:?}", run.status).into());
        }
        // One committed completion, and checkpoint seqs 1..n with no gap and no repeat.
        let events = docket.all_events(id).await?;
        let completions = events
            .iter()
            .filter(|e| e.event_type == EventType::RunCompleted)
            .count();
        let seqs: Vec<u64> = events
            .iter()
            .filter(|e| e.event_type == EventType::CheckpointCommitted)
            .filter_map(|e| {
                e.metadata
                    .get("checkpoint_seq")
                    .and_then(serde_json::Value::as_u64)
            })
            .collect();
        if completions != 1 || seqs != (1..=run.checkpoint_seq).collect::<Vec<_>>() {
            return Err(
                format!("run {id}: {completions} completions, checkpoint seqs {seqs:?}").into(),
            );
        }
    }
    for worker in workers {
        worker.shutdown().await;
    }
    println!(
        "{RUNS} fan-out runs done on {scheme} in {:.2?}, every history sound",
        started.elapsed()
    );
    Ok(())
}
