//! Claims: `claim_due` (one statement; under `TenantFair` one call of the fair claim function,
//! see [`crate::fair`]), release / abandon (one conditional UPDATE each) and poison recovery
//! (a transaction around `SELECT … FOR UPDATE`).

use docket_core::model::{
    ClaimToken, GraphHash, GraphId, OwnerScope, PoisonReason, Run, RunId, Scope, TenantId,
    Timestamp,
};
use docket_core::store::rules::effects;
use docket_core::store::{
    AbandonMode, AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimClass, ClaimLease, ClaimPolicy,
    ClaimRequest, PoisonedClaim, StoreError,
};
use sqlx::postgres::PgRow;
use sqlx::{Connection, Row};

use crate::codec::{self, decode_run_row};
use crate::error;
use crate::statement::Statement;
use crate::store::{finish, scope_binds, Finish, PostgresStore};

/// One returned row of the claim statement, before it becomes a lease or a poison outcome.
struct Outcome {
    /// Its place in the selection: `(eligible_at, class, run_id)` under `Oldest` (the sort
    /// of `rules::claim_order`), `(ord, 0, "")` under `TenantFair` (the function numbers its
    /// selection).
    key: (i64, i32, String),
    result: Result<ClaimLease, PoisonedClaim>,
}

fn corrupt(what: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(format!("claimed row {what}"), detail)
}

fn decode_outcome(row: &PgRow, policy: &ClaimRequest, fair: bool) -> Result<Outcome, StoreError> {
    let run_id: String = row.try_get("run_id").map_err(error::safe)?;
    let get = |e: sqlx::Error| corrupt(&run_id, e);
    let class: i32 = row.try_get("class").map_err(get)?;
    let eligible_at: i64 = row.try_get("eligible_at").map_err(get)?;
    let id_of = RunId::new(run_id.clone()).map_err(|e| corrupt(&run_id, e))?;
    let poisoned_at: Option<i64> = row.try_get("poisoned_at").map_err(get)?;
    let result = if let Some(at) = poisoned_at {
        Err(PoisonedClaim {
            run_id: id_of,
            poisoned_at: Timestamp::from_micros(at),
            reason: PoisonReason::MaxClaimAttemptsExceeded,
        })
    } else {
        let tenant: Option<String> = row.try_get("tenant_id").map_err(get)?;
        let owner = match tenant {
            None => OwnerScope::Tenantless,
            Some(t) => OwnerScope::Tenant(TenantId::new(t).map_err(|e| corrupt(&run_id, e))?),
        };
        let token: String = row.try_get("claim_token").map_err(get)?;
        let seq: i64 = row.try_get("checkpoint_seq").map_err(get)?;
        let attempt: i32 = row.try_get("claim_attempts").map_err(get)?;
        let claimed_at: i64 = row.try_get("claimed_at").map_err(get)?;
        let mut lease = ClaimLease {
            run_id: id_of,
            owner,
            graph_id: GraphId::new(row.try_get::<String, _>("graph_id").map_err(get)?)
                .map_err(|e| corrupt(&run_id, e))?,
            graph_hash: GraphHash::new(row.try_get::<String, _>("graph_hash").map_err(get)?)
                .map_err(|e| corrupt(&run_id, e))?,
            checkpoint_seq: u64::try_from(seq).map_err(|e| corrupt(&run_id, e))?,
            claim_token: ClaimToken::new(token).map_err(|e| corrupt(&run_id, e))?,
            claimed_at: Timestamp::from_micros(claimed_at),
            claim_attempt: u32::try_from(attempt).map_err(|e| corrupt(&run_id, e))?,
            orphan_ttl_ms: policy.orphan_ttl_ms,
            run: None,
        };
        // Both claim statements return the run's document with its lease; one that does not
        // decode, or is not at the lease's checkpoint, is left for the claimer's `fetch_run`.
        if let Ok(Some(document)) = row.try_get::<Option<Vec<u8>>, _>("document") {
            lease.attach_document(&document);
        }
        Ok(lease)
    };
    let key = if fair {
        (row.try_get("ord").map_err(get)?, 0, String::new())
    } else {
        (eligible_at, class, run_id)
    };
    Ok(Outcome { key, result })
}

/// `claimed_at < cutoff` is the strict expiry test of `rules::effects::claim_class`.
fn expiry_cutoff(policy: &ClaimRequest) -> i64 {
    let ttl = i64::try_from(policy.orphan_ttl_ms).unwrap_or(i64::MAX);
    policy.now.add_millis(-ttl).as_micros()
}

