//! Tenant-fair claiming on Redis (`docs/claim-order.md`, “Tenant-fair claiming”): seeded
//! histories compared step by step with the memory store (the reference that calls
//! `rules::tenant_fair`), caps under racing claimers, the admission marker, corrupt shares
//! and cursors, and the layout migration of a namespace written before the per-owner ready
//! sets existed.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use docket_core::memory::MemoryStore;
use docket_core::model::{ClaimToken, OwnerScope, RunId, RunInfo, RunStatus, Scope};
use docket_core::store::{
    AbandonMode, AbandonPolicy, ClaimBatch, ClaimClass, ClaimPolicy, ClaimRequest, ClaimedSchedule,
    GraphStore, ReleaseWake, RunStore, StoreError, TenantShare,
};
use docket_redis::{RedisOptions, RedisStore};

use crate::common::*;

/// A small deterministic generator (xorshift), so every history replays exactly.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn share(weight: u32, cap: Option<u32>) -> TenantShare {
    TenantShare {
        weight: NonZeroU32::new(weight).expect("weight"),
        cap: cap.and_then(NonZeroU32::new),
    }
}

fn fair(now_ms: i64, limit: u32, preference: Option<ClaimClass>) -> ClaimRequest {
    ClaimRequest {
        policy: ClaimPolicy::TenantFair,
        ..policy(t(now_ms), limit, 5_000, 3, preference)
    }
}

/// What the two stores must agree on after each step (never the claim token).
fn row(info: &RunInfo) -> String {
    format!(
        "{} seq={} wake={:?} claimed={:?} attempts={} abandons={} poison={:?} admitted={:?}",
        info.run.status.as_str(),
        info.run.checkpoint_seq,
        info.wake_at,
        info.claimed_at,
        info.claim_attempts,
        info.claim_abandons,
        info.poison.map(|p| p.reason),
        info.admitted_at
    )
}

fn outcome(batch: &ClaimBatch) -> Vec<String> {
    let mut out: Vec<String> = batch
        .leases
        .iter()
        .map(|l| {
            format!(
                "lease {} {} seq={} attempt={}",
                l.run_id,
                l.owner.scope_key(),
                l.checkpoint_seq,
                l.claim_attempt
            )
        })
        .collect();
    out.extend(
        batch
            .poisoned
            .iter()
            .map(|p| format!("poison {}", p.run_id)),
    );
    out
}

fn kind<T>(result: &Result<T, StoreError>) -> String {
    match result {
        Ok(_) => "ok".to_owned(),
        Err(e) => format!("{:?}", e.kind()),
    }
}

/// Both stores, the claims each one handed out (by run id) and the clock.
struct Pair {
    redis: RedisStore,
    memory: MemoryStore,
    held: BTreeMap<RunId, (ClaimToken, ClaimToken, u64)>,
    runs: Vec<RunId>,
    now: i64,
}

impl Pair {
    async fn compare_rows(&self, step: &str) {
        for id in &self.runs {
            let r = self.redis.inspect_run(&Scope::System, id).await;
            let m = self.memory.inspect_run(&Scope::System, id).await;
            assert_eq!(
                r.as_ref().map(row).map_err(|e| format!("{:?}", e.kind())),
                m.as_ref().map(row).map_err(|e| format!("{:?}", e.kind())),
                "{step}: run {id}"
            );
        }
    }

    async fn claim(&mut self, request: &ClaimRequest) -> Vec<String> {
        let r = self.redis.claim_due(request).await.expect("redis claim");
        let m = self.memory.claim_due(request).await.expect("memory claim");
        assert_eq!(outcome(&r), outcome(&m), "claim {request:?}");
        for (rl, ml) in r.leases.iter().zip(&m.leases) {
            self.held.insert(
                rl.run_id.clone(),
                (
                    rl.claim_token.clone(),
                    ml.claim_token.clone(),
                    rl.checkpoint_seq,
                ),
            );
        }
        for p in &r.poisoned {
            self.held.remove(&p.run_id);
        }
        outcome(&r)
    }

    fn pick_held(&self, rng: &mut Rng) -> Option<(RunId, ClaimToken, ClaimToken, u64)> {
        if self.held.is_empty() {
            return None;
        }
        let n = usize::try_from(rng.below(self.held.len() as u64)).unwrap_or(0);
        self.held
            .iter()
            .nth(n)
            .map(|(id, (r, m, seq))| (id.clone(), r.clone(), m.clone(), *seq))
    }

    /// Stores the same share of tenant `key` in both stores; describes the step.
    async fn share(&self, key: &str, weight: u32, cap: Option<u32>) -> String {
        let id = docket_core::model::TenantId::new(key).expect("tenant");
        let s = share(weight, cap);
        self.redis.set_tenant_share(&id, s).await.expect("share");
        self.memory.set_tenant_share(&id, s).await.expect("share");
        format!("share {key} {s:?}")
    }

