//! [`OpsLifecycleRegistry`] over the locked tables.
//!
//! Each call checks its arguments with [`docket_core::ops::rules`] first, then takes the
//! lock once and, inside that one critical section, reads the owner row, decides with the
//! rules (the registration order, the admission limit, the action's from-set), and writes.
//! Nothing is decided here that the rules decide: a refused call has written nothing
//! because every check runs before the first write.
//!
//! The store sends no wake hints (see `wakeups.rs`), so the completion watch polls.
//!
//! `rows.rs` holds the tables' registry rows and their strict decoding.

pub(crate) mod rows;

use async_trait::async_trait;
use docket_core::model::Timestamp;
use docket_core::ops::rules::{self, Applied, RegistrationFacts};
use docket_core::ops::{
    CompletedOperation, CompletionSeq, OperationId, OperationLifecycleSnapshot, OperationPage,
    OperationQuery, OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};

use crate::store::MapStore;
use crate::tables::Tables;
use rows::{from_row, to_row, OwnerRow};

impl Tables {
    fn owner_row(&self, owner: &SessionId) -> OwnerRow {
        self.ops_owners.get(owner).cloned().unwrap_or_default()
    }

    fn refuse_if_retired(&self, owner: &SessionId) -> Result<(), OpsError> {
        if self.owner_row(owner).retired {
            return Err(OpsError::OwnerRetired { owner: *owner });
        }
        Ok(())
    }

    /// The rows of `owner`, decoded, in id order.
    fn records_of(&self, owner: &SessionId) -> Result<Vec<OperationLifecycleSnapshot>, OpsError> {
        self.operations
            .iter()
            .filter(|((o, _), _)| o == owner)
            .map(|((o, id), row)| from_row(o, id, row))
            .collect()
    }

    fn record(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        self.operations
            .get(&(*owner, *id))
            .map(|row| from_row(owner, id, row))
            .transpose()
    }

    /// Writes the results of transitions that have all been decided already: their rows,
    /// the owner's next sequence, then retention.
    fn write(
        &mut self,
        owner: &SessionId,
        applied: &[Applied],
        retention: rules::Retention,
    ) -> Result<(), OpsError> {
        let rows = applied
            .iter()
            .map(|a| to_row(&a.record))
            .collect::<Result<Vec<_>, _>>()?;
        for (a, row) in applied.iter().zip(rows) {
            self.operations.insert((*owner, a.record.id), row);
        }
        if let Some(last) = applied.iter().filter_map(|a| a.minted).max() {
            self.ops_owners
                .entry(*owner)
                .or_default()
                .next_completion_seq = last.get() + 1;
            self.evict_beyond(owner, retention);
        }
        Ok(())
    }

    fn evict_beyond(&mut self, owner: &SessionId, retention: rules::Retention) {
        let mut ended: Vec<(u64, OperationId)> = self
            .operations
            .iter()
            .filter(|((o, _), row)| o == owner && row.is_terminal())
            .filter_map(|((_, id), row)| row.completion_seq.map(|seq| (seq, *id)))
            .collect();
        ended.sort_unstable();
        let overflow = usize::try_from(retention.overflow(ended.len() as u64)).unwrap_or(0);
        for (_, id) in ended.into_iter().take(overflow) {
            self.operations.remove(&(*owner, id));
        }
    }

    /// Decides the termination of every live operation of `owner`, in id order.
    fn decide_termination(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<Applied>, OpsError> {
        let termination = rules::termination(reason);
        let mut next = CompletionSeq(self.owner_row(owner).next_completion_seq);
        let mut decided = Vec::new();
        for record in self.records_of(owner)? {
            if record.is_terminal() {
                continue;
            }
            let applied = rules::apply(&record, &termination, now, next)?;
            next = CompletionSeq(next.get() + 1);
            decided.push(applied);
        }
        Ok(decided)
    }
}

fn ended(applied: Vec<Applied>) -> Vec<CompletedOperation> {
    applied
        .into_iter()
        .filter_map(|a| {
            Some(CompletedOperation {
                id: a.record.id,
                completion_seq: a.minted?,
                outcome: a.record.terminal_outcome?,
            })
        })
        .collect()
}

#[async_trait]
impl OpsLifecycleRegistry for MapStore {
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
        let row = to_row(&record)?;
        let mut tables = self.lock()?;
        let mine = tables.records_of(owner)?;
        let facts = RegistrationFacts {
            owner_retired: tables.owner_row(owner).retired,
            id_taken: mine.iter().any(|r| r.id == spec.id),
            active: mine.iter().filter(|r| !r.is_terminal()).count() as u64,
        };
        rules::check_registration(*owner, spec.id, facts, max_concurrent)?;
        tables.operations.insert((*owner, spec.id), row);
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
        let mut tables = self.lock()?;
        tables.refuse_if_retired(owner)?;
        let current = tables
            .record(owner, id)?
            .ok_or(OpsError::NotFound { id: *id })?;
        let next = CompletionSeq(tables.owner_row(owner).next_completion_seq);
        let applied = rules::apply(&current, transition, now, next)?;
        let record = applied.record.clone();
        tables.write(owner, &[applied], self.retention)?;
        Ok(record)
    }

    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        let mut tables = self.lock()?;
        tables.refuse_if_retired(owner)?;
        let decided = tables.decide_termination(owner, reason, now)?;
        tables.write(owner, &decided, self.retention)?;
        Ok(ended(decided))
    }

    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        let mut tables = self.lock()?;
        if tables.owner_row(owner).retired {
            return Ok(Vec::new());
        }
        let decided = tables.decide_termination(owner, reason, now)?;
        tables.write(owner, &decided, self.retention)?;
        tables.ops_owners.entry(*owner).or_default().retired = true;
        Ok(ended(decided))
    }

    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        rules::validate_target(owner, id)?;
        self.lock()?.record(owner, id)
    }

    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        rules::validate_query(owner, query)?;
        let records = self.lock()?.records_of(owner)?;
        Ok(rules::page_of(records, query))
    }

    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner(owner)?;
        let mut tables = self.lock()?;
        tables.refuse_if_retired(owner)?;
        let mut drained = Vec::new();
        for record in tables.records_of(owner)? {
            if let (Some(completion_seq), Some(outcome)) =
                (record.completion_seq, record.terminal_outcome)
            {
                drained.push(CompletedOperation {
                    id: record.id,
                    completion_seq,
                    outcome,
                });
            }
        }
        drained.sort_by_key(|d| d.completion_seq);
        for done in &drained {
            tables.operations.remove(&(*owner, done.id));
        }
        Ok(drained)
    }

    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        rules::validate_owner(owner)?;
        Ok(self.lock()?.owner_row(owner).retired)
    }
}