fn preference_code(preference: Option<ClaimClass>) -> Option<i32> {
    preference.map(|class| match class {
        ClaimClass::Ready => 0,
        ClaimClass::Expired => 1,
    })
}

impl PostgresStore {
    pub(crate) fn claim_query<'q>(&'q self, sql: &'q str, policy: &ClaimRequest) -> Statement<'q> {
        self.q(sql)
            .bind(policy.now.as_micros())
            .bind(expiry_cutoff(policy))
            .bind(i64::from(policy.limit.get()))
            .bind(i64::from(policy.max_claim_attempts.get()))
            .bind(preference_code(policy.preference))
    }

    /// The claim statement of `policy`: the oldest-first statement, or the call of the fair
    /// claim function.
    pub(crate) fn claim_sql(&self, policy: &ClaimRequest) -> &str {
        if policy.policy == ClaimPolicy::TenantFair {
            &self.sql().claim_fair
        } else {
            &self.sql().claim_due
        }
    }

    pub(crate) async fn do_claim_due(
        &self,
        policy: &ClaimRequest,
    ) -> Result<ClaimBatch, StoreError> {
        let fair = policy.policy == ClaimPolicy::TenantFair;
        let sql = self.claim_sql(policy);
        let rows = {
            let mut conn = self.conn().await?;
            let rows = self
                .claim_query(sql, policy)
                .fetch_all(&mut conn)
                .await
                .map_err(error::sent)?;
            conn.reuse();
            rows
        };
        let mut outcomes = rows
            .iter()
            .map(|row| decode_outcome(row, policy, fair))
            .collect::<Result<Vec<_>, _>>()?;
        // Selection order, as `rules::claim_pass` returns it.
        outcomes.sort_by(|a, b| a.key.cmp(&b.key));
        let mut batch = ClaimBatch::default();
        for outcome in outcomes {
            match outcome.result {
                Ok(lease) => batch.leases.push(lease),
                Err(poison) => batch.poisoned.push(poison),
            }
        }
        Ok(batch)
    }

    /// The query plan PostgreSQL would use for `claim_due` under `policy` (`EXPLAIN`, not
    /// executed), one line per plan node. Used to prove the claim reads the partial indexes
    /// (`Oldest`) and reads each claimed document by its run id (`TenantFair`, whose
    /// selection runs inside the claim function, which `EXPLAIN` does not open).
    ///
    /// # Errors
    /// Infrastructure errors.
    pub async fn explain_claim(&self, policy: &ClaimRequest) -> Result<String, StoreError> {
        let mut conn = self.conn().await?;
        let explain = format!("EXPLAIN {}", self.claim_sql(policy));
        let rows = self
            .claim_query(&explain, policy)
            .fetch_all(&mut conn)
            .await
            .map_err(error::safe)?;
        let lines = rows
            .iter()
            .map(|row| row.try_get::<String, _>(0).map_err(error::safe))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(lines.join("\n"))
    }

    /// The generic plan of `claim_due` under `policy`: the plan a prepared claim statement
    /// may switch to after its first executions, when PostgreSQL plans it once for any
    /// parameter values (`plan_cache_mode = force_generic_plan`, `EXPLAIN EXECUTE`). Nothing
    /// is executed or left behind (the prepared statement is deallocated and the setting is
    /// transaction-local).
    ///
    /// # Errors
    /// Infrastructure errors.
    pub async fn explain_claim_generic(&self, policy: &ClaimRequest) -> Result<String, StoreError> {
        const NAME: &str = "docket_explain_claim_due";
        let preference = preference_code(policy.preference)
            .map_or_else(|| "NULL".to_owned(), |code| code.to_string());
        // Every argument is a number rendered by us, so the text is safe to interpolate.
        let execute = format!(
            "EXPLAIN EXECUTE {NAME}({}, {}, {}, {}, {preference})",
            policy.now.as_micros(),
            expiry_cutoff(policy),
            policy.limit.get(),
            policy.max_claim_attempts.get(),
        );
        let mut conn = self.conn().await?;
        let mut tx = self.begin(&mut conn).await?;
        // PREPARE is not transactional: the statement outlives the transaction, and behind a
        // transaction pooler the next transaction may run on another server connection. So it
        // is deallocated inside this transaction, and the EXPLAIN runs under a savepoint, so
        // that its failure cannot leave the transaction unable to deallocate.
        let prepared = sqlx::raw_sql(&format!(
            "SET LOCAL plan_cache_mode = force_generic_plan;
             PREPARE {NAME}(bigint, bigint, bigint, bigint, integer) AS {}",
            self.claim_sql(policy)
        ))
        .execute(&mut *tx)
        .await;
        let plan = match prepared {
            Ok(_) => {
                let plan = match (*tx).begin().await {
                    Ok(mut savepoint) => {
                        let rows = sqlx::raw_sql(&execute).fetch_all(&mut *savepoint).await;
                        let _ = savepoint.rollback().await;
                        rows
                    }
                    Err(e) => Err(e),
                };
                let deallocated = sqlx::raw_sql(&format!("DEALLOCATE {NAME}"))
                    .execute(&mut *tx)
                    .await;
                plan.and_then(|rows| deallocated.map(|_| rows))
            }
            Err(e) => Err(e),
        };
        let _ = tx.rollback().await;
        let lines = plan
            .map_err(error::safe)?
            .iter()
            .map(|row| row.try_get::<String, _>(0).map_err(error::safe))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(lines.join("\n"))
    }

