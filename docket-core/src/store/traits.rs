//! The store traits (`docs/storage-contract.md`).
//!
//! # Contract shared by every method
//!
//! * Time is the caller's: every method that stamps a time takes `now` (the engine's
//!   [`crate::model::Clock`]), so one manual clock drives every backend in tests.
//! * Scopes conceal: a row owned by another tenant is [`StoreError::NotFound`], exactly like an
//!   unknown id (except `initialize`, where run ids are global and a taken id is `Conflict`).
//! * Corruption is loud: a stored record that cannot be decoded or breaks an invariant is
//!   [`StoreError::Corrupt`] / [`StoreError::CorruptGraph`], never "absent".
//! * Rejected writes change nothing: after any error from a write, the store is unchanged.
//!
//! # Cancel safety
//!
//! Reads are cancel safe. Writes are not: a write future dropped after it was sent may or may
//! not have been applied. Callers resolve that by re-reading (`docs/engine.md`,
//! “Ambiguous commits”), never by blindly retrying.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::stream::BoxStream;

use crate::graph::GraphDocument;
use crate::model::{
    ClaimToken, Event, EventPage, EventQuery, GraphId, GraphRef, GraphVersionPage,
    GraphVersionQuery, OwnerScope, Run, RunId, RunInfo, RunPage, RunQuery, Scope, TenantId,
    Timestamp,
};

use crate::ops::OpsLifecycleRegistry;

use super::claim::{AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimRequest, TenantShare};
use super::error::StoreError;
use super::proposal::{BatchedCommit, BatchedInit, ClaimedCommit, InitProposal, UnclaimedCommit};
use super::prune::{PrunePolicy, PruneReport};

/// A stream of "something may have become due" hints. Polling stays the correctness
/// mechanism; a lost hint costs latency only.
pub type Wakeups = BoxStream<'static, ()>;

