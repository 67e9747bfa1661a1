//! The model-based property test (`docs/reliability.md`, “Model-based testing”): random histories
//! of start / claim at chosen times / claimed commit with right and wrong seq and token / signal
//! (cancel, resolve) / abandon / release / expire (advance time) / retry-poisoned /
//! prune, applied to the backend under test and to a fresh reference `MemoryStore`, comparing every
//! result and the full observable state after every step.
//!
//! Failures shrink to a minimal history and print the seed: `PROPTEST_RNG_SEED=<seed>`
//! replays the same histories. `DOCKET_CONFORMANCE_CASES` sets how many histories run
//! (default [`DEFAULT_CASES`]); `DOCKET_CONFORMANCE_REGRESSIONS=<file>` persists failing
//! seeds to that file and replays them first on later runs.

mod ops;
mod world;

use std::hash::{BuildHasher, RandomState};

use docket_core::model::RunStatus;
use docket_core::store::{ClaimClass, ClaimPolicy};
use proptest::test_runner::{
    Config, FileFailurePersistence, RngSeed, TestCaseError, TestError, TestRunner,
};

pub use ops::{Mode, Op, Sched, Seq, Tok};
pub use world::run_history;

use crate::env::Env;

/// Histories per backend when `DOCKET_CONFORMANCE_CASES` is not set.
pub const DEFAULT_CASES: u32 = 256;

/// How many histories to run.
fn cases() -> u32 {
    std::env::var("DOCKET_CONFORMANCE_CASES")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_CASES)
}

/// The runner's configuration: proptest's environment knobs, our case count, a seed that is
/// always known (so it can be printed), and persistence only when asked for.
pub(crate) fn config() -> (Config, u64) {
    let mut config = Config {
        cases: cases(),
        max_shrink_iters: 2_048,
        max_shrink_time: 120_000,
        failure_persistence: None,
        ..Config::default()
    };
    let seed = match config.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => RandomState::new().hash_one("docket-conformance"),
    };
    config.rng_seed = RngSeed::Fixed(seed);
    if let Ok(path) = std::env::var("DOCKET_CONFORMANCE_REGRESSIONS") {
        let path: &'static str = Box::leak(path.into_boxed_str());
        config.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(path)));
    }
    (config, seed)
}

/// Random histories on the backend under test match the reference memory store, result for
/// result and state for state (at least 256 histories; see the module docs for the knobs).
///
/// # Panics
/// With the shrunk history and its seed when a history diverges. Needs a multi-threaded
/// runtime (the runner drives the store from a blocking section).
pub async fn random_sequences_match_the_memory_model(env: &Env<'_>) {
    let (config, seed) = config();
    let cases = config.cases;
    let handle = tokio::runtime::Handle::current();
    let outcome = tokio::task::block_in_place(|| {
        let mut runner = TestRunner::new(config);
        runner.run(&ops::history(), |history| {
            handle
                .block_on(async {
                    let fresh = env.fresh().await;
                    run_history(fresh.store().clone(), &history).await
                })
                .map_err(TestCaseError::fail)
        })
    });
    match outcome {
        Ok(()) => {}
        Err(TestError::Fail(reason, history)) => panic!(
            "the backend diverged from the memory model.\n{reason}\n\
             minimal history ({} steps): {history:#?}\n\
             reproduce with PROPTEST_RNG_SEED={seed} DOCKET_CONFORMANCE_CASES={cases}",
            history.len()
        ),
        Err(TestError::Abort(reason)) => {
            panic!("the property run aborted: {reason} (PROPTEST_RNG_SEED={seed})")
        }
    }
}

