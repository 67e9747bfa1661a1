//! The reference operation registry: [`MemoryStore`] implements
//! [`OpsLifecycleRegistry`] by calling [`crate::ops::rules`] inside one critical section per
//! call, and nothing else. Every other registry is compared with it.
//!
//! Terminal transitions send a hint on the store's operation wake channel after the state
//! changed, which is what [`OpsLifecycleRegistry::await_completion`] listens to.
//!
//! # Cancel safety
//!
//! As for the rest of the memory store: every call finishes its work in its first poll, so
//! a dropped future has done nothing or everything. (The deliberate race of the
//! `ops_racy_completion_seq` fault is the only exception; it exists to be caught.)

mod faults;
mod tables;

use async_trait::async_trait;

use crate::model::Timestamp;
use crate::ops::rules;
use crate::ops::{
    CompletedOperation, CompletionSeq, OperationId, OperationLifecycleSnapshot, OperationPage,
    OperationQuery, OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};
use crate::store::Wakeups;

use super::MemoryStore;

pub(super) use tables::OpsTables;

#[async_trait]
impl OpsLifecycleRegistry for MemoryStore {
    async fn register_operation(
        &self,
        owner: &SessionId,
        spec: &OperationSpec,
        max_concurrent: Option<u32>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        rules::validate_registration(owner, spec)?;
        rules::validate_limit(max_concurrent)?;
        let record = rules::registered(*owner, spec, now);
        let mut state = self.lock()?;
        let facts = state.ops.registration_facts(owner, &spec.id);
        rules::check_registration(*owner, spec.id, facts, max_concurrent)?;
        state.ops.put(&record, None, self.ops_retention)?;
        Ok(record)
    }

    async fn transition_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        rules::validate_transition(owner, id, transition)?;
        if self.faults.ops_racy_completion_seq {
            return self.racy_transition(owner, id, transition, now).await;
        }
        let applied = {
            let mut state = self.lock()?;
            state.ops.check_live_owner(owner)?;
            let current = state
                .ops
                .get(owner, id)?
                .ok_or(OpsError::NotFound { id: *id })?;
            let next_seq = state.ops.next_seq(owner);
            let applied = if self.faults.ops_skip_from_set_guard {
                faults::apply_unguarded(&current, transition, now, next_seq)?
            } else {
                rules::apply(&current, transition, now, next_seq)?
            };
            state
                .ops
                .put(&applied.record, applied.minted, self.ops_retention)?;
            applied
        };
        if applied.minted.is_some() {
            self.ops_hint();
        }
        Ok(applied.record)
    }

    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        let terminated = {
            let mut state = self.lock()?;
            state.ops.check_live_owner(owner)?;
            self.terminate_live(&mut state.ops, owner, reason, now)?
        };
        if !terminated.is_empty() {
            self.ops_hint();
        }
        Ok(terminated)
    }

    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        let terminated = {
            let mut state = self.lock()?;
            if state.ops.is_retired(owner) {
                return Ok(Vec::new());
            }
            let terminated = self.terminate_live(&mut state.ops, owner, reason, now)?;
            state.ops.retire(owner);
            terminated
        };
        if !terminated.is_empty() {
            self.ops_hint();
        }
        Ok(terminated)
    }

    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        rules::validate_target(owner, id)?;
        self.lock()?.ops.get(owner, id)
    }

    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        rules::validate_query(owner, query)?;
        let all = self.lock()?.ops.all(owner)?;
        Ok(rules::page_of(all, query))
    }

    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner(owner)?;
        let mut state = self.lock()?;
        state.ops.check_live_owner(owner)?;
        state.ops.drain_terminal(owner)
    }

    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        rules::validate_owner(owner)?;
        Ok(self.lock()?.ops.is_retired(owner))
    }

    fn operation_wakeups(&self) -> Option<Wakeups> {
        Some(super::hint_stream(&self.ops_wake))
    }
}

impl MemoryStore {
    /// Terminates every live record of `owner` in id order, each taking the next sequence.
    /// Applies to a copy first, so a failure writes nothing.
    fn terminate_live(
        &self,
        ops: &mut OpsTables,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        let termination = rules::termination(reason);
        let mut next_seq = ops.next_seq(owner);
        let mut applied = Vec::new();
        for record in ops.all(owner)?.into_iter().filter(|r| !r.is_terminal()) {
            let step = rules::apply(&record, &termination, now, next_seq)?;
            if let Some(seq) = step.minted {
                next_seq = CompletionSeq(seq.get() + 1);
            }
            applied.push(step);
        }
        let mut terminated = Vec::with_capacity(applied.len());
        for step in applied {
            ops.put(&step.record, step.minted, self.ops_retention)?;
            if let (Some(seq), Some(outcome)) = (step.minted, step.record.terminal_outcome) {
                terminated.push(CompletedOperation {
                    id: step.record.id,
                    completion_seq: seq,
                    outcome,
                });
            }
        }
        Ok(terminated)
    }

    /// The `ops_racy_completion_seq` fault: reads the owner's next sequence, lets other tasks
    /// run, then decides and writes with the sequence it read — two steps where the contract
    /// needs one.
    async fn racy_transition(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        let stale_seq = self.lock()?.ops.next_seq(owner);
        tokio::task::yield_now().await;
        let applied = {
            let mut state = self.lock()?;
            state.ops.check_live_owner(owner)?;
            let current = state
                .ops
                .get(owner, id)?
                .ok_or(OpsError::NotFound { id: *id })?;
            let applied = rules::apply(&current, transition, now, stale_seq)?;
            state
                .ops
                .put(&applied.record, applied.minted, self.ops_retention)?;
            applied
        };
        if applied.minted.is_some() {
            self.ops_hint();
        }
        Ok(applied.record)
    }
}
