//! What tenant-fair claiming reads and writes besides the run rows: the heads of each owner's
//! ready queue, the runs each owner holds claimed, the stored tenant shares and the cursor
//! of the round robin (`docs/claim-order.md`, “Tenant-fair claiming”).
//!
//! Everything here runs on the writer connection inside the claim's `BEGIN IMMEDIATE`
//! transaction, so fair claims are serialized with each other (and with every other write)
//! and the caps' counts, the selection and the cursor update are one atomic step. The order
//! itself is decided by `rules::tenant_fair` through `claim_pass`.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use rusqlite::{params, Connection, OptionalExtension};

use docket_core::model::{RunId, TenantId, Timestamp};
use docket_core::store::rules::claim_order::Candidate;
use docket_core::store::rules::tenant_fair::{self, rank_ready, FairContext, OwnedCandidate};
use docket_core::store::{ClaimClass, ClaimCursor, StoreError, TenantShare};

use crate::codec::OpsRow;
use crate::error::SqlResult;
use crate::sql::load_ops;

/// The stored shares, the claimed counts and the cursor, loaded for one fair pass.
pub(crate) struct FairState {
    shares: BTreeMap<String, TenantShare>,
    claimed: BTreeMap<String, u32>,
    cursor: Option<ClaimCursor>,
}

impl FairState {
    /// The view `claim_pass` reads.
    pub(crate) fn context(&self) -> FairContext<'_> {
        FairContext {
            shares: &self.shares,
            claimed: &self.claimed,
            cursor: self.cursor.as_ref(),
        }
    }
}

