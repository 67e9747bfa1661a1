//! (b) Claim throughput: `N` claimers drain a pool of due runs with `claim_due` (limit 1, then
//! limit `K`), beside `N` claimers draining a pool of bare rows with the raw claim statement.
//!
//! Claims/s is the pool size over the time from the first claim to the last claimer's empty
//! answer, for the store and the floor alike. Both pools are initialized before anything is
//! timed; the limit-`K` pool is due one hour later, and its claimers pass a clock one hour
//! ahead, so the two pools never mix (the claim TTL is a day, so nothing expires either).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use hdrhistogram::Histogram;

use docket_core::model::{OwnerScope, RunId, Timestamp};
use docket_core::store::{Backend, ClaimLease, ClaimPolicy, ClaimRequest};

use super::commits::nz;
use super::driver::{histogram, record, task_failed};
use super::floor::Floor;
use super::moments::{init, run_id, STEP_GRAPH};
use super::{BenchError, Ctx};

/// The claim TTL of the bench's claims: nothing the bench holds may expire while it runs.
pub(crate) const ORPHAN_TTL_MS: u64 = 24 * 3_600_000;

/// How far ahead the limit-`K` pool is due.
const SECOND_POOL_OFFSET_MS: i64 = 3_600_000;

/// One limit's figures.
pub(crate) struct ClaimFigures {
    /// Store leases per second.
    pub store_rate: f64,
    /// Floor claims per second.
    pub floor_rate: f64,
    /// Latency of one floor claim call.
    pub floor_latency: Histogram<u64>,
}

/// Both limits, verified.
pub(crate) struct ClaimResult {
    /// Limit 1.
    pub single: ClaimFigures,
    /// Limit `K`.
    pub batch: ClaimFigures,
    /// What the verification proved.
    pub verified: Vec<String>,
}

/// Initializes the two pools, then measures limit 1 and limit `K`.
pub(crate) async fn run(ctx: &Ctx) -> Result<ClaimResult, BenchError> {
    let n = ctx.options.concurrency;
    let pool = ctx.options.claim_pool;
    let graph = ctx.docket.save_graph_json(STEP_GRAPH).await?;
    let rtg = ctx.docket.runtime_graph(&graph).await?;
    let now = Timestamp::now_utc();
    let mut pools = Vec::new();
    for (phase, offset) in [("claim1", 0), ("claimk", SECOND_POOL_OFFSET_MS)] {
        let ids: Vec<RunId> = (0..pool)
            .map(|i| run_id(phase, i))
            .collect::<Result<_, _>>()?;
        futures::stream::iter(ids.iter().cloned())
            .map(|id| {
                let (backend, rtg) = (Arc::clone(&ctx.backend), &rtg);
                async move {
                    let (proposal, events) = init(rtg, id, now.add_millis(offset), now)?;
                    backend
                        .initialize(&OwnerScope::Tenantless, proposal, events)
                        .await?;
                    Ok::<_, BenchError>(())
                }
            })
            .buffer_unordered(n)
            .try_collect::<()>()
            .await?;
        pools.push((ids.into_iter().collect::<BTreeSet<_>>(), offset));
    }

    let mut verified = Vec::new();
    let mut figures = Vec::new();
    for ((ids, offset), limit) in pools.into_iter().zip([1, ctx.options.claim_batch]) {
        ctx.floor.prepare_claims(pool).await?;
        let (floor_claimed, floor_elapsed, floor_latency) =
            drain_floor(Arc::clone(&ctx.floor), n, limit, pool).await?;
        let (leases, store_elapsed) = drain_store(
            Arc::clone(&ctx.backend),
            n,
            ClaimPolicy::Oldest,
            limit,
            offset,
            pool,
        )
        .await?;
        let mut problems = verify_floor(ctx.floor.as_ref(), &floor_claimed, pool).await?;
        problems.extend(
            verify_store(
                ctx.backend.as_ref(),
                ClaimPolicy::Oldest,
                &leases,
                &ids,
                offset,
                limit,
            )
            .await?,
        );
        if !problems.is_empty() {
            return Err(BenchError::Verification(problems));
        }
        verified.push(format!(
            "(b) limit {limit}: each of {pool} runs claimed exactly once (attempt 1), each of \
             {pool} floor rows claimed exactly once, nothing left due"
        ));
        figures.push(ClaimFigures {
            store_rate: pool as f64 / store_elapsed.as_secs_f64().max(f64::EPSILON),
            floor_rate: pool as f64 / floor_elapsed.as_secs_f64().max(f64::EPSILON),
            floor_latency,
        });
    }
    let batch = figures.pop();
    let single = figures.pop();
    match (single, batch) {
        (Some(single), Some(batch)) => Ok(ClaimResult {
            single,
            batch,
            verified,
        }),
        _ => Err(BenchError::Setup(
            "a claim phase produced no figures".into(),
        )),
    }
}

/// A claim request under `claim_policy` at the real clock plus `offset_ms`.
fn policy(claim_policy: ClaimPolicy, limit: u32, offset_ms: i64) -> ClaimRequest {
    ClaimRequest {
        policy: claim_policy,
        now: Timestamp::now_utc().add_millis(offset_ms),
        limit: nz(limit),
        orphan_ttl_ms: ORPHAN_TTL_MS,
        max_claim_attempts: nz(5),
        preference: None,
    }
}

