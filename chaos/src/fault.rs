//! The fault-injecting store layer.
//!
//! [`FaultLayer`] wraps any [`Backend`] and, on a seeded fraction of the write calls workers
//! and clients make (`commit_claimed`, `claim_due`, `release_claim`, `abandon_claim`, and the
//! starts and signals: `initialize`, `commit_unclaimed`), does one of:
//!
//! * **delay** — waits a few milliseconds, then forwards the call unchanged;
//! * **error before applying** — answers a retryable `Unavailable` without forwarding, so the
//!   store is unchanged;
//! * **ambiguous after applying** — forwards the call, lets it take effect, then answers
//!   `Ambiguous` as if the reply had been lost on the way back;
//! * **ambiguous, not applied** — answers `Ambiguous` without forwarding, as if the request
//!   had been lost on the way out (only on the three commits: the caller cannot tell it from
//!   the previous kind, which is the point);
//! * **stall** (claimed commits only) — holds the commit until another worker has been handed a newer
//!   claim on the same run (the stalled holder's claim outlived the orphan TTL and was taken
//!   over) or a deadline passes, then forwards it: a correct store must refuse it.
//!
//! Which call gets which fault is decided by hashing the seed with the call's identity (the
//! operation, the run, the seq it builds on and how many times that same call was made
//! before), not by the order calls arrive in, so the same commit meets the same fault however
//! the workers interleave. `claim_due` has no run to key on and uses its call count instead.
//!
//! Reads are never faulted: the engine's re-read of an ambiguous commit and the oracle's
//! reading of the final state must see the store as it is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use docket_core::model::{ClaimToken, Event, OwnerScope, Run, RunId, Scope, Timestamp};
use docket_core::store::layer::{commit_each, initialize_each};
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, Backend, BatchedCommit, BatchedInit, ClaimBatch, ClaimRequest,
    ClaimedCommit, InitProposal, Message, StoreError, StoreLayer, UnclaimedCommit,
};

use crate::journal::{kind_name, token_digest, Applied, CommitAttempt, CommitKind, Journal, Reply};

/// How often each fault is injected (each a probability per call, drawn once per call), and
/// the seed every draw derives from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// The seed: the same seed faults the same calls.
    pub seed: u64,
    /// Probability of a delay.
    pub delay: f64,
    /// Longest injected delay, in milliseconds (each delay is drawn in `1..=max`).
    pub max_delay_ms: u64,
    /// Probability of a retryable error before applying.
    pub error_before: f64,
    /// Probability of an `Ambiguous` reply after applying.
    pub ambiguous_after: f64,
    /// Probability of an `Ambiguous` reply to a commit that was never sent.
    pub ambiguous_unsent: f64,
    /// Probability that a commit stalls until its claim is taken over.
    pub stall: f64,
    /// Most stalls in one run of the layer (each costs at least one orphan TTL).
    pub max_stalls: u64,
    /// How long a stall waits for the takeover before it gives up and forwards anyway.
    pub stall_deadline_ms: u64,
}

impl FaultPlan {
    /// A plan that injects nothing: the layer only journals (the process-level harness, whose
    /// faults are real ones: kills, freezes, restarts, cut connections).
    #[must_use]
    pub fn none(seed: u64) -> Self {
        FaultPlan {
            seed,
            delay: 0.0,
            max_delay_ms: 1,
            error_before: 0.0,
            ambiguous_after: 0.0,
            ambiguous_unsent: 0.0,
            stall: 0.0,
            max_stalls: 0,
            stall_deadline_ms: 0,
        }
    }

    /// A plan with every fault on at rates that a few hundred short runs turn into a few
    /// dozen faults of each kind (and a handful of stalls).
    #[must_use]
    pub fn smoke(seed: u64) -> Self {
        FaultPlan {
            seed,
            delay: 0.08,
            max_delay_ms: 15,
            error_before: 0.04,
            ambiguous_after: 0.04,
            ambiguous_unsent: 0.02,
            stall: 0.01,
            max_stalls: 8,
            stall_deadline_ms: 5_000,
        }
    }
}

