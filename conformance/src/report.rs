//! [`run_all`]: every case against one harness, with a per-family report (for the CLI
//! `docket conformance --backend URL` and for the suite's own mutant checks).

use std::fmt;

use crate::catalogue::CASES;
use crate::harness::Harness;
use crate::runner::{run_caught, CaseInfo};

/// One failed case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFailure {
    /// The case name within its family.
    pub case: &'static str,
    /// The panic message (the first broken assertion).
    pub message: String,
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseOutcome {
    /// It ran and passed.
    Passed,
    /// It ran and failed with this message (the first broken assertion).
    Failed(String),
    /// It did not run: the harness lacks what its family needs (the reason says what).
    Skipped(&'static str),
}

impl CaseOutcome {
    /// Whether the case ran and passed.
    #[must_use]
    pub fn is_passed(&self) -> bool {
        matches!(self, CaseOutcome::Passed)
    }

    /// A one-word verdict: `ok`, `FAILED` or `skipped`.
    #[must_use]
    pub fn verdict(&self) -> &'static str {
        match self {
            CaseOutcome::Passed => "ok",
            CaseOutcome::Failed(_) => "FAILED",
            CaseOutcome::Skipped(_) => "skipped",
        }
    }
}

/// The outcome of one family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyReport {
    /// The family.
    pub family: &'static str,
    /// How many of its cases passed.
    pub passed: usize,
    /// Its failed cases, in table order.
    pub failures: Vec<CaseFailure>,
    /// How many of its cases were skipped, and why (every case of a family is skipped for
    /// the same reason).
    pub skipped: usize,
    /// Why they were skipped.
    pub skip_reason: Option<&'static str>,
}

impl FamilyReport {
    /// Names of the failed cases.
    #[must_use]
    pub fn failed_names(&self) -> Vec<&'static str> {
        self.failures.iter().map(|f| f.case).collect()
    }
}

/// The outcome of a whole run, family by family in table order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// One entry per family that had at least one selected case.
    pub families: Vec<FamilyReport>,
}

impl Report {
    /// Cases run (skipped ones not included).
    #[must_use]
    pub fn total(&self) -> usize {
        self.passed() + self.failed()
    }

    /// Cases skipped because the harness lacks what their family needs.
    #[must_use]
    pub fn skipped(&self) -> usize {
        self.families.iter().map(|f| f.skipped).sum()
    }

    /// Cases passed.
    #[must_use]
    pub fn passed(&self) -> usize {
        self.families.iter().map(|f| f.passed).sum()
    }

    /// Cases failed.
    #[must_use]
    pub fn failed(&self) -> usize {
        self.families.iter().map(|f| f.failures.len()).sum()
    }

    /// Whether every case that ran passed.
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.failed() == 0
    }

    /// The report of `family`, if any of its cases ran.
    #[must_use]
    pub fn family(&self, family: &str) -> Option<&FamilyReport> {
        self.families.iter().find(|f| f.family == family)
    }

    /// Families with at least one failure.
    #[must_use]
    pub fn failing_families(&self) -> Vec<&'static str> {
        self.families
            .iter()
            .filter(|f| !f.failures.is_empty())
            .map(|f| f.family)
            .collect()
    }

    fn record(&mut self, case: &CaseInfo, outcome: CaseOutcome) {
        let index = match self.families.iter().position(|f| f.family == case.family) {
            Some(i) => i,
            None => {
                self.families.push(FamilyReport {
                    family: case.family,
                    ..FamilyReport::default()
                });
                self.families.len() - 1
            }
        };
        if let Some(family) = self.families.get_mut(index) {
            match outcome {
                CaseOutcome::Passed => family.passed += 1,
                CaseOutcome::Failed(message) => family.failures.push(CaseFailure {
                    case: case.name,
                    message,
                }),
                CaseOutcome::Skipped(reason) => {
                    family.skipped += 1;
                    family.skip_reason = Some(reason);
                }
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:>6} {:>6} {:>7}",
            "family", "passed", "failed", "skipped"
        )?;
        for family in &self.families {
            writeln!(
                f,
                "{:<16} {:>6} {:>6} {:>7}",
                family.family,
                family.passed,
                family.failures.len(),
                family.skipped
            )?;
        }
        writeln!(
            f,
            "{:<16} {:>6} {:>6} {:>7}",
            "total",
            self.passed(),
            self.failed(),
            self.skipped()
        )?;
        for family in self.families.iter().filter(|f| f.skipped > 0) {
            let reason = family.skip_reason.unwrap_or("not declared");
            writeln!(
                f,
                "SKIPPED {} ({} cases): {reason}",
                family.family, family.skipped
            )?;
        }
        for family in &self.families {
            for failure in &family.failures {
                let first = failure.message.lines().next().unwrap_or("");
                writeln!(f, "FAILED {}__{}: {first}", family.family, failure.case)?;
            }
        }
        Ok(())
    }
}

/// Every case of the suite, in table order.
#[must_use]
pub fn cases() -> &'static [CaseInfo] {
    CASES
}

/// Runs every case against fresh stores from `harness`, one after another, and reports per
/// family. A failing case (a panic, or a hang past [`crate::runner::CASE_TIMEOUT`]) is
/// recorded and the run goes on; a case whose family needs what the harness does not declare
/// is recorded as skipped.
///
/// Must run on a multi-threaded tokio runtime: the races need parallelism and the property
/// test drives the store from a blocking section.
pub async fn run_all<H: Harness>(harness: &H) -> Report {
    run_matching(harness, |_| true).await
}

/// [`run_all`] restricted to the cases `select` accepts.
pub async fn run_matching<H, F>(harness: &H, select: F) -> Report
where
    H: Harness,
    F: Fn(&CaseInfo) -> bool,
{
    run_observed(harness, select, |_, _| {}).await
}

/// [`run_matching`] that tells `observe` the outcome of each case as soon as it is known
/// (for progress output on long runs against a remote server).
pub async fn run_observed<H, F, O>(harness: &H, select: F, mut observe: O) -> Report
where
    H: Harness,
    F: Fn(&CaseInfo) -> bool,
    O: FnMut(&CaseInfo, &CaseOutcome),
{
    let mut report = Report::default();
    for case in CASES.iter().filter(|c| select(c)) {
        let outcome = run_caught(harness, case).await;
        observe(case, &outcome);
        report.record(case, outcome);
    }
    report
}
