//! Tenant-fair claims on PostgreSQL (`docs/claim-order.md`, “Tenant-fair claiming”): caps
//! under racing claimers on several stores (as several worker processes would hold them),
//! the fair claim function against the memory store over many owners, so the owner walk
//! that stops early and wraps around the cursor is compared where it matters, and what the
//! walk reads past an owner whose runs are all due later.

mod common;

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{CheckpointType, ClaimToken, OwnerScope, RunId, TenantId, Timestamp};
use docket_core::store::{
    ClaimBatch, ClaimClass, ClaimPolicy, ClaimRequest, GraphStore, InitProposal, RunStore,
    TenantShare,
};
use docket_postgres::testing;
use docket_postgres::{parse_url, PostgresOptions, PostgresStore};
use sqlx::Row;

fn fair(now: Timestamp, limit: u32) -> ClaimRequest {
    ClaimRequest {
        policy: ClaimPolicy::TenantFair,
        ..policy(now, limit)
    }
}

fn nz(value: u32) -> NonZeroU32 {
    NonZeroU32::new(value).expect("non-zero")
}

fn owner(name: &str) -> OwnerScope {
    if name.is_empty() {
        OwnerScope::Tenantless
    } else {
        tenant(name)
    }
}

/// Publishes graph `g1` for `owner` in `store` and starts run `id` due at `wake`.
async fn start_in<S: RunStore + GraphStore>(store: &S, owner: &OwnerScope, id: &str, wake: i64) {
    let doc = graph_doc("g1", 0);
    let graph = graph_ref_of(&doc);
    store
        .save_graph(owner, &graph, &doc, t(0))
        .await
        .expect("save graph");
    let run = initialized_run(id, &graph, t(0));
    let events = vec![event(&run, 1, t(0), "init")];
    store
        .initialize(
            owner,
            InitProposal {
                run,
                checkpoint_type: CheckpointType::RunInitialized,
                wake_at: t(wake),
                now: t(0),
            },
            events,
        )
        .await
        .expect("initialize");
}

/// Another store value on `schema`, with its own pool, as another worker process opens it.
async fn another_store(schema: &str) -> PostgresStore {
    let options = PostgresOptions {
        schema: schema.to_owned(),
        ..parse_url(&testing::test_url()).expect("test url")
    };
    PostgresStore::open(options)
        .await
        .expect("the PostgreSQL test server must be reachable")
}

/// Runs of tenant `big` holding a claim right now, in one snapshot.
async fn big_claims(store: &PostgresStore) -> i64 {
    let sql = format!(
        "SELECT count(*) FROM {}.runs WHERE tenant_id = 'big' AND claim_token IS NOT NULL",
        store.schema()
    );
    // A simple query, so the count works behind a transaction pooler too.
    let row = sqlx::raw_sql(&sql)
        .fetch_one(testing::pool(store))
        .await
        .expect("count claims");
    row.try_get(0).expect("count")
}

/// Eight claimers on four stores claim and hand back runs of three tenants as fast as they
/// can while a monitor counts the capped tenant's claims: no snapshot ever shows more than
/// its cap of 2, and the churn lets many of its runs through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cap_holds_under_eight_racing_claimers_on_four_stores() {
    let (store, guard) = open().await;
    let share = TenantShare {
        weight: nz(1),
        cap: Some(nz(2)),
    };
    store
        .set_tenant_share(&TenantId::new("big").expect("id"), share)
        .await
        .expect("share");
    for i in 0..30 {
        start(&store, &tenant("big"), &format!("b{i:02}"), t(1)).await;
    }
    for i in 0..10 {
        start(&store, &tenant("a"), &format!("a{i:02}"), t(1)).await;
        start(&store, &tenant("c"), &format!("c{i:02}"), t(1)).await;
    }
    let mut stores = vec![store.clone()];
    for _ in 0..3 {
        stores.push(another_store(guard.schema()).await);
    }

    let done = Arc::new(AtomicBool::new(false));
    let monitor = {
        let store = store.clone();
        let done = Arc::clone(&done);
        tokio::spawn(async move {
            let (mut reads, mut most) = (0u32, 0i64);
            while !done.load(Ordering::SeqCst) {
                let held = big_claims(&store).await;
                assert!(
                    held <= 2,
                    "a snapshot shows {held} claims of the capped tenant"
                );
                most = most.max(held);
                reads += 1;
            }
            (reads, most)
        })
    };
    let mut claimers = tokio::task::JoinSet::new();
    for claimer in 0..8usize {
        let store = stores[claimer % stores.len()].clone();
        claimers.spawn(async move {
            let mut big = 0usize;
            for round in 0..25usize {
                let limit = u32::try_from(1 + (claimer + round) % 3).expect("limit");
                let batch = store.claim_due(&fair(t(10), limit)).await.expect("claim");
                big += batch
                    .leases
                    .iter()
                    .filter(|l| l.owner == tenant("big"))
                    .count();
                for lease in &batch.leases {
                    store
                        .release_claim(&lease.run_id, &lease.claim_token, t(10))
                        .await
                        .expect("release");
                }
            }
            big
        });
    }
    let mut big = 0;
    while let Some(joined) = claimers.join_next().await {
        big += joined.expect("claimer");
    }
    done.store(true, Ordering::SeqCst);
    let (reads, most) = monitor.await.expect("monitor");
    assert!(reads > 0, "the monitor never read");
    assert!(most <= 2);
    assert!(
        big > 2,
        "the capped tenant got {big} leases: the releases made no room"
    );
    assert_eq!(big_claims(&store).await, 0, "every claim was handed back");
    drop(guard);
}