/// How many faults of each kind were injected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCounts {
    /// Delays.
    pub delays: u64,
    /// Errors before applying.
    pub errors_before: u64,
    /// Ambiguous replies to calls that took effect.
    pub ambiguous_after: u64,
    /// Ambiguous replies to calls that never reached the store.
    pub ambiguous_unsent: u64,
    /// Stalled commits.
    pub stalls: u64,
    /// Of the stalls, those whose claim was taken over before the deadline.
    pub stalls_taken_over: u64,
    /// Faults injected into `commit_claimed` (decided by the commit's identity alone, so
    /// the same seed faults the same commits on every backend).
    pub on_commits: u64,
    /// Faults injected into `initialize` and `commit_unclaimed` (starts and signals).
    pub on_starts_and_signals: u64,
    /// Faults injected into `claim_due` (decided by call count: timing-dependent).
    pub on_claims: u64,
    /// Faults injected into `release_claim` and `abandon_claim`.
    pub on_handbacks: u64,
}

impl FaultCounts {
    /// Ambiguous replies of both kinds.
    #[must_use]
    pub fn ambiguous(&self) -> u64 {
        self.ambiguous_after + self.ambiguous_unsent
    }

    /// Every injected fault.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.delays + self.errors_before + self.ambiguous() + self.stalls
    }

    /// Whether each of the four headline kinds (delay, error before, ambiguous, stall) was
    /// injected at least once.
    #[must_use]
    pub fn every_kind_injected(&self) -> bool {
        self.delays > 0 && self.errors_before > 0 && self.ambiguous() > 0 && self.stalls > 0
    }
}

#[derive(Debug, Default)]
struct Counters {
    delays: AtomicU64,
    errors_before: AtomicU64,
    ambiguous_after: AtomicU64,
    ambiguous_unsent: AtomicU64,
    stalls: AtomicU64,
    stalls_taken_over: AtomicU64,
    on_commits: AtomicU64,
    on_starts_and_signals: AtomicU64,
    on_claims: AtomicU64,
    on_handbacks: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The decision for one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    None,
    Delay(u64),
    ErrorBefore,
    AmbiguousAfter,
    AmbiguousUnsent,
    Stall,
}

/// Which operation a call is, for the draw and for the calls a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    Start,
    Commit,
    Signal,
    Claim,
    Release,
    Abandon,
}

/// A [`StoreLayer`] that injects seeded faults into a worker's writes and records every
/// claimed commit and every minted claim in a [`Journal`]. Turn the faults off with
/// [`FaultLayer::heal`].
#[derive(Debug)]
pub struct FaultLayer {
    inner: Arc<dyn Backend>,
    plan: FaultPlan,
    journal: Arc<Journal>,
    healed: AtomicBool,
    counters: Counters,
    /// How many times each keyed call was seen, so repeats draw afresh.
    seen: Mutex<HashMap<(Op, String, u64), u64>>,
    claim_calls: AtomicU64,
}

impl FaultLayer {
    /// Wraps `inner`, injecting faults by `plan` and journalling into `journal`.
    #[must_use]
    pub fn new(inner: Arc<dyn Backend>, plan: FaultPlan, journal: Arc<Journal>) -> Self {
        FaultLayer {
            inner,
            plan,
            journal,
            healed: AtomicBool::new(false),
            counters: Counters::default(),
            seen: Mutex::new(HashMap::new()),
            claim_calls: AtomicU64::new(0),
        }
    }

    /// The plan in force.
    #[must_use]
    pub fn plan(&self) -> FaultPlan {
        self.plan
    }

    /// Stops injecting faults (calls already delayed or stalled finish as they were).
    pub fn heal(&self) {
        self.healed.store(true, Ordering::SeqCst);
    }

    /// The faults injected so far.
    #[must_use]
    pub fn counts(&self) -> FaultCounts {
        let c = &self.counters;
        FaultCounts {
            delays: c.delays.load(Ordering::Relaxed),
            errors_before: c.errors_before.load(Ordering::Relaxed),
            ambiguous_after: c.ambiguous_after.load(Ordering::Relaxed),
            ambiguous_unsent: c.ambiguous_unsent.load(Ordering::Relaxed),
            stalls: c.stalls.load(Ordering::Relaxed),
            stalls_taken_over: c.stalls_taken_over.load(Ordering::Relaxed),
            on_commits: c.on_commits.load(Ordering::Relaxed),
            on_starts_and_signals: c.on_starts_and_signals.load(Ordering::Relaxed),
            on_claims: c.on_claims.load(Ordering::Relaxed),
            on_handbacks: c.on_handbacks.load(Ordering::Relaxed),
        }
    }

