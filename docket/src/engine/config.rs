//! Worker configuration (`docs/engine.md`, “Configuration”) and its start-up validation
//! (`docs/engine.md`, “Start-up validation”).
//!
//! Every limit is checked once, before a worker starts or a vehicle drains anything, so a
//! misconfigured host fails at boot with a message naming the offending options instead of
//! failing per claim (or, worse, letting healthy vehicles be stolen because the drain budget
//! outlives the orphan TTL).

use std::fmt;

use docket_core::model::ValueMap;
use docket_core::store::{ClaimPolicy, RunStore};

/// The default host ceiling on supersteps ([`WorkerConfig::max_supersteps`]).
pub const DEFAULT_MAX_SUPERSTEPS: u64 = 10_000;

/// Default of [`WorkerConfig::commit_batches_in_flight`]: the most group-commit batches a
/// worker has at the store at once. On the 2-core development machine two measured ahead of
/// four by 9–37 % in fenced commits/s at 10, 16 and 64 vehicles, and level with one at 16,
/// on both SQLite (one writer: a second batch forms while the first is written) and
/// PostgreSQL (fewer, larger statements left the server more time than more parallel ones);
/// `BENCHMARKS.md`, “Batches in flight”.
pub const DEFAULT_COMMIT_BATCHES_IN_FLIGHT: usize = 2;

/// How much one vehicle may do before it yields its claim (`docs/engine.md`, “The vehicle”).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainBudget {
    /// Most commits per drain (`None` = unbounded); the last one is the yield.
    pub max_moments: Option<u32>,
    /// Milliseconds after which the next continuing moment yields. Always finite: it bounds
    /// how long a healthy vehicle holds a claim, which must stay below the orphan TTL.
    pub max_elapsed_ms: u64,
}

impl Default for DrainBudget {
    fn default() -> Self {
        DrainBudget {
            max_moments: Some(100),
            max_elapsed_ms: 3_000,
        }
    }
}

/// Periodic retention (`docs/storage-contract.md`, “Retention”). There is no implicit retention: a
/// worker prunes only when this is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrunerConfig {
    /// Milliseconds between passes (the first runs at start).
    pub interval_ms: u64,
    /// Events older than this are deleted, whatever their run's status.
    pub event_retention_ms: u64,
    /// Terminal runs last updated before this are deleted with their events.
    pub run_retention_ms: u64,
    /// Most rows per category per pass.
    pub batch_size: u32,
}

