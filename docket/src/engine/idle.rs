//! Is there anything left for a worker to do? (`docket worker --until-idle`.)

use docket_core::model::{Clock, RunQuery, RunStatus, Scope, MAX_PAGE_LIMIT};
use docket_core::store::{RunStore, StoreError};

/// Running runs by operational sub-state (`docs/state-machines.md`, “Operational sub-states”),
/// plus waiting runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleState {
    /// Unclaimed, healthy, wake due.
    pub due: u64,
    /// Claimed (live or expired).
    pub claimed: u64,
    /// Unclaimed, healthy, wake in the future.
    pub scheduled: u64,
    /// Poisoned (an operator must retry them).
    pub poisoned: u64,
    /// Waiting for a signal (only an interrupt resolution or a cancel moves them).
    pub waiting: u64,
}

impl IdleState {
    /// Nothing is due, claimed or scheduled: no worker can make progress by itself.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.due == 0 && self.claimed == 0 && self.scheduled == 0
    }
}

/// Counts every run of every owner (system work) by sub-state.
///
/// # Errors
/// Store errors from listing or inspecting.
pub async fn idle_state<S>(store: &S, clock: &dyn Clock) -> Result<IdleState, StoreError>
where
    S: RunStore + ?Sized,
{
    let now = clock.now();
    let mut state = IdleState::default();
    let mut query = RunQuery {
        limit: MAX_PAGE_LIMIT,
        statuses: Some(vec![RunStatus::Running, RunStatus::Waiting]),
        ..RunQuery::default()
    };
    loop {
        let page = store.list_runs(&Scope::System, &query).await?;
        for summary in &page.runs {
            if summary.status == RunStatus::Waiting {
                state.waiting += 1;
                continue;
            }
            let info = match store.inspect_run(&Scope::System, &summary.id).await {
                Ok(info) => info,
                // Finished and pruned between the list and the inspection.
                Err(StoreError::NotFound) => continue,
                Err(e) => return Err(e),
            };
            if info.run.status == RunStatus::Waiting {
                state.waiting += 1;
            } else if info.run.status.is_terminal() {
                continue;
            } else if info.is_poisoned() {
                state.poisoned += 1;
            } else if info.is_claimed() {
                state.claimed += 1;
            } else if info.wake_at.is_some_and(|w| w <= now) {
                state.due += 1;
            } else {
                state.scheduled += 1;
            }
        }
        if !page.has_more {
            return Ok(state);
        }
        query.before = page.next_before;
    }
}
