//! The vehicle (`docs/engine.md`, “The vehicle”): drains one claim lease to its next park or stop.
//!
//! 1. **Claimed-run check**: the run the lease carries, else fetched in the lease's owner
//!    scope; a moved
//!    `checkpoint_seq` is fence loss (checked before status, so a run cancelled after the
//!    claim is fence loss, not an invariant violation); a non-running or missing run is a
//!    claim-invariant violation.
//! 2. **Graph**: cache, else fetch + compile + identity check; host policy check.
//! 3. **Advance loop**: propose (the first advance floors time at `lease.claimed_at`), narrow
//!    a continuing moment to a yield when the drain budget fired, commit under the double
//!    fence, continue while the disposition is `continue`.
//!
//! Errors end the vehicle *without* releasing: the claim expires and another worker recovers
//! the run from its last committed moment.

mod commit;
mod graph;
mod handback;
mod steal;

use std::sync::Arc;

use tokio::sync::watch;
use tracing::Instrument;

use docket_core::graph::RuntimeGraph;
use docket_core::model::{Run, RunStatus, Scope};
use docket_core::runtime::{
    plan, propose_advance, Disposition, Moment, ParkReason, Plan, Proposal,
};
use docket_core::store::{ClaimLease, StoreError};

use super::finishing::Finishing;
use super::outcome::{BudgetFired, DrainOutcome, Drained, VehicleError};
use super::stats::{Counter, WorkerStats};
use super::{Engine, EngineInner};

use commit::Commit;
use graph::GraphLoad;

/// Drains leases for one worker (or one manual drain). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Vehicle {
    engine: Engine,
    stats: Arc<WorkerStats>,
    use_cache: bool,
    stop: Option<watch::Receiver<bool>>,
    finishing: Option<Finishing>,
}

impl Vehicle {
    /// A vehicle of `engine` that records into `stats` and uses the engine's graph cache when
    /// the configuration enables it.
    #[must_use]
    pub fn new(engine: &Engine, stats: Arc<WorkerStats>) -> Self {
        Vehicle {
            use_cache: engine.config().graph_cache,
            engine: engine.clone(),
            stats,
            stop: None,
            finishing: None,
        }
    }

    /// Disables the graph cache (manual drains compile every time, `docs/engine.md`,
    /// “Bounded drains and testing modes”).
    #[must_use]
    pub fn without_cache(mut self) -> Self {
        self.use_cache = false;
        self
    }

    /// Makes the vehicle yield after its current moment once `stop` reads `true`.
    #[must_use]
    pub(crate) fn with_stop(mut self, stop: watch::Receiver<bool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Makes the vehicle announce its last commit of a drain to `finishing`, so its
    /// dispatcher claims the next run while that commit is in flight.
    #[must_use]
    pub(crate) fn with_finishing(mut self, finishing: Finishing) -> Self {
        self.finishing = Some(finishing);
        self
    }

    /// The counters this vehicle records into.
    #[must_use]
    pub fn stats(&self) -> &Arc<WorkerStats> {
        &self.stats
    }

    /// Drains `lease` to its next park or stop.
    ///
    /// # Errors
    /// [`VehicleError`] for claim-invariant violations, runtime errors and store failures
    /// where nothing could be released; the claim is then left to expire.
    ///
    /// # Cancel safety
    /// Dropping the future (a killed worker) abandons the drain mid-flight: a commit already
    /// sent may or may not land, and the claim is recovered by expiry — fencing makes either
    /// outcome safe.
    pub async fn drain(&self, lease: ClaimLease) -> Result<Drained, VehicleError> {
        let span = tracing::info_span!(
            "docket.vehicle",
            run_id = %lease.run_id,
            checkpoint_seq = lease.checkpoint_seq,
            claim_attempt = lease.claim_attempt,
        );
        let mut drain = Drain {
            e: self.engine.inner(),
            vehicle: self,
            scope: Scope::from(&lease.owner),
            lease,
            committed: 0,
            started_ms: None,
            announced: false,
        };
        async move {
            let result = drain.run().await;
            drain.finish(result)
        }
        .instrument(span)
        .await
    }
}

/// One drain in progress.
struct Drain<'a> {
    e: &'a EngineInner,
    vehicle: &'a Vehicle,
    lease: ClaimLease,
    scope: Scope,
    committed: u32,
    started_ms: Option<u64>,
    /// Whether the last commit has been announced to the dispatcher.
    announced: bool,
}

