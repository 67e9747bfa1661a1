//! Running cases: one per `#[test]` (the [`crate::suite!`] macro) or all of them with a report
//! ([`crate::run_all`]).

use std::io::Write as _;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::env::Env;
use crate::harness::{Harness, Requirement};
use crate::report::CaseOutcome;

/// A case, type-erased: borrows its [`Env`] for the duration of the returned future.
pub type CaseFn = for<'a, 'h> fn(&'a Env<'h>) -> BoxFuture<'a, ()>;

/// One named case of the suite.
#[derive(Clone, Copy)]
pub struct CaseInfo {
    /// Its family (`transitions`, `claims`, ...).
    pub family: &'static str,
    /// Its name within the family.
    pub name: &'static str,
    /// The case itself.
    pub run: CaseFn,
    /// What its family needs beyond the mandatory contract.
    pub needs: &'static [Requirement],
}

impl std::fmt::Debug for CaseInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}__{}", self.family, self.name)
    }
}

impl CaseInfo {
    /// `family__name`, the name of its generated test.
    #[must_use]
    pub fn test_name(&self) -> String {
        format!("{}__{}", self.family, self.name)
    }

    /// Why the case cannot run against `harness`, if it cannot.
    #[must_use]
    pub fn skip_reason<H: Harness>(&self, harness: &H) -> Option<&'static str> {
        let capabilities = harness.capabilities();
        self.needs
            .iter()
            .find(|need| !need.met_by(capabilities))
            .map(|need| need.describe())
    }
}

/// Worker threads of the runtime each generated test builds (races need real parallelism).
pub const WORKER_THREADS: usize = 4;

/// How long one case may take inside [`crate::run_all`] before it is reported as hung.
pub const CASE_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs one case on a fresh multi-threaded runtime against a fresh store from `harness`, or,
/// when the harness lacks what the case's family needs, says so on stderr and returns.
/// Used by the tests [`crate::suite!`] generates.
///
/// # Panics
/// When the case fails (that is how a test fails), or the runtime or store cannot be set up.
pub fn run_test<H: Harness>(harness: &H, info: &CaseInfo) {
    if let Some(reason) = info.skip_reason(harness) {
        // Straight to the process's stderr: the test harness captures `eprintln!` of passing
        // tests, and a skip must never pass silently.
        let _ = writeln!(std::io::stderr(), "SKIPPED {}: {reason}", info.test_name());
        return;
    }
    let case = info.run;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot build the case runtime: {e}"));
    runtime.block_on(async {
        let env = Env::open(harness)
            .await
            .unwrap_or_else(|e| panic!("the harness could not open a store: {e}"));
        case(&env).await;
    });
}

/// Runs `info` against a fresh store, catching its panic (or a hang past [`CASE_TIMEOUT`]) as
/// a failure; a case the harness cannot run is skipped.
pub(crate) async fn run_caught<H: Harness>(harness: &H, info: &CaseInfo) -> CaseOutcome {
    if let Some(reason) = info.skip_reason(harness) {
        return CaseOutcome::Skipped(reason);
    }
    match run_case(harness, info.run).await {
        Ok(()) => CaseOutcome::Passed,
        Err(message) => CaseOutcome::Failed(message),
    }
}

/// Runs `case` against a fresh store, catching its panic (or a hang past [`CASE_TIMEOUT`]) as
/// a failure message.
async fn run_case<H: Harness>(harness: &H, case: CaseFn) -> Result<(), String> {
    let attempt = async {
        let env = Env::open(harness)
            .await
            .map_err(|e| format!("the harness could not open a store: {e}"))?;
        AssertUnwindSafe(case(&env))
            .catch_unwind()
            .await
            .map_err(|payload| panic_message(payload.as_ref()))
    };
    match tokio::time::timeout(CASE_TIMEOUT, attempt).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "the case did not finish within {} s",
            CASE_TIMEOUT.as_secs()
        )),
    }
}

/// The message of a caught panic.
#[must_use]
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the case panicked with a non-string payload".to_owned()
    }
}
