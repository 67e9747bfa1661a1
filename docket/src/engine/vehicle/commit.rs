//! Step 4 of a drain: the fenced commit, and the resolution of an ambiguous one.

use std::time::Instant;

use docket_core::lifecycle::LifecycleError;
use docket_core::model::Run;
use docket_core::runtime::{Disposition, Moment};
use docket_core::store::rules::events::same_event;
use docket_core::store::StoreError;

use super::Drain;
use crate::engine::outcome::{DrainOutcome, VehicleError};
use crate::engine::stats::Counter;

/// What became of a proposed moment.
pub(super) enum Commit {
    /// Durable: continue from `run` or stop on the park.
    Committed {
        /// The committed run.
        run: Box<Run>,
        /// The committed disposition.
        disposition: Disposition,
    },
    /// Not committed; the claim was released.
    NotCommitted(DrainOutcome),
}

impl Drain<'_> {
    pub(super) async fn commit(
        &mut self,
        moment: Moment,
        expected_seq: u64,
    ) -> Result<Commit, VehicleError> {
        let disposition = moment.disposition;
        let started = Instant::now();
        let result = self
            .e
            .lifecycle
            .commit_moment(
                self.e.backend.as_ref(),
                &self.scope,
                moment,
                expected_seq,
                &self.lease.claim_token,
                self.e.clock.now(),
            )
            .await;
        match result {
            Ok(committed) => {
                self.stats().committed(Some(started.elapsed()));
                Ok(Commit::Committed {
                    run: Box::new(committed.run),
                    disposition,
                })
            }
            Err(error) => self.not_committed(error, expected_seq).await,
        }
    }

    /// Commits `first` and the moment after it, `last` (computed from `first`'s run without a
    /// node call), as one chain (`docs/engine.md`, “Chained completion”): one store call,
    /// each moment under its own fence. Answers as [`Drain::commit`] would have for the last
    /// moment that landed, or for the first that did not; `self.committed` counts `first`
    /// when only it landed.
    pub(super) async fn commit_chain(
        &mut self,
        first: Moment,
        last: Moment,
        expected_seq: u64,
    ) -> Result<Commit, VehicleError> {
        let disposition = last.disposition;
        let first_seq = first.run.checkpoint_seq;
        let started = Instant::now();
        let mut results = self
            .e
            .lifecycle
            .commit_moments(
                self.e.backend.as_ref(),
                &self.scope,
                vec![first, last],
                expected_seq,
                &self.lease.claim_token,
                self.e.clock.now(),
            )
            .await
            .into_iter();
        let (Some(first), Some(last)) = (results.next(), results.next()) else {
            return Err(self.invariant("the lifecycle answered a chain of two with fewer outcomes"));
        };
        match (first, last) {
            (Ok(_), Ok(committed)) => {
                self.stats().committed(Some(started.elapsed()));
                self.stats().committed(Some(started.elapsed()));
                self.committed += 1;
                Ok(Commit::Committed {
                    run: Box::new(committed.run),
                    disposition,
                })
            }
            (Ok(_), Err(error)) => {
                self.stats().committed(Some(started.elapsed()));
                self.committed += 1;
                self.not_committed(error, first_seq).await
            }
            (
                Err(LifecycleError::Ambiguous { source, moment }),
                Err(LifecycleError::Ambiguous { moment: last, .. }),
            ) => {
                // Both in doubt (the store call's answer was lost): the whole chain may have
                // landed, in which case the run stands at the last moment's checkpoint.
                if let Some(run) = self.landed(first_seq, &last).await {
                    for moment in [&*moment, &*last] {
                        self.stats().bump(Counter::AmbiguousResolved);
                        self.stats().committed(None);
                        self.e.lifecycle.announce_committed(moment);
                    }
                    tracing::info!(
                        result = "committed",
                        expected_seq,
                        "docket.vehicle.ambiguous"
                    );
                    self.committed += 1;
                    return Ok(Commit::Committed {
                        run: Box::new(run),
                        disposition,
                    });
                }
                self.resolve_ambiguous(expected_seq, *moment, source).await
            }
            (Err(error), _) => self.not_committed(error, expected_seq).await,
        }
    }

    /// What a moment built on `expected_seq` whose commit failed with `error` comes to.
    async fn not_committed(
        &mut self,
        error: LifecycleError,
        expected_seq: u64,
    ) -> Result<Commit, VehicleError> {
        let error = match error {
            LifecycleError::Ambiguous { source, moment } => {
                return self.resolve_ambiguous(expected_seq, *moment, source).await;
            }
            error => match error.as_store() {
                Some(store) => store.clone(),
                None => StoreError::invalid_transition(error.to_string()),
            },
        };
        match error {
            // The store says the proposal itself is wrong for a run we hold: never discard
            // silently; stop and let the claim expire.
            StoreError::InvalidTransition { .. } | StoreError::NotFound => {
                Err(self.invariant(format!("the store rejected the claimed commit: {error}")))
            }
            StoreError::StaleCheckpoint => {
                self.stats().bump(Counter::FenceLoss);
                tracing::info!(stage = "commit", expected_seq, "docket.claim.fence_lost");
                Ok(Commit::NotCommitted(
                    self.release(DrainOutcome::Discarded(error)).await?,
                ))
            }
            other => self.discard(other).await,
        }
    }

    async fn discard(&self, error: StoreError) -> Result<Commit, VehicleError> {
        self.stats().bump(Counter::Discard);
        tracing::info!(stage = "commit", reason = ?error.kind(), "docket.vehicle.discard");
        Ok(Commit::NotCommitted(
            self.release(DrainOutcome::Discarded(error)).await?,
        ))
    }

    /// The commit was sent but its acknowledgement was lost: a re-read ([`Drain::landed`])
    /// decides. Never retried blindly: a retry of a landed commit would be a stale-fence loss
    /// at best.
    async fn resolve_ambiguous(
        &self,
        expected_seq: u64,
        moment: Moment,
        error: StoreError,
    ) -> Result<Commit, VehicleError> {
        let landed = self.landed(expected_seq, &moment).await;
        match landed {
            Some(run) => {
                self.stats().bump(Counter::AmbiguousResolved);
                self.stats().committed(None);
                // The re-read proved the moment durable: observers and telemetry owe it.
                let moment = Moment { run, ..moment };
                self.e.lifecycle.announce_committed(&moment);
                tracing::info!(
                    result = "committed",
                    expected_seq,
                    "docket.vehicle.ambiguous"
                );
                Ok(Commit::Committed {
                    disposition: moment.disposition,
                    run: Box::new(moment.run),
                })
            }
            None => {
                tracing::info!(
                    result = "not_committed",
                    expected_seq,
                    "docket.vehicle.ambiguous"
                );
                self.discard(error).await
            }
        }
    }

    /// The run as `moment` (built on `expected_seq`) left it, if a re-read proves that it
    /// landed: the run is exactly one checkpoint past `expected_seq` *and* the stored
    /// checkpoint event is the one proposed (a concurrent signal would also advance the seq).
    async fn landed(&self, expected_seq: u64, moment: &Moment) -> Option<Run> {
        let proposed = moment.events.last()?;
        let run = match self
            .e
            .backend
            .fetch_run(&self.scope, &self.lease.run_id)
            .await
        {
            Ok(run) if run.checkpoint_seq == expected_seq + 1 => run,
            _ => return None,
        };
        match self
            .e
            .backend
            .fetch_event(&self.scope, &self.lease.run_id, proposed.seq)
            .await
        {
            Ok(stored) if same_event(&stored, proposed) => Some(run),
            _ => None,
        }
    }
}
