//! The stored rows of the memory registry and their codecs.
//!
//! Like a SQL backend, the memory registry keeps an owner row (retired flag, next
//! completion sequence) and one row per operation: the columns a write must read without
//! decoding (status, completion sequence) next to the encoded record. Every read decodes the
//! record and checks it against its key, its columns and the record invariants of
//! [`rules::check_record`], so a damaged row is `Corrupt`, never trusted.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::ops::rules::{self, Retention};
use crate::ops::{
    CompletedOperation, CompletionSeq, OperationId, OperationLifecycleSnapshot, OperationStatus,
    OpsError, SessionId,
};

/// Every owner the registry has seen, with its operations.
#[derive(Debug, Default)]
pub(in crate::memory) struct OpsTables {
    owners: BTreeMap<SessionId, OwnerRow>,
}

/// One owner: its flags and its operations by id.
#[derive(Debug)]
struct OwnerRow {
    retired: bool,
    /// The sequence the owner's next terminal transition takes.
    next_completion_seq: u64,
    operations: BTreeMap<OperationId, OperationRow>,
}

impl Default for OwnerRow {
    fn default() -> Self {
        OwnerRow {
            retired: false,
            next_completion_seq: CompletionSeq::FIRST.get(),
            operations: BTreeMap::new(),
        }
    }
}

/// One operation: its columns and its encoded record.
#[derive(Clone, Debug)]
struct OperationRow {
    status: OperationStatus,
    completion_seq: Option<u64>,
    /// `serde_json` bytes of the [`OperationLifecycleSnapshot`].
    record: Vec<u8>,
}

fn encode(record: &OperationLifecycleSnapshot) -> Result<OperationRow, OpsError> {
    let bytes = serde_json::to_vec(record).map_err(|e| {
        OpsError::invalid_argument(format!("operation {} cannot be encoded: {e}", record.id))
    })?;
    Ok(OperationRow {
        status: record.status,
        completion_seq: record.completion_seq.map(CompletionSeq::get),
        record: bytes,
    })
}

fn decode(
    owner: &SessionId,
    id: &OperationId,
    row: &OperationRow,
) -> Result<OperationLifecycleSnapshot, OpsError> {
    let what = || format!("operation row {owner}/{id}");
    let record: OperationLifecycleSnapshot =
        serde_json::from_slice(&row.record).map_err(|e| OpsError::corrupt(what(), e))?;
    if record.owner != *owner || record.id != *id {
        return Err(OpsError::corrupt(what(), "the record differs from its key"));
    }
    if record.status != row.status
        || record.completion_seq.map(CompletionSeq::get) != row.completion_seq
    {
        return Err(OpsError::corrupt(
            what(),
            "the record disagrees with its columns",
        ));
    }
    rules::check_record(&record).map_err(|e| OpsError::corrupt(what(), e))?;
    Ok(record)
}

impl OpsTables {
    /// Whether `owner` is retired.
    pub fn is_retired(&self, owner: &SessionId) -> bool {
        self.owners.get(owner).is_some_and(|o| o.retired)
    }

    /// `OwnerRetired` when `owner` is.
    pub fn check_live_owner(&self, owner: &SessionId) -> Result<(), OpsError> {
        if self.is_retired(owner) {
            return Err(OpsError::OwnerRetired { owner: *owner });
        }
        Ok(())
    }