/// Durable runs: the three transitions (the only write path for run documents), reads,
/// claims, events and retention.
#[async_trait]
pub trait RunStore: Send + Sync + Debug + 'static {
    /// Inserts a freshly initialized run with its events, atomically.
    ///
    /// Validation order: proposal (`run_initialized`, `running`, `checkpoint_seq ≥ 1`, durable
    /// document, events) → graph `(owner, graph_id, graph_hash)` exists → run id unused in
    /// any scope. The row starts unclaimed with `wake_at = proposal.wake_at`, zero counters and
    /// no poison.
    ///
    /// Decided by `rules::transition::Init`; checked by the conformance families `transitions`,
    /// `events` and `scopes`.
    ///
    /// # Errors
    /// `InvalidTransition` (malformed), `EventConflict` (contradictory duplicate events),
    /// `NotFound` (graph absent in `owner`), `Conflict` (run id taken), infrastructure errors.
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError>;

    /// Initializes several runs as one batch — for a store, one transaction where it can —
    /// while every member is decided on its own.
    ///
    /// The answer has one outcome per member, in order, and each is exactly what
    /// [`RunStore::initialize`] would have answered for that member had the members been
    /// initialized one after another in order. In particular, when two members carry the same
    /// run id, the first is decided normally and the second is `Conflict` (the id is taken by
    /// then). A member that fails — malformed, graph absent, run id taken — fails alone: it
    /// writes nothing, and never changes or reorders its neighbours' outcomes. When the batch
    /// fails as a whole before its outcome is known (a connection lost during the final
    /// commit), every member that may have landed is `Ambiguous`; the caller resolves it by
    /// re-reading the run, as for a single `initialize`.
    ///
    /// The default initializes the members one by one with [`RunStore::initialize`], so a
    /// store gains nothing from overriding it unless it can share one durable write between
    /// members. `Docket::start_runs` calls it. Each member is decided by
    /// `rules::transition::Init`; checked by the conformance family `bulk_start`.
    ///
    /// # Errors
    /// None for the call itself: each member's outcome carries its own error.
    ///
    /// # Cancel safety
    /// Not cancel safe, like every write: a dropped batch may have committed any prefix of
    /// its winners.
    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        let mut outcomes = Vec::with_capacity(members.len());
        for BatchedInit {
            owner,
            proposal,
            events,
        } in members
        {
            outcomes.push(self.initialize(&owner, proposal, events).await);
        }
        outcomes
    }

    /// Commits a moment under the double fence (claim token + `expected_seq`), atomically
    /// with its events and schedule; resets claim attempts, abandons and poison.
    ///
    /// Validation order (`docs/storage-contract.md`, “Validation order”), decided by
    /// `rules::transition::Commit`: proposal → lookup in `scope` → immutable identity (`id`,
    /// `graph_id`, `graph_hash`, `started_at`) → `checkpoint_seq` fence → claim-token fence →
    /// status matrix → events.
    ///
    /// Decided by `rules::transition::Commit` (writes from `Commit::committed_state`); checked
    /// by the conformance families `transitions`, `races` and `model`.
    ///
    /// # Errors
    /// `InvalidTransition`, `NotFound`, `StaleCheckpoint` (fence lost), `EventConflict`,
    /// infrastructure errors (`Ambiguous` when the outcome is unknown).
    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError>;

    /// Commits several claimed moments as one batch — for a store, one transaction, statement
    /// or round trip where it can — while every member keeps its own double fence.
    ///
    /// The answer has one outcome per member, in order, and each is exactly what
    /// [`RunStore::commit_claimed`] would have answered for that member had the members been
    /// committed one after another in order (so two members of one run chain like two
    /// calls). A member that fails — fence lost, invalid, conflicting events — fails alone: it
    /// writes nothing, and never changes, delays or reorders its neighbours' outcomes. When
    /// the batch fails as a whole before its outcome is known (a connection lost during the
    /// final commit), every member that may have landed is `Ambiguous`, resolved by the
    /// caller's re-read as for a single commit.
    ///
    /// The default commits the members one by one with [`RunStore::commit_claimed`], so a
    /// store gains nothing from overriding it unless it can share one durable write between
    /// members. The engine's group commit (`docs/engine.md`, “Group commit”) calls it with
    /// whatever commits are waiting. Each member is decided as by `commit_claimed`
    /// (`rules::transition::Commit`); checked by the conformance family `batches` and by the
    /// `model` family, which compares random batches with one-by-one commits.
    ///
    /// # Errors
    /// None for the call itself: each member's outcome carries its own error.
    ///
    /// # Cancel safety
    /// Not cancel safe, like every write: a dropped batch may have committed any prefix of
    /// its winners.
    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        let mut outcomes = Vec::with_capacity(commits.len());
        for BatchedCommit {
            scope,
            proposal,
            events,
        } in commits
        {
            outcomes.push(self.commit_claimed(&scope, proposal, events).await);
        }
        outcomes
    }

    /// How many claimed commits this store would like the engine's group commit to send per
    /// [`RunStore::commit_claimed_batch`] call when the worker's configuration leaves the
    /// choice to the store (`WorkerConfig::max_commit_batch` unset). The default, 1, sends
    /// every commit alone: right for a store whose batch costs about what its members cost
    /// one by one. A store whose members share one durable write that dominates a commit
    /// (one fsync per transaction) says more. A hint, not a rule: any batch size must be
    /// handled correctly, and the worker's own setting wins.
    fn preferred_commit_batch(&self) -> usize {
        1
    }

    /// Commits a signal's moment under an optimistic `checkpoint_seq` CAS; always releases any
    /// claim (fencing out an in-flight holder) and resets counters and poison.
    ///
    /// Decided by `rules::transition::Commit`; checked by the conformance families
    /// `transitions` (signals), `races` and `model`.
    ///
    /// # Errors
    /// As [`RunStore::commit_claimed`], with `StaleCheckpoint` meaning the seq moved.
    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError>;

    /// The exact last committed document.
    ///
    /// Checked by the conformance families `reads` and `scopes` (and `bad_input` for corrupt
    /// rows).
    ///
    /// # Errors
    /// `NotFound` (unknown or other tenant), `Corrupt`, infrastructure errors.
    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError>;

    /// The document plus its operational projection (never the claim token).
    ///
    /// Checked by the conformance families `reads` and `scopes`.
    ///
    /// # Errors
    /// As [`RunStore::fetch_run`].
    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError>;

    /// Runs newest first by `(started_at, run_id)`, filtered in the store, summaries only.
    ///
    /// Decided by `rules::queries::validate_run_query` and `run_page`; checked by the
    /// conformance family `reads`.
    ///
    /// # Errors
    /// `InvalidArgument` (limit 0 or above the maximum, empty status filter), infrastructure.
    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError>;

    /// Atomically selects and claims (or poisons) at most `policy.limit` due runs, following
    /// the class reservation and preference rules of `docs/claim-order.md`. Always system work.
    ///
    /// Decided by `rules::claim_pass::claim_pass` (order: `rules::claim_order`); checked by the
    /// conformance families `claims`, `races` and `model`.
    ///
    /// # Errors
    /// Infrastructure errors only; nothing is claimed on error.
    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError>;

    /// Releases the claim if `token` is current (`wake_at = now`, attempts unchanged);
    /// otherwise does nothing. Idempotent.
    ///
    /// Decided by `rules::effects::apply_release`; checked by the conformance family
    /// `handback`.
    ///
    /// # Errors
    /// Infrastructure errors only.
    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError>;

    /// Hands a claim back before its first commit (`docs/state-machines.md`,
    /// “Operational transitions”): fenced on token and `policy.expected_seq`; decrements attempts;
    /// reschedules or poisons.
    ///
    /// Decided by `rules::effects::validate_abandon_policy` and `apply_abandon`; checked by the
    /// conformance families `handback` and `model`.
    ///
    /// # Errors
    /// `InvalidArgument` (`retry_at < now`), infrastructure. A stale fence is `Ok(Stale)`.
    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError>;

    /// Recovers a poisoned run (wake now, counters zeroed); a healthy live run is returned
    /// unchanged. Changes no document and consumes no sequence.
    ///
    /// Decided by `rules::effects::apply_retry_poisoned`; checked by the conformance families
    /// `handback` and `model`.
    ///
    /// # Errors
    /// `InactiveRun` (terminal, checked first), `NotFound`, infrastructure.
    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError>;

    /// Stores `share` as `tenant`'s weight and cap for [`ClaimPolicy::TenantFair`] claims
    /// (replacing an earlier one; storing the default share is the same as storing none).
    /// Always system work; takes effect from the next claim on, and a lowered cap takes
    /// nothing away from runs already claimed.
    ///
    /// Checked by the conformance family `fairness`.
    ///
    /// [`ClaimPolicy::TenantFair`]: crate::store::ClaimPolicy::TenantFair
    ///
    /// # Errors
    /// Infrastructure errors only; nothing is stored on error.
    async fn set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError>;

    /// Every stored tenant share, by tenant id in byte order.
    ///
    /// Checked by the conformance family `fairness`.
    ///
    /// # Errors
    /// `Corrupt` (a stored share that does not decode), infrastructure.
    async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, StoreError>;

    /// One event.
    ///
    /// Checked by the conformance family `events`.
    ///
    /// # Errors
    /// `NotFound` (run not visible, or seq absent or pruned), `Corrupt`, infrastructure.
    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError>;

    /// The newest retained event, or `None` for a visible run with none retained.
    ///
    /// Checked by the conformance family `events`.
    ///
    /// # Errors
    /// `NotFound`, `Corrupt` (a corrupt newest row is never skipped), infrastructure.
    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError>;

    /// Events with `seq > after_seq`, ascending, with retained bounds from one snapshot.
    ///
    /// Decided by `rules::queries::validate_event_query` and `event_page`; checked by the
    /// conformance families `events` and `races`.
    ///
    /// # Errors
    /// `NotFound`, `InvalidArgument` (limit), `Corrupt`, infrastructure.
    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError>;

    /// One retention pass (events by age, terminal runs by age, unreferenced old graph
    /// versions); at most one pass runs at a time per store.
    ///
    /// Decided by `rules::queries::validate_prune_policy`; checked by the conformance families
    /// `pruning` and `model`.
    ///
    /// # Errors
    /// `InvalidArgument` (event retention above run retention), infrastructure.
    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError>;

    /// A fresh subscription to wake hints, if the backend offers them.
    ///
    /// Checked by the conformance family `wakeups` (on the harness's declared capability).
    fn wakeups(&self) -> Option<Wakeups>;

    /// The operation registry of this store value, if it offers one. Every built-in backend
    /// does (the registry lives in the same database, behind the same connections, under the
    /// same migrations); a custom store that implements only the run and graph traits keeps
    /// the default `None` and needs no change.
    ///
    /// It lives here rather than on [`Backend`] because `Backend` is implemented for every
    /// `RunStore + GraphStore`; callers holding an `Arc<dyn Backend>` call it all the same.
    fn ops_registry(&self) -> Option<&dyn OpsLifecycleRegistry> {
        None
    }
}

