//! The executor (`docs/runs-and-moments.md`, “Executing a superstep”): runs the activations of one
//! superstep concurrently.
//!
//! Each activation is a tokio task in one [`JoinSet`], so no node sees another's same-step
//! writes and dropping the [`execute`] future aborts every in-flight attempt. Each attempt is
//! bounded by its effective timeout `min(node timeout_ms, max_attempt_elapsed_ms)`, enforced
//! by the collector (not by the attempt itself): an expired attempt's task is aborted and its
//! result is a retryable `timeout`. A panicking attempt is a retryable failure.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::{AbortHandle, Id, JoinSet};
use tokio::time::{sleep_until, Instant};

use super::{Node, NodeContext, NodeRegistry};
use crate::model::ValueMap;
use crate::runtime::{
    Activation, AttemptOutcome, AttemptResult, ErrorKind, Phase, RuntimeError, Superstep,
};

/// The reason recorded for an attempt that exceeded its effective timeout.
pub const TIMEOUT_REASON: &str = "timeout";

/// The effective timeout of an attempt: the node's explicit timeout capped by the host
/// ceiling.
#[must_use]
pub fn effective_timeout_ms(activation: &Activation, max_attempt_elapsed_ms: u64) -> u64 {
    activation
        .timeout_ms
        .map_or(max_attempt_elapsed_ms, |t| t.min(max_attempt_elapsed_ms))
}

/// Executes every activation of `superstep` concurrently and returns their results in
/// activation order.
///
/// Must be called inside a tokio runtime.
///
/// # Cancel safety
/// Dropping the returned future aborts every in-flight attempt; nothing is committed by this
/// function, so a dropped execution can simply be re-planned (attempts are replayable).
///
/// # Errors
/// [`ErrorKind::RuntimeUnavailable`] (before anything runs) when an activation names an
/// implementation `nodes` does not have: this host cannot execute the superstep.
pub async fn execute(
    superstep: &Superstep,
    nodes: &NodeRegistry,
    application: &ValueMap,
    max_attempt_elapsed_ms: u64,
) -> Result<Vec<AttemptResult>, RuntimeError> {
    let mut resolved = Vec::with_capacity(superstep.activations.len());
    for activation in &superstep.activations {
        let Some(node) = nodes.get(&activation.implementation) else {
            return Err(RuntimeError::new(
                ErrorKind::RuntimeUnavailable,
                Phase::Execute,
                format!(
                    "no node implementation is registered as {:?}",
                    activation.implementation
                ),
            )
            .with_node(activation.node_id.as_str()));
        };
        resolved.push((activation, node));
    }

    let mut set = JoinSet::new();
    let mut in_flight: HashMap<Id, (usize, Instant, AbortHandle)> = HashMap::new();
    let started = Instant::now();
    for (index, (activation, node)) in resolved.into_iter().enumerate() {
        let timeout = effective_timeout_ms(activation, max_attempt_elapsed_ms);
        let deadline = started + Duration::from_millis(timeout);
        let handle = set.spawn(attempt(
            node,
            activation.snapshot.clone(),
            activation.config.clone(),
            context(superstep, activation, application),
        ));
        in_flight.insert(handle.id(), (index, deadline, handle));
    }

    let mut outcomes: Vec<Option<AttemptOutcome>> = vec![None; superstep.activations.len()];
    while let Some(next_deadline) = in_flight.values().map(|(_, d, _)| *d).min() {
        tokio::select! {
            joined = set.join_next_with_id() => {
                let Some(joined) = joined else { break };
                let (id, outcome) = match joined {
                    Ok((id, outcome)) => (id, outcome),
                    Err(error) => {
                        let id = error.id();
                        let reason = if error.is_panic() {
                            format!("panic: {}", panic_message(error.into_panic().as_ref()))
                        } else {
                            "attempt cancelled".to_owned()
                        };
                        (id, AttemptOutcome::retryable(reason))
                    }
                };
                if let Some((index, _, _)) = in_flight.remove(&id) {
                    outcomes[index] = Some(outcome);
                }
            }
            () = sleep_until(next_deadline) => {
                let now = Instant::now();
                let expired: Vec<Id> = in_flight
                    .iter()
                    .filter(|(_, (_, deadline, _))| *deadline <= now)
                    .map(|(id, _)| *id)
                    .collect();
                for id in expired {
                    if let Some((index, _, handle)) = in_flight.remove(&id) {
                        handle.abort();
                        outcomes[index] = Some(AttemptOutcome::retryable(TIMEOUT_REASON));
                    }
                }
            }
        }
    }

    Ok(superstep
        .activations
        .iter()
        .zip(outcomes)
        .map(|(activation, outcome)| {
            AttemptResult::of(
                activation,
                // Every spawned task either joined or expired above; a missing outcome could
                // only mean the set was emptied underneath us, which is a cancelled attempt.
                outcome.unwrap_or_else(|| AttemptOutcome::retryable("attempt cancelled")),
            )
        })
        .collect())
}

