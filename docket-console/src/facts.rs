//! Engine facts: runs by status, and among running runs how many are due, claimed, holding an
//! expired claim, or poisoned.
//!
//! The stores answer pages of runs, not counts, so the facts are counted from pages: statuses
//! from `list_runs` filtered by status (a count stops at [`STATUS_COUNT_CAP`] and says so),
//! operational facts from `inspect_run` on the newest running runs (at most the console's
//! `inspect_cap`; the answer says how many were inspected). Facts are cached for
//! [`FACTS_TTL`] per owner so a scraping Prometheus and a few open pages cost one count.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use serde::Serialize;

use docket::core::model::{RunQuery, RunStatus, RunSummary, Timestamp, MAX_PAGE_LIMIT};
use docket::{Docket, DocketError};

/// Largest count per status.
pub const STATUS_COUNT_CAP: u64 = 200_000;

/// How long counted facts are reused.
pub const FACTS_TTL: Duration = Duration::from_secs(2);

/// Concurrent `inspect_run` reads while counting.
const INSPECT_CONCURRENCY: usize = 8;

/// Count of one status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatusCount {
    /// The status.
    pub status: &'static str,
    /// Runs counted.
    pub count: u64,
    /// True when counting stopped at the cap (there are at least `count`).
    pub capped: bool,
}

/// The engine facts of one owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// Runs by durable status.
    pub runs: Vec<StatusCount>,
    /// Running runs inspected for the operational counts below.
    pub inspected: u64,
    /// True when every running run was inspected.
    pub inspected_all: bool,
    /// Running, unclaimed, not poisoned, wake time reached.
    pub due: u64,
    /// Running with a claim younger than the orphan TTL.
    pub claimed: u64,
    /// Running with a claim older than the orphan TTL (its worker is presumed gone).
    pub expired: u64,
    /// Poisoned (waiting for an operator's retry).
    pub poisoned: u64,
    /// Running, parked until a later wake time.
    pub scheduled: u64,
    /// The orphan TTL used to tell claimed from expired (this process's configuration).
    pub orphan_ttl_ms: u64,
}

/// Facts per owner, each with the instant it was counted.
#[derive(Debug, Default)]
pub struct FactsCache {
    by_owner: Mutex<HashMap<Option<String>, (Instant, Facts)>>,
}

impl FactsCache {
    /// The facts of `docket`'s owner, counted at most [`FACTS_TTL`] ago.
    ///
    /// # Errors
    /// As [`Docket::list_runs`] and [`Docket::inspect_run`].
    pub async fn get(&self, docket: &Docket, inspect_cap: usize) -> Result<Facts, DocketError> {
        let key = docket.owner().tenant_id().map(|t| t.as_str().to_owned());
        if let Some((at, facts)) = self.lock().get(&key) {
            if at.elapsed() < FACTS_TTL {
                return Ok(facts.clone());
            }
        }
        let facts = count(docket, inspect_cap).await?;
        self.lock().insert(key, (Instant::now(), facts.clone()));
        Ok(facts)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Option<String>, (Instant, Facts)>> {
        self.by_owner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Counts the facts now.
///
/// # Errors
/// As [`Docket::list_runs`] and [`Docket::inspect_run`].
pub async fn count(docket: &Docket, inspect_cap: usize) -> Result<Facts, DocketError> {
    let mut runs = Vec::new();
    for status in RunStatus::DURABLE {
        let (count, capped) = count_status(docket, status).await?;
        runs.push(StatusCount {
            status: status.as_str(),
            count,
            capped,
        });
    }
    let running = newest(docket, RunStatus::Running, inspect_cap).await?;
    let infos: Vec<_> = stream::iter(running.into_iter().map(|s| {
        let docket = docket.clone();
        async move { docket.inspect_run(&s.id).await }
    }))
    .buffer_unordered(INSPECT_CONCURRENCY)
    .collect()
    .await;
    let ttl = docket.engine().config().orphan_ttl_ms;
    let now = docket.engine().clock().now();
    let running_total = runs
        .iter()
        .find(|c| c.status == "running")
        .map_or(0, |c| c.count);
    let mut facts = Facts {
        runs,
        inspected: 0,
        inspected_all: false,
        due: 0,
        claimed: 0,
        expired: 0,
        poisoned: 0,
        scheduled: 0,
        orphan_ttl_ms: ttl,
    };
    for info in infos {
        let info = match info {
            Ok(info) => info,
            // Finished or removed between the listing and the read.
            Err(DocketError::NotFound) => continue,
            Err(e) => return Err(e),
        };
        facts.inspected += 1;
        if info.is_poisoned() {
            facts.poisoned += 1;
        } else if let Some(at) = info.claimed_at {
            let expires = at.add_millis(i64::try_from(ttl).unwrap_or(i64::MAX));
            if expires <= now {
                facts.expired += 1;
            } else {
                facts.claimed += 1;
            }
        } else if info.wake_at.is_some_and(|w| w <= now) {
            facts.due += 1;
        } else {
            facts.scheduled += 1;
        }
    }
    facts.inspected_all = facts.inspected >= running_total;
    Ok(facts)
}

/// Runs of `status`, up to [`STATUS_COUNT_CAP`].
async fn count_status(docket: &Docket, status: RunStatus) -> Result<(u64, bool), DocketError> {
    let mut query = RunQuery {
        limit: MAX_PAGE_LIMIT,
        statuses: Some(vec![status]),
        ..RunQuery::default()
    };
    let mut count = 0u64;
    loop {
        let page = docket.list_runs(&query).await?;
        count += page.runs.len() as u64;
        if !page.has_more {
            return Ok((count, false));
        }
        if count >= STATUS_COUNT_CAP {
            return Ok((count, true));
        }
        query.before = page.next_before;
    }
}

/// The newest `cap` runs of `status`.
///
/// # Errors
/// As [`Docket::list_runs`].
pub async fn newest(
    docket: &Docket,
    status: RunStatus,
    cap: usize,
) -> Result<Vec<RunSummary>, DocketError> {
    let mut out = Vec::new();
    let mut query = RunQuery {
        limit: MAX_PAGE_LIMIT,
        statuses: Some(vec![status]),
        ..RunQuery::default()
    };
    while out.len() < cap {
        let page = docket.list_runs(&query).await?;
        out.extend(page.runs);
        if !page.has_more {
            break;
        }
        query.before = page.next_before;
    }
    out.truncate(cap);
    Ok(out)
}

/// A timestamp as RFC 3339 text, for pages.
#[must_use]
pub fn when(at: Option<Timestamp>) -> String {
    at.map(Timestamp::to_rfc3339).unwrap_or_default()
}