/// A small deterministic generator (the sequence only needs to vary, not to be random).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn ids(batch: &ClaimBatch) -> (Vec<String>, Vec<String>) {
    (
        batch
            .leases
            .iter()
            .map(|l| l.run_id.as_str().to_owned())
            .collect(),
        batch
            .poisoned
            .iter()
            .map(|p| p.run_id.as_str().to_owned())
            .collect(),
    )
}

/// Thirteen owners (the tenantless one included) with weights, caps, staggered wakes and a
/// claim attempt limit that poisons; fair claims of every limit and preference, releases and
/// expiring claims in between: PostgreSQL selects exactly what the memory store selects,
/// step by step, and leaves the same admission markers. With a cap stored, fair claims take
/// the path of capped stores (one owner at a time under the cursor lock).
#[tokio::test]
async fn fair_claims_match_the_memory_store_over_many_owners() {
    compare_over_many_owners(true, 6).await;
}

/// The same without caps and with claims of up to 16 runs, more than the owners hold between
/// them at times: the path that picks until every owner has been met and then goes round the
/// ring of owners with one statement per round, dropping the owners that run out.
#[tokio::test]
async fn wide_uncapped_fair_claims_match_the_memory_store() {
    compare_over_many_owners(false, 16).await;
}

async fn compare_over_many_owners(capped: bool, max_limit: u64) {
    let (pg, _guard) = open().await;
    let memory = MemoryStore::new();
    let owners: Vec<String> = std::iter::once(String::new())
        .chain((0..12).map(|i| format!("t{i:02}")))
        .collect();
    let mut rng = Lcg(19);
    for (n, name) in owners.iter().enumerate().skip(1) {
        let share = TenantShare {
            weight: nz(1 + u32::try_from(n % 3).expect("weight")),
            cap: (capped && n % 4 == 0).then(|| nz(2)),
        };
        let id = TenantId::new(name.clone()).expect("id");
        pg.set_tenant_share(&id, share).await.expect("share");
        memory.set_tenant_share(&id, share).await.expect("share");
    }
    for (n, name) in owners.iter().enumerate() {
        // Every fourth owner's runs come due only after a third of the steps: until then the
        // owner walk must step over it (its entries all wake later) without picking from it.
        let later = if n % 4 == 3 { 400 } else { 0 };
        for k in 0..(1 + n % 5) {
            let id = format!("r{n:02}-{k}");
            let wake = i64::try_from(1 + later + rng.below(40)).expect("wake");
            start_in(&pg, &owner(name), &id, wake).await;
            start_in(&memory, &owner(name), &id, wake).await;
        }
    }
    // Leases each store holds, by run id: its own token (tokens differ between the stores).
    let mut held: BTreeMap<String, (ClaimToken, ClaimToken)> = BTreeMap::new();
    for step in 0..60i64 {
        let now = t(10 + step * 20);
        let mut request = fair(now, 1 + u32::try_from(rng.below(max_limit)).expect("limit"));
        request.orphan_ttl_ms = 300;
        request.max_claim_attempts = nz(6);
        if request.limit.get() == 1 {
            request.preference = match rng.below(3) {
                0 => None,
                1 => Some(ClaimClass::Ready),
                _ => Some(ClaimClass::Expired),
            };
        }
        let a = pg.claim_due(&request).await.expect("postgres claim");
        let b = memory.claim_due(&request).await.expect("memory claim");
        assert_eq!(ids(&a), ids(&b), "step {step}: {request:?}");
        for (x, y) in a.leases.iter().zip(&b.leases) {
            held.insert(
                x.run_id.as_str().to_owned(),
                (x.claim_token.clone(), y.claim_token.clone()),
            );
        }
        // Hand back about half of what is held; the rest expires and is stolen later.
        let keys: Vec<String> = held.keys().cloned().collect();
        for key in keys {
            if rng.below(2) == 0 {
                let (x, y) = held.remove(&key).expect("held");
                let run = RunId::new(key).expect("id");
                pg.release_claim(&run, &x, now).await.expect("release");
                memory.release_claim(&run, &y, now).await.expect("release");
            }
        }
    }
    for (n, name) in owners.iter().enumerate() {
        for k in 0..(1 + n % 5) {
            let run = RunId::new(format!("r{n:02}-{k}")).expect("id");
            let scope = docket_core::model::Scope::System;
            let x = pg.inspect_run(&scope, &run).await.expect("inspect");
            let y = memory.inspect_run(&scope, &run).await.expect("inspect");
            assert_eq!(
                (
                    x.admitted_at,
                    x.claimed_at,
                    x.wake_at,
                    x.claim_attempts,
                    x.poison
                ),
                (
                    y.admitted_at,
                    y.claimed_at,
                    y.wake_at,
                    y.claim_attempts,
                    y.poison
                ),
                "{name}: {run}"
            );
        }
    }
    assert_eq!(
        pg.tenant_shares().await.expect("shares"),
        memory.tenant_shares().await.expect("shares")
    );
}

