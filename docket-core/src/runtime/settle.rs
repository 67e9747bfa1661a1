//! Settlement (`docs/runs-and-moments.md`, “Settlement”): turning a plan and its attempt results
//! into exactly one moment.
//!
//! Results are classified, validated once, sorted by node id and then decided, first match
//! winning: any permanent failure fails the run; any retry, or a partially dispatched
//! superstep, parks; otherwise the barrier commits the merged writes.

use std::collections::BTreeSet;

use serde_json::json;

use super::activation::{Activation, Superstep};
use super::barrier::barrier;
use super::classify::{classify, AttemptResult, Class};
use super::config::IdGenerator;
use super::error::{ErrorKind, Phase, RuntimeError};
use super::moment::Moment;
use super::plan::{check_graph, Plan};
use super::retry_park::retry_park;
use super::sequencing::EventEntry;
use super::terminal::{completion_moment, failure_moment};
use super::writes::{
    invalid_interrupt_reason, invalid_update_reason, validate_interrupt, validate_update,
};
use crate::graph::RuntimeGraph;
use crate::model::{EventType, Failure, PendingWrite, PendingWriteKind, Run, Timestamp, ValueMap};

/// Settles `plan` (with the results of its dispatched activations) into a moment at `now`.
///
/// `Complete` and `Fail` plans take no results. `ids` mints interrupt ids the nodes did not
/// choose.
///
/// # Errors
/// [`ErrorKind::InvalidOptions`] when the plan has nothing to settle (`Wait`, `Park`,
/// `Terminal`), belongs to another run or step, or the results do not match its activations
/// one to one; [`ErrorKind::GraphMismatch`] when `run` is not bound to `rtg`; an id generator
/// that cannot mint a fresh interrupt id.
pub fn settle(
    rtg: &RuntimeGraph,
    run: &Run,
    plan: &Plan,
    results: &[AttemptResult],
    now: Timestamp,
    ids: &dyn IdGenerator,
) -> Result<Moment, RuntimeError> {
    check_graph(rtg, run, Phase::Settle)?;
    match plan {
        Plan::Complete | Plan::Fail(_) if !results.is_empty() => Err(options(
            "a completion or failure plan takes no attempt results",
        )),
        Plan::Complete => Ok(completion_moment(rtg, run, now)),
        Plan::Fail(failure) => Ok(failure_moment(run, failure.clone(), Vec::new(), now)),
        Plan::Dispatch(superstep) => settle_superstep(rtg, run, superstep, results, now, ids),
        Plan::Wait { .. } | Plan::Park { .. } | Plan::Terminal => {
            Err(options("the plan has nothing to settle"))
        }
    }
}

