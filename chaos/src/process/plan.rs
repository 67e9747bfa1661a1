//! The fault plan of a process-level run: which faults, and when, drawn from the seed.
//!
//! Moments are measured in *progress* (how many runs have settled), not in time: the same
//! seed then fires the same faults at the same points of the workload however fast the
//! machine is, and every planned fault fires before the last runs settle (all thresholds lie
//! between 2 % and 85 % of the runs). Which worker a kill or freeze hits, how long a freeze or
//! an outage lasts, and whether a cut forwards its request are drawn from the same seed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// One fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// SIGKILL a worker process, then start its successor.
    Kill,
    /// SIGSTOP a worker past the orphan TTL, then SIGCONT it.
    Freeze,
    /// Crash and restart the private server (PostgreSQL and Redis only).
    Restart,
    /// Arm the proxy to cut the next commit's connection (PostgreSQL and Redis only).
    Drop,
}

/// How many faults of each kind a run plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Worker kills.
    pub kills: u64,
    /// Freezes past the orphan TTL.
    pub freezes: u64,
    /// Server restarts.
    pub restarts: u64,
    /// Armed reply drops.
    pub drops: u64,
}

impl Budget {
    /// The default for `runs` runs: a kill per 16 runs, a freeze per 80, a restart per 250
    /// (at least one) and a drop per 30 — for 1,000 runs 62 kills, 12 freezes, 4 restarts and
    /// 33 drops. `servers` is false for SQLite (no server to restart, no connection to cut).
    #[must_use]
    pub fn for_runs(runs: u64, servers: bool) -> Self {
        Budget {
            kills: (runs / 16).max(2),
            freezes: (runs / 80).max(1),
            restarts: if servers { (runs / 250).max(1) } else { 0 },
            drops: if servers { (runs / 30).max(2) } else { 0 },
        }
    }
}

/// The faults of one run, each at the number of settled runs that triggers it, in order.
#[must_use]
pub fn schedule(seed: u64, runs: u64, budget: Budget) -> Vec<(u64, Fault)> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xC4A0_5EED);
    let low = (runs / 50).max(1);
    let high = (runs * 85 / 100).max(low + 1);
    let mut plan = Vec::new();
    for (fault, n) in [
        (Fault::Kill, budget.kills),
        (Fault::Freeze, budget.freezes),
        (Fault::Restart, budget.restarts),
        (Fault::Drop, budget.drops),
    ] {
        for _ in 0..n {
            plan.push((rng.gen_range(low..high), fault));
        }
    }
    plan.sort_by_key(|(at, fault)| (*at, *fault as u8));
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_fixes_the_plan_and_every_threshold_lies_inside_the_workload() {
        let budget = Budget::for_runs(1_000, true);
        assert_eq!(
            (budget.kills, budget.freezes, budget.restarts, budget.drops),
            (62, 12, 4, 33)
        );
        let plan = schedule(1, 1_000, budget);
        assert_eq!(plan, schedule(1, 1_000, budget));
        assert_ne!(plan, schedule(2, 1_000, budget));
        assert_eq!(plan.len(), 62 + 12 + 4 + 33);
        assert!(plan.iter().all(|(at, _)| (20..850).contains(at)));
        assert!(plan.windows(2).all(|w| w[0].0 <= w[1].0));
        let sqlite = Budget::for_runs(60, false);
        assert_eq!((sqlite.restarts, sqlite.drops), (0, 0));
        assert!(schedule(3, 60, sqlite).iter().all(|(at, _)| *at < 60));
    }
}
