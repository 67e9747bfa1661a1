//! Claims: `claim_due`, `release_claim`, `abandon_claim`,
//! `retry_poisoned_run`.

use docket_core::model::{
    ClaimToken, GraphHash, GraphId, OwnerScope, PoisonReason, Run, RunId, RunStatus, Scope,
    Timestamp, MAX_PAGE_LIMIT,
};
use docket_core::store::rules::effects::{backoff_wake, validate_abandon_policy};
use docket_core::store::{
    AbandonMode, AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimClass, ClaimLease, ClaimPolicy,
    ClaimRequest, PoisonedClaim, StoreError,
};

use crate::error::Access;
use crate::scripts::{expect_ok, failure, Reply};
use crate::store::{Params, RedisStore};

/// Most outcomes one `claim_due` call serves: the script mints nothing itself, so the caller
/// sends one token per possible lease, and this bounds both the request and the script's work.
/// A larger `limit` is served as this many (the contract is "at most `limit`").
pub const MAX_CLAIM_BATCH: u32 = MAX_PAGE_LIMIT;

/// The 31 possible backoff wakes, indexed by `min(abandons_before, 30)`.
fn backoff_table(now: Timestamp, base_ms: u64, cap_ms: u64) -> Vec<Vec<u8>> {
    (0..=30u32)
        .map(|before| {
            backoff_wake(now, before, base_ms, cap_ms)
                .as_micros()
                .to_string()
                .into_bytes()
        })
        .collect()
}