    async fn commit_held(&mut self, rng: &mut Rng) -> String {
        let Some((id, rtok, mtok, _)) = self.pick_held(rng) else {
            return "no claim".into();
        };
        let now = t(self.now);
        let run = self
            .memory
            .fetch_run(&Scope::System, &id)
            .await
            .expect("fetch");
        let (status, schedule) = match rng.below(5) {
            0 => (RunStatus::Running, ClaimedSchedule::RetainClaim),
            1 => (
                RunStatus::Running,
                ClaimedSchedule::Release(ReleaseWake::Immediate),
            ),
            2 => (
                RunStatus::Running,
                ClaimedSchedule::Release(ReleaseWake::At(now.add_millis(1_500))),
            ),
            3 => (
                RunStatus::Waiting,
                ClaimedSchedule::Release(ReleaseWake::External),
            ),
            _ => (
                RunStatus::Done,
                ClaimedSchedule::Release(ReleaseWake::Terminal),
            ),
        };
        let next = next(&run, status, now);
        let events = vec![next_event(&next, now)];
        let r = self
            .redis
            .commit_claimed(
                &Scope::System,
                claimed_commit(next.clone(), run.checkpoint_seq, &rtok, schedule, now),
                events.clone(),
            )
            .await;
        let m = self
            .memory
            .commit_claimed(
                &Scope::System,
                claimed_commit(next, run.checkpoint_seq, &mtok, schedule, now),
                events,
            )
            .await;
        assert_eq!(kind(&r), kind(&m), "commit {id} {schedule:?}");
        if r.is_ok() && schedule != ClaimedSchedule::RetainClaim {
            self.held.remove(&id);
        }
        format!("commit {id} {schedule:?}: {}", kind(&r))
    }

    async fn release_held(&mut self, rng: &mut Rng) -> String {
        let Some((id, rtok, mtok, _)) = self.pick_held(rng) else {
            return "no claim".into();
        };
        let now = t(self.now);
        let r = self.redis.release_claim(&id, &rtok, now).await;
        let m = self.memory.release_claim(&id, &mtok, now).await;
        assert_eq!(kind(&r), kind(&m), "release {id}");
        self.held.remove(&id);
        format!("release {id}")
    }

    async fn abandon_held(&mut self, rng: &mut Rng) -> String {
        let Some((id, rtok, mtok, seq)) = self.pick_held(rng) else {
            return "no claim".into();
        };
        let now = t(self.now);
        let policy = AbandonPolicy {
            expected_seq: seq,
            now,
            retry_at: now.add_millis(700),
            max_claim_abandons: NonZeroU32::new(2).expect("two"),
            mode: AbandonMode::Poisoning,
        };
        let r = self.redis.abandon_claim(&id, &rtok, &policy).await;
        let m = self.memory.abandon_claim(&id, &mtok, &policy).await;
        assert_eq!(
            r.as_ref().map_err(|e| e.kind()).ok(),
            m.as_ref().map_err(|e| e.kind()).ok(),
            "abandon {id}"
        );
        self.held.remove(&id);
        format!("abandon {id}: {r:?}")
    }

    /// Resumes a waiting run with a signal, or recovers a poisoned one.
    async fn signal_or_retry(&mut self, rng: &mut Rng) -> String {
        let now = t(self.now);
        let n = usize::try_from(rng.below(self.runs.len() as u64)).unwrap_or(0);
        let id = self.runs[n].clone();
        let info = self
            .memory
            .inspect_run(&Scope::System, &id)
            .await
            .expect("inspect");
        if info.run.status == RunStatus::Waiting {
            let next = next(&info.run, RunStatus::Running, now);
            let events = vec![next_event(&next, now)];
            let commit = unclaimed_commit(next, ReleaseWake::Immediate, now);
            let seq = info.run.checkpoint_seq;
            let r = self
                .redis
                .commit_unclaimed(&Scope::System, seq, commit.clone(), events.clone())
                .await;
            let m = self
                .memory
                .commit_unclaimed(&Scope::System, seq, commit, events)
                .await;
            assert_eq!(kind(&r), kind(&m), "signal {id}");
            self.held.remove(&id);
            return format!("signal {id}: {}", kind(&r));
        }
        let r = self
            .redis
            .retry_poisoned_run(&Scope::System, &id, now)
            .await;
        let m = self
            .memory
            .retry_poisoned_run(&Scope::System, &id, now)
            .await;
        assert_eq!(kind(&r), kind(&m), "retry {id}");
        format!("retry {id}: {}", kind(&r))
    }
}