/// Content-addressed graph versions, owner-scoped.
#[async_trait]
pub trait GraphStore: Send + Sync + Debug + 'static {
    /// Stores an effective document under `graph_ref` (idempotent by content).
    ///
    /// The store re-encodes the document canonically and checks that it hashes to
    /// `graph_ref.graph_hash`. Saving identical content again keeps the original publication
    /// time; different content under the same address is refused.
    ///
    /// Decided by `rules::graph::encode_for_save`; checked by the conformance family `graphs`.
    ///
    /// # Errors
    /// `InvalidGraphDocument` (id mismatch), `InvalidGraphHash`, `GraphContentConflict`,
    /// infrastructure errors.
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError>;

    /// The stored effective document, re-verified against its hash.
    ///
    /// Decided by `rules::graph::decode_stored`; checked by the conformance family `graphs`.
    ///
    /// # Errors
    /// `NotFound`, `CorruptGraph` (never "absent"), infrastructure.
    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError>;

    /// The newest version of `graph_id` by `(published_at, graph_hash)`.
    ///
    /// Checked by the conformance family `graphs`.
    ///
    /// # Errors
    /// `NotFound`, infrastructure.
    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError>;

    /// Versions of `graph_id`, newest first, keyset-paged.
    ///
    /// Decided by `rules::queries::validate_graph_query` and `graph_version_page`; checked by
    /// the conformance family `graphs`.
    ///
    /// # Errors
    /// `InvalidArgument` (limit), infrastructure. An unknown id is an empty page.
    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError>;
}

/// One value implementing every store trait. Stores from different backends are never mixed,
/// because transitions need one transaction context.
pub trait Backend: RunStore + GraphStore {}

impl<T: RunStore + GraphStore + ?Sized> Backend for T {}