    /// A uniform draw in `[0, 1)` and a second raw word, from the seed and the call's key.
    fn draw(&self, op: Op, run: &str, seq: u64) -> (f64, u64) {
        let occurrence = {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            let n = seen.entry((op, run.to_owned(), seq)).or_default();
            *n += 1;
            *n
        };
        let mut hasher = Sha256::new();
        hasher.update(self.plan.seed.to_le_bytes());
        hasher.update(format!("{op:?}/{run}/{seq}/{occurrence}").as_bytes());
        let digest = hasher.finalize();
        let word = |i: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&digest[i..i + 8]);
            u64::from_le_bytes(bytes)
        };
        // 53 bits: exactly representable as an f64 in [0, 1).
        #[allow(clippy::cast_precision_loss)]
        let uniform = (word(0) >> 11) as f64 / (1u64 << 53) as f64;
        (uniform, word(8))
    }

    fn decide(&self, op: Op, run: &str, seq: u64) -> Decision {
        let decision = self.draw_decision(op, run, seq);
        if decision != Decision::None {
            bump(match op {
                Op::Commit => &self.counters.on_commits,
                Op::Start | Op::Signal => &self.counters.on_starts_and_signals,
                Op::Claim => &self.counters.on_claims,
                Op::Release | Op::Abandon => &self.counters.on_handbacks,
            });
        }
        decision
    }

    fn draw_decision(&self, op: Op, run: &str, seq: u64) -> Decision {
        if self.healed.load(Ordering::SeqCst) {
            return Decision::None;
        }
        let (r, extra) = self.draw(op, run, seq);
        let p = &self.plan;
        let commit = op == Op::Commit;
        // A lost request makes sense wherever the caller re-reads or retries a commit.
        let commit_like = matches!(op, Op::Commit | Op::Start | Op::Signal);
        let mut edge = 0.0;
        let mut band = |rate: f64, applies: bool| {
            if !applies {
                return false;
            }
            let hit = r >= edge && r < edge + rate;
            edge += rate;
            hit
        };
        if band(p.stall, commit) {
            // The cap keeps the run short: each stall costs at least one orphan TTL.
            let stalls = self.counters.stalls.fetch_add(1, Ordering::SeqCst);
            if stalls < p.max_stalls {
                return Decision::Stall;
            }
            self.counters.stalls.fetch_sub(1, Ordering::SeqCst);
            return Decision::None;
        }
        if band(p.ambiguous_after, true) {
            return Decision::AmbiguousAfter;
        }
        if band(p.ambiguous_unsent, commit_like) {
            return Decision::AmbiguousUnsent;
        }
        if band(p.error_before, true) {
            return Decision::ErrorBefore;
        }
        if band(p.delay, true) {
            return Decision::Delay(1 + extra % p.max_delay_ms.max(1));
        }
        Decision::None
    }

    /// Applies the part of `decision` that comes before forwarding; returns the injected
    /// error when the call must not be forwarded.
    async fn before(&self, decision: Decision, op: Op) -> Option<StoreError> {
        match decision {
            Decision::Delay(ms) => {
                bump(&self.counters.delays);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                None
            }
            Decision::ErrorBefore => {
                bump(&self.counters.errors_before);
                Some(StoreError::retryable(Message(format!(
                    "chaos: injected outage before {op:?} was applied"
                ))))
            }
            Decision::AmbiguousUnsent => {
                bump(&self.counters.ambiguous_unsent);
                Some(StoreError::ambiguous(Message(format!(
                    "chaos: injected loss of the {op:?} request"
                ))))
            }
            Decision::None | Decision::AmbiguousAfter | Decision::Stall => None,
        }
    }

    fn lost_reply(&self, op: Op) -> StoreError {
        bump(&self.counters.ambiguous_after);
        StoreError::ambiguous(Message(format!(
            "chaos: injected loss of the {op:?} reply after it was applied"
        )))
    }

    /// Runs one commit call through the faults: draws, stalls (claimed commits only), injects,
    /// forwards with `forward`, and journals what the store did and what the caller heard.
    async fn commit_through<F, Fut>(
        &self,
        call: CommitCall,
        events: Vec<Event>,
        forward: F,
    ) -> Result<Run, StoreError>
    where
        F: FnOnce(Vec<Event>) -> Fut + Send,
        Fut: std::future::Future<Output = Result<Run, StoreError>> + Send,
    {
        let decision = self.decide(call.op, call.run_id.as_str(), call.expected_seq);
        if decision == Decision::Stall {
            let since = self.journal.tick();
            let deadline =
                tokio::time::Instant::now() + Duration::from_millis(self.plan.stall_deadline_ms);
            if self
                .journal
                .await_steal(&call.run_id, &call.token, since, deadline)
                .await
            {
                bump(&self.counters.stalls_taken_over);
            }
        }
        let journal = |events, sent_tick, applied, refused_with, reply| {
            self.journal.record_attempt(CommitAttempt {
                kind: call.kind,
                run_id: call.run_id.as_str().to_owned(),
                expected_seq: call.expected_seq,
                token: call.token.clone(),
                events,
                sent_tick,
                applied,
                refused_with,
                reply,
            });
        };
        if let Some(error) = self.before(decision, call.op).await {
            let reply = if matches!(error, StoreError::Ambiguous { .. }) {
                Reply::Ambiguous
            } else {
                Reply::Error
            };
            journal(events, self.journal.tick(), Applied::NotSent, None, reply);
            return Err(error);
        }
        let sent_tick = self.journal.tick();
        let result = forward(events.clone()).await;
        let (applied, refused_with) = match &result {
            Ok(_) => (Applied::Landed, None),
            // The store itself lost its reply (a cut connection): only a read can tell.
            Err(error @ StoreError::Ambiguous { .. }) => {
                (Applied::Unknown, Some(kind_name(error.kind())))
            }
            Err(error) => (Applied::Refused, Some(kind_name(error.kind()))),
        };
        // A lost reply hides a refusal as well as an acceptance: both are ambiguous.
        let result = match (decision, result) {
            (Decision::AmbiguousAfter, _) => Err(self.lost_reply(call.op)),
            (_, result) => result,
        };
        let reply = match &result {
            Ok(_) => Reply::Ok,
            Err(StoreError::Ambiguous { .. }) => Reply::Ambiguous,
            Err(_) => Reply::Error,
        };
        journal(events, sent_tick, applied, refused_with, reply);
        result
    }
}

