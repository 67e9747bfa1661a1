//! Figures, the report, its table and its JSON lines.

use std::time::Duration;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use serde_json::{json, Value};

/// Which direction of a figure is good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Throughput: more is better; the ratio is the share of the floor reached.
    Higher,
    /// Latency and memory: less is better; the ratio is how many times the floor it costs.
    Lower,
}

impl Better {
    /// `higher` or `lower`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

/// One measured figure beside its raw floor from the same run.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Stable key (`commit_throughput`, `commit_latency_p99`, …).
    pub key: String,
    /// Human label, with the figure's letter from `BENCHMARKS.md` (“The figures”).
    pub label: String,
    /// Unit of `value` and `floor`.
    pub unit: &'static str,
    /// The store's (or engine's) figure.
    pub value: f64,
    /// The raw floor's figure, measured in the same run.
    pub floor: f64,
    /// What the floor is.
    pub floor_label: String,
    /// Which direction is good.
    pub better: Better,
    /// What the ratio means, in words.
    pub meaning: &'static str,
}

impl Figure {
    /// `value / floor`, or `None` when the floor is zero.
    #[must_use]
    pub fn ratio(&self) -> Option<f64> {
        (self.floor > 0.0).then(|| self.value / self.floor)
    }
}

/// Everything one `docket bench` run measured and verified.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    /// `sqlite`, `postgres` (`postgres-pooled` behind a transaction pooler), `redis` or
    /// `memory`.
    pub backend: String,
    /// Concurrent tasks (and worker vehicles).
    pub concurrency: usize,
    /// Length of each timed window.
    pub duration: Duration,
    /// The git commit the binary was built from, when the caller knows it.
    pub git_commit: Option<String>,
    /// The figures, in report order.
    pub figures: Vec<Figure>,
    /// Checkpoints one end-to-end run committed (initialization included).
    pub commits_per_run: u64,
    /// What the final verification proved, one line per check.
    pub verified: Vec<String>,
    /// What each raw floor executes on this backend.
    pub floors: Vec<String>,
    /// The (a)/(c) concurrency sweep of the scale figures (empty when not measured).
    pub curve: Vec<super::CurvePoint>,
}

impl BenchReport {
    /// The figure with `key`.
    #[must_use]
    pub fn figure(&self, key: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.key == key)
    }

    /// One JSON object per figure, one per line.
    #[must_use]
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for figure in &self.figures {
            let line: Value = json!({
                "backend": self.backend,
                "figure": figure.key,
                "label": figure.label,
                "value": round(figure.value),
                "unit": figure.unit,
                "floor": round(figure.floor),
                "floor_kind": figure.floor_label,
                "ratio": figure.ratio().map(round),
                "better": figure.better.as_str(),
                "concurrency": self.concurrency,
                "duration_s": self.duration.as_secs_f64(),
                "commits_per_run": self.commits_per_run,
                "git_commit": self.git_commit,
            });
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }

    /// The figures as a terminal table.
    #[must_use]
    pub fn table(&self) -> String {
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED);
        table.set_header(vec!["figure", "value", "raw floor", "ratio", "meaning"]);
        for figure in &self.figures {
            table.add_row(vec![
                Cell::new(&figure.label),
                Cell::new(format!("{} {}", number(figure.value), figure.unit))
                    .set_alignment(CellAlignment::Right),
                Cell::new(format!(
                    "{} {} ({})",
                    number(figure.floor),
                    figure.unit,
                    figure.floor_label
                )),
                Cell::new(ratio_text(figure.ratio())).set_alignment(CellAlignment::Right),
                Cell::new(figure.meaning),
            ]);
        }
        table.to_string()
    }
}

/// Three significant decimals are plenty for a benchmark figure.
fn round(x: f64) -> f64 {
    (x * 1_000.0).round() / 1_000.0
}

/// A figure for humans: thousands separated, decimals only for small values.
#[must_use]
pub(crate) fn number(x: f64) -> String {
    if x.abs() >= 100.0 {
        let whole = x.round() as i64;
        let digits = whole.unsigned_abs().to_string();
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        if whole < 0 {
            format!("-{grouped}")
        } else {
            grouped
        }
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A ratio for humans: `0.43×`, `12.5×`, `0.004×`.
#[must_use]
pub(crate) fn ratio_text(ratio: Option<f64>) -> String {
    match ratio {
        None => "—".to_owned(),
        Some(r) if r >= 10.0 => format!("{r:.1}×"),
        Some(r) if r >= 0.1 => format!("{r:.2}×"),
        Some(r) => format!("{r:.3}×"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_group_thousands_and_keep_decimals_only_when_small() {
        assert_eq!(number(1_234_567.4), "1,234,567");
        assert_eq!(number(123.0), "123");
        assert_eq!(number(42.26), "42.3");
        assert_eq!(number(4.567), "4.57");
        assert_eq!(number(0.0456), "0.046");
        assert_eq!(ratio_text(Some(0.4321)), "0.43×");
        assert_eq!(ratio_text(Some(0.0042)), "0.004×");
        assert_eq!(ratio_text(Some(32.04)), "32.0×");
        assert_eq!(ratio_text(None), "—");
    }

    #[test]
    fn a_zero_floor_has_no_ratio() {
        let figure = Figure {
            key: "k".into(),
            label: "l".into(),
            unit: "u",
            value: 3.0,
            floor: 0.0,
            floor_label: String::new(),
            better: Better::Higher,
            meaning: "",
        };
        assert_eq!(figure.ratio(), None);
        let figure = Figure {
            floor: 4.0,
            ..figure
        };
        assert_eq!(figure.ratio(), Some(0.75));
    }
}
