//! The lifecycle's spans and events carry the names of the telemetry catalogue and never a claim
//! token or a payload (`docs/runs-and-moments.md`, “The lifecycle”; `docs/engine.md`, “Telemetry”).

mod common;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use common::*;
use docket_core::lifecycle;
use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::runtime::Disposition;

#[derive(Debug, Default)]
struct Captured {
    /// Span id → (name, fields recorded at creation and later).
    spans: BTreeMap<u64, (String, Vec<(String, String)>)>,
    /// Event message and fields, in order.
    events: Vec<Vec<(String, String)>>,
}

#[derive(Clone, Default)]
struct Capture {
    data: Arc<Mutex<Captured>>,
    next: Arc<AtomicU64>,
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = Vec::new();
        attrs.record(&mut Fields(&mut fields));
        self.data
            .lock()
            .expect("capture lock")
            .spans
            .insert(id, (attrs.metadata().name().to_owned(), fields));
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut data = self.data.lock().expect("capture lock");
        if let Some((_, fields)) = data.spans.get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        self.data.lock().expect("capture lock").events.push(fields);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn transitions_and_store_calls_are_spanned_without_tokens_or_payloads() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());

    let (store, graph) = store_with_graph().await;
    let mut start = init_moment(&rid("r1"), &graph, t(0));
    start.run.input = map(json!({ "secret": "payload-marker-7f3a" }));
    let run = lifecycle::start(&store, &OwnerScope::Tenantless, start)
        .await
        .expect("start")
        .run;
    let lease = claim_one(&store, t(1)).await;
    let m = next_moment(&run, RunStatus::Running, Disposition::Continue, t(2));
    lifecycle::commit_moment(
        &store,
        &Scope::System,
        m.clone(),
        1,
        &lease.claim_token,
        t(2),
    )
    .await
    .expect("commit");
    // A replay loses its fence: the result kind says so.
    lifecycle::commit_moment(&store, &Scope::System, m, 1, &lease.claim_token, t(3))
        .await
        .expect_err("stale");
    lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        cancel_mutation(r, t(4))
    })
    .await
    .expect("cancel");

    let data = capture.data.lock().expect("capture lock");
    let transitions: Vec<(String, String)> = data
        .spans
        .values()
        .filter(|(name, _)| name == "docket.lifecycle.transition")
        .map(|(_, f)| {
            (
                field(f, "operation").unwrap_or_default().to_owned(),
                field(f, "result").unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("start", "ok"),
        ("moment", "ok"),
        ("moment", "stale_fence"),
        ("signal", "ok"),
    ]
    .iter()
    .map(|(o, r)| ((*o).to_owned(), (*r).to_owned()))
    .collect();
    assert_eq!(transitions, expected);
    let refs: Vec<_> = data
        .spans
        .values()
        .filter(|(name, _)| name == "docket.lifecycle.transition")
        .filter_map(|(_, f)| field(f, "lifecycle_ref").map(str::to_owned))
        .collect();
    assert_eq!(refs.len(), 4);
    assert_eq!(
        refs.iter().collect::<std::collections::BTreeSet<_>>().len(),
        4,
        "distinct refs"
    );

    let operations: Vec<(String, String)> = data
        .spans
        .values()
        .filter(|(name, _)| name == "docket.store.operation")
        .map(|(_, f)| {
            (
                field(f, "operation").unwrap_or_default().to_owned(),
                field(f, "result").unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("transition_initialize", "ok"),
        ("transition_commit_claimed", "ok"),
        ("transition_commit_claimed", "stale_fence"),
        ("run_fetch_for_transition", "ok"),
        ("transition_commit_unclaimed", "ok"),
    ]
    .iter()
    .map(|(o, r)| ((*o).to_owned(), (*r).to_owned()))
    .collect();
    assert_eq!(operations, expected);

    let committed = data
        .events
        .iter()
        .filter(|f| field(f, "message") == Some("docket.lifecycle.committed"))
        .count();
    assert_eq!(committed, 3);

    let everything = format!("{:?}", *data);
    assert!(
        !everything.contains(lease.claim_token.as_str()),
        "a claim token was logged"
    );
    assert!(
        !everything.contains("payload-marker-7f3a"),
        "a payload was logged"
    );
}

#[tokio::test]
async fn a_chain_of_moments_is_one_transition_span_around_one_batch_call() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());

    let (store, graph) = store_with_graph().await;
    let run = lifecycle::start(
        &store,
        &OwnerScope::Tenantless,
        init_moment(&rid("r1"), &graph, t(0)),
    )
    .await
    .expect("start")
    .run;
    let lease = claim_one(&store, t(1)).await;
    let barrier = next_moment(&run, RunStatus::Running, Disposition::Continue, t(2));
    let completion = next_moment(
        &barrier.run,
        RunStatus::Done,
        disposition_for(RunStatus::Done),
        t(2),
    );
    let chain = vec![barrier, completion];
    let landed = lifecycle::Lifecycle::new()
        .commit_moments(
            &store,
            &Scope::System,
            chain.clone(),
            1,
            &lease.claim_token,
            t(2),
        )
        .await;
    assert!(landed.iter().all(Result::is_ok), "{landed:?}");
    // Replayed, the chain's first moment has lost its fence, and so has the second.
    let replayed = lifecycle::Lifecycle::new()
        .commit_moments(&store, &Scope::System, chain, 1, &lease.claim_token, t(3))
        .await;
    assert_eq!(replayed.len(), 2);
    assert!(replayed.iter().all(Result::is_err), "{replayed:?}");

    let data = capture.data.lock().expect("capture lock");
    let spans = |wanted: &str| -> Vec<(String, String)> {
        data.spans
            .values()
            .filter(|(name, _)| name == wanted)
            .map(|(_, f)| {
                (
                    field(f, "operation").unwrap_or_default().to_owned(),
                    field(f, "result").unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(o, r)| ((*o).to_owned(), (*r).to_owned()))
            .collect()
    };
    assert_eq!(
        spans("docket.lifecycle.transition"),
        pairs(&[
            ("start", "ok"),
            ("moments", "ok"),
            ("moments", "stale_fence")
        ])
    );
    assert_eq!(
        spans("docket.store.operation"),
        pairs(&[
            ("transition_initialize", "ok"),
            ("transition_commit_claimed_batch", "ok"),
            ("transition_commit_claimed_batch", "stale_fence"),
        ])
    );
}
