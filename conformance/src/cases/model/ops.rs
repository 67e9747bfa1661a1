//! The operations of the model-based test and their proptest strategy.
//!
//! Every field is an index or a choice from a small set, so sequences shrink to readable
//! counterexamples and hit the interesting boundaries (TTL edges, stale and future seqs,
//! superseded tokens) often.

use docket_core::model::RunStatus;
use docket_core::store::{ClaimClass, ClaimPolicy};
use proptest::prelude::*;

/// Runs the sequences touch (`m0`, `m1`, `m2`).
pub const RUNS: u8 = 3;

/// Which claim token an operation presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    /// The latest token minted for the run (or a foreign one if none was).
    Current,
    /// The one before it (a superseded holder).
    Previous,
    /// A token never issued.
    Foreign,
}

/// Which seq a proposal builds on, relative to the committed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seq {
    /// The committed seq.
    Current,
    /// One behind (a holder that missed a commit).
    Stale,
    /// One ahead (a proposal from the future).
    Future,
}

/// The schedule of a claimed commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sched {
    /// The one the status's disposition maps to.
    Fitting,
    /// Retain the claim.
    Retain,
    /// Release, due at once.
    Immediate,
    /// Release, due this many ms after now.
    At(i64),
    /// Release, no wake.
    External,
    /// Release for good.
    Terminal,
}

/// How an abandon hands back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Reschedule until the maximum, then poison.
    Poisoning,
    /// Always reschedule at `retry_at`.
    Plain,
    /// Always reschedule with the store's exponential backoff (100 ms, cap 300 ms).
    Backoff,
}

/// One step of a generated history.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `initialize`.
    Start {
        /// Target run.
        run: u8,
        /// Owner index (0 tenantless, 1 `a`, 2 `b`).
        owner: u8,
        /// First wake, in ms from now.
        wake_in: i64,
    },
    /// `initialize_batch` of starts as in [`Op::Start`], each `(run, owner, wake_in)`; the
    /// model starts them one by one in order (so a run id taken before the batch, or by an
    /// earlier member, fails that member alone).
    StartBatch {
        /// The members, in order.
        members: Vec<(u8, u8, i64)>,
    },
    /// `claim_due` now.
    Claim {
        /// Outcome limit.
        limit: u32,
        /// Orphan TTL.
        ttl_ms: u64,
        /// Launches before poison.
        max_attempts: u32,
        /// Demand-one preference.
        preference: Option<ClaimClass>,
        /// Oldest or tenant-fair.
        policy: ClaimPolicy,
    },
    /// `set_tenant_share` for tenant `a` (1) or `b` (2), then both stores' `tenant_shares`.
    Share {
        /// Owner index (1 `a`, 2 `b`).
        owner: u8,
        /// Claims per round.
        weight: u32,
        /// Most claimed at once (`None`: no cap).
        cap: Option<u32>,
    },
    /// A claimed commit moving `run` to `to`.
    Commit {
        /// Target run.
        run: u8,
        /// Presented token.
        token: Tok,
        /// Base seq.
        seq: Seq,
        /// Proposed status.
        to: RunStatus,
        /// Schedule.
        schedule: Sched,
        /// Scope index (0 system, 1 tenantless, 2 `a`, 3 `b`).
        scope: u8,
    },
    /// Claimed commits sent as one `commit_claimed_batch`; the model commits them one by one
    /// in order. Each member is `(run, token, seq, to, schedule, scope)` as in [`Op::Commit`],
    /// its proposal built from the state before the batch (so a second member of one run
    /// presents a base the first may have moved).
    Batch {
        /// The members, in order.
        members: Vec<(u8, Tok, Seq, RunStatus, Sched, u8)>,
    },
    /// Two claimed commits of `run` sent as one `commit_claimed_batch`, the second built on
    /// the first's proposal (its checkpoint and document) under the same token: the first as
    /// in [`Op::Commit`], each with its own `(to, schedule)`. What a worker's chained
    /// completion sends, and what PostgreSQL and Redis fold into one write when the first
    /// keeps its claim on a running run; the model commits them one by one.
    Chain {
        /// Target run.
        run: u8,
        /// Which token both present.
        token: Tok,
        /// The first's base.
        seq: Seq,
        /// Scope index, as in [`Op::Commit`].
        scope: u8,
        /// The first commit's status and schedule.
        first: (RunStatus, Sched),
        /// The second commit's status and schedule.
        second: (RunStatus, Sched),
    },
    /// A signal (unclaimed commit) moving `run` to `to`; running resolves open interrupts.
    Signal {
        /// Target run.
        run: u8,
        /// Base seq.
        seq: Seq,
        /// Proposed status.
        to: RunStatus,
        /// Wake (`Retain` is impossible for signals and means "fitting" here).
        wake: Sched,
        /// Scope index.
        scope: u8,
    },
    /// `abandon_claim`.
    Abandon {
        /// Target run.
        run: u8,
        /// Presented token.
        token: Tok,
        /// Expected seq.
        seq: Seq,
        /// Reschedules before poison.
        max: u32,
        /// Hand-back mode.
        mode: Mode,
        /// `retry_at − now` in ms (negative is invalid).
        retry_in: i64,
    },
    /// `release_claim`.
    Release {
        /// Target run.
        run: u8,
        /// Presented token.
        token: Tok,
    },
    /// Moves the shared clock forward.
    Advance {
        /// By this many ms.
        ms: i64,
    },
    /// `retry_poisoned_run`.
    RetryPoisoned {
        /// Target run.
        run: u8,
        /// Scope index.
        scope: u8,
    },
    /// One retention pass.
    Prune {
        /// Event retention.
        event_ms: u64,
        /// Terminal-run retention (below the event retention is invalid).
        run_ms: u64,
        /// Rows per category.
        batch: u32,
    },
}