    /// The facts a registration is decided on.
    pub fn registration_facts(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> rules::RegistrationFacts {
        let row = self.owners.get(owner);
        rules::RegistrationFacts {
            owner_retired: row.is_some_and(|o| o.retired),
            id_taken: row.is_some_and(|o| o.operations.contains_key(id)),
            active: row.map_or(0, |o| {
                o.operations
                    .values()
                    .filter(|r| !r.status.is_terminal())
                    .count() as u64
            }),
        }
    }

    /// The owner's next completion sequence.
    pub fn next_seq(&self, owner: &SessionId) -> CompletionSeq {
        CompletionSeq(
            self.owners
                .get(owner)
                .map_or(CompletionSeq::FIRST.get(), |o| o.next_completion_seq),
        )
    }

    /// The decoded record, if the owner holds one under `id`.
    pub fn get(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        self.owners
            .get(owner)
            .and_then(|o| o.operations.get(id))
            .map(|row| decode(owner, id, row))
            .transpose()
    }

    /// Every record of `owner`, decoded, in id order.
    pub fn all(&self, owner: &SessionId) -> Result<Vec<OperationLifecycleSnapshot>, OpsError> {
        self.owners.get(owner).map_or(Ok(Vec::new()), |o| {
            o.operations
                .iter()
                .map(|(id, row)| decode(owner, id, row))
                .collect()
        })
    }

    /// Writes `record` (inserting or replacing its row); when it took `minted`, moves the
    /// owner's next sequence past it and evicts the oldest terminal records beyond
    /// `retention`. Encodes before touching anything, so an error writes nothing.
    pub fn put(
        &mut self,
        record: &OperationLifecycleSnapshot,
        minted: Option<CompletionSeq>,
        retention: Retention,
    ) -> Result<(), OpsError> {
        let row = encode(record)?;
        let owner = self.owners.entry(record.owner).or_default();
        owner.operations.insert(record.id, row);
        if let Some(seq) = minted {
            owner.next_completion_seq = owner.next_completion_seq.max(seq.get() + 1);
            evict(owner, retention);
        }
        Ok(())
    }

    /// Marks `owner` retired (creating its row).
    pub fn retire(&mut self, owner: &SessionId) {
        self.owners.entry(*owner).or_default().retired = true;
    }

    /// Removes every terminal record of `owner` and returns them in completion order.
    pub fn drain_terminal(
        &mut self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        let Some(row) = self.owners.get(owner) else {
            return Ok(Vec::new());
        };
        let mut drained = Vec::new();
        for (id, op) in row
            .operations
            .iter()
            .filter(|(_, r)| r.status.is_terminal())
        {
            let record = decode(owner, id, op)?;
            let (Some(completion_seq), Some(outcome)) =
                (record.completion_seq, record.terminal_outcome)
            else {
                // `decode` checked that terminal records have both.
                return Err(OpsError::corrupt(
                    format!("operation row {owner}/{id}"),
                    "a terminal record without outcome",
                ));
            };
            drained.push(CompletedOperation {
                id: *id,
                completion_seq,
                outcome,
            });
        }
        drained.sort_by_key(|c| c.completion_seq);
        if let Some(row) = self.owners.get_mut(owner) {
            for done in &drained {
                row.operations.remove(&done.id);
            }
        }
        Ok(drained)
    }

    /// Every stored byte, one line per row, in key order.
    pub fn render(&self, out: &mut String) {
        for (owner, row) in &self.owners {
            let _ = writeln!(
                out,
                "ops_owner id={owner} retired={} next_completion_seq={}",
                row.retired, row.next_completion_seq
            );
            for (id, op) in &row.operations {
                let _ = writeln!(
                    out,
                    "ops_operation owner={owner} id={id} status={} completion_seq={:?} record={}",
                    op.status,
                    op.completion_seq,
                    op.record.escape_ascii()
                );
            }
        }
    }
}

/// Evicts the owner's oldest terminal records beyond `retention`.
fn evict(owner: &mut OwnerRow, retention: Retention) {
    let mut terminal: Vec<(u64, OperationId)> = owner
        .operations
        .iter()
        .filter_map(|(id, row)| row.completion_seq.map(|seq| (seq, *id)))
        .collect();
    let overflow = retention.overflow(terminal.len() as u64);
    if overflow == 0 {
        return;
    }
    terminal.sort_unstable();
    for (_, id) in terminal
        .into_iter()
        .take(usize::try_from(overflow).unwrap_or(usize::MAX))
    {
        owner.operations.remove(&id);
    }
}
