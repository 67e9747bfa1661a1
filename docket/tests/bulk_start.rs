//! `Docket::start_runs`: every input validated like `start_run` and failing alone, the valid
//! ones sent to the store in `initialize_batch` calls of at most `START_BATCH_LIMIT`.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use docket::core::memory::MemoryStore;
use docket::core::model::{Run, RunId, RunQuery};
use docket::core::store::{Backend, BatchedInit, Layered, RunStore, StoreError, StoreLayer};
use docket::{parse_input, Docket, DocketError, StartOptions, START_BATCH_LIMIT};

/// The memory store, recording the size of every `initialize_batch` call.
#[derive(Debug, Default)]
struct BatchSizes {
    inner: MemoryStore,
    sizes: Mutex<Vec<usize>>,
}

#[async_trait]
impl StoreLayer for BatchSizes {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        self.sizes.lock().expect("lock").push(members.len());
        self.inner.initialize_batch(members).await
    }
}

const APPROVAL: &str = r#"{"schema_version": 1, "id": "expense",
    "inputs": {"amount": {"schema": {"type": "integer", "min": 0}, "required": true}},
    "fields": {"approved": {"schema": {"type": "boolean"}}}, "outputs": {"approved": {}},
    "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
    "edges": {"a": {"from": "$start", "to": "approve"}, "b": {"from": "approve", "to": "$finish"}}}"#;

fn named(id: &str) -> StartOptions {
    StartOptions {
        run_id: Some(RunId::new(id).expect("id")),
        ..StartOptions::default()
    }
}

#[tokio::test]
async fn start_runs_sends_batches_of_at_most_the_limit_and_each_failure_stands_alone() {
    let store = Arc::new(Layered(BatchSizes::default()));
    let docket = Docket::with_backend(store.clone(), docket::nodes::registry()).expect("facade");
    let graph = docket
        .publish_graph_json(APPROVAL)
        .await
        .expect("publish")
        .graph_ref;
    let count = 2 * START_BATCH_LIMIT + 203;
    let (invalid, repeated) = (7, 10);
    let runs: Vec<_> = (0..count)
        .map(|i| {
            let input = if i == invalid {
                r#"{"amount": "lots"}"#.to_owned()
            } else {
                format!(r#"{{"amount": {i}}}"#)
            };
            // The repeated member reuses the id of run 3.
            let id = if i == repeated { 3 } else { i };
            (
                parse_input(&input).expect("input"),
                named(&format!("bulk-{id}")),
            )
        })
        .collect();
    let outcomes = docket
        .start_runs(&graph, runs)
        .await
        .expect("the graph exists");
    assert_eq!(outcomes.len(), count);
    // The invalid input never reaches the store; everything else does, in order.
    assert_eq!(
        *store.0.sizes.lock().expect("lock"),
        vec![START_BATCH_LIMIT, START_BATCH_LIMIT, 202]
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        match i {
            _ if i == invalid => assert_eq!(
                outcome.as_ref().expect_err("invalid input").kind(),
                "invalid_input"
            ),
            _ if i == repeated => assert!(
                matches!(outcome, Err(DocketError::Store(StoreError::Conflict))),
                "{outcome:?}"
            ),
            _ => assert_eq!(
                outcome.as_ref().expect("a valid run starts").id.as_str(),
                format!("bulk-{i}")
            ),
        }
    }
    // Run 3 kept its own input.
    let three = docket
        .fetch_run(&RunId::new("bulk-3").expect("id"))
        .await
        .expect("run 3");
    assert_eq!(three.input["amount"], 3);
    let mut listed = 0;
    let mut query = RunQuery {
        limit: 1000,
        ..RunQuery::default()
    };
    loop {
        let page = docket.list_runs(&query).await.expect("list");
        listed += page.runs.len();
        if !page.has_more {
            break;
        }
        query.before = page.next_before;
    }
    assert_eq!(listed, count - 2);
}

#[tokio::test]
async fn start_runs_on_an_unknown_graph_fails_the_whole_call() {
    let docket = Docket::connect("memory://").await.expect("memory");
    let elsewhere = Docket::connect("memory://").await.expect("memory");
    let graph = elsewhere
        .publish_graph_json(APPROVAL)
        .await
        .expect("publish")
        .graph_ref;
    let input = parse_input(r#"{"amount": 1}"#).expect("input");
    let outcome = docket
        .start_runs(&graph, vec![(input, StartOptions::default())])
        .await;
    assert!(matches!(outcome, Err(DocketError::NotFound)), "{outcome:?}");
}