/// Named histories every run replays: the Kleppmann steal, stale and future seqs under a
/// current token, poison and recovery, a signal revoking a claim, abandon escalation, and
/// retention after completion.
fn fixed_histories() -> Vec<(&'static str, Vec<Op>)> {
    use Op::*;
    let claim = |limit, ttl_ms, max_attempts| Claim {
        limit,
        ttl_ms,
        max_attempts,
        preference: None,
        policy: ClaimPolicy::Oldest,
    };
    let fair = |limit| Claim {
        limit,
        ttl_ms: 1_000,
        max_attempts: 3,
        preference: None,
        policy: ClaimPolicy::TenantFair,
    };
    let commit = |run, token, seq, to| Commit {
        run,
        token,
        seq,
        to,
        schedule: Sched::Fitting,
        scope: 0,
    };
    vec![
        (
            "a stolen holder is fenced and the thief commits",
            vec![
                Start {
                    run: 0,
                    owner: 1,
                    wake_in: 0,
                },
                claim(1, 60_000, 5),
                Advance { ms: 60_001 },
                claim(1, 60_000, 5),
                commit(0, Tok::Previous, Seq::Current, RunStatus::Running),
                commit(0, Tok::Current, Seq::Current, RunStatus::Running),
                commit(0, Tok::Current, Seq::Current, RunStatus::Done),
            ],
        ),
        (
            "a holder's proposal built on an old or a future seq is stale",
            vec![
                Start {
                    run: 0,
                    owner: 0,
                    wake_in: 0,
                },
                claim(1, 60_000, 5),
                commit(0, Tok::Current, Seq::Current, RunStatus::Running),
                commit(0, Tok::Current, Seq::Stale, RunStatus::Running),
                commit(0, Tok::Current, Seq::Future, RunStatus::Running),
                commit(0, Tok::Current, Seq::Current, RunStatus::Waiting),
            ],
        ),
        (
            "attempt poison and recovery",
            vec![
                Start {
                    run: 1,
                    owner: 0,
                    wake_in: 500,
                },
                claim(2, 1_000, 1),
                Advance { ms: 500 },
                claim(2, 1_000, 1),
                Release {
                    run: 1,
                    token: Tok::Current,
                },
                claim(2, 1_000, 1),
                RetryPoisoned { run: 1, scope: 3 },
                RetryPoisoned { run: 1, scope: 1 },
                claim(2, 1_000, 1),
            ],
        ),
        (
            "a signal revokes a live claim",
            vec![
                Start {
                    run: 2,
                    owner: 2,
                    wake_in: 0,
                },
                claim(3, 60_000, 3),
                Signal {
                    run: 2,
                    seq: Seq::Current,
                    to: RunStatus::Waiting,
                    wake: Sched::Fitting,
                    scope: 3,
                },
                commit(2, Tok::Current, Seq::Current, RunStatus::Running),
                Signal {
                    run: 2,
                    seq: Seq::Current,
                    to: RunStatus::Running,
                    wake: Sched::Fitting,
                    scope: 0,
                },
                claim(3, 60_000, 3),
                commit(2, Tok::Current, Seq::Current, RunStatus::Running),
            ],
        ),
        (
            "abandons escalate to poison and commits reset them",
            vec![
                Start {
                    run: 0,
                    owner: 0,
                    wake_in: 0,
                },
                claim(1, 0, 3),
                Abandon {
                    run: 0,
                    token: Tok::Current,
                    seq: Seq::Current,
                    max: 1,
                    mode: Mode::Poisoning,
                    retry_in: 0,
                },
                claim(1, 0, 3),
                Abandon {
                    run: 0,
                    token: Tok::Current,
                    seq: Seq::Current,
                    max: 1,
                    mode: Mode::Poisoning,
                    retry_in: 0,
                },
                Signal {
                    run: 0,
                    seq: Seq::Current,
                    to: RunStatus::Running,
                    wake: Sched::Immediate,
                    scope: 0,
                },
                claim(1, 0, 3),
                Abandon {
                    run: 0,
                    token: Tok::Current,
                    seq: Seq::Stale,
                    max: 1,
                    mode: Mode::Backoff,
                    retry_in: 0,
                },
                Abandon {
                    run: 0,
                    token: Tok::Current,
                    seq: Seq::Current,
                    max: 1,
                    mode: Mode::Backoff,
                    retry_in: 0,
                },
            ],
        ),
        (
            "a tenant-fair round robin with a weight, a cap and the admission marker",
            vec![
                Share {
                    owner: 1,
                    weight: 2,
                    cap: Some(2),
                },
                Start {
                    run: 0,
                    owner: 1,
                    wake_in: 0,
                },
                Start {
                    run: 1,
                    owner: 1,
                    wake_in: 0,
                },
                Start {
                    run: 2,
                    owner: 2,
                    wake_in: 0,
                },
                fair(1),
                fair(1),
                fair(1),
                Commit {
                    run: 0,
                    token: Tok::Current,
                    seq: Seq::Current,
                    to: RunStatus::Running,
                    schedule: Sched::Immediate,
                    scope: 0,
                },
                fair(2),
                Advance { ms: 1_001 },
                fair(3),
                Release {
                    run: 1,
                    token: Tok::Current,
                },
                Abandon {
                    run: 2,
                    token: Tok::Current,
                    seq: Seq::Current,
                    max: 2,
                    mode: Mode::Plain,
                    retry_in: 0,
                },
                fair(3),
                Signal {
                    run: 0,
                    seq: Seq::Current,
                    to: RunStatus::Running,
                    wake: Sched::Immediate,
                    scope: 0,
                },
                fair(3),
            ],
        ),
        (
            "retention after completion",
            vec![
                Start {
                    run: 0,
                    owner: 0,
                    wake_in: 0,
                },
                Start {
                    run: 1,
                    owner: 1,
                    wake_in: 0,
                },
                Claim {
                    limit: 2,
                    ttl_ms: 60_000,
                    max_attempts: 3,
                    preference: Some(ClaimClass::Ready),
                    policy: ClaimPolicy::Oldest,
                },
                commit(0, Tok::Current, Seq::Current, RunStatus::Failed),
                Advance { ms: 60_001 },
                Prune {
                    event_ms: 1_000,
                    run_ms: 60_000,
                    batch: 1,
                },
                Prune {
                    event_ms: 1_000,
                    run_ms: 60_000,
                    batch: 2,
                },
                Prune {
                    event_ms: 60_000,
                    run_ms: 1_000,
                    batch: 2,
                },
            ],
        ),
    ]
}

/// Named histories (a stolen holder, poison and recovery, a signal revoking a claim, abandon
/// escalation, retention) match the memory model step for step.
pub async fn fixed_sequences_match_the_memory_model(env: &Env<'_>) {
    for (name, history) in fixed_histories() {
        let fresh = env.fresh().await;
        if let Err(divergence) = run_history(fresh.store().clone(), &history).await {
            panic!("history {name:?} diverged from the memory model: {divergence}");
        }
    }
}