/// Everything a worker (dispatcher, vehicles, pruner) is configured with.
///
/// `WorkerConfig::default()` holds the defaults of `docs/engine.md`, “Configuration”.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerConfig {
    /// Most vehicles running nodes at once. Default 10. A vehicle that has sent the last
    /// commit of its drain no longer counts, so the next run is claimed while that commit
    /// travels: briefly, the worker may hold more claims than this (`docs/engine.md`, “The
    /// dispatcher”).
    pub concurrency: usize,
    /// Milliseconds between scheduled polls (each jittered within `1..=interval`). Default 1 s.
    pub poll_interval_ms: u64,
    /// A claim older than this (strictly) may be stolen by another worker. Default 60 s.
    pub orphan_ttl_ms: u64,
    /// Launches allowed without committed progress before a run is poisoned. Default 5.
    pub max_claim_attempts: u32,
    /// How long a graceful shutdown waits for vehicles and an in-flight poll. Default 30 s.
    pub drain_timeout_ms: u64,
    /// Host ceiling of one node attempt (and of explicit node timeouts). Default 2 s.
    pub max_attempt_elapsed_ms: u64,
    /// Host ceiling on supersteps for graphs without a `max_supersteps` policy. Default
    /// [`DEFAULT_MAX_SUPERSTEPS`]: a run that reaches it fails with `max_supersteps_exceeded`,
    /// so a graph whose cycle never ends (the compiler warns with `unbounded_cycle`) cannot
    /// run forever. `None` removes the ceiling. A graph's own policy always wins.
    pub max_supersteps: Option<u64>,
    /// Per-drain budget. Default 100 moments / 3 s.
    pub drain_budget: DrainBudget,
    /// Most claimed commits (and, in a queue of their own, starts) sent to the store as one
    /// batch by group commit (`docs/engine.md`, “Group commit”); `Some(1)` sends every
    /// commit and start alone. Default
    /// `None`: the store's own preference (`RunStore::preferred_commit_batch`) — batches of
    /// up to 64 on SQLite, whose members then share one fsync, and on PostgreSQL, where a
    /// batch is one statement; every commit alone on Redis, where batching measured no
    /// faster. Batches form only when more commits are pending than group commit has calls
    /// in flight, so a worker with few vehicles commits every moment alone either way.
    pub max_commit_batch: Option<usize>,
    /// Most group-commit batches at the store at once (`docs/engine.md`, “Group commit”): a
    /// commit that finds fewer in flight goes at once, alone; the rest queue and form the
    /// next batches. More lets a store with many cores run batches side by side; fewer
    /// makes larger batches. Starts have as many slots again, of their own. Default
    /// [`DEFAULT_COMMIT_BATCHES_IN_FLIGHT`] (2). Unused when batches are off (a batch limit
    /// of 1).
    pub commit_batches_in_flight: usize,
    /// Which due runs the worker claims first (`docs/claim-order.md`): `Oldest` (the default)
    /// or `TenantFair`, breadth-first across tenants with their stored weights and caps.
    /// Workers sharing a store should agree, or the fair round robin only sees some claims.
    pub claim_policy: ClaimPolicy,
    /// Base delay of an abandoned claim's wake. Default 30 s.
    pub abandon_backoff_ms: u64,
    /// Cap of the exponential host-incompatibility backoff. Default 1 h.
    pub abandon_backoff_cap_ms: u64,
    /// Poisoning hand-backs allowed before the next one poisons. Default 5.
    pub max_claim_abandons: u32,
    /// Cache compiled graphs per owner scope and graph version. Default on.
    pub graph_cache: bool,
    /// How long a recorded graph incompatibility is trusted before the graph is fetched and
    /// compiled again. Default 30 s.
    pub incompatible_ttl_ms: u64,
    /// Periodic pruning; `None` (the default) prunes nothing.
    pub pruner: Option<PrunerConfig>,
    /// Host application context handed to every node attempt.
    pub context: ValueMap,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            concurrency: 10,
            poll_interval_ms: 1_000,
            orphan_ttl_ms: 60_000,
            max_claim_attempts: 5,
            drain_timeout_ms: 30_000,
            max_attempt_elapsed_ms: 2_000,
            max_supersteps: Some(DEFAULT_MAX_SUPERSTEPS),
            drain_budget: DrainBudget::default(),
            max_commit_batch: None,
            commit_batches_in_flight: DEFAULT_COMMIT_BATCHES_IN_FLIGHT,
            claim_policy: ClaimPolicy::Oldest,
            abandon_backoff_ms: 30_000,
            abandon_backoff_cap_ms: 3_600_000,
            max_claim_abandons: 5,
            graph_cache: true,
            incompatible_ttl_ms: 30_000,
            pruner: None,
            context: ValueMap::new(),
        }
    }
}

/// One violated rule, naming the options involved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The options involved, e.g. `["drain_budget.max_elapsed_ms", "orphan_ttl_ms"]`.
    pub options: Vec<&'static str>,
    /// What is wrong, with the values found.
    pub message: String,
}

/// A worker configuration that must not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid worker configuration: {}", render(.problems))]
pub struct ConfigError {
    /// Every violated rule (never empty).
    pub problems: Vec<ConfigProblem>,
}