/// The identity of one commit call.
struct CommitCall {
    op: Op,
    kind: CommitKind,
    run_id: RunId,
    expected_seq: u64,
    token: String,
}

#[async_trait]
impl StoreLayer for FaultLayer {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let call = CommitCall {
            op: Op::Start,
            kind: CommitKind::Initialize,
            run_id: proposal.run.id.clone(),
            expected_seq: 0,
            token: String::new(),
        };
        self.commit_through(call, events, |events| {
            self.inner.initialize(owner, proposal, events)
        })
        .await
    }

    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        // Each member meets this layer's faults, as a single start would.
        initialize_each(self, members).await
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        // Each member meets this layer's faults, as a single commit would.
        commit_each(self, commits).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let call = CommitCall {
            op: Op::Commit,
            kind: CommitKind::Claimed,
            run_id: proposal.run.id.clone(),
            expected_seq: proposal.expected_seq,
            token: token_digest(&proposal.claim_token),
        };
        self.commit_through(call, events, |events| {
            self.inner.commit_claimed(scope, proposal, events)
        })
        .await
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let call = CommitCall {
            op: Op::Signal,
            kind: CommitKind::Unclaimed,
            run_id: proposal.run.id.clone(),
            expected_seq,
            token: String::new(),
        };
        self.commit_through(call, events, |events| {
            self.inner
                .commit_unclaimed(scope, expected_seq, proposal, events)
        })
        .await
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let n = self.claim_calls.fetch_add(1, Ordering::SeqCst);
        let decision = self.decide(Op::Claim, "", n);
        if let Some(error) = self.before(decision, Op::Claim).await {
            return Err(error);
        }
        let called = self.journal.tick();
        let batch = self.inner.claim_due(policy).await?;
        // Recorded even when the reply is then lost: those claims exist in the store.
        self.journal.record_mints_called(
            Some(called),
            batch
                .leases
                .iter()
                .map(|lease| (&lease.run_id, &lease.claim_token)),
        );
        if decision == Decision::AmbiguousAfter {
            return Err(self.lost_reply(Op::Claim));
        }
        Ok(batch)
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let decision = self.decide(Op::Release, run_id.as_str(), 0);
        if let Some(error) = self.before(decision, Op::Release).await {
            return Err(error);
        }
        let result = self.inner.release_claim(run_id, token, now).await;
        if decision == Decision::AmbiguousAfter {
            return Err(self.lost_reply(Op::Release));
        }
        result
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        let decision = self.decide(Op::Abandon, run_id.as_str(), policy.expected_seq);
        if let Some(error) = self.before(decision, Op::Abandon).await {
            return Err(error);
        }
        let result = self.inner.abandon_claim(run_id, token, policy).await;
        if decision == Decision::AmbiguousAfter {
            return Err(self.lost_reply(Op::Abandon));
        }
        result
    }
}

#[cfg(test)]
mod tests;
