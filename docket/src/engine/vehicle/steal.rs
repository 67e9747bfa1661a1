//! Counting recoveries: did this lease take the run over from a holder that stopped without
//! releasing it (a crashed, killed or stalled worker)?
//!
//! The lease does not say which claim class it came from, so the vehicle infers it from what
//! it already knows, reading one event only in the rare case that needs it:
//!
//! * `claim_attempt ≥ 2`: the previous claim ended without committed progress — a holder that
//!   died before its first commit (or, rarely, a lease released unlaunched);
//! * otherwise the previous holder may have committed under its claim and then died: its last
//!   commit retained the claim (`wake_disposition = continue`, not the initialization), and
//!   the new claim is more than the orphan TTL after that commit — a steal is impossible
//!   sooner, so the extra read happens only for runs idle that long.
//!
//! The result feeds a counter only; it never changes what the vehicle does.

use docket_core::model::{CheckpointType, EventType, Run};

use super::Drain;
use crate::engine::stats::Counter;

impl Drain<'_> {
    pub(super) async fn detect_steal(&self, run: &Run) {
        let steal = if self.lease.claim_attempt >= 2 {
            true
        } else {
            let last_change = run.updated_at.unwrap_or(self.lease.claimed_at);
            self.lease.claimed_at.millis_since(last_change) > self.lease.orphan_ttl_ms
                && self.last_commit_retained_claim().await
        };
        if steal {
            self.stats().bump(Counter::RecoveredSteal);
            tracing::info!(
                claim_attempt = self.lease.claim_attempt,
                "docket.claim.recovered"
            );
        }
    }

    async fn last_commit_retained_claim(&self) -> bool {
        let Ok(Some(event)) = self
            .e
            .backend
            .fetch_latest_event(&self.scope, &self.lease.run_id)
            .await
        else {
            return false;
        };
        let text = |key: &str| event.metadata.get(key).and_then(|v| v.as_str());
        event.event_type == EventType::CheckpointCommitted
            && text("wake_disposition") == Some("continue")
            && text("checkpoint_type") != Some(CheckpointType::RunInitialized.as_str())
    }
}
