//! PostgreSQL checks that `cargo xtask` (std-only, no driver) runs through this binary.
//!
//! * `pg_checks plan [--runs N]` — fills a fresh schema with N pending runs (default
//!   100,000; plus N/100 claimed and N/10 finished), prints the `EXPLAIN` of the real claim
//!   statement, both as its first executions plan it (custom plan) and as a long-lived
//!   prepared statement may plan it (generic plan), and fails unless both read the partial
//!   indexes and neither scans the runs table sequentially. Then claims once and prints the
//!   time.
//! * `pg_checks fair-cost [--runs N]` — one tenant with N pending runs (default 10,000) and
//!   four with 100 each: times `claim_due` (limit 10, each batch handed back at once) under
//!   `Oldest` and under `TenantFair`, interleaved, then `Oldest` again without the fair
//!   claim's index (`runs_ready_owner_index`), which is what that index costs the other
//!   writes. Prints medians and 90th percentiles.
//! * `pg_checks fair-rate [--runs N] [--limit K]` — N due runs (default 2,000) over five
//!   tenants, drained by 10 concurrent claimers at limit K (default 1), under `Oldest` and
//!   under `TenantFair` in the order oldest, fair, fair, oldest, each drain on a fresh
//!   schema, vacuumed once its runs are written, whose 10 connections have each made a
//!   claim before the clock starts, with the server's own durability settings (the test
//!   harness turns `synchronous_commit` off; this does not): prints leases per second of
//!   each policy over its two drains and their ratio.
//! * `pg_checks drop-schema URL` — drops the schema a `postgres://…?schema=NAME` URL names.
//!
//! The server is `DOCKET_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`).

use std::num::NonZeroU32;
use std::process::ExitCode;
use std::time::Instant;

use docket_core::graph::{graph_hash, GraphDocument};
use docket_core::model::{GraphId, GraphRef, OwnerScope, TenantId, Timestamp};
use docket_core::store::{ClaimPolicy, ClaimRequest, GraphStore, RunStore, StoreError};
use docket_postgres::testing::{
    self, bulk_insert_runs, claim_plan_problems, BulkRuns, PostgresHarness,
};
use docket_postgres::PostgresStore;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("plan") => plan(&args[1..]).await,
        Some("fair-cost") => fair_cost(&args[1..]).await,
        Some("fair-rate") => fair_rate(&args[1..]).await,
        Some("drop-schema") if args.len() == 2 => drop_schema(&args[1]).await,
        _ => Err(
            "usage: pg_checks plan [--runs N] | pg_checks fair-cost [--runs N] | \
             pg_checks fair-rate [--runs N] [--limit K] | \
             pg_checks drop-schema URL"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pg_checks: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn drop_schema(url: &str) -> Result<(), String> {
    let schema = PostgresStore::drop_schema(url)
        .await
        .map_err(|e| format!("cannot drop the schema of {url}: {e}"))?;
    println!("dropped schema {schema}");
    Ok(())
}

fn runs_arg(args: &[String]) -> Result<u64, String> {
    match args {
        [] => Ok(100_000),
        [flag, n] if flag == "--runs" => n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("--runs {n:?} is not a positive number")),
        _ => Err(format!("unexpected arguments {args:?}")),
    }
}

