//! A suite that cannot fail is no suite: five deliberately broken stores must each fail it,
//! and the families that catch them are asserted; the correct memory store passes `run_all`.
//!
//! * no `checkpoint_seq` check on claimed commits (a `MemoryStore` fault switch);
//! * no claim-token check (a wrapper that learns every minted token from `claim_due` and
//!   substitutes the current one into every claimed commit);
//! * an abandon that does not hand the attempt back (a `MemoryStore` fault switch);
//! * an operation transition without its from-set guard (a `MemoryStore` fault switch);
//! * an owner's completion sequence read in one step and written in another (a `MemoryStore`
//!   fault switch).
//!
//! A store without a registry skips the registry families and the report says so.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

use async_trait::async_trait;
use docket_conformance::memory::MemoryHarness;
use docket_conformance::{cases, run_all, run_matching, Capabilities, Harness, Report};
use docket_core::memory::{Faults, MemoryStore};
use docket_core::model::{ClaimToken, Event, GraphRef, OwnerScope, Run, RunId, Scope};
use docket_core::store::{
    Backend, ClaimBatch, ClaimPolicy, ClaimedCommit, Layered, RunStore, StoreError, StoreLayer,
};

/// The mutants fail hundreds of assertions on purpose and their messages are in the report.
/// Panics on a test's own thread are captured by the test harness anyway; those on runtime
/// worker threads would go straight to stderr, so only they are silenced.
fn quiet_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !std::thread::current()
                .name()
                .is_some_and(|name| name.starts_with("tokio-"))
            {
                default(info);
            }
        }));
    });
}

/// A memory store with fault switches on.
#[derive(Clone, Copy, Debug)]
struct FaultyHarness(Faults);

#[async_trait]
impl Harness for FaultyHarness {
    type Guard = Arc<MemoryStore>;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let store = Arc::new(MemoryStore::with_faults(self.0));
        Ok((store.clone(), store))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: true,
            ops_registry: true,
        }
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.raw_snapshot())
    }

    async fn raw_ops_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.raw_ops_snapshot())
    }

    async fn reopen(&self, guard: &Self::Guard) -> Result<Arc<dyn Backend>, StoreError> {
        Ok(Arc::new(guard.reopen()))
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        guard.corrupt_run(run_id)
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        guard.corrupt_event(run_id, seq)
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        guard.corrupt_graph(owner, graph_ref)
    }
}

/// A store that never checks claim tokens: it remembers the token `claim_due` last minted for
/// each run and commits with that one, whatever the caller presents.
#[derive(Debug, Default)]
struct TokenBlindStore {
    inner: MemoryStore,
    minted: Mutex<HashMap<RunId, ClaimToken>>,
}

impl TokenBlindStore {
    fn current(&self, run_id: &RunId) -> Option<ClaimToken> {
        self.minted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run_id)
            .cloned()
    }
}

#[async_trait]
impl StoreLayer for TokenBlindStore {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        mut proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        if let Some(token) = self.current(&proposal.run.id) {
            proposal.claim_token = token;
        }
        self.inner.commit_claimed(scope, proposal, events).await
    }

    async fn claim_due(&self, policy: &ClaimPolicy) -> Result<ClaimBatch, StoreError> {
        let batch = self.inner.claim_due(policy).await?;
        let mut minted = self
            .minted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for lease in &batch.leases {
            minted.insert(lease.run_id.clone(), lease.claim_token.clone());
        }
        Ok(batch)
    }
}

#[derive(Clone, Copy, Debug)]
struct TokenBlindHarness;

#[async_trait]
impl Harness for TokenBlindHarness {
    type Guard = Arc<Layered<TokenBlindStore>>;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let store = Arc::new(Layered(TokenBlindStore::default()));
        Ok((store.clone(), store))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: true,
            ops_registry: true,
        }
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.inner.raw_snapshot())
    }

    async fn raw_ops_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.inner.raw_ops_snapshot())
    }

    async fn reopen(&self, guard: &Self::Guard) -> Result<Arc<dyn Backend>, StoreError> {
        Ok(Arc::new(Layered(TokenBlindStore {
            inner: guard.inner.reopen(),
            minted: Mutex::default(),
        })))
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        guard.inner.corrupt_run(run_id)
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        guard.inner.corrupt_event(run_id, seq)
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        guard.inner.corrupt_graph(owner, graph_ref)
    }
}

