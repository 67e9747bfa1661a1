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
//!
//! And, each a layer over the correct memory store caught by a named case (the blind spots an
//! outside review found): content accepted under a taken graph address, the hash filter
//! dropped beside the id filter, run filters applied to the first page only, graph ids matched
//! as prefixes (run listing, version listing, latest ref), a corrupt run read as absent, an
//! uncapped abandon backoff, and cascaded event deletions left uncounted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

use async_trait::async_trait;
use docket_conformance::memory::MemoryHarness;
use docket_conformance::{cases, run_all, run_matching, Capabilities, Harness, Report};
use docket_core::graph::GraphDocument;
use docket_core::memory::{Faults, MemoryStore};
use docket_core::model::{
    ClaimToken, Event, GraphId, GraphRef, GraphVersion, GraphVersionPage, GraphVersionQuery,
    OwnerScope, Run, RunId, RunInfo, RunPage, RunQuery, Scope, Timestamp, MAX_PAGE_LIMIT,
};
use docket_core::store::layer::commit_each;
use docket_core::store::rules::queries::{graph_version_page, run_page};
use docket_core::store::{
    AbandonMode, AbandonOutcome, AbandonPolicy, Backend, BatchedCommit, ClaimBatch, ClaimRequest,
    ClaimedCommit, GraphStore, Layered, PrunePolicy, PruneReport, RunStore, StoreError,
    StoreErrorKind, StoreLayer,
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

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        commit_each(self, commits).await
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

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
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

// ---------------------------------------------------------------------------------------------
// Blind spots: stores broken the way an outside implementation might be, each a layer over the
// correct memory store, each caught by a named case.
// ---------------------------------------------------------------------------------------------

/// A deliberately broken store: a [`StoreLayer`] over the correct memory store, whose hooks
/// (snapshots, corruption) the harness reaches through [`MemoryMutant::memory`].
trait MemoryMutant: StoreLayer + Default {
    fn memory(&self) -> &MemoryStore;
}

/// Opens a fresh `M` per case.
struct MutantHarness<M>(std::marker::PhantomData<fn() -> M>);

impl<M> MutantHarness<M> {
    fn new() -> Self {
        MutantHarness(std::marker::PhantomData)
    }
}

#[async_trait]
impl<M: MemoryMutant> Harness for MutantHarness<M> {
    type Guard = Arc<Layered<M>>;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let store = Arc::new(Layered(M::default()));
        Ok((store.clone(), store))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: true,
            ops_registry: false,
        }
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.memory().raw_snapshot())
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        guard.memory().corrupt_run(run_id)
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        guard.memory().corrupt_event(run_id, seq)
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        guard.memory().corrupt_graph(owner, graph_ref)
    }
}

/// Runs the families of `cases` against mutant `M` and asserts each `(family, case)` fails.
async fn assert_cases_catch<M: MemoryMutant>(mutant: &str, cases: &[(&str, &str)]) {
    quiet_panics();
    let families: Vec<&str> = cases.iter().map(|(family, _)| *family).collect();
    let report = run_matching(&MutantHarness::<M>::new(), |case| {
        families.contains(&case.family)
    })
    .await;
    println!("{mutant}:\n{report}");
    for (family, case) in cases {
        let failed = report
            .family(family)
            .unwrap_or_else(|| panic!("family {family} did not run"))
            .failed_names();
        assert!(
            failed.contains(case),
            "{mutant} was not caught by {family}::{case}; that family failed {failed:?}"
        );
    }
}

/// Declares a mutant type over a fresh memory store.
macro_rules! memory_mutant {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Default)]
        struct $name {
            inner: MemoryStore,
        }

        impl MemoryMutant for $name {
            fn memory(&self) -> &MemoryStore {
                &self.inner
            }
        }
    };
}

memory_mutant!(
    /// Accepts a document under an address that holds other bytes (answers Ok where the
    /// contract says `GraphContentConflict`).
    AcceptsForeignContent
);