/// `N` claimers drain the store's due runs; stops (with an error) if more than `pool` leases
/// come back, so a store that hands runs out twice cannot loop forever.
pub(crate) async fn drain_store(
    backend: Arc<dyn Backend>,
    n: usize,
    claim_policy: ClaimPolicy,
    limit: u32,
    offset_ms: i64,
    pool: usize,
) -> Result<(Vec<ClaimLease>, Duration), BenchError> {
    let taken = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (backend, taken) = (Arc::clone(&backend), Arc::clone(&taken));
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let batch = backend
                        .claim_due(&policy(claim_policy, limit, offset_ms))
                        .await?;
                    if !batch.poisoned.is_empty() {
                        return Err(BenchError::Verification(vec![format!(
                            "(b) claim_due poisoned {} fresh runs",
                            batch.poisoned.len()
                        )]));
                    }
                    if batch.leases.is_empty() {
                        return Ok(mine);
                    }
                    if taken.fetch_add(batch.leases.len(), Ordering::SeqCst) + batch.leases.len()
                        > pool
                    {
                        return Err(BenchError::Verification(vec![format!(
                            "(b) the store handed out more than the {pool} pooled runs"
                        )]));
                    }
                    mine.extend(batch.leases);
                }
            })
        })
        .collect();
    let mut leases = Vec::new();
    for task in tasks {
        leases.extend(task.await.map_err(task_failed)??);
    }
    Ok((leases, started.elapsed()))
}

/// `N` claimers drain the floor's rows.
async fn drain_floor(
    floor: Arc<dyn Floor>,
    n: usize,
    limit: u32,
    pool: usize,
) -> Result<(Vec<u64>, Duration, Histogram<u64>), BenchError> {
    let taken = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (floor, taken) = (Arc::clone(&floor), Arc::clone(&taken));
            let token = docket_core::model::ClaimToken::mint().as_str().to_owned();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                let mut latency = histogram();
                loop {
                    let asked = Instant::now();
                    let rows = floor.claim(limit, &token).await?;
                    record(&mut latency, asked.elapsed());
                    if rows.is_empty() {
                        return Ok::<_, BenchError>((mine, latency));
                    }
                    if taken.fetch_add(rows.len(), Ordering::SeqCst) + rows.len() > pool {
                        return Err(BenchError::Verification(vec![format!(
                            "(b) the floor handed out more than its {pool} rows"
                        )]));
                    }
                    mine.extend(rows);
                }
            })
        })
        .collect();
    let mut claimed = Vec::new();
    let mut latency = histogram();
    for task in tasks {
        let (rows, h) = task.await.map_err(task_failed)??;
        claimed.extend(rows);
        let _ = latency.add(&h);
    }
    Ok((claimed, started.elapsed(), latency))
}

async fn verify_floor(
    floor: &dyn Floor,
    claimed: &[u64],
    pool: usize,
) -> Result<Vec<String>, BenchError> {
    let mut problems = Vec::new();
    let distinct: BTreeSet<&u64> = claimed.iter().collect();
    if claimed.len() != pool || distinct.len() != pool {
        problems.push(format!(
            "(b) floor: {} claims of {} distinct rows, expected each of {pool} rows once",
            claimed.len(),
            distinct.len()
        ));
    }
    let (unclaimed, taken) = floor.claim_counts().await?;
    if (unclaimed, taken) != (0, pool as u64) {
        problems.push(format!(
            "(b) floor: {unclaimed} rows unclaimed and {taken} claimed, expected 0 and {pool}"
        ));
    }
    Ok(problems)
}

pub(crate) async fn verify_store(
    backend: &dyn Backend,
    claim_policy: ClaimPolicy,
    leases: &[ClaimLease],
    ids: &BTreeSet<RunId>,
    offset_ms: i64,
    limit: u32,
) -> Result<Vec<String>, BenchError> {
    let mut problems = Vec::new();
    let claimed: BTreeSet<&RunId> = leases.iter().map(|l| &l.run_id).collect();
    if leases.len() != ids.len()
        || claimed.len() != ids.len()
        || claimed.iter().any(|id| !ids.contains(*id))
    {
        problems.push(format!(
            "(b) limit {limit}: {} leases of {} distinct runs, expected each of the {} pooled runs once",
            leases.len(),
            claimed.len(),
            ids.len()
        ));
    }
    if let Some(lease) = leases.iter().find(|l| l.claim_attempt != 1) {
        problems.push(format!(
            "(b) limit {limit}: run {} was leased at attempt {}, not 1",
            lease.run_id, lease.claim_attempt
        ));
    }
    let left = backend
        .claim_due(&policy(claim_policy, limit, offset_ms))
        .await?;
    if left.outcome_count() != 0 {
        problems.push(format!(
            "(b) limit {limit}: {} runs were still claimable after the pool was drained",
            left.outcome_count()
        ));
    }
    Ok(problems)
}