/// Loads the shares, the cursor, and the runs each *capped* tenant holds claimed (expired
/// claims included): only a cap reads the count, so owners without one are never counted
/// and a fair claim costs the same however many runs other owners hold.
///
/// # Errors
/// Infrastructure, or `Corrupt` for a stored share or cursor out of range.
pub(crate) fn load(conn: &Connection) -> Result<FairState, StoreError> {
    let shares: BTreeMap<String, TenantShare> = shares(conn)?
        .into_iter()
        .map(|(tenant, share)| (tenant.as_str().to_owned(), share))
        .collect();
    let mut claimed = BTreeMap::new();
    let mut count = conn
        .prepare_cached(
            "SELECT count(*) FROM docket_runs INDEXED BY docket_runs_claimed_by_owner \
             WHERE scope_key = ?1 AND claim_token IS NOT NULL",
        )
        .sql()?;
    for (owner, _) in shares.iter().filter(|(_, share)| share.cap.is_some()) {
        let held: i64 = count.query_row([owner], |row| row.get(0)).sql()?;
        claimed.insert(owner.clone(), u32::try_from(held).unwrap_or(u32::MAX));
    }
    let cursor = conn
        .prepare_cached("SELECT scope_key, taken FROM docket_claim_cursor WHERE id = 1")
        .sql()?
        .query_row([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .optional()
        .sql()?
        .map(|(scope_key, taken)| {
            u32::try_from(taken)
                .map(|taken| ClaimCursor { scope_key, taken })
                .map_err(|_| StoreError::corrupt("claim cursor", "taken out of range"))
        })
        .transpose()?;
    Ok(FairState {
        shares,
        claimed,
        cursor,
    })
}

/// The ready candidates a fair pass can select, read in two steps so that only they are
/// decoded. First the light heads: the first `limit` due ready runs of an owner, in
/// `(wake_at, run_id)` order, as `(owner key, wake_at, run_id)` straight from the
/// owner-keyed ready index (it covers them, so no row is read). No owner can contribute more
/// than `limit` runs to one selection. The owners are read in ring order — the cursor's
/// owner, then the keys after it, then from the first key up to the cursor's — and the walk
/// stops once the first round of the rank holds `limit` candidates
/// (`rules::tenant_fair::first_round`): every candidate the pass can select has been read by
/// then, so a limit-1 claim reads the cursor's owner and the next owner with a due run, not
/// every owner. Owners are found one seek at a time, so a large backlog of one owner is never
/// scanned: the seek to the next owner asks for any entry of the index, due or not (one
/// asking for a due one would read, entry by entry, every run of an owner whose runs all wake
/// later — scheduled, backing off — before reaching the next owner), and the heads query of
/// an owner with nothing due returns nothing. Then `rules::tenant_fair::rank_ready` orders
/// them under `state` and only the first `limit` in that order are loaded whole: the pass
/// selects at most `limit` ready runs, always the first in rank, so the rest could never be
/// chosen (the pass ranks the loaded rows again under the same state, so it still decides
/// the order itself).
///
/// # Errors
/// Infrastructure, or `Corrupt` for an undecodable row.
pub(crate) fn ready_candidates(
    conn: &Connection,
    now: Timestamp,
    limit: u32,
    state: &FairState,
) -> Result<Vec<OpsRow>, StoreError> {
    let mut next_owner = conn
        .prepare_cached(
            "SELECT scope_key FROM docket_runs INDEXED BY docket_runs_ready_by_owner \
             WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL \
               AND wake_at IS NOT NULL AND scope_key > ?1 \
             ORDER BY scope_key LIMIT 1",
        )
        .sql()?;
    let mut heads = conn
        .prepare_cached(
            "SELECT wake_at, run_id FROM docket_runs INDEXED BY docket_runs_ready_by_owner \
             WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL \
               AND wake_at IS NOT NULL AND wake_at <= ?1 AND scope_key = ?2 \
             ORDER BY wake_at, run_id LIMIT ?3",
        )
        .sql()?;
    let wanted = usize::try_from(limit).unwrap_or(usize::MAX);
    let context = state.context();
    let cursor = state.cursor.as_ref().map(|c| c.scope_key.as_str());
    let mut light = Vec::new();
    let mut first_round = 0usize;
    // The ring: from the cursor's owner (else the first key: the tenantless runs' empty one,
    // which no `>` comparison reaches) to the last key, then — after a cursor past the first
    // key — from the first key to just before the cursor's.
    let mut key = cursor.unwrap_or_default().to_owned();
    let mut wrapped = false;
    loop {
        let before = light.len();
        let rows = heads
            .query_map(params![now.as_micros(), key, i64::from(limit)], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .sql()?;
        for row in rows {
            let (wake_at, run_id) = row.sql()?;
            light.push(OwnedCandidate {
                scope_key: key.clone(),
                candidate: Candidate {
                    class: ClaimClass::Ready,
                    eligible_at: Timestamp::from_micros(wake_at),
                    key: run_id,
                },
            });
        }
        first_round = first_round.saturating_add(tenant_fair::first_round(
            &key,
            light.len() - before,
            &context,
        ));
        if first_round >= wanted {
            break;
        }
        let next: Option<String> = next_owner
            .query_row(params![key], |row| row.get(0))
            .optional()
            .sql()?;
        key = match (next, cursor) {
            (Some(next), Some(at)) if wrapped && next.as_str() >= at => break,
            (Some(next), _) => next,
            (None, Some(at)) if !wrapped && !at.is_empty() => {
                wrapped = true;
                String::new()
            }
            (None, _) => break,
        };
    }
    let mut out = Vec::new();
    for ranked in rank_ready(light, &context).into_iter().take(wanted) {
        let run_id =
            RunId::new(ranked.candidate.key).map_err(|e| StoreError::corrupt("ready run id", e))?;
        // Read in the same write transaction as the heads, so the row is still there as read.
        let row = load_ops(conn, &run_id)?
            .ok_or_else(|| StoreError::corrupt(run_id.as_str(), "ready run vanished"))?;
        out.push(row);
    }
    Ok(out)
}

/// Writes the cursor after a pass that selected a ready run.
///
/// # Errors
/// Infrastructure.
pub(crate) fn store_cursor(conn: &Connection, cursor: &ClaimCursor) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO docket_claim_cursor (id, scope_key, taken) VALUES (1, ?1, ?2) \
         ON CONFLICT (id) DO UPDATE SET scope_key = excluded.scope_key, taken = excluded.taken",
    )
    .sql()?
    .execute(params![cursor.scope_key, i64::from(cursor.taken)])
    .sql()?;
    Ok(())
}

/// `set_tenant_share`: one row per tenant, replaced on every call.
///
/// # Errors
/// Infrastructure.
pub(crate) fn set_share(
    conn: &Connection,
    tenant: &TenantId,
    share: TenantShare,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO docket_tenant_shares (tenant_id, weight, cap) VALUES (?1, ?2, ?3) \
         ON CONFLICT (tenant_id) DO UPDATE SET weight = excluded.weight, cap = excluded.cap",
    )
    .sql()?
    .execute(params![
        tenant.as_str(),
        i64::from(share.weight.get()),
        share.cap.map(|c| i64::from(c.get())),
    ])
    .sql()?;
    Ok(())
}

