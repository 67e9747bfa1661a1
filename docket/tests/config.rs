//! A misconfigured worker is refused at start-up with a message naming the options
//! (`docs/engine.md`, “Start-up validation”; scenarios 41–42 of `docs/scenarios.md`).

use std::sync::Arc;

use docket::core::memory::MemoryStore;
use docket::engine::{DrainBudget, PrunerConfig, WorkerConfig};
use docket::{Docket, DocketError};

fn refused(config: WorkerConfig) -> String {
    let err = Docket::builder(Arc::new(MemoryStore::new()), docket::nodes::registry())
        .config(config)
        .build()
        .expect_err("the configuration is refused");
    assert!(matches!(err, DocketError::Config(_)), "{err}");
    err.to_string()
}

#[test]
fn a_drain_budget_at_or_above_the_orphan_ttl_is_refused() {
    let message = refused(WorkerConfig {
        orphan_ttl_ms: 3_000,
        ..WorkerConfig::default()
    });
    assert!(message.contains("drain_budget.max_elapsed_ms"), "{message}");
    assert!(message.contains("orphan_ttl_ms"), "{message}");
}

#[test]
fn an_attempt_ceiling_above_the_drain_budget_is_refused() {
    let message = refused(WorkerConfig {
        max_attempt_elapsed_ms: 3_001,
        ..WorkerConfig::default()
    });
    assert!(message.contains("max_attempt_elapsed_ms"), "{message}");
    assert!(message.contains("drain_budget.max_elapsed_ms"), "{message}");
}

#[test]
fn an_abandon_backoff_cap_below_its_base_is_refused() {
    let message = refused(WorkerConfig {
        abandon_backoff_ms: 10_000,
        abandon_backoff_cap_ms: 9_999,
        ..WorkerConfig::default()
    });
    assert!(message.contains("abandon_backoff_cap_ms"), "{message}");
    assert!(message.contains("abandon_backoff_ms"), "{message}");
}

#[test]
fn zero_limits_and_an_inconsistent_pruner_are_refused_together() {
    let message = refused(WorkerConfig {
        concurrency: 0,
        commit_batches_in_flight: 0,
        max_claim_attempts: 0,
        abandon_backoff_ms: 0,
        drain_budget: DrainBudget {
            max_moments: Some(0),
            max_elapsed_ms: 0,
        },
        max_attempt_elapsed_ms: 0,
        pruner: Some(PrunerConfig {
            interval_ms: 0,
            event_retention_ms: 2,
            run_retention_ms: 1,
            batch_size: 0,
        }),
        ..WorkerConfig::default()
    });
    for option in [
        "concurrency",
        "commit_batches_in_flight",
        "max_claim_attempts",
        "abandon_backoff_ms",
        "drain_budget.max_moments",
        "drain_budget.max_elapsed_ms",
        "max_attempt_elapsed_ms",
        "pruner.interval_ms",
        "pruner.batch_size",
        "pruner.event_retention_ms",
    ] {
        assert!(message.contains(option), "{option} missing from: {message}");
    }
}

#[test]
fn unbounded_moments_and_the_defaults_are_accepted() {
    let config = WorkerConfig {
        drain_budget: DrainBudget {
            max_moments: None,
            max_elapsed_ms: 3_000,
        },
        ..WorkerConfig::default()
    };
    assert!(
        Docket::builder(Arc::new(MemoryStore::new()), docket::nodes::registry())
            .config(config)
            .build()
            .is_ok()
    );
}