/// The per-owner ready sets and claim counts say what the ready and claims sets say.
async fn assert_indexes_agree(guard: &docket_redis::testing::RedisGuard, store: &RedisStore) {
    let keys = store.keys();
    let claimed: Vec<String> = guard
        .command(redis::cmd("ZRANGE").arg(keys.claims()).arg(0).arg(-1))
        .await
        .expect("claims");
    let ready: Vec<String> = guard
        .command(redis::cmd("ZRANGE").arg(keys.ready()).arg(0).arg(-1))
        .await
        .expect("ready");
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    let mut ready_by_owner: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (ids, claims) in [(&claimed, true), (&ready, false)] {
        for id in ids {
            let info = store
                .inspect_run(&Scope::System, &rid(id))
                .await
                .expect("inspect");
            let owner = info.owner.scope_key().to_owned();
            if claims {
                *counts.entry(owner).or_default() += 1;
            } else {
                ready_by_owner.entry(owner).or_default().push(id.clone());
            }
        }
    }
    let stored: BTreeMap<String, i64> = guard
        .command(redis::cmd("HGETALL").arg(keys.claims_by_owner()))
        .await
        .expect("counts");
    assert_eq!(stored, counts, "claims_by_owner");
    let owners: Vec<String> = guard
        .command(redis::cmd("ZRANGE").arg(keys.ready_owners()).arg(0).arg(-1))
        .await
        .expect("owners");
    // Every owner with ready runs is listed; an owner listed without any is only waiting for
    // the next fair claim to drop it.
    for owner in ready_by_owner.keys() {
        assert!(owners.contains(owner), "ready_owners lacks {owner:?}");
    }
    for owner in owners.iter().filter(|o| !ready_by_owner.contains_key(*o)) {
        let left: i64 = guard
            .command(redis::cmd("ZCARD").arg(keys.ready_of(&owner_of(owner))))
            .await
            .expect("zcard");
        assert_eq!(left, 0, "{owner:?} is listed with an empty set only");
    }
    for (owner, ids) in ready_by_owner {
        let mut of: Vec<String> = guard
            .command(
                redis::cmd("ZRANGE")
                    .arg(keys.ready_of(&owner_of(&owner)))
                    .arg(0)
                    .arg(-1),
            )
            .await
            .expect("ready_of");
        of.sort();
        let mut ids = ids;
        ids.sort();
        assert_eq!(of, ids, "ready_of {owner:?}");
    }
}

/// The owners `ready_owners` lists whose `ready_of` set is empty.
async fn listed_without_ready_runs(
    guard: &docket_redis::testing::RedisGuard,
    store: &RedisStore,
) -> Vec<String> {
    let listed: Vec<String> = guard
        .command(
            redis::cmd("ZRANGE")
                .arg(store.keys().ready_owners())
                .arg(0)
                .arg(-1),
        )
        .await
        .expect("owners");
    let mut stale = Vec::new();
    for owner in listed {
        let left: i64 = guard
            .command(redis::cmd("ZCARD").arg(store.keys().ready_of(&owner_of(&owner))))
            .await
            .expect("zcard");
        if left == 0 {
            stale.push(owner);
        }
    }
    stale
}

const OWNERS: [&str; 7] = ["", "a", "b", "B", "a:x", "é", "z"];

fn owner_of(key: &str) -> OwnerScope {
    if key.is_empty() {
        OwnerScope::Tenantless
    } else {
        tenant(key)
    }
}

/// The shares most histories start from: a weight, and caps on `b` and `é`.
const SEEDED_SHARES: [(&str, u32, Option<u32>); 3] =
    [("a", 2, None), ("b", 1, Some(1)), ("é", 3, Some(2))];

async fn seeded_pair(seed: u64) -> (Pair, Rng, docket_redis::testing::RedisGuard) {
    seeded_pair_with(seed, &SEEDED_SHARES).await
}

async fn seeded_pair_with(
    seed: u64,
    shares: &[(&str, u32, Option<u32>)],
) -> (Pair, Rng, docket_redis::testing::RedisGuard) {
    let fx = open().await;
    let memory = MemoryStore::new();
    let mut rng = Rng(seed);
    let mut runs = Vec::new();
    for (o, key) in OWNERS.iter().enumerate() {
        let owner = owner_of(key);
        let graph = publish(&fx.store, &owner, "g").await;
        let doc = graph_doc("g", 0);
        memory
            .save_graph(&owner, &graph, &doc, t(0))
            .await
            .expect("memory graph");
        // "a" carries a backlog; the others a few runs each.
        let count = if *key == "a" { 12 } else { 1 + rng.below(4) };
        for n in 0..count {
            let id = format!("r{o}-{n:02}");
            let wake = t(i64::try_from(rng.below(4)).unwrap_or(0) * 100);
            let run = initialized_run(&id, &graph, t(0));
            let events = vec![event(&run, 1, t(0), "init")];
            fx.store
                .initialize(
                    &owner,
                    init_proposal(run.clone(), wake, t(0)),
                    events.clone(),
                )
                .await
                .expect("redis init");
            memory
                .initialize(&owner, init_proposal(run, wake, t(0)), events)
                .await
                .expect("memory init");
            runs.push(rid(&id));
        }
    }
    for &(key, weight, cap) in shares {
        let s = share(weight, cap);
        let id = docket_core::model::TenantId::new(key).expect("tenant");
        fx.store.set_tenant_share(&id, s).await.expect("share");
        memory.set_tenant_share(&id, s).await.expect("share");
    }
    let pair = Pair {
        redis: fx.store.clone(),
        memory,
        held: BTreeMap::new(),
        runs,
        now: 1_000,
    };
    (pair, rng, fx.guard)
}

