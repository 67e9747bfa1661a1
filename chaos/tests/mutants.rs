//! An oracle that cannot fail proves nothing: deliberately broken stacks must make it fail
//! within the same smoke workload the correct stack passes.
//!
//! * a store that never checks claim tokens (it learns every token `claim_due` mints and
//!   substitutes the current one into every claimed commit) must show stale commits accepted;
//! * an engine-side wrapper that takes an ambiguous commit as landed, instead of re-reading,
//!   must show acknowledged commits lost;
//! * an engine-side wrapper that retries an ambiguous commit blindly is *not* unsafe over a
//!   double-fenced store — the retry of a landed commit is refused on the seq fence — and the
//!   oracle says so, while its counts show the cost: landed commits nobody acknowledged;
//! * the same blind retry over a store without the seq fence lands commits twice, and the
//!   oracle must say so.

use std::sync::Arc;

use docket_chaos::mutant::{AssumeLanded, BlindRetry, TokenBlind};
use docket_chaos::workload::Wrap;
use docket_chaos::{run, Report, Stack, Workload};
use docket_core::memory::{Faults, MemoryStore};
use docket_core::store::{Backend, Layered};

/// The smoke workload over a fresh memory store with `stack`.
async fn verdict(stack: Stack, test: &str) -> Report {
    verdict_over(MemoryStore::new(), stack, test).await
}

/// The smoke workload over `store` with `stack`.
async fn verdict_over(store: MemoryStore, stack: Stack, test: &str) -> Report {
    let workload = Workload::smoke("memory", 1);
    let store: Arc<dyn Backend> = Arc::new(store);
    let outcome = run(store, &workload, &stack)
        .await
        .unwrap_or_else(|e| panic!("the harness failed: {e}"));
    println!("{test}: {}", outcome.report.headline());
    for problem in outcome.report.problems.iter().take(5) {
        println!("  {problem}");
    }
    outcome.report
}

fn wrap(f: fn(Arc<dyn Backend>) -> Arc<dyn Backend>) -> Option<Wrap> {
    Some(Arc::new(f))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_without_the_token_check_is_caught_accepting_stale_commits() {
    let stack = Stack {
        below: wrap(|inner| Arc::new(Layered(TokenBlind::new(inner)))),
        above: None,
    };
    let report = verdict(stack, "token blind").await;
    assert!(!report.is_safe(), "the oracle passed a token-blind store");
    assert!(
        report.stale_accepted > 0,
        "expected stale commits accepted: {}",
        report.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_engine_that_takes_ambiguous_commits_as_landed_is_caught_losing_acknowledged_commits() {
    let stack = Stack {
        below: None,
        above: wrap(|inner| Arc::new(Layered(AssumeLanded { inner }))),
    };
    let report = verdict(stack, "assume landed").await;
    assert!(
        !report.is_safe(),
        "the oracle passed an engine that skips the re-read"
    );
    assert!(
        report.lost > 0,
        "expected acknowledged commits lost: {}",
        report.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_blind_retry_of_an_ambiguous_commit_is_fenced_and_leaves_landed_commits_unacknowledged() {
    let stack = Stack {
        below: None,
        above: wrap(|inner| Arc::new(Layered(BlindRetry { inner }))),
    };
    let report = verdict(stack, "blind retry").await;
    assert!(report.is_safe(), "{}", report.to_json());
    assert!(report.commits.ambiguous_landed > 0, "{:?}", report.commits);
    // Only a retry that itself meets a lost reply is ever re-read (and then found landed).
    assert!(
        report.commits.ambiguous_resolved_by_reread < report.commits.ambiguous_landed,
        "a blind retry mostly never learns that its first try landed: {:?}",
        report.commits
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_blind_retry_over_a_store_without_the_seq_fence_is_caught_committing_twice() {
    let stack = Stack {
        below: None,
        above: wrap(|inner| Arc::new(Layered(BlindRetry { inner }))),
    };
    let store = MemoryStore::with_faults(Faults {
        skip_claimed_seq_fence: true,
        ..Faults::default()
    });
    let report = verdict_over(store, stack, "blind retry, no seq fence").await;
    assert!(!report.is_safe(), "the oracle passed a double landing");
    assert!(
        report.duplicated > 0,
        "expected commits landed twice: {}",
        report.to_json()
    );
}
