//! The registry's model-based property test: random histories of registrations (with and
//! without admission limits), every transition (and a mismatched one), owner termination and
//! retirement, collection and time, over two owners and four operation ids, applied to the
//! backend under test and to a fresh memory registry, comparing every result and every
//! owner's whole state after every step.
//!
//! The knobs are those of the run model test: `DOCKET_CONFORMANCE_CASES` (default 256),
//! `PROPTEST_RNG_SEED` to replay the seed a failure prints, and
//! `DOCKET_CONFORMANCE_REGRESSIONS=<file>` to persist failing seeds.

mod steps;
mod world;

use proptest::test_runner::{TestCaseError, TestError, TestRunner};

pub use steps::{Act, Step};
pub use world::run_history;

use crate::cases::model::config;
use crate::env::Env;

/// Random histories on the backend's registry match the memory registry, result for result
/// and state for state (at least 256 histories).
///
/// # Panics
/// With the shrunk history and its seed when a history diverges. Needs a multi-threaded
/// runtime (the runner drives the store from a blocking section).
pub async fn random_histories_match_the_memory_registry(env: &Env<'_>) {
    let (config, seed) = config();
    let cases = config.cases;
    let handle = tokio::runtime::Handle::current();
    let outcome = tokio::task::block_in_place(|| {
        let mut runner = TestRunner::new(config);
        runner.run(&steps::history(), |history| {
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
            "the registry diverged from the memory registry.\n{reason}\n\
             minimal history ({} steps): {history:#?}\n\
             reproduce with PROPTEST_RNG_SEED={seed} DOCKET_CONFORMANCE_CASES={cases}",
            history.len()
        ),
        Err(TestError::Abort(reason)) => {
            panic!("the property run aborted: {reason} (PROPTEST_RNG_SEED={seed})")
        }
    }
}

/// Named histories: the admission limit freeing up, retirement fencing later writes,
/// collection freeing ids, and an operation retiring gracefully under progress.
fn fixed_histories() -> Vec<(&'static str, Vec<Step>)> {
    use Act::*;
    use Step::{Act as Do, Collect, Register, Retire, Terminate};
    let reg = |owner, op, limit| Register {
        owner,
        op,
        name: 0,
        limit,
    };
    vec![
        (
            "the admission limit frees up when an operation ends",
            vec![
                reg(0, 0, Some(2)),
                reg(0, 1, Some(2)),
                reg(0, 2, Some(2)),
                Do {
                    owner: 0,
                    op: 0,
                    act: Abort,
                },
                reg(0, 2, Some(2)),
                reg(0, 3, Some(2)),
            ],
        ),
        (
            "retirement terminates and fences",
            vec![
                reg(1, 0, None),
                reg(1, 1, None),
                Do {
                    owner: 1,
                    op: 1,
                    act: Start,
                },
                Retire { owner: 1 },
                Do {
                    owner: 1,
                    op: 1,
                    act: Complete,
                },
                reg(1, 2, None),
                Collect { owner: 1 },
                Retire { owner: 1 },
            ],
        ),
        (
            "collection frees ids and sequences continue",
            vec![
                reg(0, 0, None),
                Do {
                    owner: 0,
                    op: 0,
                    act: Start,
                },
                Do {
                    owner: 0,
                    op: 0,
                    act: Complete,
                },
                Collect { owner: 0 },
                reg(0, 0, None),
                Terminate { owner: 0 },
                Do {
                    owner: 0,
                    op: 0,
                    act: Cancel,
                },
            ],
        ),
        (
            "graceful retirement under progress",
            vec![
                reg(0, 3, None),
                Do {
                    owner: 0,
                    op: 3,
                    act: Start,
                },
                Do {
                    owner: 0,
                    op: 3,
                    act: Progress,
                },
                Do {
                    owner: 0,
                    op: 3,
                    act: RequestRetire,
                },
                Do {
                    owner: 0,
                    op: 3,
                    act: RequestRetire,
                },
                Do {
                    owner: 0,
                    op: 3,
                    act: Progress,
                },
                Do {
                    owner: 0,
                    op: 3,
                    act: Mismatched,
                },
                Do {
                    owner: 0,
                    op: 3,
                    act: MarkRetired,
                },
                Do {
                    owner: 0,
                    op: 3,
                    act: Progress,
                },
            ],
        ),
    ]
}

/// The named histories match the memory registry step for step.
pub async fn fixed_histories_match_the_memory_registry(env: &Env<'_>) {
    for (name, history) in fixed_histories() {
        let fresh = env.fresh().await;
        if let Err(divergence) = run_history(fresh.store().clone(), &history).await {
            panic!("history {name:?} diverged from the memory registry: {divergence}");
        }
    }
}