/// Seeded histories of fair and oldest claims, commits of every schedule, releases,
/// abandons, signals, poison recoveries and share changes: after every step both stores
/// hand out the same runs in the same order and hold the same rows, admission markers
/// included. Owner keys include `B` and `é`, whose byte order differs from a collating
/// locale's.
#[tokio::test]
async fn fair_claims_match_the_memory_store_step_by_step() {
    let mut fair_leases = 0;
    let mut stale_seen = 0;
    for seed in [0x9e37_79b9_7f4a_7c15_u64, 42, 7_777_777] {
        let (mut pair, mut rng, guard) = seeded_pair(seed).await;
        for step in 0..160 {
            pair.now += i64::try_from(rng.below(900)).unwrap_or(0);
            let what = match rng.below(14) {
                0..=5 => {
                    let limit = u32::try_from(1 + rng.below(4)).unwrap_or(1);
                    let preference = [None, Some(ClaimClass::Ready), Some(ClaimClass::Expired)]
                        [usize::try_from(rng.below(3)).unwrap_or(0)];
                    let got = pair.claim(&fair(pair.now, limit, preference)).await;
                    fair_leases += got.iter().filter(|g| g.starts_with("lease")).count();
                    format!("fair claim {limit} {preference:?}: {got:?}")
                }
                6 => {
                    let limit = u32::try_from(1 + rng.below(3)).unwrap_or(1);
                    let got = pair
                        .claim(&policy(t(pair.now), limit, 5_000, 3, None))
                        .await;
                    format!("oldest claim {limit}: {got:?}")
                }
                7..=8 => pair.commit_held(&mut rng).await,
                9 => pair.release_held(&mut rng).await,
                10 => pair.abandon_held(&mut rng).await,
                11..=12 => pair.signal_or_retry(&mut rng).await,
                _ => {
                    let key = ["a", "b", "é", "z"][usize::try_from(rng.below(4)).unwrap_or(0)];
                    let cap = u32::try_from(rng.below(3)).unwrap_or(0);
                    let weight = u32::try_from(1 + rng.below(3)).unwrap_or(1);
                    pair.share(key, weight, Some(cap)).await
                }
            };
            pair.compare_rows(&format!("seed {seed} step {step}: {what}"))
                .await;
        }
        assert_eq!(
            pair.redis.tenant_shares().await.expect("shares"),
            pair.memory.tenant_shares().await.expect("shares")
        );
        assert_indexes_agree(&guard, &pair.redis).await;
        // A fair claim that visits every owner but finds nothing due changes nothing; one
        // that visits every owner (no cap stops a visit short) and selects something drops
        // the owners that were listed without ready runs.
        let before = guard.snapshot().await.expect("snapshot");
        let none = pair
            .redis
            .claim_due(&fair(-1_000_000, 1_000, None))
            .await
            .expect("claim");
        assert_eq!(none.outcome_count(), 0);
        assert_eq!(guard.snapshot().await.expect("snapshot"), before);
        for key in ["a", "b", "é", "z"] {
            let id = docket_core::model::TenantId::new(key).expect("tenant");
            pair.redis
                .set_tenant_share(&id, TenantShare::default())
                .await
                .expect("share");
        }
        let stale = listed_without_ready_runs(&guard, &pair.redis).await;
        stale_seen += stale.len();
        let all = pair
            .redis
            .claim_due(&fair(pair.now + 1_000_000, 1_000, None))
            .await
            .expect("claim");
        assert!(all.outcome_count() > 0);
        assert_indexes_agree(&guard, &pair.redis).await;
        let listed: Vec<String> = guard
            .command(
                redis::cmd("ZRANGE")
                    .arg(pair.redis.keys().ready_owners())
                    .arg(0)
                    .arg(-1),
            )
            .await
            .expect("owners");
        for owner in &stale {
            assert!(!listed.contains(owner), "{owner:?} was not dropped");
        }
    }
    assert!(fair_leases > 50, "the histories lease runs ({fair_leases})");
    assert!(
        stale_seen > 0,
        "some history leaves an owner listed without ready runs"
    );
}

