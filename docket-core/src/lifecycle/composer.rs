//! `start`, `commit_moment` and `signal` over any [`RunStore`].

use std::sync::Arc;

use tracing::Instrument;

use crate::model::{ClaimToken, OwnerScope, Run, RunId, Scope, Timestamp};
use crate::runtime::{Moment, Mutation};
use crate::store::{
    BatchedCommit, ClaimedCommit, InitProposal, RunStore, StoreError, UnclaimedCommit,
};

use super::error::{LifecycleError, SignalError};
use super::observer::{CheckpointObserver, Observers};
use super::telemetry::{
    committed, error_kind, store_operation, store_operation_all, transition_span,
};

/// Fetch → mutate → commit rounds a signal makes before giving up on `StaleCheckpoint`
/// (1 attempt + 3 retries).
pub const MAX_SIGNAL_ATTEMPTS: u32 = 4;

/// What a signal did.
#[derive(Clone, Debug, PartialEq)]
pub enum Signalled {
    /// The mutation's moment committed; its run is the committed document.
    Committed(Box<Moment>),
    /// The mutation decided nothing changes; nothing was written.
    Unchanged(Box<Run>),
}

impl Signalled {
    /// The run after the signal (committed or unchanged).
    #[must_use]
    pub fn run(&self) -> &Run {
        match self {
            Signalled::Committed(moment) => &moment.run,
            Signalled::Unchanged(run) => run,
        }
    }

    /// Consumes the outcome, returning the run after the signal.
    #[must_use]
    pub fn into_run(self) -> Run {
        match self {
            Signalled::Committed(moment) => moment.run,
            Signalled::Unchanged(run) => *run,
        }
    }

    /// Whether a moment was committed.
    #[must_use]
    pub fn is_committed(&self) -> bool {
        matches!(self, Signalled::Committed(_))
    }
}

/// The composer plus its after-commit observers.
///
/// Cheap to clone (observers are shared). `Lifecycle::default()` has no observers; the free
/// functions [`start`], [`commit_moment`] and [`signal`] use exactly that.
#[derive(Clone, Debug, Default)]
pub struct Lifecycle {
    observers: Observers,
}

impl Lifecycle {
    /// A composer without observers.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an observer that sees every checkpoint committed through this composer.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn CheckpointObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// How many observers are configured.
    #[must_use]
    pub fn observer_count(&self) -> usize {
        self.observers.len()
    }

    /// How many observer calls have failed (error, panic, or no runtime to run on) so far.
    #[must_use]
    pub fn observer_failures(&self) -> u64 {
        self.observers.failures()
    }

    /// Runs the after-commit work (telemetry, observers) for a moment the caller has proven
    /// durable by re-reading after an ambiguous commit ([`LifecycleError::Ambiguous`]). Never
    /// call it for a moment that may not have landed: observers must only see durable
    /// checkpoints.
    pub fn announce_committed(&self, moment: &Moment) {
        self.after_commit(moment);
    }

    fn after_commit(&self, moment: &Moment) {
        committed(moment);
        self.observers.notify(moment);
    }

    /// Initializes the run of `moment` (its `run_initialized` moment) for `owner`.
    ///
    /// The first wake comes from the unclaimed mapping: `continue`/`immediate` wake at the
    /// moment's `proposed_at`, `at(t)` at `t`. The store's `now` is `proposed_at`. Returns the
    /// committed moment.
    ///
    /// # Errors
    /// [`LifecycleError::UnschedulableStart`] for an external or terminal first wake (the
    /// store is not called); [`LifecycleError::Store`] with the store's error otherwise
    /// (`InvalidTransition`, `NotFound` for an unknown graph, `Conflict` for a taken run id, …).
    ///
    /// # Cancel safety
    /// Not cancel safe: a future dropped after the store call was sent may have committed
    /// without notifying observers. A retry then surfaces as `Conflict`; re-read the run.
    pub async fn start<S>(
        &self,
        store: &S,
        owner: &OwnerScope,
        moment: Moment,
    ) -> Result<Moment, LifecycleError>
    where
        S: RunStore + ?Sized,
    {
        let span = transition_span("start", &moment.run.id);
        let record = span.clone();
        let result = async move {
            let wake_at = moment
                .disposition
                .unclaimed_wake()
                .wake_at(moment.proposed_at)
                .ok_or(LifecycleError::UnschedulableStart {
                    disposition: moment.disposition.wake_disposition(),
                })?;
            let proposal = InitProposal {
                run: moment.run.clone(),
                checkpoint_type: moment.checkpoint_type,
                wake_at,
                now: moment.proposed_at,
            };
            let run = store_operation(
                "transition_initialize",
                store.initialize(owner, proposal, moment.events.clone()),
            )
            .await?;
            let moment = Moment { run, ..moment };
            self.after_commit(&moment);
            Ok(moment)
        }
        .instrument(span)
        .await;
        record.record("result", lifecycle_result_kind(&result));
        result
    }