#[async_trait]
impl StoreLayer for AcceptsForeignContent {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        match self.inner.save_graph(owner, graph_ref, graph, now).await {
            Err(StoreError::GraphContentConflict) => Ok(()),
            other => other,
        }
    }
}

memory_mutant!(
    /// Drops the graph hash filter whenever a graph id filter is also given.
    DropsHashBesideId
);

#[async_trait]
impl StoreLayer for DropsHashBesideId {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        let mut query = query.clone();
        if query.graph_id.is_some() {
            query.graph_hash = None;
        }
        self.inner.list_runs(scope, &query).await
    }
}

memory_mutant!(
    /// Applies run filters to the first page only (a cursor query forgets them).
    FiltersFirstPageOnly
);

#[async_trait]
impl StoreLayer for FiltersFirstPageOnly {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        let mut query = query.clone();
        if query.before.is_some() {
            query.graph_id = None;
            query.graph_hash = None;
            query.statuses = None;
        }
        self.inner.list_runs(scope, &query).await
    }
}

memory_mutant!(
    /// Matches the run listing's graph id filter as a prefix (`LIKE 'g%'`).
    PrefixRunFilter
);

#[async_trait]
impl StoreLayer for PrefixRunFilter {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        let Some(prefix) = query.graph_id.clone() else {
            return self.inner.list_runs(scope, query).await;
        };
        let wide = RunQuery {
            graph_id: None,
            limit: MAX_PAGE_LIMIT,
            ..query.clone()
        };
        let page = self.inner.list_runs(scope, &wide).await?;
        let rows = page
            .runs
            .into_iter()
            .filter(|run| run.graph_id.as_str().starts_with(prefix.as_str()))
            .take(query.limit as usize + 1)
            .collect();
        Ok(run_page(rows, query))
    }
}

/// Matches graph ids of version reads as a prefix: it remembers the ids it saved and merges
/// the versions of every id that starts with the one asked for.
#[derive(Debug, Default)]
struct PrefixGraphReads {
    inner: MemoryStore,
    saved: Mutex<Vec<(OwnerScope, GraphId)>>,
}

impl MemoryMutant for PrefixGraphReads {
    fn memory(&self) -> &MemoryStore {
        &self.inner
    }
}

impl PrefixGraphReads {
    /// Every version of every saved id of `owner` starting with `prefix`, newest first.
    async fn versions(
        &self,
        owner: &OwnerScope,
        prefix: &GraphId,
    ) -> Result<Vec<GraphVersion>, StoreError> {
        let ids: Vec<GraphId> = self
            .saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(o, id)| o == owner && id.as_str().starts_with(prefix.as_str()))
            .map(|(_, id)| id.clone())
            .collect();
        let mut all = Vec::new();
        for id in ids {
            let query = GraphVersionQuery {
                limit: MAX_PAGE_LIMIT,
                before: None,
            };
            all.extend(
                self.inner
                    .list_graph_versions(owner, &id, &query)
                    .await?
                    .versions,
            );
        }
        all.sort_by(|a, b| {
            (b.published_at, &b.graph_ref.graph_hash)
                .cmp(&(a.published_at, &a.graph_ref.graph_hash))
        });
        Ok(all)
    }
}

#[async_trait]
impl StoreLayer for PrefixGraphReads {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner.save_graph(owner, graph_ref, graph, now).await?;
        let mut saved = self
            .saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = (owner.clone(), graph_ref.graph_id.clone());
        if !saved.contains(&entry) {
            saved.push(entry);
        }
        Ok(())
    }

    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        let versions = self.versions(owner, graph_id).await?;
        versions
            .into_iter()
            .next()
            .map(|v| v.graph_ref)
            .ok_or(StoreError::NotFound)
    }

    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        let rows = self
            .versions(owner, graph_id)
            .await?
            .into_iter()
            .filter(|v| {
                query.before.as_ref().is_none_or(|c| {
                    (v.published_at, &v.graph_ref.graph_hash) < (c.published_at, &c.graph_hash)
                })
            })
            .take(query.limit as usize + 1)
            .collect();
        Ok(graph_version_page(rows, query))
    }
}