fn tok() -> impl Strategy<Value = Tok> {
    prop_oneof![4 => Just(Tok::Current), 2 => Just(Tok::Previous), 1 => Just(Tok::Foreign)]
}

fn seq() -> impl Strategy<Value = Seq> {
    prop_oneof![6 => Just(Seq::Current), 1 => Just(Seq::Stale), 1 => Just(Seq::Future)]
}

fn status() -> impl Strategy<Value = RunStatus> {
    prop_oneof![
        6 => Just(RunStatus::Running),
        2 => Just(RunStatus::Waiting),
        1 => Just(RunStatus::Done),
        1 => Just(RunStatus::Failed),
        1 => Just(RunStatus::Cancelled),
    ]
}

fn sched() -> impl Strategy<Value = Sched> {
    prop_oneof![
        8 => Just(Sched::Fitting),
        1 => Just(Sched::Retain),
        1 => Just(Sched::Immediate),
        1 => prop_oneof![Just(0i64), Just(1_000), Just(90_000)].prop_map(Sched::At),
        1 => Just(Sched::External),
        1 => Just(Sched::Terminal),
    ]
}

fn run() -> impl Strategy<Value = u8> {
    0..RUNS
}

fn scope() -> impl Strategy<Value = u8> {
    prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (run(), 0u8..3, prop_oneof![Just(0i64), Just(500), Just(60_000)])
            .prop_map(|(run, owner, wake_in)| Op::Start { run, owner, wake_in }),
        1 => prop::collection::vec(
            (run(), 0u8..3, prop_oneof![Just(0i64), Just(500), Just(60_000)]),
            0..5,
        )
        .prop_map(|members| Op::StartBatch { members }),
        4 => (
            1u32..4,
            prop_oneof![Just(0u64), Just(1_000), Just(60_000)],
            1u32..4,
            prop_oneof![Just(None), Just(Some(ClaimClass::Ready)), Just(Some(ClaimClass::Expired))],
            prop_oneof![Just(ClaimPolicy::Oldest), Just(ClaimPolicy::TenantFair)],
        )
            .prop_map(|(limit, ttl_ms, max_attempts, preference, policy)| Op::Claim {
                limit,
                ttl_ms,
                max_attempts,
                preference,
                policy,
            }),
        1 => (1u8..3, 1u32..4, prop_oneof![Just(None), Just(Some(1u32)), Just(Some(2))])
            .prop_map(|(owner, weight, cap)| Op::Share { owner, weight, cap }),
        5 => (run(), tok(), seq(), status(), sched(), scope()).prop_map(
            |(run, token, seq, to, schedule, scope)| Op::Commit { run, token, seq, to, schedule, scope }
        ),
        2 => prop::collection::vec((run(), tok(), seq(), status(), sched(), scope()), 0..5)
            .prop_map(|members| Op::Batch { members }),
        2 => (run(), tok(), seq(), scope(), (status(), sched()), (status(), sched()))
            .prop_map(|(run, token, seq, scope, first, second)| Op::Chain {
                run, token, seq, scope, first, second
            }),
        2 => (run(), seq(), status(), sched(), scope())
            .prop_map(|(run, seq, to, wake, scope)| Op::Signal { run, seq, to, wake, scope }),
        2 => (
            run(),
            tok(),
            seq(),
            1u32..3,
            prop_oneof![Just(Mode::Poisoning), Just(Mode::Plain), Just(Mode::Backoff)],
            prop_oneof![Just(0i64), Just(1_000), Just(-1)],
        )
            .prop_map(|(run, token, seq, max, mode, retry_in)| Op::Abandon {
                run,
                token,
                seq,
                max,
                mode,
                retry_in,
            }),
        2 => (run(), tok()).prop_map(|(run, token)| Op::Release { run, token }),
        3 => prop_oneof![
            Just(1i64), Just(999), Just(1_000), Just(1_001), Just(30_000), Just(60_000), Just(60_001)
        ]
        .prop_map(|ms| Op::Advance { ms }),
        1 => (run(), scope()).prop_map(|(run, scope)| Op::RetryPoisoned { run, scope }),
        1 => (
            prop_oneof![Just(0u64), Just(1_000), Just(60_000)],
            prop_oneof![Just(0u64), Just(1_000), Just(60_000)],
            1u32..3,
        )
            .prop_map(|(event_ms, run_ms, batch)| Op::Prune { event_ms, run_ms, batch }),
    ]
}

/// Histories of 1 to 48 operations.
pub fn history() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..48)
}
