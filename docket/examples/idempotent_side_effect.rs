//! A node with an external side effect (charging a card) that happens once, even when the
//! worker crashes after the effect and before Docket commits the node's result.
//!
//! ```text
//! cargo run -p docket --example idempotent_side_effect
//! ```
//!
//! Docket runs node attempts *at least once* and commits their results *exactly once*: a
//! worker that dies mid-moment commits nothing, and once its claim expires another worker
//! runs the same activation again. A node whose work reaches outside the run — a payment, an
//! e-mail, a call to another service — therefore hands the outside system a key that is the
//! same on the re-run, and the outside system does the work only once per key. That key is
//! [`NodeContext::idempotency_key`] (`"<run>:<step>:<node>:<attempt>"`; the attempt number
//! only grows when an attempt's failure was committed, so a crash re-runs the same key), or
//! [`NodeContext::task_id`] for one effect per activation across retries too.
//!
//! The crash is simulated in-process: the first attempt charges the card, then hangs before
//! returning; the program kills that worker (every task aborted, nothing released, as if the
//! process died), then starts a fresh handle and worker on the same database file, as a
//! restarted process would. The run finishes, and the provider saw two requests but made one
//! charge.

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Notify;

use docket::core::model::{RunStatus, ValueMap};
use docket::core::node::{Node, NodeContext, NodeOutcome, NodeRegistry};
use docket::engine::{DrainBudget, WorkerConfig};
use docket::{AwaitOptions, Docket, StartOptions};

/// The outside world: a payment provider that remembers each idempotency key it was given
/// and answers a repeated request with the original charge (as real payment APIs do).
#[derive(Default)]
struct PaymentProvider {
    /// Idempotency key → (charge id, amount).
    charges: Mutex<BTreeMap<String, (String, i64)>>,
    /// Every request, repeated ones included: the keys, in order.
    requests: Mutex<Vec<String>>,
}

impl PaymentProvider {
    fn charge(&self, key: &str, amount: i64) -> String {
        self.requests.lock().expect("requests").push(key.to_owned());
        let mut charges = self.charges.lock().expect("charges");
        let next = format!("ch_{}", charges.len() + 1);
        charges
            .entry(key.to_owned())
            .or_insert((next, amount))
            .0
            .clone()
    }
}

/// Charges `state.amount`, keyed by the attempt's idempotency key. While `crash` is set, the
/// attempt "dies" right after the charge: it signals `crashed` and never returns.
struct ChargeCard {
    provider: Arc<PaymentProvider>,
    crash: Arc<AtomicBool>,
    crashed: Arc<Notify>,
}

#[async_trait]
impl Node for ChargeCard {
    async fn call(&self, state: &ValueMap, _: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        let Some(amount) = state.get("amount").and_then(|a| a.as_i64()) else {
            return NodeOutcome::Fail("amount is missing".into());
        };
        let charge_id = self.provider.charge(&ctx.idempotency_key, amount);
        if self.crash.swap(false, Ordering::SeqCst) {
            // The effect happened; the result never reaches Docket.
            self.crashed.notify_one();
            std::future::pending::<()>().await;
        }
        NodeOutcome::update(json!({"charge_id": charge_id}))
    }
}

const CHECKOUT_GRAPH: &str = r#"{
    "schema_version": 1,
    "id": "checkout",
    "inputs": {"amount": {"schema": {"type": "integer", "min": 1}, "required": true}},
    "fields": {"charge_id": {"schema": {"type": "string"}}, "status": {"schema": {"type": "string"}}},
    "outputs": {"charge_id": {}, "status": {}},
    "nodes": {
        "charge": {"implementation": "app.charge_card"},
        "receipt": {"implementation": "std.set", "config": {"values": {"status": "paid"}}}
    },
    "edges": {
        "begin": {"from": "$start", "to": "charge"},
        "paid": {"from": "charge", "to": "receipt"},
        "end": {"from": "receipt", "to": "$finish"}
    }
}"#;

/// A "process": a handle on the database file with the application's nodes. Claims expire
/// 1.5 s after a worker stops renewing them (the default is a minute), so the example
/// recovers quickly.
async fn open(url: &str, node: ChargeCard) -> Result<Docket, Box<dyn Error>> {
    let nodes = NodeRegistry::new().with("app.charge_card", node)?;
    let mut nodes = nodes;
    docket::nodes::register_std(&mut nodes)?;
    let config = WorkerConfig {
        poll_interval_ms: 50,
        orphan_ttl_ms: 1_500,
        max_attempt_elapsed_ms: 1_000,
        drain_budget: DrainBudget {
            max_elapsed_ms: 1_000,
            ..DrainBudget::default()
        },
        ..WorkerConfig::default()
    };
    Ok(Docket::builder(docket::connect_backend(url).await?, nodes)
        .config(config)
        .build()?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("shop.db").display());
    let provider = Arc::new(PaymentProvider::default());
    let crashed = Arc::new(Notify::new());
    let node = |crash: bool| ChargeCard {
        provider: Arc::clone(&provider),
        crash: Arc::new(AtomicBool::new(crash)),
        crashed: Arc::clone(&crashed),
    };

    // The first process: its worker charges the card, then dies before committing.
    let first = open(&url, node(true)).await?;
    let graph = first.publish_graph_json(CHECKOUT_GRAPH).await?.graph_ref;
    let input = docket::parse_input(r#"{"amount": 4200}"#)?;
    let run = first
        .start_run(&graph, input, StartOptions::default())
        .await?;
    let worker = first.start_worker();
    tokio::time::timeout(Duration::from_secs(30), crashed.notified())
        .await
        .map_err(|_| "the first attempt never ran")?;
    let held = worker.kill();
    println!("worker killed after the charge, holding {held:?}");
    let after_crash = first.fetch_run(&run.id).await?;
    println!(
        "committed so far: checkpoint {} ({:?}); provider charges: {}",
        after_crash.checkpoint_seq,
        after_crash.status,
        provider.charges.lock().expect("charges").len()
    );
    drop(first);

    // The restarted process: a fresh handle and worker on the same file. Once the dead
    // worker's claim expires, the charge node runs again — with the same key.
    let second = open(&url, node(false)).await?;
    let worker = second.start_worker();
    let wait = AwaitOptions {
        timeout: Duration::from_secs(60),
        ..AwaitOptions::default()
    };
    let done = second.await_run(&run.id, wait).await?;
    worker.shutdown().await;

    let output = done.output.clone().unwrap_or_default();
    let requests = provider.requests.lock().expect("requests").clone();
    let charges = provider.charges.lock().expect("charges").clone();
    println!(
        "run {}: {:?}, output {}",
        done.id,
        done.status,
        serde_json::Value::Object(output.clone())
    );
    println!(
        "provider saw {} requests with keys {requests:?}",
        requests.len()
    );
    println!("provider made {} charge(s): {charges:?}", charges.len());

    if done.status != RunStatus::Done || output.get("status") != Some(&json!("paid")) {
        return Err(format!("the run ended as {:?}", done.status).into());
    }
    if requests.len() != 2 || requests[0] != requests[1] {
        return Err(format!(
            "expected the same key twice (before and after the crash), got {requests:?}"
        )
        .into());
    }
    if charges.len() != 1 || output.get("charge_id") != Some(&json!(charges[&requests[0]].0)) {
        return Err(
            format!("expected exactly one charge, the one the run recorded: {charges:?}").into(),
        );
    }
    println!("the card was charged once");
    Ok(())
}
