//! Planning (`docs/runs-and-moments.md`, “Planning”): what the next commit boundary of a run is,
//! decided from committed state alone.
//!
//! [`plan`] never executes anything and never reads a clock: the caller passes `now`
//! (`max(clock(), resume_floor)` on the resume path, `docs/runs-and-moments.md`,
//! “The resume floor”).

use std::collections::BTreeSet;

use serde_json::json;

use super::activation::{Activation, PlannedSnapshot, Superstep};
use super::error::{ErrorKind, Phase, RuntimeError};
use super::state_view::state_view;
use crate::graph::RuntimeGraph;
use crate::model::{Failure, Run, RunStatus, Timestamp, ValueMap};

/// The next commit boundary of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Execute these activations, then settle their results.
    Dispatch(Superstep),
    /// Nothing left to run and no open interrupt: settle into the completion moment.
    Complete,
    /// Settle into a `run_failed` moment with this failure (plan-time failure).
    Fail(Failure),
    /// Only open interrupts remain; nothing to commit.
    Wait {
        /// Sorted ids of the open interrupts.
        interrupt_ids: Vec<String>,
    },
    /// An active superstep has no attempt due yet; nothing to commit.
    Park {
        /// The earliest retry deadline.
        resume_at: Timestamp,
        /// `max(resume_at − now, 0)` in milliseconds.
        wait_ms: u64,
    },
    /// The run is already terminal.
    Terminal,
}

/// Plans the next commit boundary of `run` at `now`.
///
/// `host_max_supersteps` bounds graphs that declare no `max_supersteps` policy; it is checked
/// on fresh plans only (an in-flight superstep was already admitted).
///
/// # Errors
/// [`ErrorKind::InvalidRun`] for a `created` run; [`ErrorKind::GraphMismatch`] when `run` is
/// bound to another graph than `rtg`.
pub fn plan(
    rtg: &RuntimeGraph,
    run: &Run,
    now: Timestamp,
    host_max_supersteps: Option<u64>,
) -> Result<Plan, RuntimeError> {
    check_graph(rtg, run, Phase::Plan)?;
    if run.status == RunStatus::Created {
        return Err(RuntimeError::new(
            ErrorKind::InvalidRun,
            Phase::Plan,
            "a created run must be initialized before it can advance",
        ));
    }
    if run.status.is_terminal() {
        return Ok(Plan::Terminal);
    }
    if run.has_active_superstep() {
        return Ok(resume(rtg, run, now));
    }
    Ok(fresh(rtg, run, host_max_supersteps))
}

/// Checks that `run` is bound to `rtg`'s graph id and hash.
///
/// # Errors
/// [`ErrorKind::GraphMismatch`].
pub fn check_graph(rtg: &RuntimeGraph, run: &Run, phase: Phase) -> Result<(), RuntimeError> {
    if run.graph_id != rtg.graph_id || run.graph_hash != rtg.graph_hash {
        return Err(RuntimeError::new(
            ErrorKind::GraphMismatch,
            phase,
            format!(
                "run {} is bound to {}@{}, not to {}",
                run.id, run.graph_id, run.graph_hash, rtg.id
            ),
        ));
    }
    Ok(())
}

/// Nodes owed an execution by the committed run (sorted public ids, possibly naming nodes the
/// graph does not know), and the sorted open interrupt ids.
#[must_use]
pub fn candidates(rtg: &RuntimeGraph, run: &Run) -> (Vec<String>, Vec<String>) {
    let open = run.open_interrupt_ids();
    let interrupted: BTreeSet<&str> = run
        .interrupts
        .values()
        .filter(|i| open.contains(&i.id))
        .map(|i| i.node_id.as_str())
        .collect();
    let mut out: BTreeSet<String> = run
        .pending_nodes
        .iter()
        .filter(|n| !interrupted.contains(n.as_str()))
        .cloned()
        .collect();
    for node in rtg.nodes.values() {
        if interrupted.contains(node.public_id.as_str()) {
            continue;
        }
        if node
            .subscribe
            .iter()
            .any(|c| run.changed_channels.contains(c))
        {
            out.insert(node.public_id.clone());
        }
    }
    (out.into_iter().collect(), open)
}

fn fresh(rtg: &RuntimeGraph, run: &Run, host_max_supersteps: Option<u64>) -> Plan {
    let (names, open) = candidates(rtg, run);
    if names.is_empty() {
        return if open.is_empty() {
            Plan::Complete
        } else {
            Plan::Wait {
                interrupt_ids: open,
            }
        };
    }
    if let Some(limit) = rtg.max_supersteps.or(host_max_supersteps) {
        if run.step >= limit {
            let mut details = ValueMap::new();
            details.insert("limit".into(), json!(limit));
            return Plan::Fail(Failure {
                code: "max_supersteps_exceeded".into(),
                message: format!("the run reached its limit of {limit} supersteps"),
                node_id: None,
                details,
            });
        }
    }
    let view = state_view(rtg, &run.channels, BTreeSet::new());
    let base = PlannedSnapshot::new(run.id.clone(), run.step, view.values, view.versions);
    let mut activations = Vec::with_capacity(names.len());
    for name in &names {
        let Some(node) = rtg.node(name) else {
            return Plan::Fail(unknown_node(name));
        };
        match node.resolved_policies() {
            Ok(policies) => activations.push(Activation::fresh(&base, node, policies)),
            Err(reasons) => return Plan::Fail(invalid_policy(name, reasons)),
        }
    }
    Plan::Dispatch(Superstep {
        run_id: run.id.clone(),
        step: run.step,
        activations,
        remaining_active: false,
    })
}