/// A classified, validated attempt.
enum Settled<'a> {
    Final(&'a Activation, PendingWriteKind),
    Retry(&'a Activation, String),
    Permanent(&'a Activation, String),
}

fn settle_superstep(
    rtg: &RuntimeGraph,
    run: &Run,
    superstep: &Superstep,
    results: &[AttemptResult],
    now: Timestamp,
    ids: &dyn IdGenerator,
) -> Result<Moment, RuntimeError> {
    if superstep.run_id != run.id || superstep.step != run.step {
        return Err(options("the plan belongs to another run or step"));
    }
    let paired = pair(superstep, results)?;
    let mut taken: BTreeSet<String> = run
        .pending_writes
        .iter()
        .filter_map(|w| match &w.write {
            PendingWriteKind::Interrupt { interrupt } => interrupt.id.clone(),
            PendingWriteKind::Update { .. } => None,
        })
        .collect();
    let settled: Vec<Settled<'_>> = paired
        .into_iter()
        .map(
            |(activation, result)| match classify(activation, result.outcome.clone()) {
                Class::Ok(update) => match validate_update(rtg, &update) {
                    Ok(()) => {
                        Settled::Final(activation, PendingWriteKind::Update { value: update })
                    }
                    Err(reasons) => Settled::Permanent(activation, invalid_update_reason(&reasons)),
                },
                Class::Interrupt(interrupt) => {
                    match validate_interrupt(rtg, run, &activation.node_id, &interrupt, &mut taken)
                    {
                        Ok(interrupt) => {
                            Settled::Final(activation, PendingWriteKind::Interrupt { interrupt })
                        }
                        Err(reasons) => {
                            Settled::Permanent(activation, invalid_interrupt_reason(&reasons))
                        }
                    }
                }
                Class::Retry(reason) => Settled::Retry(activation, reason),
                Class::Permanent(reason) => Settled::Permanent(activation, reason),
            },
        )
        .collect();

    let mut finals = Vec::new();
    let mut retries = Vec::new();
    let mut permanents = Vec::new();
    for item in settled {
        match item {
            Settled::Final(a, write) => finals.push(PendingWrite {
                task_id: a.task_id.clone(),
                node_id: a.node_id.clone(),
                attempt: a.attempt,
                write,
            }),
            Settled::Retry(a, reason) => retries.push((a, reason)),
            Settled::Permanent(a, reason) => permanents.push(Failed {
                task_id: a.task_id.clone(),
                node_id: a.node_id.clone(),
                attempt: a.attempt,
                reason,
            }),
        }
    }

    if !permanents.is_empty() {
        let retried = retries
            .iter()
            .map(|(a, reason)| {
                node_failed(run.step, &a.node_id, &a.task_id, a.attempt, reason, false)
            })
            .collect();
        return Ok(fail_nodes(run, retried, &permanents, now));
    }
    if !retries.is_empty() || superstep.remaining_active {
        return Ok(retry_park(run, finals, &retries, now));
    }
    // The barrier: parked sibling results join the fresh ones, after re-validation (a corrupt
    // parked write fails the run like any permanent failure).
    let mut taken: BTreeSet<String> = finals
        .iter()
        .filter_map(|w| match &w.write {
            PendingWriteKind::Interrupt { interrupt } => interrupt.id.clone(),
            PendingWriteKind::Update { .. } => None,
        })
        .collect();
    let mut corrupt = Vec::new();
    let mut merged = finals;
    for write in &run.pending_writes {
        let checked = match &write.write {
            PendingWriteKind::Update { value } => validate_update(rtg, value)
                .map(|()| write.write.clone())
                .map_err(|r| invalid_update_reason(&r)),
            PendingWriteKind::Interrupt { interrupt } => {
                validate_interrupt(rtg, run, &write.node_id, interrupt, &mut taken)
                    .map(|interrupt| PendingWriteKind::Interrupt { interrupt })
                    .map_err(|r| invalid_interrupt_reason(&r))
            }
        };
        match checked {
            Ok(checked) => merged.push(PendingWrite {
                write: checked,
                ..write.clone()
            }),
            Err(reason) => corrupt.push(Failed {
                task_id: write.task_id.clone(),
                node_id: write.node_id.clone(),
                attempt: write.attempt,
                reason,
            }),
        }
    }
    if !corrupt.is_empty() {
        corrupt.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        return Ok(fail_nodes(run, Vec::new(), &corrupt, now));
    }
    merged.sort_by(|a, b| a.node_id.cmp(&b.node_id));
    barrier(rtg, run, merged, now, ids)
}

/// Pairs each activation (in node order) with its result.
fn pair<'a>(
    superstep: &'a Superstep,
    results: &'a [AttemptResult],
) -> Result<Vec<(&'a Activation, &'a AttemptResult)>, RuntimeError> {
    if results.len() != superstep.activations.len() {
        return Err(options(format!(
            "{} results for {} activations",
            results.len(),
            superstep.activations.len()
        )));
    }
    let mut activations: Vec<&Activation> = superstep.activations.iter().collect();
    activations.sort_by(|a, b| a.node_id.cmp(&b.node_id));
    activations
        .into_iter()
        .map(|activation| {
            let mut matching = results.iter().filter(|r| r.task_id == activation.task_id);
            match (matching.next(), matching.next()) {
                (Some(result), None)
                    if result.attempt == activation.attempt
                        && result.node_id == activation.node_id =>
                {
                    Ok((activation, result))
                }
                _ => Err(options(format!(
                    "no single result for attempt {} of task {}",
                    activation.attempt, activation.task_id
                ))),
            }
        })
        .collect()
}

/// A permanently failed attempt.
struct Failed {
    task_id: String,
    node_id: String,
    attempt: u32,
    reason: String,
}

fn fail_nodes(
    run: &Run,
    mut leading: Vec<EventEntry>,
    failed: &[Failed],
    now: Timestamp,
) -> Moment {
    let mut errors = ValueMap::new();
    for f in failed {
        leading.push(node_failed(
            run.step, &f.node_id, &f.task_id, f.attempt, &f.reason, true,
        ));
        errors.insert(f.node_id.clone(), json!(f.reason));
    }
    let nodes: Vec<&str> = failed.iter().map(|f| f.node_id.as_str()).collect();
    let (node_id, message) = match failed {
        [only] => (
            Some(only.node_id.clone()),
            format!("node {:?} failed: {}", only.node_id, only.reason),
        ),
        _ => (
            None,
            format!("{} nodes failed: {}", failed.len(), nodes.join(", ")),
        ),
    };
    let mut details = ValueMap::new();
    details.insert("nodes".into(), json!(nodes));
    details.insert("errors".into(), serde_json::Value::Object(errors));
    let failure = Failure {
        code: "node_failed".into(),
        message,
        node_id,
        details,
    };
    failure_moment(run, failure, leading, now)
}

/// A `node_failed` fact.
#[must_use]
pub fn node_failed(
    step: u64,
    node_id: &str,
    task_id: &str,
    attempt: u32,
    reason: &str,
    permanent: bool,
) -> EventEntry {
    EventEntry::new(EventType::NodeFailed, step)
        .node(node_id)
        .task(task_id)
        .with("attempt", attempt)
        .with("reason", reason)
        .with("permanent", permanent)
}

fn options(message: impl Into<String>) -> RuntimeError {
    RuntimeError::new(ErrorKind::InvalidOptions, Phase::Settle, message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::classify::AttemptOutcome;
    use crate::runtime::plan::plan;
    use crate::runtime::testing::{rtg, set, started, t};
    use crate::runtime::SequentialIds;

    fn setup() -> (RuntimeGraph, Run, Plan) {
        let g = rtg(json!({
            "nodes": {"a": set(json!({})), "b": set(json!({}))},
            "edges": {"e0": {"from": "$start", "to": "a"}, "e1": {"from": "$start", "to": "b"}},
        }));
        let run = started(&g, json!({}));
        let p = plan(&g, &run, t(0), None).expect("plan");
        (g, run, p)
    }

    fn ok(p: &Plan) -> Vec<AttemptResult> {
        let Plan::Dispatch(s) = p else {
            panic!("dispatch")
        };
        s.activations
            .iter()
            .map(|a| AttemptResult::of(a, AttemptOutcome::Update(ValueMap::new())))
            .collect()
    }

    #[test]
    fn results_must_match_the_activations_one_to_one() {
        let (g, run, p) = setup();
        let ids = SequentialIds::new();
        let results = ok(&p);
        assert!(settle(&g, &run, &p, &results, t(1), &ids).is_ok());
        let err = settle(&g, &run, &p, &results[..1], t(1), &ids).expect_err("missing");
        assert_eq!(err.kind, ErrorKind::InvalidOptions);
        let mut wrong_attempt = results.clone();
        wrong_attempt[0].attempt = 2;
        assert!(settle(&g, &run, &p, &wrong_attempt, t(1), &ids).is_err());
        let mut duplicated = results.clone();
        duplicated[1] = duplicated[0].clone();
        assert!(settle(&g, &run, &p, &duplicated, t(1), &ids).is_err());
    }

    #[test]
    fn plans_without_a_moment_or_for_another_step_cannot_be_settled() {
        let (g, run, p) = setup();
        let ids = SequentialIds::new();
        for nothing in [
            Plan::Terminal,
            Plan::Wait {
                interrupt_ids: vec![],
            },
            Plan::Park {
                resume_at: t(0),
                wait_ms: 0,
            },
        ] {
            let err = settle(&g, &run, &nothing, &[], t(1), &ids).expect_err("nothing");
            assert_eq!(err.kind, ErrorKind::InvalidOptions);
        }
        assert!(settle(&g, &run, &Plan::Complete, &ok(&p), t(1), &ids).is_err());
        let mut later = run.clone();
        later.step = 3;
        assert!(settle(&g, &later, &p, &ok(&p), t(1), &ids).is_err());
    }

    #[test]
    fn settlement_happens_at_the_given_instant() {
        let (g, run, p) = setup();
        let moment = settle(&g, &run, &p, &ok(&p), t(9), &SequentialIds::new()).expect("barrier");
        assert_eq!(moment.run.updated_at, Some(t(9)));
        assert_eq!(moment.proposed_at, t(9));
        assert_eq!(moment.run.step, 1);
    }
}
