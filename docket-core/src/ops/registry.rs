//! The [`OpsLifecycleRegistry`] trait.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;

use crate::model::Timestamp;
use crate::store::Wakeups;

use super::error::OpsError;
use super::ids::{OperationId, SessionId};
use super::outcome::{OperationResult, OperationTerminalOutcome, OperationTransition};
use super::query::{OperationPage, OperationQuery};
use super::snapshot::{CompletedOperation, OperationLifecycleSnapshot};
use super::spec::OperationSpec;

/// The durable record of the long-lived operations each session owns, with one state machine
/// per operation (see [`crate::ops::rules::table`]) and exactly one winner per transition.
///
/// # Contract shared by every method
///
/// * **Owner-scoped.** Every call names its owner; a record belongs to the owner that
///   registered it, and another owner's record is `NotFound`, exactly like an unknown id.
/// * **Time is the caller's.** Writes take `now` and stamp it; nothing reads a clock.
/// * **Checks come first.** Arguments are checked (`InvalidArgument`) before anything is
///   read, then the owner's retired flag (`OwnerRetired`), then the record; the order is in
///   [`crate::ops::rules`]. A refused write writes nothing.
/// * **Atomic and durable.** Each write is one atomic step of the backend (one transaction,
///   statement or script): the from-set check, the owner's retired flag, the completion
///   sequence and retention are decided in the same step, so concurrent callers see one
///   linear history. When a write returns `Ok`, it is durable.
/// * **Completion sequences** are per owner, start at 1 and grow by exactly one per terminal
///   transition, in the order the transitions committed; never reused.
/// * **Corruption is loud**: a record that cannot be decoded is `Corrupt`, never "absent".
///
/// # Cancel safety
///
/// Reads are cancel safe. Writes are not: a write future dropped after it was sent may or
/// may not have been applied; find out with [`OpsLifecycleRegistry::operation_snapshot`],
/// never by blindly retrying. An `Ambiguous` error means the same.
///
/// # Implementing it
///
/// Eight methods are required; the named transitions are provided on top of
/// [`OpsLifecycleRegistry::transition_operation`]. A transition is naturally one conditional
/// write — "update where the status is in the action's from-set and the owner is not
/// retired, minting the owner's next completion sequence if the action ends the operation" —
/// followed, only when nothing matched, by a re-read that tells `NotFound`, `OwnerRetired` and
/// `InvalidTransition` apart.
#[async_trait]
pub trait OpsLifecycleRegistry: Send + Sync + Debug + 'static {
    /// Registers `spec` for `owner` in Provisioning, stamped `created_at = now`; with
    /// `max_concurrent`, only if the owner has fewer non-terminal operations than that
    /// (checked atomically with the insert: concurrent registrations never over-admit).
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner or id, empty or oversized display name, oversized source
    /// label, malformed custom kind or source, `max_concurrent == Some(0)`), `OwnerRetired`,
    /// `AlreadyRegistered` (the id is held by this owner in any status, including a retained
    /// terminal record), `MaxConcurrentExceeded { limit, active }`, infrastructure errors.
    async fn register_operation(
        &self,
        owner: &SessionId,
        spec: &OperationSpec,
        max_concurrent: Option<u32>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError>;

    /// Applies one transition to one operation and returns the record after it. An ending
    /// transition records its outcome, stamps `completed_at = now`, takes the owner's next
    /// completion sequence and evicts the owner's oldest terminal records beyond the
    /// retention limit, all in the same write.
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner or id, `Terminate` — which applies to a whole owner —, an
    /// outcome missing, superfluous or of another variant than the action's target status,
    /// oversized texts), `OwnerRetired`, `NotFound`, `InvalidTransition { id, status, action }`
    /// carrying the status the operation was in (for the loser of a race, the winner's),
    /// infrastructure errors.
    async fn transition_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError>;

    /// Terminates every non-terminal operation of `owner` with `Terminated { reason }`, in
    /// ascending id order (each taking the next completion sequence), in one write; terminal
    /// records are untouched. Returns what it terminated, in that order (empty for an owner
    /// with nothing live, or one never seen).
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner, oversized reason), `OwnerRetired`, infrastructure errors.
    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError>;

    /// Terminates the owner's live operations as [`OpsLifecycleRegistry::terminate_owner`]
    /// does and marks the owner retired, in one write. From then on every write for this
    /// owner is `OwnerRetired`; reads keep working. Retiring a retired owner changes nothing
    /// and returns an empty list.
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner, oversized reason), infrastructure errors.
    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError>;

    /// The record, or `None` when the owner holds no operation with this id.
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner or id), `Corrupt`, infrastructure errors.
    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError>;

    /// The owner's retained records (live and terminal), ascending by display name then id,
    /// keyset-paged (see [`crate::ops::query`]).
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner, limit outside `1..=MAX_PAGE_LIMIT`), `Corrupt`,
    /// infrastructure errors.
    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError>;

    /// Removes every terminal record of `owner` and returns them in completion order. Their
    /// ids may then be registered again; their sequences are never reused.
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner), `OwnerRetired`, `Corrupt`, infrastructure errors.
    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError>;

    /// Whether `owner` has been retired (an owner never seen is not).
    ///
    /// # Errors
    /// `InvalidArgument` (nil owner), infrastructure errors.
    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError>;

    /// A fresh subscription to "an operation may have turned terminal" hints, if the backend
    /// offers them. A hint is sent after the write is durable; a lost hint costs latency
    /// only, because [`OpsLifecycleRegistry::await_completion`] also polls.
    fn operation_wakeups(&self) -> Option<Wakeups> {
        None
    }

    /// Provisioning → Running, stamping `started_at = now`.
    ///
    /// Not idempotent: on a Running operation it is `InvalidTransition` (which
    /// [`crate::ops::rules::classify_transition_idempotence`] lets a caller treat as success).
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn provisioning_succeeded(
        &self,
        owner: &SessionId,
        id: &OperationId,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(
            owner,
            id,
            &OperationTransition::provisioning_succeeded(),
            now,
        )
        .await
    }

    /// Running or Retiring → Completed with `result`.
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn complete_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        result: OperationResult,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(owner, id, &OperationTransition::complete(result), now)
            .await
    }

    /// Provisioning, Running or Retiring → Failed with `error`.
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn fail_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        error: String,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(owner, id, &OperationTransition::fail(error), now)
            .await
    }

    /// Provisioning, Running or Retiring → Cancelled.
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn cancel_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        reason: Option<String>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(owner, id, &OperationTransition::cancel(reason), now)
            .await
    }

    /// Provisioning → Aborted (the operation never ran).
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn abort_provisioning(
        &self,
        owner: &SessionId,
        id: &OperationId,
        reason: Option<String>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(
            owner,
            id,
            &OperationTransition::abort_provisioning(reason),
            now,
        )
        .await
    }

    /// Running → Retiring (not terminal: the operation keeps running until it is marked
    /// retired, completes, fails or is cancelled).
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn request_retire(
        &self,
        owner: &SessionId,
        id: &OperationId,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(owner, id, &OperationTransition::request_retire(), now)
            .await
    }

    /// Running or Retiring → Retired.
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn mark_retired(
        &self,
        owner: &SessionId,
        id: &OperationId,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(owner, id, &OperationTransition::mark_retired(), now)
            .await
    }

    /// One more progress tick on a Running or Retiring operation (the status stays).
    ///
    /// # Errors
    /// As [`OpsLifecycleRegistry::transition_operation`].
    async fn report_progress(
        &self,
        owner: &SessionId,
        id: &OperationId,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.transition_operation(owner, id, &OperationTransition::report_progress(), now)
            .await
    }

    /// Resolves with the outcome once the operation is terminal (and therefore durable); at
    /// once when it already is. Woken by [`OpsLifecycleRegistry::operation_wakeups`] when the
    /// backend offers hints, and in any case re-reads every `poll_interval` (at least 1 ms).
    ///
    /// # Errors
    /// `NotFound` when the owner holds no such operation, now or at a later re-read (it was
    /// collected or evicted before this watch saw it end); the errors of
    /// [`OpsLifecycleRegistry::operation_snapshot`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    async fn await_completion(
        &self,
        owner: &SessionId,
        id: &OperationId,
        poll_interval: Duration,
    ) -> Result<OperationTerminalOutcome, OpsError> {
        super::watch::await_terminal(self, owner, id, poll_interval).await
    }
}