/// Wider fair claims than the step-by-step history's (limits up to 12, weights up to 4, caps
/// up to 5) among commits, releases, abandons and signals: the Redis script reads only the
/// runs that can still be selected and produces the ranks round by round, and still hands out
/// the memory store's runs in its order, moving the cursor the same way.
#[tokio::test]
async fn wide_fair_claims_match_the_memory_store() {
    let mut leased = 0;
    for seed in [0x5eed_0001_u64, 0xdead_beef] {
        let (mut pair, mut rng, guard) = seeded_pair(seed).await;
        for step in 0..120 {
            pair.now += i64::try_from(rng.below(700)).unwrap_or(0);
            let what = match rng.below(10) {
                0..=4 => {
                    let limit = u32::try_from(1 + rng.below(12)).unwrap_or(1);
                    let preference = [None, Some(ClaimClass::Ready), Some(ClaimClass::Expired)]
                        [usize::try_from(rng.below(3)).unwrap_or(0)];
                    let got = pair.claim(&fair(pair.now, limit, preference)).await;
                    leased += got.iter().filter(|g| g.starts_with("lease")).count();
                    format!("fair claim {limit} {preference:?}: {got:?}")
                }
                5..=6 => pair.commit_held(&mut rng).await,
                7 => pair.release_held(&mut rng).await,
                8 => pair.signal_or_retry(&mut rng).await,
                _ => {
                    let key =
                        ["", "a", "b", "é", "z", "a:x"][usize::try_from(rng.below(6)).unwrap_or(0)];
                    if key.is_empty() {
                        pair.abandon_held(&mut rng).await
                    } else {
                        let cap = u32::try_from(rng.below(6)).unwrap_or(0);
                        let weight = u32::try_from(1 + rng.below(4)).unwrap_or(1);
                        pair.share(key, weight, Some(cap)).await
                    }
                }
            };
            pair.compare_rows(&format!("seed {seed} step {step}: {what}"))
                .await;
        }
        assert_indexes_agree(&guard, &pair.redis).await;
    }
    assert!(leased > 50, "the histories lease runs ({leased})");
}

/// The share summary beside the fair cursor (`capped`, `weighted`) counts the stored shares
/// of each class, as `lua/set_share.lua` and the layout migration keep it.
async fn assert_share_summary(guard: &docket_redis::testing::RedisGuard, store: &RedisStore) {
    let (mut capped, mut weighted) = (0, 0);
    for (_, s) in store.tenant_shares().await.expect("shares") {
        if s.cap.is_some() {
            capped += 1;
        } else if s.weight.get() > 1 {
            weighted += 1;
        }
    }
    let stored: Vec<Option<i64>> = guard
        .command(
            redis::cmd("HMGET")
                .arg(store.keys().fair_cursor())
                .arg("capped")
                .arg("weighted"),
        )
        .await
        .expect("summary");
    let expect = |n: i64| (n > 0).then_some(n);
    assert_eq!(stored, [expect(capped), expect(weighted)], "share summary");
}

/// Claims of one run where no share has a cap take the script's short path (weights only,
/// every preference, expired claims, owners passed over because their runs are not due yet,
/// the cursor wrapping around and staying within a round). Seeded histories of them, among
/// wider claims, oldest claims, commits, releases, abandons, signals and share changes (now
/// and then a cap, which sends claims back to the walk until it is lifted) hand out the
/// memory store's runs in its order, step by step.
#[tokio::test]
async fn one_run_fair_claims_match_the_memory_store() {
    let mut short = 0;
    for seed in [0x0123_4567_89ab_cdef_u64, 99, 0xfeed_f00d] {
        let (mut pair, mut rng, guard) =
            seeded_pair_with(seed, &[("a", 2, None), ("é", 3, None)]).await;
        let mut capped: BTreeMap<&str, bool> = BTreeMap::new();
        for step in 0..200 {
            pair.now += i64::try_from(rng.below(400)).unwrap_or(0);
            let what = match rng.below(16) {
                0..=6 => {
                    let preference = [None, Some(ClaimClass::Ready), Some(ClaimClass::Expired)]
                        [usize::try_from(rng.below(3)).unwrap_or(0)];
                    if !capped.values().any(|c| *c) {
                        short += 1;
                    }
                    let got = pair.claim(&fair(pair.now, 1, preference)).await;
                    format!("fair claim 1 {preference:?}: {got:?}")
                }
                7 => {
                    let limit = u32::try_from(2 + rng.below(3)).unwrap_or(2);
                    let got = pair.claim(&fair(pair.now, limit, None)).await;
                    format!("fair claim {limit}: {got:?}")
                }
                8 => {
                    let got = pair.claim(&policy(t(pair.now), 1, 5_000, 3, None)).await;
                    format!("oldest claim 1: {got:?}")
                }
                9..=10 => pair.commit_held(&mut rng).await,
                11 => pair.release_held(&mut rng).await,
                12 => pair.abandon_held(&mut rng).await,
                13..=14 => pair.signal_or_retry(&mut rng).await,
                _ => {
                    let key =
                        ["a", "b", "é", "z", "a:x"][usize::try_from(rng.below(5)).unwrap_or(0)];
                    let weight = u32::try_from(1 + rng.below(3)).unwrap_or(1);
                    let cap = (rng.below(5) == 0).then_some(2);
                    capped.insert(key, cap.is_some());
                    pair.share(key, weight, cap).await
                }
            };
            pair.compare_rows(&format!("seed {seed} step {step}: {what}"))
                .await;
        }
        assert_indexes_agree(&guard, &pair.redis).await;
        assert_share_summary(&guard, &pair.redis).await;
    }
    assert!(short > 100, "the histories take the short path ({short})");
}

