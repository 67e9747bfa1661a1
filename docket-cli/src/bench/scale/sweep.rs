//! (a) and (c) across concurrency: for each level, the fenced commits of (a) beside the raw
//! conditional update at the same concurrency, and the end-to-end runs/s of the 3-node and of
//! the 1-node graph beside the floor they imply (raw updates/s ÷ the checkpoints one run
//! commits). Each level is a full (a) and (c) phase, verified as those are.

use std::sync::Arc;

use super::super::commits;
use super::super::driver::Window;
use super::super::e2e;
use super::super::moments::{CHAIN, SINGLE};
use super::super::{BenchError, BenchOptions, Ctx};

/// One concurrency level.
#[derive(Clone, Debug, PartialEq)]
pub struct CurvePoint {
    /// Tasks in (a), worker vehicles in (c).
    pub concurrency: usize,
    /// (a) fenced commits/s.
    pub commits: f64,
    /// The raw conditional updates/s at this concurrency.
    pub commit_floor: f64,
    /// (c) runs/s of the 3-node graph.
    pub runs_chain: f64,
    /// Checkpoints one 3-node run commits.
    pub chain_commits_per_run: u64,
    /// (c) runs/s of the 1-node graph.
    pub runs_single: f64,
    /// Checkpoints one 1-node run commits.
    pub single_commits_per_run: u64,
}

/// Every level, verified.
#[derive(Default)]
pub(crate) struct Sweep {
    /// In the order measured.
    pub points: Vec<CurvePoint>,
    /// What the verification proved.
    pub verified: Vec<String>,
}

/// Measures every level of `levels` with `window`.
pub(crate) async fn run(ctx: &Ctx, levels: &[usize], window: Window) -> Result<Sweep, BenchError> {
    let mut points = Vec::new();
    let mut verified = Vec::new();
    for &c in levels {
        let level = Ctx {
            backend: Arc::clone(&ctx.backend),
            floor: Arc::clone(&ctx.floor),
            docket: ctx.docket.clone(),
            options: BenchOptions {
                concurrency: c,
                duration: window.measure,
                warmup: window.warmup,
                ..ctx.options.clone()
            },
            url: ctx.url.clone(),
            progress: Arc::clone(&ctx.progress),
        };
        let commits = commits::run(&level, &format!("sweep-a{c}")).await?;
        let store = commits::verify(&level, &commits).await?;
        let chain = e2e::run(&level, &format!("sweep-c{c}"), CHAIN).await?;
        let single = e2e::run(&level, &format!("sweep-s{c}"), SINGLE).await?;
        verified.push(format!("(a)(c) at concurrency {c}: {store}"));
        verified.extend(
            commits
                .verified
                .iter()
                .chain(&chain.verified)
                .chain(&single.verified)
                .map(|line| format!("(a)(c) at concurrency {c}: {line}")),
        );
        points.push(CurvePoint {
            concurrency: c,
            commits: commits.store.rate(),
            commit_floor: commits.floor.rate(),
            runs_chain: chain.rate,
            chain_commits_per_run: chain.commits_per_run,
            runs_single: single.rate,
            single_commits_per_run: single.commits_per_run,
        });
    }
    Ok(Sweep { points, verified })
}
