//! The JSON shapes of runs shared by the API and the live page updates.

use serde_json::{json, Value};

use docket::core::model::{RunInfo, RunSummary};

use crate::facts::when;

/// A run's summary row.
#[must_use]
pub fn summary_json(s: &RunSummary) -> Value {
    json!({
        "run_id": s.id.as_str(),
        "tenant": s.owner.tenant_id().map(|t| t.as_str()),
        "graph_id": s.graph_id.as_str(),
        "graph_hash": s.graph_hash.as_str(),
        "status": s.status.as_str(),
        "step": s.step,
        "checkpoint_seq": s.checkpoint_seq,
        "started_at": s.started_at.to_rfc3339(),
        "updated_at": s.updated_at.to_rfc3339(),
        "finished_at": when(s.finished_at),
    })
}

/// A run's document with its operational state (never a claim token: [`RunInfo`] has none).
#[must_use]
pub fn run_json(info: &RunInfo) -> Value {
    json!({
        "run": info.run,
        "tenant": info.owner.tenant_id().map(|t| t.as_str()),
        "operational": {
            "wake_at": when(info.wake_at),
            "claimed_at": when(info.claimed_at),
            "claim_attempts": info.claim_attempts,
            "claim_abandons": info.claim_abandons,
            "poison": info.poison.as_ref().map(|p| json!({
                "poisoned_at": p.poisoned_at.to_rfc3339(),
                "reason": p.reason.as_str(),
            })),
            "admitted_at": when(info.admitted_at),
        },
    })
}