/// Wider claims walk the ring of owners stored beside the cursor instead of the owners' lex
/// set, reading every ring owner's share in one call. Seeded histories of them (limits 2 to 12,
/// every preference) among claims of one run, oldest claims, commits, releases, abandons and
/// signals (which add owners to the ring and drop them from it, so the ring is removed and
/// stored again), and share changes (weights 1 to 3, now and then a cap), hand out the memory
/// store's runs in its order, step by step.
#[tokio::test]
async fn wide_fair_claims_over_the_ring_match_the_memory_store() {
    let (mut wide, mut over_ring) = (0, 0);
    for seed in [0x7a1e_0001_u64, 31, 0xc0ff_ee00] {
        let (mut pair, mut rng, guard) = seeded_pair_with(seed, &[]).await;
        let ring = redis::cmd("HGET")
            .arg(pair.redis.keys().fair_cursor())
            .arg("ring")
            .clone();
        for step in 0..200 {
            pair.now += i64::try_from(rng.below(500)).unwrap_or(0);
            let what = match rng.below(16) {
                0..=6 => {
                    let limit = u32::try_from(2 + rng.below(11)).unwrap_or(2);
                    let preference = [None, Some(ClaimClass::Ready), Some(ClaimClass::Expired)]
                        [usize::try_from(rng.below(3)).unwrap_or(0)];
                    let stored: Option<String> = guard.command(&ring).await.expect("ring");
                    wide += 1;
                    over_ring += usize::from(stored.is_some());
                    let got = pair.claim(&fair(pair.now, limit, preference)).await;
                    format!("fair claim {limit} {preference:?}: {got:?}")
                }
                7 => {
                    let got = pair.claim(&fair(pair.now, 1, None)).await;
                    format!("fair claim 1: {got:?}")
                }
                8 => {
                    let limit = u32::try_from(1 + rng.below(4)).unwrap_or(1);
                    let got = pair
                        .claim(&policy(t(pair.now), limit, 5_000, 3, None))
                        .await;
                    format!("oldest claim {limit}: {got:?}")
                }
                9..=10 => pair.commit_held(&mut rng).await,
                11 => pair.release_held(&mut rng).await,
                12 => pair.abandon_held(&mut rng).await,
                13..=14 => pair.signal_or_retry(&mut rng).await,
                _ => {
                    let key = ["a", "b", "é", "z"][usize::try_from(rng.below(4)).unwrap_or(0)];
                    let weight = u32::try_from(1 + rng.below(3)).unwrap_or(1);
                    let cap = (rng.below(4) == 0).then_some(2);
                    pair.share(key, weight, cap).await
                }
            };
            pair.compare_rows(&format!("seed {seed} step {step}: {what}"))
                .await;
        }
        assert_indexes_agree(&guard, &pair.redis).await;
        assert_share_summary(&guard, &pair.redis).await;
    }
    // Owners leave and rejoin the ring often in these short histories (a handful of runs
    // each), so a fair share of the wide claims read the lex set and store a new ring.
    assert!(
        over_ring * 4 > wide,
        "wide claims walk a stored ring ({over_ring} of {wide})"
    );
}

/// A layout-2 namespace has shares but no share summary: opening it counts them, so a claim
/// of one run sees the cap; the summary follows every later share change.
#[tokio::test]
async fn opening_a_layout_2_namespace_counts_its_shares() {
    let fx = open().await;
    let owner = tenant("a");
    let graph = publish(&fx.store, &owner, "g").await;
    for n in 0..3 {
        start(&fx.store, &owner, &format!("a{n}"), &graph, t(n)).await;
    }
    let a = docket_core::model::TenantId::new("a").expect("tenant");
    let b = docket_core::model::TenantId::new("b").expect("tenant");
    fx.store
        .set_tenant_share(&a, share(1, Some(1)))
        .await
        .expect("share");
    fx.store
        .set_tenant_share(&b, share(4, None))
        .await
        .expect("share");
    assert_share_summary(&fx.guard, &fx.store).await;
    let keys = fx.store.keys().clone();
    // What layout 2 held: the same keys, no summary.
    let _: i64 = fx
        .guard
        .command(
            redis::cmd("HDEL")
                .arg(keys.fair_cursor())
                .arg("capped")
                .arg("weighted"),
        )
        .await
        .expect("downgrade");
    let _: () = fx
        .guard
        .command(redis::cmd("SET").arg(keys.layout()).arg("2"))
        .await
        .expect("downgrade");
    let url = docket_redis::testing::test_url();
    let store = RedisStore::open(RedisOptions::new(url, fx.store.namespace()))
        .await
        .expect("reopen");
    assert_share_summary(&fx.guard, &store).await;
    let first = store.claim_due(&fair(10, 1, None)).await.expect("claim");
    assert_eq!(first.leases.len(), 1);
    let second = store.claim_due(&fair(10, 1, None)).await.expect("claim");
    assert!(second.leases.is_empty(), "the cap of one holds: {second:?}");
    for s in [share(2, None), share(1, None), TenantShare::default()] {
        store.set_tenant_share(&a, s).await.expect("share");
        assert_share_summary(&fx.guard, &store).await;
    }
    let third = store.claim_due(&fair(10, 1, None)).await.expect("claim");
    assert_eq!(third.leases.len(), 1, "no cap any more");
}

