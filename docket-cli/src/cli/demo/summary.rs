//! The demo's summary: runs by final status per graph (with the expected status), engine
//! counters, recovery, throughput and commit latency.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};

use docket::core::model::{RunId, RunStatus};
use docket::engine::{merged_latency, StatsSnapshot, WorkerStats};
use docket::examples::EXAMPLES;

use super::Crash;

/// Per-graph tallies.
#[derive(Default)]
struct Row {
    runs: usize,
    by_status: BTreeMap<RunStatus, usize>,
}

pub struct Report {
    rows: Vec<(String, RunStatus, Row)>,
    stuck: usize,
    unexpected: usize,
    stats: StatsSnapshot,
    p50_ms: f64,
    p99_ms: f64,
    recovered: Option<(usize, usize)>,
    killed_at: Option<Duration>,
    kill_expected: bool,
    elapsed: Duration,
    total_runs: usize,
}

impl Report {
    pub fn new(
        statuses: &BTreeMap<RunId, (String, RunStatus)>,
        stats: &[Arc<WorkerStats>],
        crash: Option<&Crash>,
        elapsed: Duration,
        kill_expected: bool,
    ) -> Self {
        let mut rows: Vec<(String, RunStatus, Row)> = EXAMPLES
            .iter()
            .map(|e| (e.id.to_owned(), e.expected, Row::default()))
            .collect();
        let (mut stuck, mut unexpected) = (0, 0);
        for (graph, status) in statuses.values() {
            let Some((_, expected, row)) = rows.iter_mut().find(|(id, _, _)| id == graph) else {
                unexpected += 1;
                continue;
            };
            row.runs += 1;
            *row.by_status.entry(*status).or_default() += 1;
            if !status.is_terminal() {
                stuck += 1;
            } else if status != expected {
                unexpected += 1;
            }
        }
        let total = stats
            .iter()
            .fold(StatsSnapshot::default(), |acc, s| acc + s.snapshot());
        let latency = merged_latency(stats.iter().map(AsRef::as_ref));
        let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1000.0;
        let recovered = crash.map(|c| {
            let done = c
                .held
                .iter()
                .filter(|id| statuses.get(*id).is_some_and(|(_, s)| s.is_terminal()))
                .count();
            (done, c.held.len())
        });
        Report {
            rows,
            stuck,
            unexpected,
            stats: total,
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
            recovered,
            killed_at: crash.map(|c| c.after),
            kill_expected,
            elapsed,
            total_runs: statuses.len(),
        }
    }

    /// Every run ended in its graph's expected status.
    pub fn ok(&self) -> bool {
        self.stuck == 0 && self.unexpected == 0
    }

    pub fn print(&self) {
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
            "graph",
            "runs",
            "done",
            "failed",
            "cancelled",
            "unfinished",
            "expected",
            "ok",
        ]);
        for (graph, expected, row) in &self.rows {
            let count = |s: RunStatus| row.by_status.get(&s).copied().unwrap_or(0);
            let unfinished = count(RunStatus::Running) + count(RunStatus::Waiting);
            let good = row.runs == count(*expected);
            table.add_row(vec![
                Cell::new(graph),
                Cell::new(row.runs).set_alignment(CellAlignment::Right),
                Cell::new(count(RunStatus::Done)).set_alignment(CellAlignment::Right),
                Cell::new(count(RunStatus::Failed)).set_alignment(CellAlignment::Right),
                Cell::new(count(RunStatus::Cancelled)).set_alignment(CellAlignment::Right),
                Cell::new(unfinished).set_alignment(CellAlignment::Right),
                Cell::new(expected.as_str()),
                Cell::new(if good { "✓" } else { "✗" }),
            ]);
        }
        out!("{table}");

        let secs = self.elapsed.as_secs_f64().max(f64::EPSILON);
        let s = &self.stats;
        let mut metrics = Table::new();
        metrics.load_preset(UTF8_FULL_CONDENSED);
        let recovery = match self.recovered {
            Some((done, held)) => format!(
                "{done} of {held} runs held by the worker killed at {:.1} s ({} stolen claims detected)",
                self.killed_at.unwrap_or_default().as_secs_f64(),
                s.recovered_steals
            ),
            None if self.kill_expected => "no worker was killed (it never held a claim)".into(),
            None => "no worker was killed (--no-kill)".into(),
        };
        for (name, value) in [
            ("moments committed", s.moments_committed.to_string()),
            ("fenced rejections", s.fence_losses.to_string()),
            ("discarded moments", s.discards.to_string()),
            ("abandons", s.abandons.to_string()),
            ("poisons", s.poisons.to_string()),
            ("recovered runs", recovery),
            (
                "wake hints",
                if s.wake_hints == 0 {
                    "none (the workers found due runs by polling)".to_owned()
                } else {
                    format!("{} pushed by the store", s.wake_hints)
                },
            ),
            (
                "throughput",
                format!(
                    "{:.1} runs/s, {:.1} commits/s",
                    self.total_runs as f64 / secs,
                    s.moments_committed as f64 / secs
                ),
            ),
            (
                "commit latency",
                format!("p50 {:.2} ms, p99 {:.2} ms", self.p50_ms, self.p99_ms),
            ),
            ("elapsed", format!("{secs:.1} s")),
        ] {
            metrics.add_row(vec![Cell::new(name), Cell::new(value)]);
        }
        out!("{metrics}");
        if let Some((done, held)) = self.recovered {
            out!(
                "recovery: {done} of {held} runs held by the killed worker were finished by the other workers"
            );
        }
        if self.ok() {
            out!(
                "result: OK — all {} runs ended in the status their graph dictates",
                self.total_runs
            );
        } else {
            out!(
                "result: FAILED — {} runs stuck, {} in an unexpected status",
                self.stuck,
                self.unexpected
            );
        }
    }
}