async fn attempt(
    node: Arc<dyn Node>,
    snapshot: ValueMap,
    config: ValueMap,
    ctx: NodeContext,
) -> AttemptOutcome {
    node.call(&snapshot, &config, &ctx).await.into_attempt()
}

fn context(superstep: &Superstep, activation: &Activation, application: &ValueMap) -> NodeContext {
    NodeContext {
        run_id: superstep.run_id.clone(),
        node_id: activation.node_id.clone(),
        task_id: activation.task_id.clone(),
        step: activation.step,
        attempt: activation.attempt,
        source_versions: activation.source_versions.clone(),
        idempotency_key: activation.idempotency_key.clone(),
        application: application.clone(),
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{NodePolicies, RuntimeNode};
    use crate::model::RunId;
    use crate::runtime::PlannedSnapshot;

    fn activation(timeout_ms: Option<u64>) -> Activation {
        let node = RuntimeNode {
            public_id: "a".into(),
            runtime_id: "node:a".into(),
            implementation: "missing".into(),
            config: ValueMap::new(),
            subscribe: vec![],
            outgoing_edges: vec![],
            policies: ValueMap::new(),
            metadata: ValueMap::new(),
        };
        let base = PlannedSnapshot::new(
            RunId::new("r").expect("id"),
            0,
            ValueMap::new(),
            Default::default(),
        );
        Activation::fresh(
            &base,
            &node,
            NodePolicies {
                timeout_ms,
                ..NodePolicies::default()
            },
        )
    }

    #[test]
    fn the_effective_timeout_is_the_node_timeout_capped_by_the_host() {
        assert_eq!(effective_timeout_ms(&activation(None), 2_000), 2_000);
        assert_eq!(effective_timeout_ms(&activation(Some(50)), 2_000), 50);
        assert_eq!(effective_timeout_ms(&activation(Some(5_000)), 2_000), 2_000);
    }

    #[tokio::test]
    async fn an_unregistered_implementation_fails_before_anything_runs() {
        let step = Superstep {
            run_id: RunId::new("r").expect("id"),
            step: 0,
            activations: vec![activation(None)],
            remaining_active: false,
        };
        let err = execute(&step, &NodeRegistry::new(), &ValueMap::new(), 10)
            .await
            .expect_err("missing");
        assert_eq!(err.kind, ErrorKind::RuntimeUnavailable);
        assert_eq!(err.node_id.as_deref(), Some("a"));
    }

    #[tokio::test]
    async fn an_empty_superstep_executes_nothing() {
        let step = Superstep {
            run_id: RunId::new("r").expect("id"),
            step: 0,
            activations: vec![],
            remaining_active: true,
        };
        assert_eq!(
            execute(&step, &NodeRegistry::new(), &ValueMap::new(), 10).await,
            Ok(vec![])
        );
    }
}