/// Eight claimers on their own connections race for one tenant's backlog under a cap of 2
/// (and a second tenant under a cap of 3). Each claimer records a claim only after the store
/// granted it and forgets it before handing it back, so the recorded count can only
/// under-estimate what the store holds: it never exceeds the cap, and it reaches it.
#[tokio::test]
async fn eight_racing_claimers_never_exceed_a_cap() {
    let fx = open().await;
    let caps: BTreeMap<&str, u32> = BTreeMap::from([("capped", 2), ("three", 3)]);
    for (key, cap) in &caps {
        let owner = tenant(key);
        let graph = publish(&fx.store, &owner, "g").await;
        for n in 0..40 {
            start(&fx.store, &owner, &format!("{key}-{n:02}"), &graph, t(0)).await;
        }
        let id = docket_core::model::TenantId::new(*key).expect("tenant");
        fx.store
            .set_tenant_share(&id, share(1, Some(*cap)))
            .await
            .expect("share");
    }
    let free = OwnerScope::Tenantless;
    let graph = publish(&fx.store, &free, "g").await;
    for n in 0..40 {
        start(&fx.store, &free, &format!("free-{n:02}"), &graph, t(0)).await;
    }
    let held: Arc<Mutex<BTreeMap<String, (u32, u32)>>> = Arc::default();
    let mut tasks = Vec::new();
    for claimer in 0..8u64 {
        let store = RedisStore::open(RedisOptions::new(
            docket_redis::testing::test_url(),
            fx.store.namespace(),
        ))
        .await
        .expect("a claimer's own connection");
        let held = Arc::clone(&held);
        let caps = caps.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0x5151 + claimer);
            // Each claimer keeps its previous batch while it claims the next one, so claims
            // overlap across claimers and rounds.
            let mut previous: Vec<docket_core::store::ClaimLease> = Vec::new();
            for round in 0..=30 {
                let limit = u32::try_from(1 + rng.below(3)).unwrap_or(1);
                let batch = store
                    .claim_due(&fair(1_000 + round, limit, None))
                    .await
                    .expect("claim");
                for lease in &batch.leases {
                    let key = lease.owner.scope_key().to_owned();
                    if let Some(cap) = caps.get(key.as_str()) {
                        let mut held = held.lock().expect("lock");
                        let entry = held.entry(key.clone()).or_default();
                        entry.0 += 1;
                        entry.1 = entry.1.max(entry.0);
                        assert!(entry.0 <= *cap, "{key} holds {} > cap {cap}", entry.0);
                    }
                }
                tokio::task::yield_now().await;
                let releasing = std::mem::replace(&mut previous, batch.leases);
                let releasing = if round == 30 {
                    releasing.into_iter().chain(previous.drain(..)).collect()
                } else {
                    releasing
                };
                for lease in releasing {
                    let key = lease.owner.scope_key().to_owned();
                    if caps.contains_key(key.as_str()) {
                        held.lock().expect("lock").entry(key).or_default().0 -= 1;
                    }
                    store
                        .release_claim(&lease.run_id, &lease.claim_token, t(1_000 + round))
                        .await
                        .expect("release");
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("claimer");
    }
    let held = held.lock().expect("lock");
    for (key, cap) in &caps {
        assert_eq!(
            held.get(*key).map(|h| h.1),
            Some(*cap),
            "{key} reached its cap"
        );
    }
}

/// The marker's lifecycle on Redis: a fair lease stamps it, an `Oldest` lease never does,
/// an immediate hand-back and `release_claim` keep it, a timed release clears it.
#[tokio::test]
async fn the_admission_marker_follows_the_table() {
    let fx = open().await;
    let owner = tenant("m");
    let graph = publish(&fx.store, &owner, "g").await;
    let run = start(&fx.store, &owner, "m1", &graph, t(0)).await;
    let oldest = claim_one(&fx.store, t(10)).await;
    let info = fx
        .store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.admitted_at, None, "oldest never admits");
    fx.store
        .release_claim(&run.id, &oldest.claim_token, t(20))
        .await
        .expect("release");
    let lease = fx
        .store
        .claim_due(&fair(30, 1, None))
        .await
        .expect("claim")
        .leases;
    let token = lease[0].claim_token.clone();
    let admitted = |info: RunInfo| info.admitted_at;
    let inspect = || fx.store.inspect_run(&Scope::System, &run.id);
    assert_eq!(admitted(inspect().await.expect("inspect")), Some(t(30)));
    let run = commit_as_holder(
        &fx.store,
        &run,
        &token,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
        t(40),
    )
    .await;
    assert_eq!(admitted(inspect().await.expect("inspect")), Some(t(30)));
    let again = fx
        .store
        .claim_due(&fair(50, 1, None))
        .await
        .expect("claim")
        .leases;
    assert_eq!(admitted(inspect().await.expect("inspect")), Some(t(30)));
    fx.store
        .release_claim(&run.id, &again[0].claim_token, t(60))
        .await
        .expect("release");
    assert_eq!(admitted(inspect().await.expect("inspect")), Some(t(30)));
    let last = fx
        .store
        .claim_due(&fair(70, 1, None))
        .await
        .expect("claim")
        .leases;
    commit_as_holder(
        &fx.store,
        &run,
        &last[0].claim_token,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::At(t(5_000))),
        t(80),
    )
    .await;
    assert_eq!(admitted(inspect().await.expect("inspect")), None);
}

