//! The process-level report: the oracle's [`Report`] plus the faults done to processes and
//! servers, the headline, a table, and JSON.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::process::plan::Budget;
use crate::report::Report;

/// The faults actually injected (not merely planned).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessFaults {
    /// Live worker processes killed with SIGKILL (each then replaced).
    pub kills: u64,
    /// Of the kills (SQLite), those of a worker seen holding the database's write lock
    /// (mid-transaction) just before the signal.
    pub kills_holding_write_lock: u64,
    /// Workers held in SIGSTOP past the orphan TTL (or until another worker claimed one of
    /// their runs), then continued.
    pub freezes: u64,
    /// Of the freezes, those ended the moment another worker was seen claiming one of the
    /// frozen worker's runs.
    #[serde(default)]
    pub thawed_on_steal: u64,
    /// Crash-restarts of the private server.
    pub restarts: u64,
    /// Connections cut by the proxy after forwarding a commit (the reply dropped).
    pub drops_after_forward: u64,
    /// Connections cut by the proxy before forwarding a commit (the request dropped).
    pub drops_before_forward: u64,
    /// Workers that exited on their own and were replaced (expected 0).
    pub workers_exited: u64,
}

impl ProcessFaults {
    /// Cut connections of both kinds.
    #[must_use]
    pub fn dropped_replies(&self) -> u64 {
        self.drops_after_forward + self.drops_before_forward
    }

    /// Every injected fault.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.kills + self.freezes + self.restarts + self.dropped_replies()
    }
}

/// The verdict of one process-level run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessReport {
    /// The command that reproduces the run.
    pub command: String,
    /// The faults planned from the seed.
    pub planned: Option<Budget>,
    /// The faults injected.
    pub faults: ProcessFaults,
    /// Journal lines that could not be read (torn by a SIGKILL mid-write).
    pub torn_lines: u64,
    /// Journal files read (one per worker incarnation, and the driver's).
    pub journals: u64,
    /// Wall time, in seconds.
    pub elapsed_s: f64,
    /// The oracle's verdict (its in-process fault counts are zero here).
    pub oracle: Report,
}

impl ProcessReport {
    /// `runs N, faults F (kills k, freezes f, restarts r, dropped replies d), lost 0,
    /// duplicated 0, stale accepted 0, stuck 0` ("lost" includes commits the store accepted
    /// that are gone, "duplicated" includes history gaps).
    #[must_use]
    pub fn headline(&self) -> String {
        let f = &self.faults;
        let r = &self.oracle;
        format!(
            "runs {}, faults {} (kills {}, freezes {}, restarts {}, dropped replies {}), lost {}, duplicated {}, stale accepted {}, stuck {}",
            r.runs,
            f.total(),
            f.kills,
            f.freezes,
            f.restarts,
            f.dropped_replies(),
            r.lost + r.landed_missing,
            r.duplicated + r.gaps,
            r.stale_accepted,
            r.stuck
        )
    }

    /// How the ambiguous commits resolved.
    #[must_use]
    pub fn ambiguous_line(&self) -> String {
        let c = &self.oracle.commits;
        let s = &self.oracle.starts_and_signals;
        format!(
            "ambiguous commits: {} landed ({} acknowledged after the engine's re-read), {} not landed; starts and signals: {} landed, {} not landed",
            c.ambiguous_landed,
            c.ambiguous_resolved_by_reread,
            c.ambiguous_not_landed,
            s.ambiguous_landed,
            s.ambiguous_not_landed
        )
    }

    /// Whether every safety and liveness figure is zero.
    #[must_use]
    pub fn is_safe(&self) -> bool {
        self.oracle.is_safe()
    }

    /// A plain-text table of every figure.
    #[must_use]
    pub fn table(&self) -> String {
        let r = &self.oracle;
        let f = &self.faults;
        let rows: Vec<(&str, String)> = vec![
            ("backend", r.backend.clone()),
            ("seed", r.seed.to_string()),
            ("runs", r.runs.to_string()),
            ("terminal", r.terminal.to_string()),
            (
                "waiting on an interrupt",
                r.waiting_on_interrupt.to_string(),
            ),
            ("poisoned, retried", r.poisoned_retried.to_string()),
            ("kills", f.kills.to_string()),
            (
                "  of a writer mid-transaction",
                f.kills_holding_write_lock.to_string(),
            ),
            ("freezes past the TTL", f.freezes.to_string()),
            ("  ended by a steal", f.thawed_on_steal.to_string()),
            ("server restarts", f.restarts.to_string()),
            (
                "replies dropped (forwarded)",
                f.drops_after_forward.to_string(),
            ),
            (
                "requests dropped (not forwarded)",
                f.drops_before_forward.to_string(),
            ),
            ("workers exited by themselves", f.workers_exited.to_string()),
            ("claimed commits", r.commits.attempted.to_string()),
            ("  landed", r.commits.landed.to_string()),
            ("  refused", r.commits.refused.to_string()),
            (
                "  ambiguous, landed",
                r.commits.ambiguous_landed.to_string(),
            ),
            (
                "  ambiguous, landed, acknowledged",
                r.commits.ambiguous_resolved_by_reread.to_string(),
            ),
            (
                "  ambiguous, not landed",
                r.commits.ambiguous_not_landed.to_string(),
            ),
            (
                "starts and signals",
                r.starts_and_signals.attempted.to_string(),
            ),
            ("acknowledged (ack log)", r.acks.to_string()),
            ("node executions", r.effects.executions.to_string()),
            (
                "  redundant (re-run)",
                r.effects.redundant_executions.to_string(),
            ),
            (
                "journal files / torn lines",
                format!("{} / {}", self.journals, self.torn_lines),
            ),
            ("LOST", (r.lost + r.landed_missing).to_string()),
            ("DUPLICATED", (r.duplicated + r.gaps).to_string()),
            ("STALE ACCEPTED", r.stale_accepted.to_string()),
            ("STUCK", r.stuck.to_string()),
            (
                "committed without execution",
                r.effects.committed_without_execution.to_string(),
            ),
            ("elapsed", format!("{:.1} s", self.elapsed_s)),
        ];
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let mut out = String::new();
        for (k, v) in rows {
            out.push_str(&format!("{k:<width$}  {v}\n"));
        }
        for problem in &r.problems {
            out.push_str(&format!("problem: {problem}\n"));
        }
        out
    }

    /// Writes `<backend>-seed<S>.json` and `.txt` (the table, headline and command) into
    /// `dir`; returns the JSON path.
    ///
    /// # Errors
    /// The files cannot be written.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let stem = format!("{}-seed{}", self.oracle.backend, self.oracle.seed);
        let json = dir.join(format!("{stem}.json"));
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&json, text).map_err(|e| format!("{}: {e}", json.display()))?;
        let txt = dir.join(format!("{stem}.txt"));
        let table = format!(
            "{}\n{}\n{}\nreproduce: {}\n",
            self.table(),
            self.headline(),
            self.ambiguous_line(),
            self.command
        );
        std::fs::write(&txt, table).map_err(|e| format!("{}: {e}", txt.display()))?;
        Ok(json)
    }
}
