//! (t) Tenant fairness: one tenant with a large backlog and four small tenants, every run
//! started before a worker at concurrency `N` begins, drained once under `ClaimPolicy::Oldest`
//! and once under `ClaimPolicy::TenantFair`. For each policy the phase reports when each small
//! tenant's last run finished, beside the time the same four small tenants take alone (no
//! backlog beside them: what the large tenant costs them), and Jain's fairness index of claims
//! per active tenant over one-second windows.
//!
//! Jain's index of `x₁…xₖ` is `(Σx)² / (k · Σx²)`: 1 when every active tenant got the same
//! number of claims in the window, `1/k` when one tenant got them all. A tenant is active in a
//! window while it has a run not yet finished at the window's start; only windows with at
//! least two active tenants count, and the figure is their mean.
//!
//! A phase ends when the last small tenant's last run finishes; the large tenant's remaining
//! runs stay due in the store (the bench's store is thrown away afterwards). Each small run is
//! verified: done, with the chain's output and a sound history; the worker must report no
//! fence loss, crash, discard, abandon or poison.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use serde_json::json;

use docket_core::model::{Event, Run, RunId, RunStatus, Scope, TenantId};
use docket_core::store::{
    Backend, BatchedCommit, ClaimBatch, ClaimPolicy, ClaimRequest, ClaimedCommit, Layered,
    StoreError, StoreLayer,
};

use super::moments::{run_id, CHAIN_GRAPH, CHAIN_OUTPUT};
use super::verify::run_and_history;
use super::{BenchError, Ctx};
use docket::engine::WorkerConfig;
use docket::{Docket, StartOptions};

/// The most a phase may take before it is declared stuck.
const PHASE_LIMIT: Duration = Duration::from_secs(900);

/// The small tenants.
const SMALL_TENANTS: usize = 4;

/// One policy's outcome.
pub(crate) struct PolicyOutcome {
    /// When each small tenant's last run finished, from the worker's start, in tenant order.
    pub small_finish: Vec<Duration>,
    /// Mean Jain index of claims per active tenant over one-second windows.
    pub jain: f64,
}

/// The whole figure, verified.
pub(crate) struct FairnessResult {
    /// When the last of the four small tenants finished without the backlog beside them.
    pub alone: Duration,
    /// Under `Oldest`.
    pub oldest: PolicyOutcome,
    /// Under `TenantFair`.
    pub fair: PolicyOutcome,
    /// What the verification proved (and the per-tenant times).
    pub verified: Vec<String>,
}

/// Runs the three phases: alone, `Oldest`, `TenantFair`.
pub(crate) async fn run(ctx: &Ctx) -> Result<FairnessResult, BenchError> {
    let small = ctx.options.fairness_runs;
    let alone = drain(ctx, "fair-alone", ClaimPolicy::Oldest, 0, small).await?;
    let oldest = drain(
        ctx,
        "fair-oldest",
        ClaimPolicy::Oldest,
        ctx.options.fairness_backlog,
        small,
    )
    .await?;
    let fair = drain(
        ctx,
        "fair-fair",
        ClaimPolicy::TenantFair,
        ctx.options.fairness_backlog,
        small,
    )
    .await?;
    let alone_time = alone
        .outcome
        .small_finish
        .iter()
        .copied()
        .max()
        .unwrap_or_default();
    let mut verified = Vec::new();
    for (name, phase) in [
        ("alone", &alone),
        ("oldest", &oldest),
        ("tenant-fair", &fair),
    ] {
        let times: Vec<String> = phase
            .outcome
            .small_finish
            .iter()
            .map(|d| format!("{:.2} s", d.as_secs_f64()))
            .collect();
        verified.push(format!(
            "(t) {name}: {} small runs done with n = {CHAIN_OUTPUT} and sound histories; \
             small tenants finished at {}; Jain {:.3}",
            phase.checked,
            times.join(", "),
            phase.outcome.jain
        ));
    }
    Ok(FairnessResult {
        alone: alone_time,
        oldest: oldest.outcome,
        fair: fair.outcome,
        verified,
    })
}

/// One drained phase.
struct Phase {
    outcome: PolicyOutcome,
    checked: usize,
}