/// Asserts the report failed in (at least) each of `families`, and prints what it caught.
fn assert_caught_by(mutant: &str, report: &Report, families: &[&str]) {
    println!("{mutant}:\n{report}");
    assert!(!report.is_success(), "{mutant} passed the whole suite");
    let failing = report.failing_families();
    for family in families {
        assert!(
            failing.contains(family),
            "{mutant} was not caught by family {family}; caught by {failing:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_correct_memory_store_passes_every_case_through_run_all() {
    let report = run_all(&MemoryHarness).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.total(), cases().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_without_the_seq_fence_on_claimed_commits_fails_the_suite() {
    quiet_panics();
    let mutant = FaultyHarness(Faults {
        skip_claimed_seq_fence: true,
        ..Faults::default()
    });
    let report = run_all(&mutant).await;
    assert_caught_by("no seq fence", &report, &["transitions", "races", "model"]);
    let transitions = report.family("transitions").expect("transitions ran");
    for case in [
        "replaying_a_committed_claimed_proposal_is_stale",
        "a_commit_built_on_a_past_seq_is_stale",
    ] {
        assert!(transitions.failed_names().contains(&case), "{case} passed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_without_the_token_check_fails_the_suite() {
    quiet_panics();
    let report = run_all(&TokenBlindHarness).await;
    assert_caught_by(
        "no token check",
        &report,
        &["transitions", "handback", "model"],
    );
    let transitions = report.family("transitions").expect("transitions ran");
    for case in [
        "a_wrong_token_is_stale_and_stores_nothing",
        "a_superseded_token_is_stale_and_the_new_holder_commits",
    ] {
        assert!(transitions.failed_names().contains(&case), "{case} passed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_abandon_that_keeps_the_attempt_fails_the_suite() {
    quiet_panics();
    let mutant = FaultyHarness(Faults {
        abandon_keeps_attempts: true,
        ..Faults::default()
    });
    let report = run_all(&mutant).await;
    assert_caught_by("abandon keeps attempts", &report, &["handback", "model"]);
    let handback = report.family("handback").expect("handback ran");
    for case in [
        "abandon_reschedules_and_hands_the_attempt_back",
        "abandons_never_advance_attempt_poison",
    ] {
        assert!(handback.failed_names().contains(&case), "{case} passed");
    }
}

/// Only the registry families (the run families cannot catch a registry fault).
async fn run_registry_families<H: Harness>(harness: &H) -> Report {
    run_matching(harness, |case| case.family.starts_with("ops_")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_registry_without_its_from_set_guard_fails_the_suite() {
    quiet_panics();
    let mutant = FaultyHarness(Faults {
        ops_skip_from_set_guard: true,
        ..Faults::default()
    });
    let report = run_registry_families(&mutant).await;
    assert_caught_by(
        "no from-set guard",
        &report,
        &["ops_states", "ops_lifecycle", "ops_races", "ops_model"],
    );
    let states = report.family("ops_states").expect("ops_states ran");
    for case in [
        "provisioning_complete_is_invalid",
        "running_provisioning_succeeded_is_invalid",
        "terminal_cancel_is_invalid",
    ] {
        assert!(states.failed_names().contains(&case), "{case} passed");
    }
    let races = report.family("ops_races").expect("ops_races ran");
    assert!(races
        .failed_names()
        .contains(&"sixteen_concurrent_transitions_of_one_operation_have_exactly_one_winner"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_registry_that_mints_sequences_in_two_steps_fails_the_suite() {
    quiet_panics();
    let mutant = FaultyHarness(Faults {
        ops_racy_completion_seq: true,
        ..Faults::default()
    });
    let report = run_registry_families(&mutant).await;
    assert_caught_by("racy completion sequence", &report, &["ops_races"]);
    let races = report.family("ops_races").expect("ops_races ran");
    assert!(
        races
            .failed_names()
            .contains(&"concurrent_endings_mint_gap_free_sequences_per_owner"),
        "{report}"
    );
}

/// The memory store with its registry hidden, as a store that implements only the run and
/// graph traits would be.
#[derive(Debug, Default)]
struct NoRegistry {
    inner: MemoryStore,
}

#[async_trait]
impl StoreLayer for NoRegistry {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    fn offers_ops_registry(&self) -> bool {
        false
    }
}

#[derive(Clone, Copy, Debug)]
struct NoRegistryHarness;

#[async_trait]
impl Harness for NoRegistryHarness {
    type Guard = Arc<Layered<NoRegistry>>;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let store = Arc::new(Layered(NoRegistry::default()));
        Ok((store.clone(), store))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: true,
            ops_registry: false,
        }
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.inner.raw_snapshot())
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        guard.inner.corrupt_run(run_id)
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        guard.inner.corrupt_event(run_id, seq)
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        guard.inner.corrupt_graph(owner, graph_ref)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_without_a_registry_skips_the_registry_families_and_says_so() {
    let report = run_registry_families(&NoRegistryHarness).await;
    assert!(report.is_success(), "{report}");
    let declared = report.family("ops_declared").expect("ops_declared ran");
    assert_eq!(
        declared.passed, 1,
        "the declaration is checked even without a registry"
    );
    let registry_cases = cases()
        .iter()
        .filter(|c| c.family.starts_with("ops_") && c.family != "ops_declared")
        .count();
    assert_eq!(report.skipped(), registry_cases);
    let states = report.family("ops_states").expect("ops_states is reported");
    assert_eq!(states.passed, 0);
    assert_eq!(
        states.skip_reason,
        Some("the harness declares no operation registry")
    );
    let rendered = report.to_string();
    assert!(
        rendered.contains("SKIPPED ops_states"),
        "the report names the skipped family:\n{rendered}"
    );
}
