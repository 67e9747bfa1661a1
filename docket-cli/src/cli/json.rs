//! JSON renderings of runs, summaries and events for `--json` output.

use serde_json::{json, Value};

use docket::core::model::{InterruptStatus, RunInfo, RunSummary, Timestamp};

fn time(t: Option<Timestamp>) -> Value {
    t.map_or(Value::Null, |t| Value::String(t.to_rfc3339()))
}

/// A run summary as listed.
pub fn summary(s: &RunSummary) -> Value {
    json!({
        "id": s.id.as_str(),
        "graph_id": s.graph_id.as_str(),
        "graph_hash": s.graph_hash.as_str(),
        "status": s.status.as_str(),
        "step": s.step,
        "checkpoint_seq": s.checkpoint_seq,
        "started_at": s.started_at.to_rfc3339(),
        "updated_at": s.updated_at.to_rfc3339(),
        "finished_at": time(s.finished_at),
    })
}

/// Ids of a run's open interrupts, sorted.
pub fn open_interrupts(info: &RunInfo) -> Vec<String> {
    info.run
        .interrupts
        .values()
        .filter(|i| i.status == InterruptStatus::Open)
        .map(|i| i.id.clone())
        .collect()
}

/// A run document plus its operational state (never the claim token).
pub fn run_info(info: &RunInfo) -> Value {
    json!({
        "run": serde_json::to_value(&info.run).unwrap_or(Value::Null),
        "wake_at": time(info.wake_at),
        "claimed_at": time(info.claimed_at),
        "claim_attempts": info.claim_attempts,
        "claim_abandons": info.claim_abandons,
        "poisoned_at": time(info.poison.map(|p| p.poisoned_at)),
        "poison_reason": info.poison.map(|p| p.reason.as_str()),
        "open_interrupts": open_interrupts(info),
    })
}