/// Starts `backlog` runs of tenant `<prefix>-big` (none when `backlog` is 0) and then `small`
/// runs of each of the four small tenants, then drains under `policy` until every small run
/// has finished.
async fn drain(
    ctx: &Ctx,
    prefix: &str,
    policy: ClaimPolicy,
    backlog: usize,
    small: usize,
) -> Result<Phase, BenchError> {
    let n = ctx.options.concurrency;
    let mut tenants: Vec<(TenantId, usize)> = Vec::new();
    if backlog > 0 {
        tenants.push((tenant(&format!("{prefix}-big"))?, backlog));
    }
    for i in 0..SMALL_TENANTS {
        tenants.push((tenant(&format!("{prefix}-small{i}"))?, small));
    }
    let mut owner_of: HashMap<RunId, usize> = HashMap::new();
    let mut starts = Vec::new();
    for (t, (tenant, count)) in tenants.iter().enumerate() {
        let docket = ctx.docket.tenant(tenant.clone());
        let graph = docket.save_graph_json(CHAIN_GRAPH).await?;
        for i in 0..*count {
            let id = run_id(&format!("{prefix}-{t}"), i)?;
            owner_of.insert(id.clone(), t);
            starts.push((docket.clone(), graph.clone(), id));
        }
    }
    futures::stream::iter(starts)
        .map(|(docket, graph, id)| async move {
            let options = StartOptions {
                run_id: Some(id),
                ..StartOptions::default()
            };
            docket
                .start_run(&graph, Default::default(), options)
                .await?;
            Ok::<_, BenchError>(())
        })
        .buffer_unordered(n)
        .try_collect::<()>()
        .await?;

    let recorder = Arc::new(Layered(Recorder::new(
        Arc::clone(&ctx.backend),
        owner_of.clone(),
    )));
    let docket = Docket::builder(recorder.clone(), docket::nodes::registry())
        .config(WorkerConfig {
            concurrency: n,
            claim_policy: policy,
            // The runs other phases hold claimed stay theirs, however long the bench takes.
            orphan_ttl_ms: super::claims::ORPHAN_TTL_MS,
            ..WorkerConfig::default()
        })
        .build()?;
    let first_small = usize::from(backlog > 0);
    let small_ids: Vec<RunId> = owner_of
        .iter()
        .filter(|(_, t)| **t >= first_small)
        .map(|(id, _)| id.clone())
        .collect();
    recorder.0.start();
    let worker = docket.start_worker();
    let deadline = Instant::now() + PHASE_LIMIT;
    while !recorder.0.all_finished(&small_ids) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stats = Arc::clone(worker.stats());
    worker.shutdown().await;
    let (claims, finished) = recorder.0.take();

    let mut problems = Vec::new();
    let snap = stats.snapshot();
    for (what, count) in [
        ("fence losses", snap.fence_losses),
        ("discarded moments", snap.discards),
        ("vehicle crashes", snap.vehicle_crashes),
        ("abandons", snap.abandons),
        ("poisons", snap.poisons),
    ] {
        if count != 0 {
            problems.push(format!("(t) {prefix}: the worker reported {count} {what}"));
        }
    }
    let mut small_finish = vec![Duration::ZERO; tenants.len()];
    for id in &small_ids {
        match finished.get(id) {
            Some(at) => {
                let t = owner_of[id];
                small_finish[t] = small_finish[t].max(*at);
            }
            None => problems.push(format!(
                "(t) {prefix}: run {id} did not finish within {PHASE_LIMIT:?}"
            )),
        }
    }
    let verdicts: Vec<Vec<String>> = futures::stream::iter(small_ids.iter())
        .map(|id| {
            let docket = ctx.docket.tenant(tenants[owner_of[id]].0.clone());
            async move { verify_small(&docket, id).await }
        })
        .buffer_unordered(n)
        .try_collect()
        .await?;
    problems.extend(verdicts.into_iter().flatten());
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    let end = small_finish.iter().copied().max().unwrap_or_default();
    let lifetimes: Vec<Duration> = (0..tenants.len())
        .map(|t| {
            owner_of
                .iter()
                .filter(|(_, owner)| **owner == t)
                .map(|(id, _)| finished.get(id).copied().unwrap_or(Duration::MAX))
                .max()
                .unwrap_or_default()
        })
        .collect();
    Ok(Phase {
        outcome: PolicyOutcome {
            small_finish: small_finish.split_off(first_small),
            jain: mean_jain(&claims, &lifetimes, end),
        },
        checked: small_ids.len(),
    })
}

fn tenant(name: &str) -> Result<TenantId, BenchError> {
    TenantId::new(name).map_err(|e| BenchError::Setup(format!("tenant id: {e}")))
}

async fn verify_small(docket: &Docket, id: &RunId) -> Result<Vec<String>, BenchError> {
    let (run, history) = run_and_history(docket, id).await?;
    let mut problems: Vec<String> = history
        .into_iter()
        .map(|p| format!("(t) run {id}: {p}"))
        .collect();
    if run.status != RunStatus::Done {
        problems.push(format!("(t) run {id} is {}, not done", run.status));
    }
    if run.output.as_ref().and_then(|o| o.get("n")) != Some(&json!(CHAIN_OUTPUT)) {
        problems.push(format!("(t) run {id} lacks the chain's output"));
    }
    Ok(problems)
}

