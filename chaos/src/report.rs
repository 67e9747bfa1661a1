//! The oracle's verdict: counts, a one-line headline, JSON.

use serde::{Deserialize, Serialize};

use crate::fault::FaultCounts;

/// What became of the commits the fault layer forwarded or refused to forward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitTally {
    /// Calls seen by the fault layer.
    pub attempted: u64,
    /// Accepted by the inner store.
    pub landed: u64,
    /// Refused by the inner store (a lost fence, mostly).
    pub refused: u64,
    /// Never forwarded (an injected error or a lost request).
    pub not_sent: u64,
    /// Answered `Ok`.
    pub replied_ok: u64,
    /// Answered `Ambiguous` although the store had accepted the commit.
    pub ambiguous_landed: u64,
    /// Answered `Ambiguous` and the commit is not in the store (refused or never sent).
    pub ambiguous_not_landed: u64,
    /// Ambiguous commits that landed and that the engine went on to acknowledge after its
    /// re-read (the rest it discarded, which is safe: it released the claim and the next
    /// holder resumes from the stored state).
    pub ambiguous_resolved_by_reread: u64,
}

/// Node side effects against their idempotency keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectTally {
    /// Node attempts executed (every execution, repeated ones included).
    pub executions: u64,
    /// Distinct idempotency keys executed.
    pub keys_executed: u64,
    /// Node attempt results committed (`node_completed` and `node_failed` events).
    pub results_committed: u64,
    /// Executions whose result was never committed (lost to faults and re-run): the price of
    /// at-least-once execution, not a violation.
    pub redundant_executions: u64,
    /// Committed results with no execution under their key (a violation).
    pub committed_without_execution: u64,
}

/// The verdict of one chaos run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The backend the run used.
    pub backend: String,
    /// The fault seed.
    pub seed: u64,
    /// Runs started by the workload.
    pub runs: u64,
    /// Runs terminal at the end.
    pub terminal: u64,
    /// Runs waiting on an open interrupt only (allowed).
    pub waiting_on_interrupt: u64,
    /// Poisoned runs the heal phase had to retry.
    pub poisoned_retried: u64,
    /// Injected faults by kind.
    pub faults: FaultCounts,
    /// Claimed commits (the workers' moments) by outcome.
    pub commits: CommitTally,
    /// Starts (`initialize`) and signals (`commit_unclaimed`) by outcome. Their callers do
    /// not re-read: a retried start that had landed is `Conflict`, a retried signal finds the
    /// interrupt resolved or the run cancelled.
    pub starts_and_signals: CommitTally,
    /// Entries in the ack log (commits the engine acknowledged, initializations and signals
    /// included).
    pub acks: u64,
    /// Commits answered `Ok` to the engine that its observers never announced (expected 0;
    /// not a safety figure, a sign the ack log is incomplete).
    pub acks_unannounced: u64,
    /// Acknowledged commits absent from the store or stored with other content.
    pub lost: u64,
    /// Commits the store accepted (acknowledged or not) that are absent or differ now.
    pub landed_missing: u64,
    /// Checkpoint seqs stored twice, and node results committed twice for one task.
    pub duplicated: u64,
    /// Checkpoint seqs missing from `1..=checkpoint_seq`, and other history breaks.
    pub gaps: u64,
    /// Commits the store accepted although a newer claim on the run had been handed out
    /// before the commit was sent.
    pub stale_accepted: u64,
    /// Runs neither terminal nor waiting on an open interrupt after the heal phase.
    pub stuck: u64,
    /// Node side effects.
    pub effects: EffectTally,
    /// The first violations found, in words (at most 50).
    pub problems: Vec<String>,
}

/// Most problems kept in words.
pub const MAX_PROBLEMS: usize = 50;

impl Report {
    /// Whether every safety and liveness figure is zero.
    #[must_use]
    pub fn is_safe(&self) -> bool {
        self.lost == 0
            && self.landed_missing == 0
            && self.duplicated == 0
            && self.gaps == 0
            && self.stale_accepted == 0
            && self.stuck == 0
            && self.effects.committed_without_execution == 0
    }

    /// `runs N, faults F (delays a, errors-before b, ambiguous c, stalls d), lost 0,
    /// duplicated 0, stale accepted 0, stuck 0`, where "lost" adds [`Report::landed_missing`]
    /// to [`Report::lost`] and "duplicated" adds [`Report::gaps`] to [`Report::duplicated`].
    #[must_use]
    pub fn headline(&self) -> String {
        let f = &self.faults;
        format!(
            "runs {}, faults {} (delays {}, errors-before {}, ambiguous {}, stalls {}), lost {}, duplicated {}, stale accepted {}, stuck {}",
            self.runs,
            f.total(),
            f.delays,
            f.errors_before,
            f.ambiguous(),
            f.stalls,
            self.lost + self.landed_missing,
            self.duplicated + self.gaps,
            self.stale_accepted,
            self.stuck
        )
    }

    /// The report as pretty JSON.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Every field is a plain number, string or list of them: serializing cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub(crate) fn problem(&mut self, text: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(text);
        }
    }
}