fn render(problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(|p| p.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

impl ConfigError {
    /// Whether some problem names `option`.
    #[must_use]
    pub fn names(&self, option: &str) -> bool {
        self.problems.iter().any(|p| p.options.contains(&option))
    }
}

struct Problems(Vec<ConfigProblem>);

impl Problems {
    fn push(&mut self, options: &[&'static str], message: impl fmt::Display) {
        self.0.push(ConfigProblem {
            options: options.to_vec(),
            message: message.to_string(),
        });
    }

    fn positive(&mut self, option: &'static str, value: u64) {
        if value == 0 {
            self.push(&[option], format!("{option} must be positive, got 0"));
        }
    }
}

impl WorkerConfig {
    /// The most claimed commits (and starts) group commit sends as one store call for a
    /// worker of this configuration on `store`: [`WorkerConfig::max_commit_batch`], else the
    /// store's own `preferred_commit_batch`. At 1 every commit and start goes alone.
    #[must_use]
    pub fn commit_batch_on(&self, store: &(impl RunStore + ?Sized)) -> usize {
        self.max_commit_batch
            .unwrap_or_else(|| store.preferred_commit_batch())
    }

    /// Checks every rule of `docs/engine.md`, “Start-up validation”: positive limits,
    /// `max_attempt_elapsed_ms ≤ drain_budget.max_elapsed_ms < orphan_ttl_ms`,
    /// `abandon_backoff_cap_ms ≥ abandon_backoff_ms > 0`, and a consistent pruner policy.
    ///
    /// # Errors
    /// [`ConfigError`] listing every problem; each message names the options involved.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut p = Problems(Vec::new());
        p.positive("concurrency", self.concurrency as u64);
        if let Some(max) = self.max_commit_batch {
            p.positive("max_commit_batch", max as u64);
        }
        p.positive(
            "commit_batches_in_flight",
            self.commit_batches_in_flight as u64,
        );
        p.positive("poll_interval_ms", self.poll_interval_ms);
        p.positive("orphan_ttl_ms", self.orphan_ttl_ms);
        p.positive("max_claim_attempts", u64::from(self.max_claim_attempts));
        p.positive("max_attempt_elapsed_ms", self.max_attempt_elapsed_ms);
        p.positive(
            "drain_budget.max_elapsed_ms",
            self.drain_budget.max_elapsed_ms,
        );
        p.positive("max_claim_abandons", u64::from(self.max_claim_abandons));
        p.positive("abandon_backoff_ms", self.abandon_backoff_ms);
        p.positive("incompatible_ttl_ms", self.incompatible_ttl_ms);
        if self.drain_budget.max_moments == Some(0) {
            p.push(
                &["drain_budget.max_moments"],
                "drain_budget.max_moments must be positive (or unbounded), got 0",
            );
        }
        if self.max_supersteps == Some(0) {
            p.push(
                &["max_supersteps"],
                "max_supersteps must be positive (or unbounded), got 0",
            );
        }
        let elapsed = self.drain_budget.max_elapsed_ms;
        if self.max_attempt_elapsed_ms > elapsed {
            p.push(
                &["max_attempt_elapsed_ms", "drain_budget.max_elapsed_ms"],
                format!(
                    "max_attempt_elapsed_ms ({}) must not exceed drain_budget.max_elapsed_ms ({elapsed}): one attempt must fit in a drain",
                    self.max_attempt_elapsed_ms
                ),
            );
        }
        if elapsed >= self.orphan_ttl_ms {
            p.push(
                &["drain_budget.max_elapsed_ms", "orphan_ttl_ms"],
                format!(
                    "drain_budget.max_elapsed_ms ({elapsed}) must be below orphan_ttl_ms ({}): a healthy vehicle would otherwise be stolen mid-drain",
                    self.orphan_ttl_ms
                ),
            );
        }
        if self.abandon_backoff_cap_ms < self.abandon_backoff_ms {
            p.push(
                &["abandon_backoff_cap_ms", "abandon_backoff_ms"],
                format!(
                    "abandon_backoff_cap_ms ({}) must be at least abandon_backoff_ms ({})",
                    self.abandon_backoff_cap_ms, self.abandon_backoff_ms
                ),
            );
        }
        if let Some(pruner) = &self.pruner {
            p.positive("pruner.interval_ms", pruner.interval_ms);
            p.positive("pruner.batch_size", u64::from(pruner.batch_size));
            if pruner.event_retention_ms > pruner.run_retention_ms {
                p.push(
                    &["pruner.event_retention_ms", "pruner.run_retention_ms"],
                    format!(
                        "pruner.event_retention_ms ({}) must not exceed pruner.run_retention_ms ({})",
                        pruner.event_retention_ms, pruner.run_retention_ms
                    ),
                );
            }
        }
        if p.0.is_empty() {
            Ok(())
        } else {
            Err(ConfigError { problems: p.0 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(WorkerConfig::default().validate(), Ok(()));
        assert_eq!(
            WorkerConfig::default().max_supersteps,
            Some(DEFAULT_MAX_SUPERSTEPS)
        );
    }

    #[test]
    fn zero_limits_are_named() {
        let config = WorkerConfig {
            concurrency: 0,
            poll_interval_ms: 0,
            drain_budget: DrainBudget {
                max_moments: Some(0),
                max_elapsed_ms: 3_000,
            },
            ..WorkerConfig::default()
        };
        let err = config.validate().expect_err("zeros are refused");
        for option in [
            "concurrency",
            "poll_interval_ms",
            "drain_budget.max_moments",
        ] {
            assert!(err.names(option), "{option} is named in {err}");
            assert!(err.to_string().contains(option));
        }
    }
}