    /// Commits a claim holder's `moment` built on `expected_seq`, fenced by `token`, with the
    /// schedule of the claimed mapping (`continue` retains the claim). `now` re-stamps a
    /// retained claim or sets an immediate wake. Returns the committed moment.
    ///
    /// # Errors
    /// [`LifecycleError::Store`]: `StaleCheckpoint` when the fence is lost (the holder must
    /// stop), `InvalidTransition`, `NotFound`, `EventConflict`, infrastructure errors
    /// (`Ambiguous`: re-read to learn whether it landed).
    ///
    /// # Cancel safety
    /// Not cancel safe: a future dropped after the store call was sent may have committed
    /// without notifying observers; re-read the run to find out.
    pub async fn commit_moment<S>(
        &self,
        store: &S,
        scope: &Scope,
        moment: Moment,
        expected_seq: u64,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<Moment, LifecycleError>
    where
        S: RunStore + ?Sized,
    {
        let span = transition_span("moment", &moment.run.id);
        let record = span.clone();
        let result = async move {
            let proposal = claimed_proposal(&moment, expected_seq, token, now);
            let run = match store_operation(
                "transition_commit_claimed",
                store.commit_claimed(scope, proposal, moment.events.clone()),
            )
            .await
            {
                Ok(run) => run,
                Err(source @ StoreError::Ambiguous { .. }) => {
                    return Err(LifecycleError::Ambiguous {
                        source,
                        moment: Box::new(moment),
                    })
                }
                Err(other) => return Err(other.into()),
            };
            let moment = Moment { run, ..moment };
            self.after_commit(&moment);
            Ok(moment)
        }
        .instrument(span)
        .await;
        record.record("result", lifecycle_result_kind(&result));
        result
    }

    /// Commits a claim holder's chain of moments — `moments[0]` built on `expected_seq`, each
    /// later one on the moment before it — as one [`RunStore::commit_claimed_batch`] call, so
    /// a store can write them with one durable write (one transaction, one pipeline). Each
    /// moment keeps its own double fence (`token`, and the seq of the moment before it) and
    /// gets its own outcome, exactly what [`Lifecycle::commit_moment`] would have answered
    /// for it had the moments been committed one after another; each moment that landed is
    /// announced to the observers, in order.
    ///
    /// Meant for a chain whose later moments need no node call (the engine chains a run's
    /// last barrier with its completion, `docs/engine.md`, “Chained completion”): computing
    /// a moment before the one it builds on is durable only makes sense when nothing
    /// outside the run's document is touched in between.
    ///
    /// # Errors
    /// Per moment, as [`Lifecycle::commit_moment`] (a moment after one that failed fails
    /// too: its fence names a checkpoint that was never written). A moment the store answered `Ambiguous` is reported landed when a later moment of the
    /// chain landed (that one's fence proves it), and stays `Ambiguous` otherwise.
    ///
    /// # Cancel safety
    /// Not cancel safe: a future dropped after the store call was sent may have committed
    /// any prefix of the chain without notifying observers; re-read the run to find out.
    pub async fn commit_moments<S>(
        &self,
        store: &S,
        scope: &Scope,
        moments: Vec<Moment>,
        expected_seq: u64,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Vec<Result<Moment, LifecycleError>>
    where
        S: RunStore + ?Sized,
    {
        let Some(first) = moments.first() else {
            return Vec::new();
        };
        let span = transition_span("moments", &first.run.id);
        let record = span.clone();
        let results = async move {
            let mut seq = expected_seq;
            let members: Vec<BatchedCommit> = moments
                .iter()
                .map(|moment| {
                    let member = BatchedCommit {
                        scope: scope.clone(),
                        proposal: claimed_proposal(moment, seq, token, now),
                        events: moment.events.clone(),
                    };
                    seq = moment.run.checkpoint_seq;
                    member
                })
                .collect();
            let count = members.len();
            let mut outcomes =
                store_operation_all("transition_commit_claimed_batch", store, members).await;
            outcomes.resize_with(count, || {
                Err(StoreError::ambiguous(crate::store::Message(
                    "the store answered fewer outcomes than the chain has moments".into(),
                )))
            });
            // A moment that landed proves every moment before it landed too: its fence named
            // the checkpoint of the one before, under this claim's token, which only that
            // moment of this chain writes. So an earlier `Ambiguous` is settled by a later
            // success.
            let proven = outcomes.iter().rposition(Result::is_ok);
            for (index, outcome) in outcomes.iter_mut().enumerate() {
                if proven.is_some_and(|last| index < last)
                    && matches!(outcome, Err(StoreError::Ambiguous { .. }))
                {
                    *outcome = Ok(moments[index].run.clone());
                }
            }
            let mut results = Vec::with_capacity(count);
            for (moment, outcome) in moments.into_iter().zip(outcomes) {
                let result = match outcome {
                    Ok(run) => {
                        let moment = Moment { run, ..moment };
                        self.after_commit(&moment);
                        Ok(moment)
                    }
                    Err(source @ StoreError::Ambiguous { .. }) => Err(LifecycleError::Ambiguous {
                        source,
                        moment: Box::new(moment),
                    }),
                    Err(other) => Err(other.into()),
                };
                results.push(result);
            }
            results
        }
        .instrument(span)
        .await;
        let kind = results
            .iter()
            .find(|r| r.is_err())
            .map_or("ok", lifecycle_result_kind);
        record.record("result", kind);
        results
    }

    /// Applies a signal: fetch the run in `scope` → `mutate` it → commit the resulting moment
    /// unclaimed at the fetched seq (which revokes any claim). Only a lost race
    /// (`StaleCheckpoint`) re-fetches and re-evaluates, at most [`MAX_SIGNAL_ATTEMPTS`] rounds
    /// in all. The store's `now` is the moment's `proposed_at`.
    ///
    /// `mutate` must be pure and bounded: it may run several times and always outside any
    /// lock. [`Mutation::Unchanged`] returns its run without writing.
    ///
    /// # Errors
    /// [`SignalError::Mutation`] when `mutate` refuses (nothing written);
    /// [`SignalError::InvalidMutation`] when it returns a run or moment of another run;
    /// [`SignalError::Store`] for fetch errors (`NotFound`, `Corrupt`, …), commit errors
    /// other than a lost race (surfaced at once, never retried), and `StaleCheckpoint` after
    /// the last round.
    ///
    /// # Cancel safety
    /// Not cancel safe: a future dropped after a commit was sent may have committed without
    /// notifying observers. Signals are idempotent in effect when re-run (the mutation sees
    /// the committed state), so re-signalling is the recovery.
    pub async fn signal<S, F, E>(
        &self,
        store: &S,
        scope: &Scope,
        run_id: &RunId,
        mut mutate: F,
    ) -> Result<Signalled, SignalError<E>>
    where
        S: RunStore + ?Sized,
        F: FnMut(&Run) -> Result<Mutation, E> + Send,
        E: Send,
    {
        let span = transition_span("signal", run_id);
        let record = span.clone();
        let result = async move {
            let mut round = 0;
            loop {
                round += 1;
                let current =
                    store_operation("run_fetch_for_transition", store.fetch_run(scope, run_id))
                        .await
                        .map_err(SignalError::Store)?;
                let moment = match mutate(&current).map_err(SignalError::Mutation)? {
                    Mutation::Unchanged(run) => {
                        check_same_run(run_id, &run.id)?;
                        return Ok(Signalled::Unchanged(run));
                    }
                    Mutation::Commit(moment) => moment,
                };
                check_same_run(run_id, &moment.run.id)?;
                let proposal = UnclaimedCommit {
                    run: moment.run.clone(),
                    checkpoint_type: moment.checkpoint_type,
                    wake: moment.disposition.unclaimed_wake(),
                    now: moment.proposed_at,
                };
                let outcome = store_operation(
                    "transition_commit_unclaimed",
                    store.commit_unclaimed(
                        scope,
                        current.checkpoint_seq,
                        proposal,
                        moment.events.clone(),
                    ),
                )
                .await;
                match outcome {
                    Ok(run) => {
                        let moment = Moment { run, ..*moment };
                        self.after_commit(&moment);
                        return Ok(Signalled::Committed(Box::new(moment)));
                    }
                    Err(StoreError::StaleCheckpoint) if round < MAX_SIGNAL_ATTEMPTS => {
                        tracing::debug!(round, "docket.lifecycle.signal.stale_retry");
                    }
                    Err(error) => return Err(SignalError::Store(error)),
                }
            }
        }
        .instrument(span)
        .await;
        record.record(
            "result",
            match &result {
                Ok(Signalled::Committed(_)) => "ok",
                Ok(Signalled::Unchanged(_)) => "skipped",
                Err(SignalError::Store(e)) => error_kind(e),
                Err(_) => "error",
            },
        );
        result
    }
}

/// The claimed commit of a holder's `moment` built on `expected_seq`, with the schedule of the
/// claimed mapping.
fn claimed_proposal(
    moment: &Moment,
    expected_seq: u64,
    token: &ClaimToken,
    now: Timestamp,
) -> ClaimedCommit {
    ClaimedCommit {
        run: moment.run.clone(),
        expected_seq,
        claim_token: token.clone(),
        checkpoint_type: moment.checkpoint_type,
        schedule: moment.disposition.claimed_schedule(),
        now,
    }
}

fn check_same_run<E>(expected: &RunId, got: &RunId) -> Result<(), SignalError<E>> {
    if expected == got {
        Ok(())
    } else {
        Err(SignalError::InvalidMutation {
            reason: format!("the mutation of run {expected} returned run {got}"),
        })
    }
}

fn lifecycle_result_kind(result: &Result<Moment, LifecycleError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(LifecycleError::Store(e) | LifecycleError::Ambiguous { source: e, .. }) => {
            error_kind(e)
        }
        Err(LifecycleError::UnschedulableStart { .. }) => "error",
    }
}

/// [`Lifecycle::start`] without observers.
///
/// # Errors
/// As [`Lifecycle::start`].
///
/// # Cancel safety
/// As [`Lifecycle::start`].
pub async fn start<S>(
    store: &S,
    owner: &OwnerScope,
    moment: Moment,
) -> Result<Moment, LifecycleError>
where
    S: RunStore + ?Sized,
{
    Lifecycle::default().start(store, owner, moment).await
}

/// [`Lifecycle::commit_moment`] without observers.
///
/// # Errors
/// As [`Lifecycle::commit_moment`].
///
/// # Cancel safety
/// As [`Lifecycle::commit_moment`].
pub async fn commit_moment<S>(
    store: &S,
    scope: &Scope,
    moment: Moment,
    expected_seq: u64,
    token: &ClaimToken,
    now: Timestamp,
) -> Result<Moment, LifecycleError>
where
    S: RunStore + ?Sized,
{
    Lifecycle::default()
        .commit_moment(store, scope, moment, expected_seq, token, now)
        .await
}

/// [`Lifecycle::signal`] without observers.
///
/// # Errors
/// As [`Lifecycle::signal`].
///
/// # Cancel safety
/// As [`Lifecycle::signal`].
pub async fn signal<S, F, E>(
    store: &S,
    scope: &Scope,
    run_id: &RunId,
    mutate: F,
) -> Result<Signalled, SignalError<E>>
where
    S: RunStore + ?Sized,
    F: FnMut(&Run) -> Result<Mutation, E> + Send,
    E: Send,
{
    Lifecycle::default()
        .signal(store, scope, run_id, mutate)
        .await
}
