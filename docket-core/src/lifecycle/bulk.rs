//! `start_batch`: many runs' `run_initialized` moments through one
//! [`RunStore::initialize_batch`] call, each with its own outcome.

use crate::model::OwnerScope;
use crate::runtime::Moment;
use crate::store::{BatchedInit, InitProposal, RunStore, StoreError};

use super::composer::Lifecycle;
use super::error::LifecycleError;
use super::telemetry::store_operation;

impl Lifecycle {
    /// Initializes the runs of `moments` for `owner` with one
    /// [`RunStore::initialize_batch`] call, as [`Lifecycle::start`] initializes one run:
    /// same first wake, same store `now`, same after-commit work for each winner.
    ///
    /// Answers one outcome per moment, in order. A moment whose first wake is external or
    /// terminal fails alone with [`LifecycleError::UnschedulableStart`] and is not sent; every
    /// other moment gets the store's outcome for its member (two moments with one run id: the
    /// second is `Conflict`). Observers see only the winners.
    ///
    /// # Errors
    /// None for the call itself: each outcome carries its own error, as for
    /// [`Lifecycle::start`].
    ///
    /// # Cancel safety
    /// Not cancel safe: a dropped call may have committed any prefix of its winners without
    /// notifying observers; re-read the runs to find out.
    pub async fn start_batch<S>(
        &self,
        store: &S,
        owner: &OwnerScope,
        moments: Vec<Moment>,
    ) -> Vec<Result<Moment, LifecycleError>>
    where
        S: RunStore + ?Sized,
    {
        let mut outcomes: Vec<Option<Result<Moment, LifecycleError>>> =
            Vec::with_capacity(moments.len());
        let mut sent: Vec<(usize, Moment)> = Vec::new();
        let mut members = Vec::new();
        for (index, moment) in moments.into_iter().enumerate() {
            let Some(wake_at) = moment
                .disposition
                .unclaimed_wake()
                .wake_at(moment.proposed_at)
            else {
                outcomes.push(Some(Err(LifecycleError::UnschedulableStart {
                    disposition: moment.disposition.wake_disposition(),
                })));
                continue;
            };
            members.push(BatchedInit {
                owner: owner.clone(),
                proposal: InitProposal {
                    run: moment.run.clone(),
                    checkpoint_type: moment.checkpoint_type,
                    wake_at,
                    now: moment.proposed_at,
                },
                events: moment.events.clone(),
            });
            outcomes.push(None);
            sent.push((index, moment));
        }
        if !members.is_empty() {
            let answers = store_operation("transition_initialize_batch", async {
                Ok::<_, StoreError>(store.initialize_batch(members).await)
            })
            .await
            .unwrap_or_default();
            let mut answers = answers.into_iter();
            for (index, moment) in sent {
                let outcome = match answers.next() {
                    Some(Ok(run)) => {
                        let moment = Moment { run, ..moment };
                        self.announce_committed(&moment);
                        Ok(moment)
                    }
                    Some(Err(e)) => Err(LifecycleError::Store(e)),
                    // A store that answers fewer outcomes than members broke its contract;
                    // the missing members may or may not have landed.
                    None => Err(LifecycleError::Store(StoreError::ambiguous(
                        crate::store::Message("the store answered no outcome for this run".into()),
                    ))),
                };
                outcomes[index] = Some(outcome);
            }
        }
        outcomes
            .into_iter()
            // Every moment was answered above (refused, or sent and matched to an answer).
            .map(|o| {
                o.unwrap_or_else(|| {
                    Err(LifecycleError::Store(StoreError::ambiguous(
                        crate::store::Message("a run of the batch was left unanswered".into()),
                    )))
                })
            })
            .collect()
    }
}
