//! Tenant-fair claiming (`docs/claim-order.md`, “Tenant-fair claiming”): the statements of a
//! `ClaimPolicy::TenantFair` claim and of the stored tenant shares.
//!
//! The fair claim is one call of `docket_claim_fair` (schema version 8, `sql/v8.sql`; versions
//! 4, 5 and 6 defined it before): one statement, one round trip, one transaction, sent like
//! every other statement (prepared, or through `docket_prepare` behind a transaction pooler).
//! It picks its runs one at a time, each with one index probe in the order of
//! `rules::tenant_fair` (the cursor owner's round, then the owners after the cursor's key,
//! then those before it; an owner whose runs all wake later costs one more probe, never a read
//! of its entries), moving a private copy of the cursor past each pick, then leases
//! them with one `UPDATE` and locks the cursor row only to write it, without waiting for a
//! racing claim that holds it. So fair claims run side by side; run one at a time they select
//! exactly what the rule selects, racing each takes the next runs in line of the owners the
//! rule gives its turn to. In a store where some tenant has a cap, fair claims take the cursor
//! row's lock first and hold it, so they run one at a time there and each counts the caps from
//! its predecessor's committed claims (PL/pgSQL takes a new snapshot per statement in a
//! VOLATILE function).
//! `Oldest` claims never touch the cursor and keep their own statement.

use docket_core::model::TenantId;
use docket_core::store::{StoreError, TenantShare};
use sqlx::Row;

use crate::error;
use crate::store::PostgresStore;

/// `claim_due` under `TenantFair`: the function's rows under the column names the `Oldest`
/// statement returns, plus `ord`, the place in the selection, and each leased run's
/// document (`ClaimLease::run`), read by its run id.
///
/// The document is a subquery per returned row, not a join: PostgreSQL estimates any
/// set-returning function at 1,000 rows, so for a join it weighed 1,000 run-id probes
/// against hashing the whole table, and below roughly 70,000 rows (as it estimated them) it
/// chose the hash — every fair claim read every run (measured: 35–50 ms a claim on a
/// 13,000-run store, 0.03× of the oldest-first rate). A subquery is always a run-id probe per row, whatever the estimates
/// (`tests/plan.rs` checks both plans at several sizes).
///
/// The subquery reads `runs` under this statement's snapshot, taken before the function ran:
/// a run that changed in between comes back at its older checkpoint (or not at all), and
/// `ClaimLease::attach_run` drops a document whose `checkpoint_seq` is not the lease's, so
/// its claimer reads the run itself. The claim's own changes are operational columns, never
/// the document.
///
/// `$1` now, `$2` expiry cutoff (claimed_at < cutoff), `$3` limit, `$4` max attempts,
/// `$5` preferred class (0 ready, 1 expired, NULL none).
pub(crate) const CLAIM_FAIR: &str = "SELECT f.out_run_id AS run_id,
        f.out_tenant_id AS tenant_id, f.out_graph_id AS graph_id,
        f.out_graph_hash AS graph_hash, f.out_checkpoint_seq AS checkpoint_seq,
        f.out_claim_token AS claim_token, f.out_claimed_at AS claimed_at,
        f.out_claim_attempts AS claim_attempts, f.out_poisoned_at AS poisoned_at,
        f.out_class AS class, f.out_eligible_at AS eligible_at, f.out_ord AS ord,
        (SELECT r.document FROM {s}.runs AS r
         WHERE r.run_id = f.out_run_id AND f.out_poisoned_at IS NULL) AS document
    FROM {s}.docket_claim_fair($1, $2, $3, $4, $5) AS f";

/// Stores one tenant's share, replacing an earlier one: `$1` tenant id, `$2` weight, `$3` cap.
pub(crate) const SET_TENANT_SHARE: &str =
    "INSERT INTO {s}.tenant_shares AS t (tenant_id, weight, cap) VALUES ($1, $2, $3)
    ON CONFLICT (tenant_id) DO UPDATE SET weight = EXCLUDED.weight, cap = EXCLUDED.cap";

/// Every stored share in byte order of the tenant id (the column is `COLLATE \"C\"`).
pub(crate) const TENANT_SHARES: &str =
    "SELECT tenant_id, weight, cap FROM {s}.tenant_shares ORDER BY tenant_id";

fn corrupt(tenant: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(format!("tenant share {tenant}"), detail)
}

/// A stored positive integer (the table's CHECKs keep it so; a row that is not is corrupt).
fn positive(value: i32, tenant: &str, column: &str) -> Result<std::num::NonZeroU32, StoreError> {
    u32::try_from(value)
        .ok()
        .and_then(std::num::NonZeroU32::new)
        .ok_or_else(|| corrupt(tenant, format!("{column} is not positive: {value}")))
}

/// A share's value as an `integer` column: the weights and caps anyone configures fit, and a
/// larger one means the same as `i32::MAX` (more than a store ever claims at once).
fn column(value: std::num::NonZeroU32) -> i32 {
    i32::try_from(value.get()).unwrap_or(i32::MAX)
}

impl PostgresStore {
    pub(crate) async fn do_set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        self.q(&self.sql().set_tenant_share)
            .bind(tenant.as_str())
            .bind(column(share.weight))
            .bind(share.cap.map(column))
            .execute(&mut conn)
            .await
            .map_err(error::sent)?;
        Ok(())
    }

    pub(crate) async fn do_tenant_shares(
        &self,
    ) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = self
            .q(&self.sql().tenant_shares)
            .fetch_all(&mut conn)
            .await
            .map_err(error::safe)?;
        rows.iter()
            .map(|row| {
                let tenant: String = row.try_get("tenant_id").map_err(error::safe)?;
                let get = |e: sqlx::Error| corrupt(&tenant, e);
                let weight: i32 = row.try_get("weight").map_err(get)?;
                let cap: Option<i32> = row.try_get("cap").map_err(get)?;
                let share = TenantShare {
                    weight: positive(weight, &tenant, "weight")?,
                    cap: cap.map(|c| positive(c, &tenant, "cap")).transpose()?,
                };
                let id = TenantId::new(tenant.clone()).map_err(|e| corrupt(&tenant, e))?;
                Ok((id, share))
            })
            .collect()
    }
}