/// `tenant_shares`: every stored share, by tenant id in byte order (SQLite compares `TEXT`
/// with `BINARY`, byte order, unless told otherwise).
///
/// # Errors
/// Infrastructure, or `Corrupt` for a row out of range.
pub(crate) fn shares(conn: &Connection) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT tenant_id, weight, cap FROM docket_tenant_shares ORDER BY tenant_id",
        )
        .sql()?;
    let rows = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, Option<i64>>(2)?,
            ))
        })
        .sql()?;
    let mut out = Vec::new();
    for row in rows {
        let (tenant, weight, cap) = row.sql()?;
        let what = format!("tenant share {tenant}");
        let count = |n: i64| {
            u32::try_from(n)
                .ok()
                .and_then(NonZeroU32::new)
                .ok_or_else(|| StoreError::corrupt(what.as_str(), "weight or cap out of range"))
        };
        let share = TenantShare {
            weight: count(weight)?,
            cap: cap.map(count).transpose()?,
        };
        let id =
            TenantId::new(tenant.clone()).map_err(|e| StoreError::corrupt(what.as_str(), e))?;
        out.push((id, share));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use rusqlite::Connection;

    use docket_core::model::Timestamp;

    use super::{load, ready_candidates};

    /// Runs of owner `owner` (`''` tenantless) waking at `wake_at`, ids `<prefix>-<n>`.
    fn insert_runs(conn: &Connection, owner: &str, prefix: &str, count: u32, wake_at: i64) {
        let tenant = (!owner.is_empty()).then_some(owner);
        conn.execute(
            "INSERT OR IGNORE INTO docket_graph_versions \
             (scope_key, tenant_id, graph_id, graph_hash, graph, published_at) \
             VALUES (?1, ?2, 'g', 'h', x'00', 0)",
            rusqlite::params![owner, tenant],
        )
        .expect("graph row");
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?4) \
             INSERT INTO docket_runs (run_id, tenant_id, scope_key, graph_id, graph_hash, \
               status, step, checkpoint_seq, event_seq, document, latest_checkpoint_type, \
               wake_at, claim_attempts, claim_abandons, started_at, updated_at) \
             SELECT ?3 || '-' || printf('%06d', i), ?2, ?1, 'g', 'h', 'running', 0, 1, 1, '{}', \
               'run_initialized', ?5, 0, 0, 0, 0 FROM n",
            rusqlite::params![owner, tenant, prefix, count, wake_at],
        )
        .expect("run rows");
    }

    /// A tenant whose 20,000 runs all wake later sits between the others in key order: the
    /// fair heads step over it with a seek, where asking the next owner for a due run read its
    /// 20,000 index entries one by one on every claim (measured here in SQLite VM steps).
    #[test]
    fn fair_heads_step_over_an_owner_whose_runs_all_wake_later() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        crate::schema::migrate(&mut conn).expect("schema");
        insert_runs(&conn, "b-later", "later", 20_000, 5_000_000);
        insert_runs(&conn, "a", "a", 2, 10);
        insert_runs(&conn, "c", "c", 2, 10);
        let steps = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&steps);
        conn.progress_handler(
            100,
            Some(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                false
            }),
        )
        .expect("progress handler");
        let state = load(&conn).expect("fair state");
        let rows = ready_candidates(&conn, Timestamp::from_micros(1_000), 10, &state)
            .expect("ready candidates");
        let ids: Vec<&str> = rows.iter().map(|row| row.run_id.as_str()).collect();
        assert_eq!(ids, ["a-000001", "c-000001", "a-000002", "c-000002"]);
        let hundreds = steps.load(Ordering::Relaxed);
        assert!(
            hundreds < 100,
            "the heads took {hundreds} hundred VM steps (20,000 entries read?)"
        );
    }
}