pub(crate) fn terminal_statuses() -> String {
    RunStatus::DURABLE
        .iter()
        .filter(|s| s.is_terminal())
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn bad_lease(detail: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt("claimed run row", detail)
}

fn parse_lease(
    item: &Reply,
    claimed_at: Timestamp,
    orphan_ttl_ms: u64,
) -> Result<ClaimLease, StoreError> {
    let run_id = RunId::new(item.string(1)?).map_err(bad_lease)?;
    let mut lease = ClaimLease {
        owner: OwnerScope::from_scope_key(&item.string(2)?).map_err(bad_lease)?,
        graph_id: GraphId::new(item.string(3)?).map_err(bad_lease)?,
        graph_hash: GraphHash::new(item.string(4)?).map_err(bad_lease)?,
        checkpoint_seq: item.number(5).map_err(bad_lease)?,
        claim_token: ClaimToken::new(item.string(6)?).map_err(bad_lease)?,
        claimed_at,
        claim_attempt: item.number(7).map_err(bad_lease)?,
        orphan_ttl_ms,
        run: None,
        run_id,
    };
    // The document, when the script found one that decodes: a damaged one is left for the
    // claimer's `fetch_run` to report, as it would be without it.
    if let Ok(Some(doc)) = item.opt_bytes(8) {
        lease.attach_document(&doc);
    }
    Ok(lease)
}

impl RedisStore {
    pub(crate) async fn do_claim_due(
        &self,
        policy: &ClaimRequest,
    ) -> Result<ClaimBatch, StoreError> {
        let limit = policy.limit.get().min(MAX_CLAIM_BATCH);
        let ttl = i64::try_from(policy.orphan_ttl_ms).unwrap_or(i64::MAX);
        let cutoff = policy.now.add_millis(-ttl);
        let preference = match policy.preference {
            Some(ClaimClass::Ready) => "ready",
            Some(ClaimClass::Expired) => "expired",
            None => "",
        };
        let k = self.keys();
        let params = Params::new()
            .set("prefix", k.prefix())
            .set("policy", policy.policy.as_str())
            .set("now", policy.now.as_micros())
            .set("cutoff", cutoff.as_micros())
            .set("limit", limit)
            .set("max_attempts", policy.max_claim_attempts.get())
            .set("preference", preference);
        let mut args = vec![params.into_arg()];
        args.extend((0..limit).map(|_| ClaimToken::mint().as_str().as_bytes().to_vec()));
        // `Oldest` keeps its own script, unchanged in cost; `TenantFair` walks the per-owner
        // ready sets and also reads the shares and the cursor.
        let (script, keys) = match policy.policy {
            ClaimPolicy::Oldest => (
                &self.scripts().claim_due,
                vec![k.ready(), k.claims(), k.poisoned()],
            ),
            ClaimPolicy::TenantFair => (
                &self.scripts().claim_fair,
                vec![
                    k.ready(),
                    k.claims(),
                    k.poisoned(),
                    k.ready_owners(),
                    k.tenant_shares(),
                    k.fair_cursor(),
                    k.claims_by_owner(),
                ],
            ),
        };
        let reply = self.script(script, &keys, &args, Access::Write).await?;
        expect_ok(&reply)?;
        let mut batch = ClaimBatch::default();
        for i in 1..reply.len() {
            let item = reply.nested(i)?;
            match item.status()?.as_str() {
                "lease" => batch
                    .leases
                    .push(parse_lease(&item, policy.now, policy.orphan_ttl_ms)?),
                "poison" => batch.poisoned.push(PoisonedClaim {
                    run_id: RunId::new(item.string(1)?).map_err(bad_lease)?,
                    poisoned_at: policy.now,
                    reason: PoisonReason::MaxClaimAttemptsExceeded,
                }),
                other => return Err(failure(&item, other)),
            }
        }
        Ok(batch)
    }

    pub(crate) async fn do_release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let k = self.keys();
        let params = Params::new()
            .set("run_id", run_id.as_str())
            .set("token", token.as_str())
            .set("now", now.as_micros())
            .set("prefix", k.prefix());
        let reply = self
            .script(
                &self.scripts().release_claim,
                &[k.run(run_id), k.ready(), k.claims()],
                &[params.into_arg()],
                Access::Write,
            )
            .await?;
        expect_ok(&reply)
    }

    pub(crate) async fn do_abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        validate_abandon_policy(policy)?;
        let k = self.keys();
        let (mode, backoff) = match policy.mode {
            AbandonMode::Poisoning => ("poisoning", Vec::new()),
            AbandonMode::NonPoisoning { backoff: None } => ("non_poisoning", Vec::new()),
            AbandonMode::NonPoisoning { backoff: Some(b) } => (
                "non_poisoning",
                backoff_table(policy.now, b.base_ms, b.cap_ms),
            ),
        };
        let params = Params::new()
            .set("run_id", run_id.as_str())
            .set("token", token.as_str())
            .set("expected_seq", policy.expected_seq)
            .set("now", policy.now.as_micros())
            .set("retry_at", policy.retry_at.as_micros())
            .set("mode", mode)
            .set("max_abandons", policy.max_claim_abandons.get())
            .set("prefix", k.prefix());
        let mut args = vec![params.into_arg()];
        args.extend(backoff);
        let reply = self
            .script(
                &self.scripts().abandon_claim,
                &[k.run(run_id), k.ready(), k.claims(), k.poisoned()],
                &args,
                Access::Write,
            )
            .await?;
        expect_ok(&reply)?;
        match reply.string(1)?.as_str() {
            "rescheduled" => Ok(AbandonOutcome::Rescheduled),
            "poisoned" => Ok(AbandonOutcome::Poisoned),
            "stale" => Ok(AbandonOutcome::Stale),
            other => Err(failure(&reply, other)),
        }
    }

    pub(crate) async fn do_retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        // Decode first, like the reference store: a corrupt row is reported before anything
        // is written (an operator command can afford the extra round trip). The script then
        // re-checks visibility, status and poison atomically.
        self.load_run(scope, run_id).await?;
        let k = self.keys();
        let params = Params::new()
            .scope(scope)
            .set("run_id", run_id.as_str())
            .set("now", now.as_micros())
            .set("terminal_statuses", terminal_statuses())
            .set("channel", k.wake_channel())
            .set("namespace", self.namespace())
            .set("prefix", k.prefix());
        let reply = self
            .script(
                &self.scripts().retry_poisoned,
                &[k.run(run_id), k.ready(), k.poisoned()],
                &[params.into_arg()],
                Access::Write,
            )
            .await?;
        expect_ok(&reply)?;
        crate::codec::decode_document(run_id, &reply.bytes(2)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_table_is_core_backoff_wake_for_every_count() {
        let now = Timestamp::from_millis(1_000);
        let table = backoff_table(now, 100, 300);
        assert_eq!(table.len(), 31);
        for (before, wake) in table.iter().enumerate() {
            let before = u32::try_from(before).expect("small");
            let expected = backoff_wake(now, before, 100, 300).as_micros().to_string();
            assert_eq!(wake, expected.as_bytes());
        }
        assert_eq!(terminal_statuses(), "done,failed,cancelled");
    }
}
