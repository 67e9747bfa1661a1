//! PostgreSQL checks that `cargo xtask` (std-only, no driver) runs through this binary.
//!
//! * `pg_checks plan [--runs N]` — fills a fresh schema with N pending runs (default
//!   100,000; plus N/100 claimed and N/10 finished), prints the `EXPLAIN` of the real claim
//!   statement, both as its first executions plan it (custom plan) and as a long-lived
//!   prepared statement may plan it (generic plan), and fails unless both read the partial
//!   indexes and neither scans the runs table sequentially. Then claims once and prints the
//!   time.
//! * `pg_checks drop-schema URL` — drops the schema a `postgres://…?schema=NAME` URL names.
//!
//! The server is `DOCKET_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`).

use std::num::NonZeroU32;
use std::process::ExitCode;
use std::time::Instant;

use docket_core::graph::{graph_hash, GraphDocument};
use docket_core::model::{GraphId, GraphRef, OwnerScope, Timestamp};
use docket_core::store::{ClaimRequest, GraphStore, RunStore, StoreError};
use docket_postgres::testing::{bulk_insert_runs, claim_plan_problems, BulkRuns, PostgresHarness};
use docket_postgres::PostgresStore;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("plan") => plan(&args[1..]).await,
        Some("drop-schema") if args.len() == 2 => drop_schema(&args[1]).await,
        _ => Err("usage: pg_checks plan [--runs N] | pg_checks drop-schema URL".to_owned()),
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