/// A stored share or cursor that does not decode is `Corrupt`, and the claim writes nothing.
#[tokio::test]
async fn a_corrupt_share_or_cursor_fails_the_fair_claim_and_writes_nothing() {
    let fx = open().await;
    let owner = tenant("s");
    start_simple(&fx.store, &owner, "s1").await;
    let keys = fx.store.keys().clone();
    for (key, field, bytes) in [
        (keys.tenant_shares(), "s", &b"0:"[..]),
        (keys.tenant_shares(), "s", &b"2:x"[..]),
        (keys.fair_cursor(), "taken", &b"0"[..]),
    ] {
        fx.guard
            .overwrite_field(&key, field, bytes)
            .await
            .expect("corrupt");
        let before = fx.snapshot().await;
        let err = fx.store.claim_due(&fair(10, 2, None)).await;
        assert!(matches!(err, Err(StoreError::Corrupt { .. })), "{err:?}");
        assert_eq!(fx.snapshot().await, before);
        let _: i64 = fx
            .guard
            .command(redis::cmd("DEL").arg(&key))
            .await
            .expect("repair");
    }
    assert!(
        matches!(
            fx.store.tenant_shares().await,
            Ok(ref shares) if shares.is_empty()
        ),
        "repaired"
    );
    let leases = fx.store.claim_due(&fair(10, 2, None)).await.expect("claim");
    assert_eq!(leases.leases.len(), 1);
}

/// A namespace written before the per-owner ready sets existed (no `ready_of`, no
/// `ready_owners`, no claim counts, no layout marker) is indexed when a store opens it, and
/// fair claims then see its ready runs and its caps' usage; an empty namespace is left empty.
#[tokio::test]
async fn opening_an_older_namespace_builds_the_per_owner_ready_sets() {
    let fx = open().await;
    assert_eq!(
        fx.guard.namespace_keys().await.expect("keys"),
        Vec::<String>::new()
    );
    let graph_a = publish(&fx.store, &tenant("a"), "g").await;
    let graph_b = publish(&fx.store, &tenant("b"), "g").await;
    for n in 0..3 {
        start(&fx.store, &tenant("a"), &format!("a{n}"), &graph_a, t(n)).await;
    }
    start(&fx.store, &tenant("b"), "b0", &graph_b, t(5)).await;
    let keys = fx.store.keys().clone();
    // One claimed run of a tenant capped at one, so the claim counts have something to
    // rebuild and the claim below shows that they did.
    let a = docket_core::model::TenantId::new("a").expect("tenant");
    fx.store
        .set_tenant_share(&a, share(1, Some(1)))
        .await
        .expect("share");
    let held = fx
        .store
        .claim_due(&fair(1, 1, None))
        .await
        .expect("claim")
        .leases;
    assert_eq!(held[0].run_id.as_str(), "a0");
    // The claim stored the ring of owners beside the cursor; the rebuild after the downgrade
    // below drops it (it cannot tell the rebuilt list of owners from a grown one), so the
    // snapshots start without it.
    let _: i64 = fx
        .guard
        .command(redis::cmd("HDEL").arg(keys.fair_cursor()).arg("ring"))
        .await
        .expect("drop the ring");
    let before = fx.snapshot().await;
    let url = docket_redis::testing::test_url();
    let reopen = || RedisStore::open(RedisOptions::new(url.clone(), fx.store.namespace()));
    // The namespace was empty when the store opened it (no marker was written); reopening it
    // now rebuilds indexes that are already right: only the marker is new, and a third open
    // changes nothing.
    let marker = format!(
        "{} (string)\n  {}\n",
        keys.layout(),
        docket_redis::LAYOUT_VERSION
    );
    reopen().await.expect("reopen");
    let marked = fx.snapshot().await;
    assert_eq!(marked.replacen(&marker, "", 1), before);
    assert_ne!(marked, before);
    reopen().await.expect("reopen");
    assert_eq!(fx.snapshot().await, marked);
    let mut old = vec![keys.ready_owners(), keys.layout(), keys.claims_by_owner()];
    old.extend(["a", "b"].map(|k| keys.ready_of(&tenant(k))));
    let _: i64 = fx
        .guard
        .command(redis::cmd("DEL").arg(&old))
        .await
        .expect("downgrade");
    let reopened = reopen().await.expect("reopen");
    // Everything is as it was before the downgrade, plus the layout marker.
    let after = fx.snapshot().await;
    assert!(after.contains(&marker), "{after}");
    assert_eq!(after.replacen(&marker, "", 1), before);
    let batch = reopened
        .claim_due(&fair(100, 2, None))
        .await
        .expect("claim");
    let got: Vec<&str> = batch.leases.iter().map(|l| l.run_id.as_str()).collect();
    assert_eq!(got, ["b0"], "a holds its one claim: a1 waits");
}