memory_mutant!(
    /// Reports a corrupt run as absent.
    CorruptAsAbsent
);

#[async_trait]
impl StoreLayer for CorruptAsAbsent {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        absent_if_corrupt(self.inner.fetch_run(scope, run_id).await)
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        absent_if_corrupt(self.inner.inspect_run(scope, run_id).await)
    }
}

fn absent_if_corrupt<T>(result: Result<T, StoreError>) -> Result<T, StoreError> {
    match result {
        Err(error) if error.kind() == StoreErrorKind::Corrupt => Err(StoreError::NotFound),
        other => other,
    }
}

memory_mutant!(
    /// Ignores the cap of a non-poisoning abandon's exponential backoff.
    UncappedBackoff
);

#[async_trait]
impl StoreLayer for UncappedBackoff {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        let mut policy = *policy;
        if let AbandonMode::NonPoisoning {
            backoff: Some(backoff),
        } = &mut policy.mode
        {
            backoff.cap_ms = u64::MAX / 2;
        }
        self.inner.abandon_claim(run_id, token, &policy).await
    }
}

memory_mutant!(
    /// Deletes old runs with their events but does not count the cascaded events.
    UncountedCascade
);

#[async_trait]
impl StoreLayer for UncountedCascade {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        let mut report = self.inner.prune(policy).await?;
        report.cascade_events_deleted = 0;
        Ok(report)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_accepting_foreign_content_under_an_address_is_caught() {
    assert_cases_catch::<AcceptsForeignContent>(
        "accepts foreign content",
        &[(
            "graphs",
            "saving_over_different_stored_content_is_a_content_conflict",
        )],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_dropping_the_hash_filter_beside_the_id_filter_is_caught() {
    assert_cases_catch::<DropsHashBesideId>(
        "drops the hash filter",
        &[("reads", "run_listing_by_graph_id_and_hash_applies_both")],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_filtering_only_the_first_page_is_caught() {
    assert_cases_catch::<FiltersFirstPageOnly>(
        "filters the first page only",
        &[("reads", "run_filters_hold_on_every_page")],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_matching_run_graph_ids_by_prefix_is_caught() {
    assert_cases_catch::<PrefixRunFilter>(
        "graph id filter by prefix",
        &[("reads", "run_listing_by_graph_id_is_an_exact_match")],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_matching_graph_version_ids_by_prefix_is_caught() {
    assert_cases_catch::<PrefixGraphReads>(
        "graph versions by prefix",
        &[("graphs", "version_reads_match_the_graph_id_exactly")],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_reporting_a_corrupt_run_as_absent_is_caught_twice() {
    assert_cases_catch::<CorruptAsAbsent>(
        "corrupt as absent",
        &[
            (
                "bad_input",
                "a_corrupt_run_is_corrupt_on_every_read_and_not_contagious",
            ),
            (
                "bad_input",
                "a_corrupt_tenant_run_is_corrupt_in_scope_and_concealed_outside",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_ignoring_the_backoff_cap_is_caught_twice() {
    assert_cases_catch::<UncappedBackoff>(
        "uncapped backoff",
        &[
            (
                "handback",
                "non_poisoning_abandons_back_off_exponentially_to_the_cap",
            ),
            ("handback", "non_poisoning_backoff_never_exceeds_its_cap"),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_not_counting_cascaded_events_is_caught_by_name() {
    assert_cases_catch::<UncountedCascade>(
        "uncounted cascade",
        &[(
            "pruning",
            "a_deleted_runs_remaining_events_count_as_cascade",
        )],
    )
    .await;
}
