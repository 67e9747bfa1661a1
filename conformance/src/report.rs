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

/// The outcome of one family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyReport {
    /// The family.
    pub family: &'static str,
    /// How many of its cases passed.
    pub passed: usize,
    /// Its failed cases, in table order.
    pub failures: Vec<CaseFailure>,
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
    /// Cases run.
    #[must_use]
    pub fn total(&self) -> usize {
        self.passed() + self.failed()
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

    /// Whether every case passed.
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

    fn record(&mut self, case: &CaseInfo, outcome: Result<(), String>) {
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
                Ok(()) => family.passed += 1,
                Err(message) => family.failures.push(CaseFailure {
                    case: case.name,
                    message,
                }),
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<12} {:>6} {:>6}", "family", "passed", "failed")?;
        for family in &self.families {
            writeln!(
                f,
                "{:<12} {:>6} {:>6}",
                family.family,
                family.passed,
                family.failures.len()
            )?;
        }
        writeln!(
            f,
            "{:<12} {:>6} {:>6}",
            "total",
            self.passed(),
            self.failed()
        )?;
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
/// recorded and the run goes on.
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
    O: FnMut(&CaseInfo, &Result<(), String>),
{
    let mut report = Report::default();
    for case in CASES.iter().filter(|c| select(c)) {
        let outcome = run_caught(harness, case.run).await;
        observe(case, &outcome);
        report.record(case, outcome);
    }
    report
}