fn resume(rtg: &RuntimeGraph, run: &Run, now: Timestamp) -> Plan {
    let due = |task_id: &str| run.timers.get(task_id).is_none_or(|t| t.fires_at <= now);
    if !run.active_tasks.keys().any(|id| due(id)) {
        let resume_at = run.timers.values().map(|t| t.fires_at).min().unwrap_or(now);
        return Plan::Park {
            resume_at,
            wait_ms: resume_at.millis_since(now),
        };
    }
    let mut tasks: Vec<_> = run.active_tasks.values().collect();
    tasks.sort_by(|a, b| (&a.node_id, &a.task_id).cmp(&(&b.node_id, &b.task_id)));
    let mut activations = Vec::new();
    let mut remaining_active = false;
    // Every active task is rebuilt (so an unknown node or a broken policy fails the run even if
    // its attempt is not due yet); only the due ones are dispatched.
    for task in tasks {
        let Some(node) = rtg.node(&task.node_id) else {
            return Plan::Fail(unknown_node(&task.node_id));
        };
        let policies = match node.resolved_policies() {
            Ok(p) => p,
            Err(reasons) => return Plan::Fail(invalid_policy(&task.node_id, reasons)),
        };
        if due(&task.task_id) {
            activations.push(Activation::resumed(task, node, policies));
        } else {
            remaining_active = true;
        }
    }
    Plan::Dispatch(Superstep {
        run_id: run.id.clone(),
        step: run.step,
        activations,
        remaining_active,
    })
}

fn unknown_node(node_id: &str) -> Failure {
    Failure::from(
        &RuntimeError::new(
            ErrorKind::InvalidRun,
            Phase::Plan,
            format!("the run references node {node_id:?}, which the graph does not declare"),
        )
        .with_node(node_id),
    )
}

fn invalid_policy(node_id: &str, reasons: Vec<String>) -> Failure {
    Failure::from(
        &RuntimeError::new(
            ErrorKind::InvalidPolicy,
            Phase::Plan,
            format!(
                "node {node_id:?} has invalid policies: {}",
                reasons.join("; ")
            ),
        )
        .with_node(node_id)
        .with_detail("reasons", reasons),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{InterruptState, InterruptStatus, RunId};
    use crate::runtime::testing::{rtg, set, started, t};

    fn graph() -> RuntimeGraph {
        rtg(json!({
            "fields": {"x": {"schema": {"type": "integer"}}},
            "nodes": {"a": set(json!({"x": 1})), "b": set(json!({}))},
            "edges": {"e0": {"from": "$start", "to": "a"}, "e1": {"from": "a", "to": "b"}},
        }))
    }

    #[test]
    fn created_terminal_and_foreign_runs() {
        let g = graph();
        let run = started(&g, json!({}));
        let mut created = run.clone();
        created.status = RunStatus::Created;
        let err = plan(&g, &created, t(0), None).expect_err("created");
        assert_eq!(err.kind, ErrorKind::InvalidRun);
        let mut done = run.clone();
        done.status = RunStatus::Cancelled;
        assert_eq!(plan(&g, &done, t(0), None), Ok(Plan::Terminal));
        let mut foreign = run;
        foreign.graph_hash = crate::model::GraphHash::new("other").expect("hash");
        let err = plan(&g, &foreign, t(0), None).expect_err("foreign");
        assert_eq!(err.kind, ErrorKind::GraphMismatch);
    }

    #[test]
    fn candidates_skip_interrupted_nodes_and_include_owed_ones() {
        let g = graph();
        let mut run = started(&g, json!({}));
        assert_eq!(candidates(&g, &run), (vec!["a".to_owned()], vec![]));
        run.pending_nodes.insert("b".into());
        run.interrupts.insert(
            "i".into(),
            InterruptState {
                id: "i".into(),
                node_id: "a".into(),
                status: InterruptStatus::Open,
                resume_channel: "x".into(),
                schema: None,
                created_at: t(0),
                resolved_at: None,
                metadata: ValueMap::new(),
            },
        );
        assert_eq!(
            candidates(&g, &run),
            (vec!["b".to_owned()], vec!["i".to_owned()])
        );
    }

    #[test]
    fn an_owed_node_the_graph_does_not_know_fails_the_run() {
        let g = graph();
        let mut run = started(&g, json!({}));
        run.pending_nodes.insert("ghost".into());
        match plan(&g, &run, t(0), None) {
            Ok(Plan::Fail(failure)) => {
                assert_eq!(failure.code, "invalid_run");
                assert_eq!(failure.node_id.as_deref(), Some("ghost"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_graph_limit_wins_over_the_host_fallback() {
        let g = graph();
        let mut run = started(&g, json!({}));
        run.step = 2;
        assert!(matches!(plan(&g, &run, t(0), Some(2)), Ok(Plan::Fail(_))));
        assert!(matches!(
            plan(&g, &run, t(0), Some(3)),
            Ok(Plan::Dispatch(_))
        ));
        let mut bounded = g.clone();
        bounded.max_supersteps = Some(5);
        assert!(matches!(
            plan(&bounded, &run, t(0), Some(1)),
            Ok(Plan::Dispatch(_))
        ));
    }

    #[test]
    fn a_fresh_superstep_identifies_its_activations_from_committed_state() {
        let g = graph();
        let run = started(&g, json!({}));
        let Ok(Plan::Dispatch(step)) = plan(&g, &run, t(0), None) else {
            panic!("dispatch");
        };
        assert_eq!(step.run_id, RunId::new("run_1").expect("id"));
        assert!(!step.remaining_active);
        let a = &step.activations[0];
        assert_eq!(
            (a.task_id.as_str(), a.attempt, a.implementation.as_str()),
            ("run_1:0:a", 1, "set")
        );
        assert_eq!(a.source_versions.get("x"), Some(&0));
    }
}
