//! (a) Fenced claimed commits/s and (d) commit latency, beside the raw conditional update.
//!
//! The floor runs first, then the store, each with `N` tasks for the same window. Every store
//! task holds its own claimed run and commits moments back to back with the claim retained,
//! so no two tasks contend for one row — exactly like the floor's tasks, one row each. The
//! store's tasks commit through the engine's group commit with a worker's batch limit.

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};

use docket_core::model::{ClaimToken, Run, RunId, Scope, Timestamp};
use docket_core::store::{Backend, ClaimLease, ClaimRequest, StoreError};

use super::driver::{closed_loop, LoopOutcome, Op};
use super::floor::Floor;
use super::moments::{next_commit, run_id, STEP_GRAPH};
use super::verify::run_and_history;
use super::{BenchError, Ctx};
use docket::StartOptions;

/// Both sides of (a); the floor is verified, the store's runs are verified by [`verify`].
pub(crate) struct CommitResult {
    /// The store's commits.
    pub store: LoopOutcome<StoreCommit>,
    /// The floor's updates.
    pub floor: LoopOutcome<FloorCommit>,
    /// What the floor's verification proved.
    pub verified: Vec<String>,
}

/// One floor task: its row, the seq it believes the row is at, and its token.
pub(crate) struct FloorCommit {
    floor: Arc<dyn Floor>,
    row: usize,
    seq: u64,
    token: String,
}

#[async_trait]
impl Op for FloorCommit {
    async fn once(&mut self) -> Result<(), BenchError> {
        if self.floor.commit(self.row, self.seq, &self.token).await? {
            self.seq += 1;
            Ok(())
        } else {
            Err(BenchError::Verification(vec![format!(
                "floor row {}: the conditional update at seq {} matched no row, yet only this \
                 task writes it",
                self.row, self.seq
            )]))
        }
    }
}

/// One store task: its claimed run as last committed, its token and its commit count.
pub(crate) struct StoreCommit {
    backend: Arc<dyn Backend>,
    run: Run,
    token: ClaimToken,
    commits: u64,
}

#[async_trait]
impl Op for StoreCommit {
    async fn once(&mut self) -> Result<(), BenchError> {
        let (proposal, events) = next_commit(
            &self.run,
            &self.token,
            self.commits + 1,
            Timestamp::now_utc(),
        );
        let expected = self.run.checkpoint_seq;
        self.run = match self
            .backend
            .commit_claimed(&Scope::System, proposal, events)
            .await
        {
            Ok(run) => run,
            Err(StoreError::StaleCheckpoint) => {
                return Err(BenchError::Verification(vec![format!(
                    "(a) run {}: the commit after seq {expected} was refused as stale, yet only \
                     this task writes the run (an earlier acknowledged commit was not kept)",
                    self.run.id
                )]))
            }
            Err(e) => return Err(e.into()),
        };
        self.commits += 1;
        Ok(())
    }
}

/// `n` as a non-zero count (1 for 0).
pub(crate) fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

/// Claims exactly the runs in `ids` (nothing else is due), polling until all are leased.
pub(crate) async fn claim_exactly(
    backend: &dyn Backend,
    ids: &BTreeSet<RunId>,
) -> Result<Vec<ClaimLease>, BenchError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut leases: Vec<ClaimLease> = Vec::new();
    while leases.len() < ids.len() {
        let wanted = u32::try_from(ids.len() - leases.len())
            .unwrap_or(u32::MAX)
            .clamp(1, docket_core::model::MAX_PAGE_LIMIT);
        let batch = backend
            .claim_due(&ClaimRequest {
                policy: Default::default(),
                now: Timestamp::now_utc(),
                limit: nz(wanted),
                orphan_ttl_ms: super::claims::ORPHAN_TTL_MS,
                max_claim_attempts: nz(5),
                preference: None,
            })
            .await?;
        if !batch.poisoned.is_empty() {
            return Err(BenchError::Verification(vec![format!(
                "claiming the commit runs poisoned {} of them",
                batch.poisoned.len()
            )]));
        }
        if let Some(stray) = batch.leases.iter().find(|l| !ids.contains(&l.run_id)) {
            return Err(BenchError::Verification(vec![format!(
                "claimed {}, which the bench did not start",
                stray.run_id
            )]));
        }
        leases.extend(batch.leases);
        if Instant::now() > deadline {
            return Err(BenchError::Setup(format!(
                "only {} of {} due runs could be claimed within 60 s",
                leases.len(),
                ids.len()
            )));
        }
    }
    Ok(leases)
}

