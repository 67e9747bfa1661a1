//! Claims, releases, abandons and poison recovery (`docs/state-machines.md`,
//! “Operational transitions”; `docs/storage-contract.md`, “Handing claims back”), applied to the
//! locked state. Every decision comes from [`crate::store::rules`]; this file only finds rows.
//!
//! None of these operations touches a run document, `checkpoint_seq` or `updated_at`, and
//! like a SQL backend they decide on the row's columns and operational state, not the
//! document: a run whose document is corrupt is still claimed, and its holder learns of the
//! damage when it fetches the run (`Corrupt`), instead of one bad row blocking every claim.
//! A claim hands each lease its run's document when it decodes (`ClaimLease::run`), as the
//! SQL stores' claim statements do.

use crate::model::{ClaimToken, Run, RunId, Scope, Timestamp};
use std::collections::BTreeMap;

use crate::model::TenantId;
use crate::store::rules::claim_pass::{claim_pass, ClaimPassOutcome, ClaimRow};
use crate::store::rules::effects::{
    apply_abandon, apply_release, apply_retry_poisoned, validate_abandon_policy,
};
use crate::store::rules::tenant_fair::FairContext;
use crate::store::{
    AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimRequest, StoreError, TenantShare,
};

use super::state::{decode_run, State};

/// Selects and claims (or poisons) at most `policy.limit` due runs, atomically; a tenant-fair
/// pass also moves the stored cursor.
pub(super) fn claim_due(state: &mut State, policy: &ClaimRequest) -> ClaimBatch {
    let mut claimed: BTreeMap<String, u32> = BTreeMap::new();
    for row in state.runs.values().filter(|r| r.ops.claim_token.is_some()) {
        *claimed.entry(row.owner.scope_key().to_owned()).or_default() += 1;
    }
    let rows = state.runs.iter().map(|(id, row)| ClaimRow {
        run_id: id.clone(),
        owner: row.owner.clone(),
        graph_id: row.columns.graph_id.clone(),
        graph_hash: row.columns.graph_hash.clone(),
        status: row.columns.status,
        checkpoint_seq: row.columns.checkpoint_seq,
        ops: row.ops.clone(),
    });
    let fair = FairContext {
        shares: &state.fair.shares,
        claimed: &claimed,
        cursor: state.fair.cursor.as_ref(),
    };
    let ClaimPassOutcome {
        batch,
        changed,
        cursor,
    } = claim_pass(rows.collect::<Vec<_>>(), policy, &fair);
    if cursor.is_some() {
        state.fair.cursor = cursor;
    }
    for row in changed {
        if let Some(stored) = state.runs.get_mut(&row.run_id) {
            stored.ops = row.ops;
        }
    }
    let mut batch = batch;
    // The documents of the leased runs, as a store whose claim statement returns them would
    // (a document that does not decode stays behind: its holder finds out from `fetch_run`).
    for lease in &mut batch.leases {
        if let Some(Ok(run)) = state
            .runs
            .get(&lease.run_id)
            .map(|row| decode_run(&lease.run_id, row))
        {
            lease.attach_run(run);
        }
    }
    batch
}

/// Token-guarded release; anything else is a silent no-op.
pub(super) fn release_claim(state: &mut State, run_id: &RunId, token: &ClaimToken, now: Timestamp) {
    if let Some(row) = state.runs.get_mut(run_id) {
        apply_release(&mut row.ops, token, now);
    }
}

/// Pre-execution hand-back, fenced on token and seq; an unknown run is stale.
///
/// `keep_attempts` is the deliberate bug of a conformance mutant (always `false` in use).
pub(super) fn abandon_claim(
    state: &mut State,
    run_id: &RunId,
    token: &ClaimToken,
    policy: &AbandonPolicy,
    keep_attempts: bool,
) -> Result<AbandonOutcome, StoreError> {
    validate_abandon_policy(policy)?;
    let Some(row) = state.runs.get_mut(run_id) else {
        return Ok(AbandonOutcome::Stale);
    };
    let attempts_before = row.ops.claim_attempts;
    let outcome = apply_abandon(&mut row.ops, row.columns.checkpoint_seq, token, policy);
    if keep_attempts && outcome != AbandonOutcome::Stale {
        row.ops.claim_attempts = attempts_before;
    }
    if outcome == AbandonOutcome::Poisoned {
        tracing::warn!(
            run_id = %run_id,
            reason = "max_claim_abandons_exceeded",
            "docket.claim.poisoned"
        );
    }
    Ok(outcome)
}

/// Terminal first, then recovery of a poisoned row. Returns the unchanged document and
/// whether the row was recovered (a due wake, so a hint is owed).
pub(super) fn retry_poisoned_run(
    state: &mut State,
    scope: &Scope,
    run_id: &RunId,
    now: Timestamp,
) -> Result<(Run, bool), StoreError> {
    let row = state.visible_row(scope, run_id)?;
    let run = decode_run(run_id, row)?;
    let mut ops = row.ops.clone();
    let recovered = apply_retry_poisoned(run.status, &mut ops, now)?;
    if recovered {
        if let Some(row) = state.runs.get_mut(run_id) {
            row.ops = ops;
        }
    }
    Ok((run, recovered))
}

/// Stores one tenant's share.
pub(super) fn set_tenant_share(state: &mut State, tenant: &TenantId, share: TenantShare) {
    state.fair.shares.insert(tenant.as_str().to_owned(), share);
}

/// Every stored share, by tenant id.
pub(super) fn tenant_shares(state: &State) -> Vec<(TenantId, TenantShare)> {
    state
        .fair
        .shares
        .iter()
        .filter_map(|(key, share)| TenantId::new(key.clone()).ok().map(|id| (id, *share)))
        .collect()
}
