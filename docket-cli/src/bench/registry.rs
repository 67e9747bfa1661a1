//! (f) Operation-registry transitions/s: `N` tasks, each its own session, cycle fresh
//! operations through register → start → complete back to back; every call is one counted
//! transition. The floor is (a)'s raw conditional update, because each registry transition is
//! one conditional write of one row on the same server — the ratio says what the registry's
//! guards (from-set, retired owner, completion sequence, retention) cost over a bare update.
//!
//! Verified at the end: each session's newest completed operation carries completion
//! sequence = the completions its task counted, and the retained terminal records carry the
//! sequences just below it, with no gap.

use std::sync::Arc;

use async_trait::async_trait;

use docket_core::model::Timestamp;
use docket_core::ops::{
    OperationId, OperationKind, OperationResult, OperationSpec, OpsError, SessionId,
};
use docket_core::store::Backend;

use super::driver::{closed_loop, LoopOutcome, Op};
use super::{BenchError, Ctx};

/// One task: its session, the operation in flight and where it is in its cycle.
pub(crate) struct RegistryCycle {
    backend: Arc<dyn Backend>,
    owner: SessionId,
    current: OperationId,
    /// 0: register next, 1: start next, 2: complete next.
    step: u8,
    completed: u64,
}

fn registry_error(e: OpsError) -> BenchError {
    BenchError::Setup(format!("operation registry: {e}"))
}

#[async_trait]
impl Op for RegistryCycle {
    async fn once(&mut self) -> Result<(), BenchError> {
        let registry = self
            .backend
            .ops_registry()
            .ok_or_else(|| BenchError::Setup("the registry disappeared".into()))?;
        let now = Timestamp::now_utc();
        match self.step {
            0 => {
                self.current = OperationId::random();
                let spec = OperationSpec::new(
                    self.current,
                    OperationKind::BackgroundToolOp,
                    "bench operation",
                );
                registry
                    .register_operation(&self.owner, &spec, None, now)
                    .await
                    .map_err(registry_error)?;
            }
            1 => {
                registry
                    .provisioning_succeeded(&self.owner, &self.current, now)
                    .await
                    .map_err(registry_error)?;
            }
            _ => {
                registry
                    .complete_operation(&self.owner, &self.current, OperationResult::default(), now)
                    .await
                    .map_err(registry_error)?;
                self.completed += 1;
            }
        }
        self.step = (self.step + 1) % 3;
        Ok(())
    }
}

/// The measured cycles, or `None` when the store offers no registry.
pub(crate) struct RegistryResult {
    /// The transitions.
    pub outcome: LoopOutcome<RegistryCycle>,
    /// What the verification proved.
    pub verified: String,
}

/// Measures (f) and verifies it; `None` for a store without a registry.
pub(crate) async fn run(ctx: &Ctx) -> Result<Option<RegistryResult>, BenchError> {
    if ctx.backend.ops_registry().is_none() {
        return Ok(None);
    }
    let ops = (0..ctx.options.concurrency)
        .map(|_| RegistryCycle {
            backend: Arc::clone(&ctx.backend),
            owner: SessionId::random(),
            current: OperationId::random(),
            step: 0,
            completed: 0,
        })
        .collect();
    let outcome = closed_loop(ops, ctx.options.window()).await?;
    let mut problems = Vec::new();
    for op in &outcome.ops {
        problems.extend(verify_cycle(ctx, op).await?);
    }
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    let completions: u64 = outcome.ops.iter().map(|op| op.completed).sum();
    let verified = format!(
        "(f) registry: {} sessions, each session's completion sequences end at its counted \
         completions ({completions} in total) with no gap among the retained records",
        outcome.ops.len()
    );
    Ok(Some(RegistryResult { outcome, verified }))
}

async fn verify_cycle(ctx: &Ctx, op: &RegistryCycle) -> Result<Vec<String>, BenchError> {
    let Some(registry) = ctx.backend.ops_registry() else {
        return Ok(vec!["(f) the registry disappeared".into()]);
    };
    let collected = registry
        .collect_completed(&op.owner)
        .await
        .map_err(registry_error)?;
    let seqs: Vec<u64> = collected.iter().map(|c| c.completion_seq.get()).collect();
    let mut problems = Vec::new();
    if seqs.last().copied().unwrap_or(0) != op.completed {
        problems.push(format!(
            "(f) session {}: newest completion sequence {:?}, but {} completions were \
             acknowledged",
            op.owner,
            seqs.last(),
            op.completed
        ));
    }
    if seqs.windows(2).any(|w| w[1] != w[0] + 1) {
        problems.push(format!(
            "(f) session {}: retained completion sequences have a gap: {seqs:?}",
            op.owner
        ));
    }
    Ok(problems)
}
