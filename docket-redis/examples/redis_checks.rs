//! Redis measurements that need the server's own accounting, run by hand.
//!
//! * `redis_checks fair-cost [--runs N] [--limit K] [--rounds R]` — a fresh namespace with N
//!   due runs (default 4,000) under each of five tenants; then R rounds (default 10) of 20
//!   claims of K runs (default 10) under `Oldest` and 20 under `TenantFair`, interleaved, none
//!   handed back. Around each block of 20 it reads `INFO commandstats`, so what it prints is
//!   the server's CPU time per `EVALSHA` of each order (the script and every command it
//!   calls, nothing of the client or the network), and their ratio. The claim scripts run
//!   alone on Redis, so this is what bounds the claim rate of a server-bound store. Nothing
//!   else should use the server meanwhile: its counters are global.
//!
//! The server is `DOCKET_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`); the namespace is
//! deleted at the end.

use std::num::NonZeroU32;
use std::process::ExitCode;

use docket_core::store::{ClaimPolicy, ClaimRequest, RunStore};
use docket_redis::testing::{RedisGuard, RedisHarness};
use docket_redis::RedisStore;

// The tests' fixtures (graphs, runs, proposals, the fixed time base): one definition of a
// valid run for the tests and for this tool.
#[allow(dead_code, unused_imports)]
#[path = "../tests/redis/common.rs"]
mod common;

/// Claims per block between two readings of the server's counters.
const BLOCK: usize = 20;
const TENANTS: [&str; 5] = ["t1", "t2", "t3", "t4", "t5"];

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("fair-cost") => fair_cost(&args[1..]).await,
        _ => Err("usage: redis_checks fair-cost [--runs N] [--limit K] [--rounds R]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("redis_checks: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The value after `--name`, parsed, or `default` when the flag is absent.
fn flag(args: &[String], name: &str, default: u64) -> Result<u64, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(at) => args
            .get(at + 1)
            .and_then(|v| v.parse().ok())
            .filter(|v| *v > 0)
            .ok_or_else(|| format!("{name} takes a positive number")),
    }
}

/// `EVALSHA` calls and microseconds so far, from `INFO commandstats`.
async fn evalsha_counters(guard: &RedisGuard) -> Result<(u64, u64), String> {
    let info: String = guard
        .command(redis::cmd("INFO").arg("commandstats"))
        .await
        .map_err(|e| format!("INFO commandstats: {e}"))?;
    let line = info
        .lines()
        .find(|l| l.starts_with("cmdstat_evalsha:"))
        .unwrap_or("cmdstat_evalsha:calls=0,usec=0");
    let field = |name: &str| -> u64 {
        line.split([':', ','])
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("calls"), field("usec")))
}

/// Server microseconds and calls spent on one block of claims of `limit` under `policy`.
async fn block(
    store: &RedisStore,
    guard: &RedisGuard,
    policy: ClaimPolicy,
    limit: NonZeroU32,
) -> Result<(u64, u64), String> {
    let request = ClaimRequest {
        policy,
        now: common::t(1_000),
        limit,
        orphan_ttl_ms: 600_000,
        max_claim_attempts: NonZeroU32::MAX,
        preference: None,
    };
    let (calls0, usec0) = evalsha_counters(guard).await?;
    for _ in 0..BLOCK {
        let batch = store
            .claim_due(&request)
            .await
            .map_err(|e| format!("claim: {e}"))?;
        if batch.leases.len() != limit.get() as usize {
            return Err(format!(
                "{policy:?} leased {} runs, not {limit}: too few --runs for the rounds",
                batch.leases.len()
            ));
        }
    }
    let (calls1, usec1) = evalsha_counters(guard).await?;
    Ok((calls1 - calls0, usec1 - usec0))
}

async fn fair_cost(args: &[String]) -> Result<(), String> {
    let runs = flag(args, "--runs", 4_000)?;
    let rounds = flag(args, "--rounds", 10)?;
    let limit = u32::try_from(flag(args, "--limit", 10)?)
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or("--limit is too large")?;
    let (store, guard) = RedisHarness::from_env()
        .open_store()
        .await
        .map_err(|e| format!("open: {e}"))?;
    for name in TENANTS {
        let owner = common::tenant(name);
        let graph = common::publish(&store, &owner, "g").await;
        for n in 0..runs {
            let id = format!("{name}-{n}");
            let wake = common::t(i64::try_from(n).unwrap_or(0) % 1_000);
            common::start(&store, &owner, &id, &graph, wake).await;
        }
    }
    println!(
        "redis-fair-cost: {} due runs over {} tenants; {rounds} rounds of {BLOCK} claims of \
         {limit} per order",
        runs * TENANTS.len() as u64,
        TENANTS.len()
    );
    let mut totals = [(0_u64, 0_u64); 2];
    for _ in 0..rounds {
        for (slot, policy) in [ClaimPolicy::Oldest, ClaimPolicy::TenantFair]
            .into_iter()
            .enumerate()
        {
            let (calls, usec) = block(&store, &guard, policy, limit).await?;
            totals[slot].0 += calls;
            totals[slot].1 += usec;
        }
    }
    let per_call = |(calls, usec): (u64, u64)| usec as f64 / calls.max(1) as f64;
    let (oldest, fair) = (per_call(totals[0]), per_call(totals[1]));
    println!(
        "redis-fair-cost: limit {limit}: oldest {oldest:.1} µs per EVALSHA ({} calls), \
         tenant_fair {fair:.1} µs ({} calls); oldest ÷ fair {:.2}",
        totals[0].0,
        totals[1].0,
        oldest / fair
    );
    drop(guard);
    Ok(())
}