/// Index pages of `runs_ready_owner_index` one fair claim of `limit` at `now` reads, and the
/// run ids it leases, measured inside a transaction that is rolled back (the server's
/// per-transaction statistics of the calling backend; nothing is left claimed).
async fn owner_index_pages(
    store: &PostgresStore,
    now: Timestamp,
    limit: i64,
) -> (i64, Vec<String>) {
    let schema = store.schema();
    let mut tx = testing::pool(store).begin().await.expect("begin");
    let before: i64 = sqlx::query_scalar(&format!(
        "SELECT pg_stat_get_xact_blocks_fetched('{schema}.runs_ready_owner_index'::regclass)"
    ))
    .fetch_one(&mut *tx)
    .await
    .expect("statistics before");
    let leased: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT out_run_id FROM {schema}.docket_claim_fair($1, 0, $2, 5, NULL) ORDER BY out_ord"
    ))
    .bind(now.as_micros())
    .bind(limit)
    .fetch_all(&mut *tx)
    .await
    .expect("fair claim");
    let after: i64 = sqlx::query_scalar(&format!(
        "SELECT pg_stat_get_xact_blocks_fetched('{schema}.runs_ready_owner_index'::regclass)"
    ))
    .fetch_one(&mut *tx)
    .await
    .expect("statistics after");
    tx.rollback().await.expect("rollback");
    (after - before, leased)
}

/// A tenant with 20,000 runs that all wake later sits between the others in key order: a fair
/// claim steps over it with a probe or two, instead of reading its index entries one by one
/// (about 100 leaf pages of them) as the walk up to schema version 7 did, on every claim that
/// passed it.
#[tokio::test]
async fn a_fair_claim_steps_over_an_owner_whose_runs_all_wake_later() {
    let (store, _guard) = open().await;
    let later = tenant("b-later");
    let graph = save_graph(&store, &later).await;
    // The bulk wakes spread over `at ± 20 s`: all of them after `now`.
    let at = t(3_600_000);
    let runs = testing::BulkRuns {
        pending: 20_000,
        claimed: 0,
        finished: 0,
    };
    testing::bulk_insert_runs(&store, &later, &graph, runs, at)
        .await
        .expect("bulk runs");
    for (name, id) in [("a", "a-1"), ("a", "a-2"), ("c", "c-1"), ("c", "c-2")] {
        start(&store, &tenant(name), id, t(1)).await;
    }
    let now = t(10);
    for limit in [1, 10] {
        let (pages, leased) = owner_index_pages(&store, now, limit).await;
        let expected: Vec<&str> = if limit == 1 {
            vec!["a-1"]
        } else {
            vec!["a-1", "c-1", "a-2", "c-2"]
        };
        assert_eq!(leased, expected, "limit {limit}");
        assert!(
            pages < 40,
            "limit {limit}: the claim read {pages} pages of the owner index"
        );
    }
    // The same from a cursor past the backlog's owner, so the walk wraps round over it.
    store
        .claim_due(&fair(now, 1))
        .await
        .expect("a claim that moves the cursor to a");
    let (pages, leased) = owner_index_pages(&store, now, 10).await;
    assert_eq!(leased, vec!["c-1", "a-2", "c-2"]);
    assert!(
        pages < 40,
        "wrapped: the claim read {pages} pages of the owner index"
    );
}