/// Mean Jain index over one-second windows from the start to `end`, counting in each window
/// the claims of the tenants still active at its start (`lifetimes[t]`: when tenant `t`'s
/// last run finished). A final partial window counts when it is at least half a second long
/// or the only one.
fn mean_jain(claims: &[(Duration, usize)], lifetimes: &[Duration], end: Duration) -> f64 {
    let second = Duration::from_secs(1);
    let mut indexes = Vec::new();
    let mut from = Duration::ZERO;
    while from < end {
        let to = (from + second).min(end);
        let partial = to - from < second / 2 && from > Duration::ZERO;
        if !partial {
            let active: Vec<usize> = (0..lifetimes.len())
                .filter(|&t| lifetimes[t] > from)
                .collect();
            let mut counts: BTreeMap<usize, f64> = active.iter().map(|&t| (t, 0.0)).collect();
            for (at, t) in claims {
                if *at >= from && *at < to {
                    if let Some(c) = counts.get_mut(t) {
                        *c += 1.0;
                    }
                }
            }
            let sum: f64 = counts.values().sum();
            let squares: f64 = counts.values().map(|c| c * c).sum();
            if active.len() >= 2 && squares > 0.0 {
                indexes.push(sum * sum / (active.len() as f64 * squares));
            }
        }
        from = to;
    }
    if indexes.is_empty() {
        return 1.0;
    }
    indexes.iter().sum::<f64>() / indexes.len() as f64
}

/// A pass-through store recording, from [`Recorder::start`] on, every lease (when, and whose)
/// and when each run finished (a claimed commit that made it terminal).
struct Recorder {
    inner: Arc<dyn Backend>,
    started: Mutex<Option<Instant>>,
    /// This phase's runs and their tenant's index; leases of other runs are not recorded.
    owners: HashMap<RunId, usize>,
    claims: Mutex<Vec<(Duration, usize)>>,
    finished: Mutex<HashMap<RunId, Duration>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    fn new(inner: Arc<dyn Backend>, owners: HashMap<RunId, usize>) -> Self {
        Recorder {
            inner,
            started: Mutex::new(None),
            owners,
            claims: Mutex::new(Vec::new()),
            finished: Mutex::new(HashMap::new()),
        }
    }

    fn start(&self) {
        if let Ok(mut started) = self.started.lock() {
            *started = Some(Instant::now());
        }
    }

    fn elapsed(&self) -> Duration {
        self.started
            .lock()
            .ok()
            .and_then(|s| *s)
            .map_or(Duration::ZERO, |s| s.elapsed())
    }

    fn all_finished(&self, ids: &[RunId]) -> bool {
        self.finished
            .lock()
            .is_ok_and(|done| ids.iter().all(|id| done.contains_key(id)))
    }

    /// The claims as `(when, tenant index)` and the finish times.
    fn take(&self) -> (Vec<(Duration, usize)>, HashMap<RunId, Duration>) {
        let claims = self.claims.lock().map(|c| c.clone()).unwrap_or_default();
        let finished = self.finished.lock().map(|f| f.clone()).unwrap_or_default();
        (claims, finished)
    }

    fn record_finish(&self, run: &Run) {
        if run.status.is_terminal() {
            let at = self.elapsed();
            if let Ok(mut done) = self.finished.lock() {
                done.entry(run.id.clone()).or_insert(at);
            }
        }
    }
}

#[async_trait]
impl StoreLayer for Recorder {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let batch = self.inner.claim_due(policy).await?;
        let at = self.elapsed();
        if let Ok(mut claims) = self.claims.lock() {
            for lease in &batch.leases {
                if let Some(&index) = self.owners.get(&lease.run_id) {
                    claims.push((at, index));
                }
            }
        }
        Ok(batch)
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let run = self.inner.commit_claimed(scope, proposal, events).await?;
        self.record_finish(&run);
        Ok(run)
    }

    async fn commit_claimed_batch(
        &self,
        batch: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        let outcomes = self.inner.commit_claimed_batch(batch).await;
        for run in outcomes.iter().flatten() {
            self.record_finish(run);
        }
        outcomes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_k_for_a_monopoly() {
        let lifetimes = [s(5_000), s(5_000), s(5_000), s(5_000)];
        let equal: Vec<(Duration, usize)> =
            (0..400).map(|i| (s(i * 10), (i % 4) as usize)).collect();
        assert!((mean_jain(&equal, &lifetimes, s(4_000)) - 1.0).abs() < 1e-9);
        let monopoly: Vec<(Duration, usize)> = (0..400).map(|i| (s(i * 10), 0)).collect();
        assert!((mean_jain(&monopoly, &lifetimes, s(4_000)) - 0.25).abs() < 1e-9);
    }

    #[test]
    fn finished_tenants_stop_counting() {
        let lifetimes = [s(10_000), s(500)];
        let claims: Vec<(Duration, usize)> = (0..100).map(|i| (s(1_000 + i * 10), 0)).collect();
        // From one second on only tenant 0 is active: no window has two active tenants.
        assert!((mean_jain(&claims, &lifetimes, s(2_000)) - 1.0).abs() < 1e-9);
    }
}
