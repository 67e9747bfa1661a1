//! Prometheus text exposition at `/metrics` (`docs/console.md`, “Metrics”).
//!
//! Counters come from the engine's [`WorkerStats`] (a worker's, when the console runs beside
//! one), the commit-latency and claim-to-start histograms from its HDR histograms (cumulative
//! buckets read off them, with the exact sums the stats keep beside them), and the gauges from
//! the store counts of [`crate::facts`]. Every name has the `docket_` prefix.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use std::time::Duration;

use docket::engine::{StatsSnapshot, WorkerStats};
use docket::Docket;
use hdrhistogram::Histogram;

use crate::auth::{find_grant, Grant};
use crate::error::ApiError;
use crate::extract::bearer;
use crate::facts::{Facts, FactsCache};
use crate::Shared;

/// Upper bounds (seconds) of the latency histograms' buckets.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// What a metrics-only server exposes.
#[derive(Debug)]
pub struct MetricsSource {
    /// Counters to sum (one per worker in this process).
    pub stats: Vec<Arc<WorkerStats>>,
    /// The store to count runs in, if any.
    pub docket: Option<Docket>,
    /// Tokens accepted (empty: no authentication, for a loopback scrape).
    pub grants: Vec<Grant>,
    /// Cached counts.
    pub facts: FactsCache,
}

/// `/metrics` of the full console: any valid bearer token; counts in the token's scope.
///
/// # Errors
/// 401 without a valid token; 503 when the store cannot count.
pub async fn handler(
    State(console): State<Shared>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let grants = &console.config().grants;
    let token = bearer(&headers).ok_or_else(ApiError::unauthorized)?;
    let grant = find_grant(grants, token).ok_or_else(ApiError::unauthorized)?;
    let docket = grants[grant].scope(console.docket());
    let facts = console
        .facts()
        .get(&docket, console.config().inspect_cap)
        .await
        .map_err(|e| ApiError::from_docket(e, "not_found"))?;
    Ok(text(render(&console.config().stats, Some(&facts))))
}

/// `/metrics` of `--metrics-only`.
///
/// # Errors
/// 401 without a valid token when tokens are configured; 503 when the store cannot count.
pub async fn standalone(
    State(source): State<Arc<MetricsSource>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let mut docket = source.docket.clone();
    if !source.grants.is_empty() {
        let token = bearer(&headers).ok_or_else(ApiError::unauthorized)?;
        let grant = find_grant(&source.grants, token).ok_or_else(ApiError::unauthorized)?;
        docket = docket.map(|d| source.grants[grant].scope(&d));
    }
    let facts = match &docket {
        Some(docket) => Some(
            source
                .facts
                .get(docket, 1000)
                .await
                .map_err(|e| ApiError::from_docket(e, "not_found"))?,
        ),
        None => None,
    };
    Ok(text(render(&source.stats, facts.as_ref())))
}

fn text(body: String) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// The exposition text for `stats` (summed) and, if given, the store facts.
#[must_use]
pub fn render(stats: &[Arc<WorkerStats>], facts: Option<&Facts>) -> String {
    let total = stats
        .iter()
        .map(|s| s.snapshot())
        .fold(StatsSnapshot::default(), |a, b| a + b);
    let mut out = String::new();
    let counters: [(&str, &str, u64); 12] = [
        (
            "docket_commits_total",
            "Moments committed by this process's workers.",
            total.moments_committed,
        ),
        (
            "docket_fence_losses_total",
            "Commits refused because the claim or checkpoint moved on.",
            total.fence_losses,
        ),
        (
            "docket_claims_total",
            "Runs claimed (launched or handed back unlaunched).",
            total.vehicles_launched + total.released_unlaunched,
        ),
        (
            "docket_vehicles_launched_total",
            "Claimed runs handed to execution.",
            total.vehicles_launched,
        ),
        (
            "docket_abandons_total",
            "Claims handed back with a backoff.",
            total.abandons,
        ),
        (
            "docket_poisons_total",
            "Runs poisoned by this process's workers.",
            total.poisons,
        ),
        (
            "docket_discards_total",
            "Moments discarded after a lost or ambiguous commit.",
            total.discards,
        ),
        (
            "docket_recovered_steals_total",
            "Runs recovered from an expired claim.",
            total.recovered_steals,
        ),
        (
            "docket_ambiguous_resolved_total",
            "Ambiguous commits resolved by re-reading.",
            total.ambiguous_resolved,
        ),
        (
            "docket_vehicle_crashes_total",
            "Vehicles that ended in a panic or crash.",
            total.vehicle_crashes,
        ),
        (
            "docket_polls_total",
            "Claim polls sent to the store.",
            total.polls,
        ),
        (
            "docket_wake_hints_total",
            "Wake-up hints received from the store.",
            total.wake_hints,
        ),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
        );
    }
    histogram(&mut out, stats);
    if let Some(facts) = facts {
        gauges(&mut out, facts);
    }
    out
}

fn histogram(out: &mut String, stats: &[Arc<WorkerStats>]) {
    let merged = |pick: fn(&WorkerStats) -> (Histogram<u64>, Duration)| {
        let mut total: Option<Histogram<u64>> = None;
        let mut sum = Duration::ZERO;
        for s in stats {
            let (h, s_sum) = pick(s);
            sum += s_sum;
            match total.as_mut() {
                // Every worker's histogram has the same bounds, so adding cannot fail.
                Some(t) => {
                    let _ = t.add(&h);
                }
                None => total = Some(h),
            }
        }
        (total, sum)
    };
    let (commits, commit_sum) = merged(|s| (s.commit_latency(), s.commit_latency_sum()));
    write_histogram(
        out,
        "docket_commit_duration_seconds",
        "Time from proposing a moment to its durable commit.",
        commits.as_ref(),
        commit_sum,
    );
    let (starts, start_sum) = merged(|s| (s.claim_to_start(), s.claim_to_start_sum()));
    write_histogram(
        out,
        "docket_claim_to_start_seconds",
        "Time from a claim's reply reaching the dispatcher to its vehicle starting on the run.",
        starts.as_ref(),
        start_sum,
    );
}

/// One histogram in the exposition format; `h` counts microseconds (`None`: no worker).
fn write_histogram(
    out: &mut String,
    name: &str,
    help: &str,
    h: Option<&Histogram<u64>>,
    sum: Duration,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    let total = h.map_or(0, Histogram::len);
    for bound in BUCKETS {
        let micros = (bound * 1e6) as u64;
        let count = match h {
            Some(h) if !h.is_empty() => h.count_between(0, micros),
            _ => 0,
        };
        let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {count}");
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {total}");
    let _ = writeln!(
        out,
        "{name}_sum {}\n{name}_count {total}",
        sum.as_secs_f64()
    );
}

fn gauges(out: &mut String, facts: &Facts) {
    let _ = writeln!(
        out,
        "# HELP docket_runs Runs in the store by status (the token's owner).\n# TYPE docket_runs gauge"
    );
    for count in &facts.runs {
        let _ = writeln!(
            out,
            "docket_runs{{status=\"{}\"}} {}",
            count.status, count.count
        );
    }
    let _ = writeln!(
        out,
        "# HELP docket_queue Running runs by operational state (of those inspected).\n# TYPE docket_queue gauge"
    );
    for (state, value) in [
        ("due", facts.due),
        ("claimed", facts.claimed),
        ("expired", facts.expired),
        ("poisoned", facts.poisoned),
        ("scheduled", facts.scheduled),
    ] {
        let _ = writeln!(out, "docket_queue{{state=\"{state}\"}} {value}");
    }
}