fn failed(what: &str) -> impl Fn(StoreError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

async fn plan(args: &[String]) -> Result<(), String> {
    let pending = runs_arg(args)?;
    let started = Instant::now();
    let (store, guard) = PostgresHarness::new()
        .open_store()
        .await
        .map_err(failed("open a fresh schema"))?;
    let owner = OwnerScope::Tenantless;
    let doc = GraphDocument::from_json(r#"{"schema_version":1,"id":"plan"}"#)
        .map_err(|e| format!("graph document: {e}"))?;
    let graph = GraphRef {
        graph_id: GraphId::new("plan").map_err(|e| e.to_string())?,
        graph_hash: graph_hash(&doc),
    };
    let now = Timestamp::from_millis(1_700_000_000_000);
    store
        .save_graph(&owner, &graph, &doc, now)
        .await
        .map_err(failed("save the graph"))?;
    let runs = BulkRuns {
        pending,
        claimed: pending / 100,
        finished: pending / 10,
    };
    let inserted = bulk_insert_runs(&store, &owner, &graph, runs, now)
        .await
        .map_err(failed("bulk insert"))?;
    println!(
        "pg-plan: schema {} holds {inserted} runs ({pending} pending, {} claimed, {} finished), \
         analyzed, in {:.1?}",
        guard.schema(),
        runs.claimed,
        runs.finished,
        started.elapsed()
    );

    let policy = ClaimRequest {
        policy: Default::default(),
        now,
        limit: NonZeroU32::MIN.saturating_add(9),
        orphan_ttl_ms: 60_000,
        max_claim_attempts: NonZeroU32::MIN.saturating_add(4),
        preference: None,
    };
    let custom = store
        .explain_claim(&policy)
        .await
        .map_err(failed("explain the claim"))?;
    // What a prepared claim statement may switch to after its first executions.
    let generic = store
        .explain_claim_generic(&policy)
        .await
        .map_err(failed("explain the claim's generic plan"))?;
    let mut problems = Vec::new();
    for (name, plan) in [("custom", &custom), ("generic", &generic)] {
        println!("\n--- claim_due plan ({name}), limit 10 ---\n{plan}");
        problems.extend(
            claim_plan_problems(plan)
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    let claim_started = Instant::now();
    let batch = store.claim_due(&policy).await.map_err(failed("claim"))?;
    println!(
        "\npg-plan: claim_due(limit 10) leased {} runs in {:.1?}; total {:.1?}",
        batch.leases.len(),
        claim_started.elapsed(),
        started.elapsed()
    );
    if batch.leases.len() != 10 {
        problems.push(format!("claimed {} runs, not 10", batch.leases.len()));
    }
    drop((store, guard));
    if problems.is_empty() {
        println!(
            "pg-plan: OK — the claim reads the partial indexes, each scan bounded by a Limit, \
             no sequential scan of runs"
        );
        Ok(())
    } else {
        Err(format!("the claim plan is wrong: {}", problems.join("; ")))
    }
}

/// Fills the backlog of `fair-cost`: `big` with `pending` runs, `s1`..`s4` with 100 each (and
/// a hundredth claimed, a tenth finished, as `plan` does). Run ids are `<tenant>-bulk…`.
/// `analyze` gives the planner statistics afterwards; without, the table is as a new
/// deployment's is before autovacuum first analyzes it.
async fn fair_backlog(
    store: &PostgresStore,
    pending: u64,
    now: Timestamp,
    analyze: bool,
) -> Result<(), String> {
    let doc = GraphDocument::from_json(r#"{"schema_version":1,"id":"fair"}"#)
        .map_err(|e| format!("graph document: {e}"))?;
    let graph = GraphRef {
        graph_id: GraphId::new("fair").map_err(|e| e.to_string())?,
        graph_hash: graph_hash(&doc),
    };
    for (name, pending) in [
        ("big", pending),
        ("s1", 100),
        ("s2", 100),
        ("s3", 100),
        ("s4", 100),
    ] {
        let owner = OwnerScope::Tenant(TenantId::new(name).map_err(|e| e.to_string())?);
        store
            .save_graph(&owner, &graph, &doc, now)
            .await
            .map_err(failed("save the graph"))?;
        let runs = BulkRuns {
            pending,
            claimed: pending / 100,
            finished: pending / 10,
        };
        bulk_insert_runs(store, &owner, &graph, runs, now)
            .await
            .map_err(failed("bulk insert"))?;
        // The bulk ids repeat per call: give this tenant's rows (and their documents) its own.
        let rename = format!(
            "UPDATE {s}.runs SET run_id = '{name}-' || run_id,
                 document = convert_to(replace(convert_from(document, 'UTF8'),
                     '\"' || run_id || '\"', '\"{name}-' || run_id || '\"'), 'UTF8')
             WHERE run_id LIKE 'bulk%';
             UPDATE {s}.run_listing SET run_id = '{name}-' || run_id WHERE run_id LIKE 'bulk%'",
            s = store.schema()
        );
        sqlx::raw_sql(&rename)
            .execute(testing::pool(store))
            .await
            .map_err(|e| format!("rename: {e}"))?;
    }
    if analyze {
        sqlx::raw_sql(&format!("ANALYZE {}.runs", store.schema()))
            .execute(testing::pool(store))
            .await
            .map_err(|e| format!("analyze: {e}"))?;
    }
    Ok(())
}

/// One claim of 10 under `policy`, handed back at once; the claim's time.
async fn timed_claim(
    store: &PostgresStore,
    policy: ClaimPolicy,
    now: Timestamp,
) -> Result<std::time::Duration, String> {
    let request = ClaimRequest {
        policy,
        now,
        limit: NonZeroU32::MIN.saturating_add(9),
        orphan_ttl_ms: 60_000,
        max_claim_attempts: NonZeroU32::MAX,
        preference: None,
    };
    let started = Instant::now();
    let batch = store.claim_due(&request).await.map_err(failed("claim"))?;
    let took = started.elapsed();
    if batch.leases.len() != 10 {
        return Err(format!(
            "{policy:?} leased {} runs, not 10",
            batch.leases.len()
        ));
    }
    for lease in &batch.leases {
        store
            .release_claim(&lease.run_id, &lease.claim_token, now)
            .await
            .map_err(failed("release"))?;
    }
    Ok(took)
}

fn summary(name: &str, mut times: Vec<std::time::Duration>) {
    times.sort();
    let at = |q: usize| times[(times.len() - 1) * q / 100];
    println!(
        "pg-fair-cost: {name:<28} median {:>9.1?}  p90 {:>9.1?}  ({} claims)",
        at(50),
        at(90),
        times.len()
    );
}

async fn fair_cost(args: &[String]) -> Result<(), String> {
    let pending = match args {
        [] => 10_000,
        _ => runs_arg(args)?,
    };
    let (store, guard) = PostgresHarness::new()
        .open_store()
        .await
        .map_err(failed("open a fresh schema"))?;
    let now = Timestamp::from_millis(1_700_000_000_000);
    let rounds = 400;
    // First on a schema without statistics: the plans must not depend on ANALYZE having run
    // (a generic plan made then is kept for the session).
    let (fresh, fresh_guard) = PostgresHarness::new()
        .open_store()
        .await
        .map_err(failed("open a fresh schema"))?;
    fair_backlog(&fresh, pending, now, false).await?;
    let mut unanalyzed = Vec::new();
    for round in 0..rounds {
        unanalyzed.push(timed_claim(&fresh, ClaimPolicy::TenantFair, now.add_millis(round)).await?);
    }
    summary("tenant_fair, no statistics", unanalyzed);
    drop((fresh, fresh_guard));
    fair_backlog(&store, pending, now, true).await?;
    let (mut oldest, mut fair) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Every claim hands its batch back at `now`, so each one sees the same backlog.
        let at = now.add_millis(round);
        oldest.push(timed_claim(&store, ClaimPolicy::Oldest, at).await?);
        fair.push(timed_claim(&store, ClaimPolicy::TenantFair, at).await?);
    }
    summary("oldest", oldest);
    summary("tenant_fair", fair);
    sqlx::raw_sql(&format!(
        "DROP INDEX {}.runs_ready_owner_index",
        store.schema()
    ))
    .execute(testing::pool(&store))
    .await
    .map_err(|e| format!("drop index: {e}"))?;
    let mut without = Vec::new();
    let mut with_index = Vec::new();
    // Claim + hand-back cycles with and without the index, on two schemas would differ in
    // more than the index; here the same schema runs the cycle after dropping it.
    for round in 0..rounds {
        let at = now.add_millis(rounds + round);
        let started = Instant::now();
        timed_claim(&store, ClaimPolicy::Oldest, at).await?;
        without.push(started.elapsed());
    }
    let (store2, guard2) = PostgresHarness::new()
        .open_store()
        .await
        .map_err(failed("open a fresh schema"))?;
    fair_backlog(&store2, pending, now, true).await?;
    for round in 0..rounds {
        let at = now.add_millis(rounds + round);
        let started = Instant::now();
        timed_claim(&store2, ClaimPolicy::Oldest, at).await?;
        with_index.push(started.elapsed());
    }
    summary("oldest claim+10 releases", with_index);
    summary("same, no ready-owner index", without);
    drop((store, guard, store2, guard2));
    Ok(())
}

/// One drain of `pending` due runs by 10 claimers at `limit` under `policy`, on a fresh
/// schema opened with the server's durability settings; leases per second.
async fn drain_rate(pending: u64, policy: ClaimPolicy, limit: NonZeroU32) -> Result<f64, String> {
    let options = docket_postgres::PostgresOptions {
        schema: testing::fresh_schema_name(),
        pool_size: 12,
        ..docket_postgres::parse_url(&testing::test_url()).map_err(failed("test url"))?
    };
    let store = PostgresStore::open(options)
        .await
        .map_err(failed("open a fresh schema"))?;
    let now = Timestamp::from_millis(1_700_000_000_000);
    let per_tenant = pending / 5;
    let doc = GraphDocument::from_json(r#"{"schema_version":1,"id":"rate"}"#)
        .map_err(|e| format!("graph document: {e}"))?;
    let graph = GraphRef {
        graph_id: GraphId::new("rate").map_err(|e| e.to_string())?,
        graph_hash: graph_hash(&doc),
    };
    for name in ["t0", "t1", "t2", "t3", "t4"] {
        let owner = OwnerScope::Tenant(TenantId::new(name).map_err(|e| e.to_string())?);
        store
            .save_graph(&owner, &graph, &doc, now)
            .await
            .map_err(failed("save the graph"))?;
        let runs = BulkRuns {
            pending: per_tenant,
            claimed: 0,
            finished: 0,
        };
        bulk_insert_runs(&store, &owner, &graph, runs, now)
            .await
            .map_err(failed("bulk insert"))?;
        let rename = format!(
            "UPDATE {s}.runs SET run_id = '{name}-' || run_id WHERE run_id LIKE 'bulk%';
             UPDATE {s}.run_listing SET run_id = '{name}-' || run_id WHERE run_id LIKE 'bulk%'",
            s = store.schema()
        );
        sqlx::raw_sql(&rename)
            .execute(testing::pool(&store))
            .await
            .map_err(|e| format!("rename: {e}"))?;
    }
    // The renames left a dead version of every row, and dead index entries every claim
    // would step over; a store's runs are written once.
    sqlx::raw_sql(&format!("VACUUM ANALYZE {}.runs", store.schema()))
        .execute(testing::pool(&store))
        .await
        .map_err(|e| format!("vacuum: {e}"))?;
    // Every run due at `at`: the bulk wakes spread around `now`.
    let at = now.add_millis(i64::try_from(pending).unwrap_or(i64::MAX) + 1);
    let request = ClaimRequest {
        policy,
        now: at,
        limit,
        orphan_ttl_ms: 3_600_000,
        max_claim_attempts: NonZeroU32::MIN.saturating_add(4),
        preference: None,
    };
    // Each claimer's connection opened, its statements prepared and (under `TenantFair`) the
    // claim function planned before the clock starts: a claim at `now - 1 h` finds nothing
    // due, so it leases nothing. The claims run at once, so each holds its own connection.
    let warm_up = ClaimRequest {
        now: now.add_millis(-3_600_000),
        ..request
    };
    let warmed = futures::future::try_join_all((0..10).map(|_| store.claim_due(&warm_up)))
        .await
        .map_err(failed("warm-up claim"))?;
    if warmed.iter().any(|batch| !batch.leases.is_empty()) {
        return Err("a warm-up claim leased a run".to_owned());
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let store = store.clone();
        tasks.spawn(async move {
            let mut leased = 0u64;
            loop {
                let batch = store.claim_due(&request).await?;
                if batch.leases.is_empty() {
                    return Ok::<u64, StoreError>(leased);
                }
                leased += batch.leases.len() as u64;
            }
        });
    }
    let mut leased = 0;
    while let Some(joined) = tasks.join_next().await {
        leased += joined
            .map_err(|e| format!("claimer: {e}"))?
            .map_err(failed("claim"))?;
    }
    let rate = leased as f64 / started.elapsed().as_secs_f64();
    let url = format!("{}?schema={}", testing::test_url(), store.schema());
    drop(store);
    PostgresStore::drop_schema(&url)
        .await
        .map_err(failed("drop the schema"))?;
    if leased != per_tenant * 5 {
        return Err(format!(
            "{policy:?} leased {leased} of {} runs",
            per_tenant * 5
        ));
    }
    Ok(rate)
}

async fn fair_rate(args: &[String]) -> Result<(), String> {
    let (mut pending, mut limit) = (2_000, NonZeroU32::MIN);
    for pair in args.chunks(2) {
        match pair {
            [flag, _] if flag == "--runs" => pending = runs_arg(pair)?,
            [flag, n] if flag == "--limit" => {
                limit = n
                    .parse()
                    .map_err(|_| format!("--limit {n:?} is not a positive number"))?;
            }
            _ => return Err(format!("unexpected arguments {args:?}")),
        }
    }
    // Alternated, so that neither policy always drains first on a server that warms up.
    let mut oldest = drain_rate(pending, ClaimPolicy::Oldest, limit).await?;
    let mut fair = drain_rate(pending, ClaimPolicy::TenantFair, limit).await?;
    fair = (fair + drain_rate(pending, ClaimPolicy::TenantFair, limit).await?) / 2.0;
    oldest = (oldest + drain_rate(pending, ClaimPolicy::Oldest, limit).await?) / 2.0;
    println!(
        "pg-fair-rate: limit {limit}, 10 claimers: oldest {oldest:.0} leases/s, tenant_fair \
         {fair:.0} leases/s, ratio {:.2}",
        fair / oldest
    );
    Ok(())
}
