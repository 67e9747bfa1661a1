//! (b) under tenant-fair claiming: the same drains as the claim figures (limit 1, then limit
//! `K`), on pools spread over five tenants and claimed with `ClaimPolicy::TenantFair`, so each
//! figure reads beside the `Oldest` rate of the same limit in the same run (the cost of the
//! round robin: the cursor, the shares and the per-owner candidates; on stores that
//! serialize fair claims, also the parallelism they give up).

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use docket_core::model::{OwnerScope, RunId, TenantId, Timestamp};
use docket_core::store::ClaimPolicy;

use super::claims::{drain_store, verify_store};
use super::moments::{init, run_id, STEP_GRAPH};
use super::{BenchError, Ctx};

/// How far ahead the limit-1 pool is due (past the other claim pools, so none of them mix);
/// the limit-`K` pool is due an hour after it.
const POOL_OFFSET_MS: i64 = 2 * 3_600_000;

/// Tenants each pool is spread over.
const TENANTS: usize = 5;

/// The verified tenant-fair claim rates.
pub(crate) struct FairClaims {
    /// Leases per second, limit 1.
    pub single: f64,
    /// Leases per second, limit `K` (`--claim-batch`).
    pub batch: f64,
    /// What the verification proved.
    pub verified: String,
}

/// Saves the step graph under each of the five tenants, then initializes and drains one pool
/// per limit (run `i` owned by tenant `i mod 5`).
pub(crate) async fn run(ctx: &Ctx) -> Result<FairClaims, BenchError> {
    let n = ctx.options.concurrency;
    let pool = ctx.options.claim_pool;
    let mut graphs = Vec::new();
    for t in 0..TENANTS {
        let tenant = TenantId::new(format!("claims-{t}"))
            .map_err(|e| BenchError::Setup(format!("tenant id: {e}")))?;
        let docket = ctx.docket.tenant(tenant.clone());
        let graph = docket.save_graph_json(STEP_GRAPH).await?;
        graphs.push((
            OwnerScope::Tenant(tenant),
            docket.runtime_graph(&graph).await?,
        ));
    }
    let limits = [1, ctx.options.claim_batch];
    let mut rates = [0.0; 2];
    for (k, limit) in limits.into_iter().enumerate() {
        let offset = POOL_OFFSET_MS + k as i64 * 3_600_000;
        let now = Timestamp::now_utc();
        let ids: Vec<RunId> = (0..pool)
            .map(|i| run_id(&format!("claimfair{limit}"), i))
            .collect::<Result<_, _>>()?;
        futures::stream::iter(ids.iter().cloned().enumerate())
            .map(|(i, id)| {
                let backend = Arc::clone(&ctx.backend);
                let (owner, rtg) = &graphs[i % TENANTS];
                async move {
                    let (proposal, events) = init(rtg, id, now.add_millis(offset), now)?;
                    backend.initialize(owner, proposal, events).await?;
                    Ok::<_, BenchError>(())
                }
            })
            .buffer_unordered(n)
            .try_collect::<()>()
            .await?;
        let fair = ClaimPolicy::TenantFair;
        let (leases, elapsed) =
            drain_store(Arc::clone(&ctx.backend), n, fair, limit, offset, pool).await?;
        let ids: BTreeSet<RunId> = ids.into_iter().collect();
        let problems =
            verify_store(ctx.backend.as_ref(), fair, &leases, &ids, offset, limit).await?;
        if !problems.is_empty() {
            return Err(BenchError::Verification(problems));
        }
        rates[k] = pool as f64 / elapsed.as_secs_f64().max(f64::EPSILON);
    }
    Ok(FairClaims {
        single: rates[0],
        batch: rates[1],
        verified: format!(
            "(b) tenant-fair, limits 1 and {}: each of 2 × {pool} runs of {TENANTS} tenants \
             claimed exactly once (attempt 1), nothing left due",
            limits[1]
        ),
    })
}
