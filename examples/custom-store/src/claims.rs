//! Claims over the locked tables: selection, leases and poison (`claim_due`), release,
//! abandon and poison recovery.
//!
//! Each reads columns and operational state only, never the document (except poison
//! recovery, which returns the run): the shared rules decide, this store only feeds them its
//! rows and writes back the result.

use std::collections::BTreeMap;

use docket_core::model::{ClaimToken, Run, RunId, Scope, TenantId, Timestamp};
use docket_core::store::rules::claim_pass::{claim_pass, ClaimPassOutcome, ClaimRow};
use docket_core::store::rules::effects::{apply_abandon, apply_release, apply_retry_poisoned};
use docket_core::store::rules::tenant_fair::FairContext;
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimRequest, StoreError, TenantShare,
};

use crate::codec::decode_run;
use crate::tables::Tables;

/// Selects and claims (or poisons) due runs, from columns and operational state only: the
/// shared claim rules decide, this store only feeds them its rows, its tenant shares, the
/// runs each owner holds claimed and the fair cursor, and writes back the result.
pub(crate) fn claim_due(tables: &mut Tables, policy: &ClaimRequest) -> ClaimBatch {
    let mut claimed: BTreeMap<String, u32> = BTreeMap::new();
    for row in tables.runs.values().filter(|r| r.ops.claim_token.is_some()) {
        *claimed.entry(row.owner.scope_key().to_owned()).or_default() += 1;
    }
    let rows: Vec<ClaimRow> = tables
        .runs
        .iter()
        .map(|(id, row)| ClaimRow {
            run_id: id.clone(),
            owner: row.owner.clone(),
            graph_id: row.columns.graph_id.clone(),
            graph_hash: row.columns.graph_hash.clone(),
            status: row.columns.status,
            checkpoint_seq: row.columns.checkpoint_seq,
            ops: row.ops.clone(),
        })
        .collect();
    let fair = FairContext {
        shares: &tables.shares,
        claimed: &claimed,
        cursor: tables.cursor.as_ref(),
    };
    let ClaimPassOutcome {
        batch,
        changed,
        cursor,
    } = claim_pass(rows, policy, &fair);
    if cursor.is_some() {
        tables.cursor = cursor;
    }
    for row in changed {
        if let Some(stored) = tables.runs.get_mut(&row.run_id) {
            stored.ops = row.ops;
        }
    }
    batch
}

/// `release_claim`: a token that no longer holds the claim, or an unknown run, changes
/// nothing.
pub(crate) fn release(tables: &mut Tables, run_id: &RunId, token: &ClaimToken, now: Timestamp) {
    if let Some(row) = tables.runs.get_mut(run_id) {
        apply_release(&mut row.ops, token, now);
    }
}

/// `abandon_claim` with a validated policy: an unknown run is `Stale`.
pub(crate) fn abandon(
    tables: &mut Tables,
    run_id: &RunId,
    token: &ClaimToken,
    policy: &AbandonPolicy,
) -> AbandonOutcome {
    match tables.runs.get_mut(run_id) {
        Some(row) => apply_abandon(&mut row.ops, row.columns.checkpoint_seq, token, policy),
        None => AbandonOutcome::Stale,
    }
}

/// `retry_poisoned_run`: the run must be visible in `scope` and decode; the rules decide
/// whether its poison is cleared.
pub(crate) fn retry_poisoned(
    tables: &mut Tables,
    scope: &Scope,
    run_id: &RunId,
    now: Timestamp,
) -> Result<Run, StoreError> {
    let row = tables.visible(scope, run_id)?;
    let run = decode_run(run_id, row)?;
    let mut ops = row.ops.clone();
    if apply_retry_poisoned(run.status, &mut ops, now)? {
        if let Some(row) = tables.runs.get_mut(run_id) {
            row.ops = ops;
        }
    }
    Ok(run)
}

/// `set_tenant_share`: one entry per tenant, replaced on every call.
pub(crate) fn set_share(tables: &mut Tables, tenant: &TenantId, share: TenantShare) {
    tables.shares.insert(tenant.as_str().to_owned(), share);
}

/// `tenant_shares`: every entry, by tenant id in byte order (the map's order).
pub(crate) fn shares(tables: &Tables) -> Vec<(TenantId, TenantShare)> {
    tables
        .shares
        .iter()
        .filter_map(|(key, share)| TenantId::new(key.clone()).ok().map(|id| (id, *share)))
        .collect()
}