    pub(crate) async fn do_release(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let Some(token) = codec::token_uuid(token) else {
            return Ok(());
        };
        let mut conn = self.conn().await?;
        self.q(&self.sql().release)
            .bind(run_id.as_str())
            .bind(token)
            .bind(now.as_micros())
            .execute(&mut conn)
            .await
            .map_err(error::sent)?;
        conn.reuse();
        Ok(())
    }

    pub(crate) async fn do_abandon(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        effects::validate_abandon_policy(policy)?;
        let (Some(token), Ok(expected)) =
            (codec::token_uuid(token), i64::try_from(policy.expected_seq))
        else {
            return Ok(AbandonOutcome::Stale);
        };
        let (non_poisoning, backoff) = match policy.mode {
            AbandonMode::Poisoning => (false, None),
            AbandonMode::NonPoisoning { backoff } => (true, backoff),
        };
        let mut conn = self.conn().await?;
        let row = self
            .q(&self.sql().abandon)
            .bind(run_id.as_str())
            .bind(token)
            .bind(expected)
            .bind(non_poisoning)
            .bind(i64::from(policy.max_claim_abandons.get()))
            .bind(policy.now.as_micros())
            .bind(policy.retry_at.as_micros())
            .bind(backoff.is_some())
            .bind(backoff.map_or_else(|| "0".to_owned(), |b| b.base_ms.to_string()))
            .bind(backoff.map_or_else(|| "0".to_owned(), |b| b.cap_ms.to_string()))
            .fetch_optional(&mut conn)
            .await
            .map_err(error::sent)?;
        conn.reuse();
        match row {
            None => Ok(AbandonOutcome::Stale),
            Some(row) => {
                let poisoned: bool = row.try_get("poisoned").map_err(error::safe)?;
                Ok(if poisoned {
                    AbandonOutcome::Poisoned
                } else {
                    AbandonOutcome::Rescheduled
                })
            }
        }
    }

    pub(crate) async fn do_retry_poisoned(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        let mut conn = self.conn().await?;
        let mut tx = self.begin(&mut conn).await?;
        let outcome = self.retry_poisoned_in(&mut tx, scope, run_id, now).await;
        finish(tx, outcome).await
    }

    /// The body of `retry_poisoned_run` inside its transaction: lock and decode the row, apply
    /// the rule, write the operational columns when it changed anything.
    async fn retry_poisoned_in(
        &self,
        tx: &mut sqlx::PgConnection,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Finish<Run>, StoreError> {
        let (system, scope_key) = scope_binds(scope);
        let row = self
            .q(&self.sql().select_run_for_update)
            .bind(run_id.as_str())
            .bind(system)
            .bind(&scope_key)
            .fetch_optional(&mut *tx)
            .await
            .map_err(error::safe)?;
        let Some(row) = row else {
            return Err(StoreError::NotFound);
        };
        let mut stored = decode_run_row(&row)?;
        if !effects::apply_retry_poisoned(stored.run.status, &mut stored.ops, now)? {
            return Ok(Finish::Rollback(stored.run));
        }
        let columns = codec::encode_ops(&stored.ops);
        self.q(&self.sql().write_ops)
            .bind(run_id.as_str())
            .bind(columns.claim_token)
            .bind(columns.claimed_at)
            .bind(columns.wake_at)
            .bind(columns.claim_attempts)
            .bind(columns.claim_abandons)
            .bind(columns.poisoned_at)
            .bind(columns.poison_reason)
            .bind(columns.admitted_at)
            .execute(&mut *tx)
            .await
            .map_err(error::safe)?;
        self.notify(&mut *tx).await?;
        Ok(Finish::Commit(stored.run))
    }
}