impl Drain<'_> {
    fn stats(&self) -> &WorkerStats {
        &self.vehicle.stats
    }

    fn invariant(&self, reason: impl Into<String>) -> VehicleError {
        VehicleError::ClaimInvariant {
            run_id: self.lease.run_id.clone(),
            reason: reason.into(),
        }
    }

    fn store_error(&self, error: StoreError) -> VehicleError {
        VehicleError::Store {
            run_id: self.lease.run_id.clone(),
            error,
        }
    }

    async fn run(&mut self) -> Result<(DrainOutcome, Option<BudgetFired>), VehicleError> {
        let Some(run) = self.claimed_run().await? else {
            return Ok((self.release(DrainOutcome::FenceLost).await?, None));
        };
        let rtg = match self.runtime_graph().await? {
            GraphLoad::Ready(rtg) => rtg,
            GraphLoad::Incompatible(reason) => return Ok((self.abandon(reason).await?, None)),
            GraphLoad::HostIncompatible(error) => {
                return Ok((self.host_incompatible(error).await?, None))
            }
        };
        self.started_ms = Some(self.e.monotonic.now_ms());
        self.advance(&rtg, run).await
    }

    /// Step 1: the run as committed, if the lease's fence still holds. The run the store
    /// handed over with the lease is used as it is (it is the run at the lease's checkpoint);
    /// without one, the run is read. A commit that lands between the claim and the first
    /// moment (a signal) is then found by that moment's fence instead of here.
    async fn claimed_run(&mut self) -> Result<Option<Run>, VehicleError> {
        let run = match self.lease.run.take() {
            Some(run) => run,
            None => match self
                .e
                .backend
                .fetch_run(&self.scope, &self.lease.run_id)
                .await
            {
                Ok(run) => run,
                Err(StoreError::NotFound) => {
                    return Err(self.invariant("the claimed run was not found"))
                }
                Err(e) => return Err(self.store_error(e)),
            },
        };
        if run.checkpoint_seq != self.lease.checkpoint_seq {
            self.stats().bump(Counter::FenceLoss);
            tracing::info!(
                stage = "pre_fetch",
                checkpoint_seq = run.checkpoint_seq,
                lease_seq = self.lease.checkpoint_seq,
                "docket.claim.fence_lost"
            );
            return Ok(None);
        }
        if run.status != RunStatus::Running {
            return Err(self.invariant(format!(
                "the claimed run is {} (seq {}), not running",
                run.status, run.checkpoint_seq
            )));
        }
        self.detect_steal(&run).await;
        Ok(Some(run))
    }

    /// Step 3: moment after moment until a park or a stop.
    async fn advance(
        &mut self,
        rtg: &RuntimeGraph,
        mut run: Run,
    ) -> Result<(DrainOutcome, Option<BudgetFired>), VehicleError> {
        let first = self
            .e
            .runtime
            .clone()
            .with_resume_floor(Some(self.lease.claimed_at));
        let mut config = &first;
        loop {
            let proposal = propose_advance(rtg, &run, &self.e.nodes, config)
                .await
                .map_err(|error| VehicleError::Runtime {
                    run_id: self.lease.run_id.clone(),
                    error,
                })?;
            config = &self.e.runtime;
            let moment = match proposal {
                Proposal::Moment(moment) => *moment,
                Proposal::Park { resume_at, .. } => {
                    return Ok((self.defer(resume_at).await?, None));
                }
                Proposal::Wait { interrupt_ids, .. } => {
                    return Err(self.invariant(format!(
                        "the claimed run is blocked on open interrupts {interrupt_ids:?}"
                    )))
                }
                Proposal::Terminal(run) => {
                    return Err(self.invariant(format!("the claimed run is already {}", run.status)))
                }
            };
            let (moment, fired) = self.maybe_yield(moment)?;
            let committed = match self.pure_successor(rtg, &moment).await {
                Some(last) => {
                    // A chain ends with the run's completion or failure: the drain's last.
                    self.announce_finishing();
                    self.commit_chain(moment, last, run.checkpoint_seq).await?
                }
                None => {
                    if moment.disposition != Disposition::Continue {
                        self.announce_finishing();
                    }
                    self.commit(moment, run.checkpoint_seq).await?
                }
            };
            match committed {
                Commit::Committed {
                    run: next,
                    disposition,
                } => {
                    self.committed += 1;
                    match disposition {
                        Disposition::Continue => {
                            self.withdraw_finishing();
                            run = *next;
                        }
                        Disposition::Park { kind, .. } => {
                            return Ok((DrainOutcome::Parked(kind), fired))
                        }
                    }
                }
                Commit::NotCommitted(outcome) => return Ok((outcome, None)),
            }
        }
    }

    /// Tells the dispatcher (once per drain) that the commit about to be sent is the drain's
    /// last: whatever it answers, the vehicle runs no more nodes.
    fn announce_finishing(&mut self) {
        if !self.announced {
            self.announced = true;
            if let Some(finishing) = &self.vehicle.finishing {
                finishing.announce();
            }
        }
    }

    /// Takes the announcement back when the drain continues after all.
    fn withdraw_finishing(&mut self) {
        if std::mem::take(&mut self.announced) {
            if let Some(finishing) = &self.vehicle.finishing {
                finishing.withdraw();
            }
        }
    }

    /// The moment that follows `moment` when it needs no node call — the completion or
    /// failure the run plans once `moment` is durable — so both can be committed as one chain
    /// (`docs/engine.md`, “Chained completion”). `None` for a moment that parks (a yield, a
    /// retry, a wait) and for a run whose next step runs nodes; `None` as well when planning
    /// the successor fails, which the next round of the loop then meets and reports as it
    /// always has.
    async fn pure_successor(&self, rtg: &RuntimeGraph, moment: &Moment) -> Option<Moment> {
        if moment.disposition != Disposition::Continue {
            return None;
        }
        let config = &self.e.runtime;
        match plan(
            rtg,
            &moment.run,
            config.floored_now(),
            config.max_supersteps(),
        ) {
            Ok(Plan::Complete | Plan::Fail(_)) => {}
            _ => return None,
        }
        // Planned `Complete` or `Fail`: settling it calls no node.
        match propose_advance(rtg, &moment.run, &self.e.nodes, config).await {
            Ok(Proposal::Moment(next)) => Some(*next),
            _ => None,
        }
    }

    /// Narrows a continuing moment to an immediate drain-budget park when the budget (or a
    /// shutdown) fired. Every other disposition wins untouched at the boundary.
    fn maybe_yield(&self, moment: Moment) -> Result<(Moment, Option<BudgetFired>), VehicleError> {
        if moment.disposition != Disposition::Continue {
            return Ok((moment, None));
        }
        let budget = &self.e.config.drain_budget;
        let count = budget
            .max_moments
            .is_some_and(|max| self.committed + 1 >= max);
        let started = self.started_ms.unwrap_or(0);
        let elapsed = self.e.monotonic.now_ms().saturating_sub(started) >= budget.max_elapsed_ms;
        let stopping = self.vehicle.stop.as_ref().is_some_and(|rx| *rx.borrow());
        let fired = match (count, elapsed) {
            (true, true) => BudgetFired::Both,
            (true, false) => BudgetFired::MaxMoments,
            (false, true) => BudgetFired::MaxElapsed,
            (false, false) if stopping => BudgetFired::Shutdown,
            (false, false) => return Ok((moment, None)),
        };
        let yielded =
            moment
                .yield_for(ParkReason::DrainBudget)
                .map_err(|error| VehicleError::Yield {
                    run_id: self.lease.run_id.clone(),
                    error,
                })?;
        Ok((yielded, Some(fired)))
    }

    /// Emits `docket.vehicle.drain` (or `docket.vehicle.crash`) and shapes the result.
    fn finish(
        &self,
        result: Result<(DrainOutcome, Option<BudgetFired>), VehicleError>,
    ) -> Result<Drained, VehicleError> {
        let elapsed_ms = self
            .started_ms
            .map_or(0, |s| self.e.monotonic.now_ms().saturating_sub(s));
        let claim_held_ms = self.e.clock.now().millis_since(self.lease.claimed_at);
        match result {
            Ok((outcome, budget)) => {
                tracing::info!(
                    outcome = outcome.kind(),
                    budget = budget.map(BudgetFired::as_str),
                    committed_moments = self.committed,
                    elapsed_ms,
                    claim_held_ms,
                    claim_attempt = self.lease.claim_attempt,
                    "docket.vehicle.drain"
                );
                Ok(Drained {
                    outcome,
                    committed_moments: self.committed,
                    budget,
                    elapsed_ms,
                })
            }
            Err(error) => {
                self.stats().bump(Counter::VehicleCrash);
                tracing::warn!(
                    error_kind = error.kind(),
                    error = %error,
                    committed_moments = self.committed,
                    claim_held_ms,
                    claim_attempt = self.lease.claim_attempt,
                    "docket.vehicle.crash"
                );
                Err(error)
            }
        }
    }
}
