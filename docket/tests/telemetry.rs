//! The engine's telemetry (`docs/engine.md`, “Telemetry”; scenarios 23, 110, 145 and 169 of
//! `docs/scenarios.md`): spans and events carry the catalogue's names, a discarded moment emits no
//! domain telemetry, a failed poll is reported, and no claim token ever appears in any of it.

mod support;

use docket::core::store::StoreError;
use docket::engine::{Worker, WorkerConfig};

use support::graphs::steps;
use support::scripted::{CommitScript, Scripted};
use support::telemetry::Telemetry;
use support::{poll_until, VFx};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

#[tokio::test]
async fn drains_are_named_after_the_catalogue_and_never_carry_a_claim_token() {
    let fx = VFx::new(WorkerConfig::default());
    let first = fx.start(&steps(2)).await;
    let second = fx.start(&steps(2)).await;
    let (telemetry, _guard) = Telemetry::capture();

    let mut tokens = Vec::new();
    for run in [&first, &second] {
        let lease = fx.claim().await;
        assert_eq!(lease.run_id, run.id);
        tokens.push(lease.claim_token.as_str().to_owned());
        fx.drain(lease).await.expect("drain");
    }

    let vehicles = telemetry.spans("docket.vehicle");
    assert_eq!(vehicles.len(), 2, "one vehicle span per drain");
    assert_eq!(
        vehicles[0].field("run_id"),
        Some(first.id.as_str()),
        "{vehicles:?}"
    );
    let fetches: Vec<String> = telemetry
        .events("docket.graph_cache.fetch")
        .iter()
        .filter_map(|r| r.field("result").map(str::to_owned))
        .collect();
    assert_eq!(fetches.len(), 2, "{fetches:?}");
    assert_eq!(
        fetches[1], "hit",
        "the second drain of the version is a cache hit"
    );
    assert!(
        telemetry.events("docket.graph.compile").len() <= 1,
        "compiled at most once for both drains"
    );
    // Both runs: initialization was before the capture; each drain commits two steps and
    // the completion.
    let committed = telemetry.events("docket.lifecycle.committed");
    assert_eq!(committed.len(), 6, "{committed:?}");
    assert!(!telemetry.events("docket.run.event").is_empty());
    for token in &tokens {
        assert!(
            telemetry.mentioning(token).is_empty(),
            "a claim token leaked into telemetry: {:?}",
            telemetry.mentioning(token)
        );
    }
}

#[tokio::test]
async fn a_discarded_moment_emits_no_domain_telemetry() {
    let fx = VFx::new(WorkerConfig::default());
    fx.start(&steps(2)).await;
    fx.store
        .script_commits([CommitScript::Fail(StoreError::EventConflict { seq: 9 })]);
    let (telemetry, _guard) = Telemetry::capture();
    fx.claim_and_drain().await;
    let discards = telemetry.events("docket.vehicle.discard");
    assert_eq!(discards.len(), 1, "{:?}", telemetry.records());
    assert_eq!(discards[0].field("stage"), Some("commit"));
    assert!(
        telemetry.events("docket.lifecycle.committed").is_empty()
            && telemetry.events("docket.run.event").is_empty(),
        "nothing committed, so nothing announced: {:?}",
        telemetry.records()
    );
}

#[tokio::test]
async fn crashed_and_failed_polls_are_reported_and_the_next_poll_carries_its_counts() {
    let fx = VFx::new(WorkerConfig {
        poll_interval_ms: 20,
        ..WorkerConfig::default()
    });
    let run = fx.start(&steps(1)).await;
    fx.store.panic_next_claims(1);
    fx.store.fail_next_claims(2);
    let (telemetry, _guard) = Telemetry::capture();
    let worker = Worker::start(fx.docket.engine());
    poll_until(LIMIT, || {
        telemetry
            .events("docket.dispatcher.poll")
            .iter()
            .any(|r| r.field("leases") == Some("1"))
    })
    .await;
    worker.shutdown().await;

    let crashes = telemetry.events("docket.dispatcher.poll.crash");
    assert_eq!(crashes.len(), 1, "the panicking poll is reported once");
    assert_eq!(crashes[0].field("result"), Some("error"));
    let polls = telemetry.events("docket.dispatcher.poll");
    assert_eq!(polls[0].field("result"), Some("error"), "{polls:?}");
    assert!(polls[0]
        .field("error")
        .is_some_and(|e| e.contains("injected")));
    let ok = polls
        .iter()
        .find(|r| r.field("leases") == Some("1"))
        .expect("the poll that leased the run");
    assert_eq!(
        (ok.field("result"), ok.field("poisoned")),
        (Some("ok"), Some("0"))
    );
    let spans = telemetry.spans("docket.dispatcher.poll");
    assert!(
        spans
            .iter()
            .all(|s| s.field("demand").is_some() && s.field("source").is_some()),
        "{spans:?}"
    );
    assert!(Scripted::count(&fx.store.claims) >= 2);
    // Poll telemetry is about the worker, not about runs: no run identity in it.
    assert!(telemetry
        .mentioning(run.id.as_str())
        .iter()
        .all(|r| r.name != "docket.dispatcher.poll"));
}