/// Measures the floor (and verifies it), then the store; `phase` names the store's runs
/// (`bench-<phase>-<n>`), so the phase can run more than once on one store.
pub(crate) async fn run(ctx: &Ctx, phase: &str) -> Result<CommitResult, BenchError> {
    let n = ctx.options.concurrency;
    let mut problems = Vec::new();
    let tokens: Vec<String> = (0..n)
        .map(|_| ClaimToken::mint().as_str().to_owned())
        .collect();
    ctx.floor.prepare_commits(&tokens).await?;
    let ops = tokens
        .into_iter()
        .enumerate()
        .map(|(row, token)| FloorCommit {
            floor: Arc::clone(&ctx.floor),
            row,
            seq: 0,
            token,
        })
        .collect();
    let floor = closed_loop(ops, ctx.options.window()).await?;
    let seqs = ctx.floor.commit_seqs().await?;
    let floor_updates: u64 = floor.ops.iter().map(|op| op.seq).sum();
    for op in &floor.ops {
        if seqs.get(op.row) != Some(&op.seq) {
            problems.push(format!(
                "floor row {} holds seq {:?}, but {} updates were counted",
                op.row,
                seqs.get(op.row),
                op.seq
            ));
        }
    }

    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }

    let graph = ctx.docket.save_graph_json(STEP_GRAPH).await?;
    let mut ids = BTreeSet::new();
    let mut runs = Vec::new();
    for i in 0..n {
        let id = run_id(phase, i)?;
        let run = ctx
            .docket
            .start_run(
                &graph,
                Default::default(),
                StartOptions {
                    run_id: Some(id.clone()),
                    ..StartOptions::default()
                },
            )
            .await?;
        ids.insert(id);
        runs.push(run);
    }
    let leases = claim_exactly(ctx.backend.as_ref(), &ids).await?;
    // The tasks commit through the engine's group commit with the batch limit a worker would
    // use (`--max-commit-batch`, else the store's preference), as a worker's vehicles do.
    let max_batch = ctx
        .options
        .max_commit_batch
        .unwrap_or_else(|| ctx.backend.preferred_commit_batch());
    let committer = docket::engine::group_commit(
        Arc::clone(&ctx.backend),
        max_batch,
        ctx.options.commit_batches_in_flight,
    );
    let ops = runs
        .into_iter()
        .map(|run| {
            let lease = leases.iter().find(|l| l.run_id == run.id).ok_or_else(|| {
                BenchError::Setup(format!("run {} was started but not claimed", run.id))
            })?;
            Ok(StoreCommit {
                backend: Arc::clone(&committer),
                token: lease.claim_token.clone(),
                run,
                commits: 0,
            })
        })
        .collect::<Result<Vec<_>, BenchError>>()?;
    let store = closed_loop(ops, ctx.options.window()).await?;
    let verified = vec![format!(
        "(a) floor: {n} rows, each at exactly the seq its counted updates ({floor_updates} in \
         total) put it at"
    )];
    Ok(CommitResult {
        store,
        floor,
        verified,
    })
}

/// Every store run of (a) is at `checkpoint_seq = 1 +` its acknowledged commits, with a sound
/// history. Run last: the histories are long, and reading them must not count in (e).
pub(crate) async fn verify(ctx: &Ctx, result: &CommitResult) -> Result<String, BenchError> {
    let checks: Vec<Vec<String>> = futures::stream::iter(result.store.ops.iter())
        .map(|op| verify_run(ctx, &op.run.id, op.commits))
        .buffer_unordered(ctx.options.concurrency)
        .try_collect()
        .await?;
    let problems: Vec<String> = checks.into_iter().flatten().collect();
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    let commits: u64 = result.store.ops.iter().map(|op| op.commits).sum();
    Ok(format!(
        "(a) store: {} runs, each at checkpoint_seq = 1 + its acknowledged commits ({commits} \
         in total), histories sound",
        result.store.ops.len()
    ))
}

/// `checkpoint_seq == 1 + commits` and a sound history for run `id`.
async fn verify_run(ctx: &Ctx, id: &RunId, commits: u64) -> Result<Vec<String>, BenchError> {
    let (run, history) = run_and_history(&ctx.docket, id).await?;
    let mut problems: Vec<String> = history
        .into_iter()
        .map(|p| format!("(a) run {id}: {p}"))
        .collect();
    if run.checkpoint_seq != 1 + commits {
        problems.push(format!(
            "(a) run {id}: checkpoint_seq is {}, but 1 + {commits} commits were acknowledged",
            run.checkpoint_seq
        ));
    }
    Ok(problems)
}
