//! Claim operations, run on the writer connection inside `BEGIN IMMEDIATE`: selection, leases
//! and poison (`claim_due`), release, abandon and poison recovery.
//!
//! SQL only narrows the candidates through the ready/expired partial indexes; which of them are
//! claimable, in which order, and what happens to each comes from `rules::effects` and
//! `rules::claim_order` (key = run id), exactly like the reference store.

use rusqlite::{params, Connection, OptionalExtension};

use docket_core::model::{ClaimToken, Run, RunId, Scope, Timestamp};
use docket_core::store::rules::claim_pass::{claim_pass, ClaimRow};
use docket_core::store::rules::effects::{apply_abandon, apply_release, apply_retry_poisoned};
use docket_core::store::rules::tenant_fair::FairContext;
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimPolicy, ClaimRequest, StoreError,
};

use crate::codec::{decode_ops, row_values, OpsRow, OPS_COLUMNS, OPS_COLUMN_COUNT};
use crate::error::SqlResult;
use crate::fairness;
use crate::sql::{load_ops, load_run, update_ops};

fn candidates(
    conn: &Connection,
    sql: &str,
    bound: Timestamp,
    limit: u32,
) -> Result<Vec<OpsRow>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).sql()?;
    let rows = stmt
        .query_map(params![bound.as_micros(), i64::from(limit)], |row| {
            row_values(row, OPS_COLUMN_COUNT)
        })
        .sql()?;
    let mut out = Vec::new();
    for values in rows {
        out.push(decode_ops(&values.sql()?)?);
    }
    Ok(out)
}

/// `claim_due`: at most `limit` outcomes (leases + poisons), atomically, with the stored
/// document text of each lease's run (in lease order), for the caller to decode into
/// [`ClaimLease::run`](docket_core::store::ClaimLease::run) once the writer is free.
pub(crate) fn claim_due(
    conn: &Connection,
    policy: &ClaimRequest,
) -> Result<(ClaimBatch, Vec<Option<String>>), StoreError> {
    let limit = policy.limit.get();
    let ttl = i64::try_from(policy.orphan_ttl_ms).unwrap_or(i64::MAX);
    // The oldest `limit` of each class are enough: the selection keeps at most `limit`, in
    // `(eligible_at, run_id)` order within a class, which is the index order.
    // The fair state is read first: it decides which ready candidates are worth loading.
    let fair = match policy.policy {
        ClaimPolicy::Oldest => None,
        ClaimPolicy::TenantFair => Some(fairness::load(conn)?),
    };
    let ready = match &fair {
        None => candidates(
            conn,
            &format!(
                "SELECT {OPS_COLUMNS} FROM docket_runs \
                 WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL \
                   AND wake_at IS NOT NULL AND wake_at <= ?1 \
                 ORDER BY wake_at, run_id LIMIT ?2"
            ),
            policy.now,
            limit,
        )?,
        Some(state) => fairness::ready_candidates(conn, policy.now, limit, state)?,
    };
    let expired = candidates(
        conn,
        &format!(
            "SELECT {OPS_COLUMNS} FROM docket_runs \
             WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL \
               AND claimed_at < ?1 \
             ORDER BY claimed_at, run_id LIMIT ?2"
        ),
        policy.now.add_millis(-ttl),
        limit,
    )?;
    let rows = ready.into_iter().chain(expired).map(|row| ClaimRow {
        run_id: row.run_id,
        owner: row.owner,
        graph_id: row.graph_id,
        graph_hash: row.graph_hash,
        status: row.status,
        checkpoint_seq: row.checkpoint_seq,
        ops: row.ops,
    });
    let outcome = match &fair {
        None => claim_pass(rows.collect::<Vec<_>>(), policy, &FairContext::empty()),
        Some(state) => claim_pass(rows.collect::<Vec<_>>(), policy, &state.context()),
    };
    for row in &outcome.changed {
        update_ops(conn, &row.run_id, &row.ops)?;
    }
    if let Some(cursor) = &outcome.cursor {
        fairness::store_cursor(conn, cursor)?;
    }
    let mut documents = Vec::with_capacity(outcome.batch.leases.len());
    let mut stmt = conn
        .prepare_cached("SELECT document FROM docket_runs WHERE run_id = ?1")
        .sql()?;
    for lease in &outcome.batch.leases {
        documents.push(
            stmt.query_row([lease.run_id.as_str()], |row| {
                row.get::<_, Option<String>>(0)
            })
            .optional()
            .sql()?
            .flatten(),
        );
    }
    Ok((outcome.batch, documents))
}

/// Hands each lease its run, decoded from `documents` (as [`claim_due`] returned them); a
/// document that does not decode is left out, for the claimer's `fetch_run` to report.
pub(crate) fn attach_runs(batch: &mut ClaimBatch, documents: Vec<Option<String>>) {
    for (lease, document) in batch.leases.iter_mut().zip(documents) {
        if let Some(text) = document {
            lease.attach_document(text.as_bytes());
        }
    }
}

/// `release_claim`: clears a current claim (wake now); anything else is a no-op.
pub(crate) fn release(
    conn: &Connection,
    run_id: &RunId,
    token: &ClaimToken,
    now: Timestamp,
) -> Result<(), StoreError> {
    let Some(mut row) = load_ops(conn, run_id)? else {
        return Ok(());
    };
    if apply_release(&mut row.ops, token, now) {
        update_ops(conn, run_id, &row.ops)?;
    }
    Ok(())
}

/// `abandon_claim` (policy already validated): fenced on token and seq.
pub(crate) fn abandon(
    conn: &Connection,
    run_id: &RunId,
    token: &ClaimToken,
    policy: &AbandonPolicy,
) -> Result<AbandonOutcome, StoreError> {
    let Some(mut row) = load_ops(conn, run_id)? else {
        return Ok(AbandonOutcome::Stale);
    };
    let outcome = apply_abandon(&mut row.ops, row.checkpoint_seq, token, policy);
    if outcome != AbandonOutcome::Stale {
        update_ops(conn, run_id, &row.ops)?;
    }
    Ok(outcome)
}

/// `retry_poisoned_run`: returns the (unchanged) document and whether the run was recovered.
pub(crate) fn retry_poisoned(
    conn: &Connection,
    scope: &Scope,
    run_id: &RunId,
    now: Timestamp,
) -> Result<(Run, bool), StoreError> {
    let mut stored = load_run(conn, scope, run_id)?.ok_or(StoreError::NotFound)?;
    let recovered = apply_retry_poisoned(stored.run.status, &mut stored.ops, now)?;
    if recovered {
        update_ops(conn, run_id, &stored.ops)?;
    }
    Ok((stored.run, recovered))
}
