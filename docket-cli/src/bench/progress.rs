//! One line on stderr as each phase of a bench ends: which phase, how long it took, and how
//! long the bench has run so far. A run prints its tables only when every phase is done —
//! minutes per backend at the quick scale — so these lines are what shows it is moving, and
//! where its time goes. stdout keeps only the report, so piping the tables stays clean.

use std::future::Future;
use std::time::Instant;

/// The clock of one bench run.
#[derive(Debug)]
pub(crate) struct Progress {
    began: Instant,
    /// Names the run in each line (the backend).
    name: String,
}

impl Progress {
    /// Starts the clock of a run labelled `name`.
    pub(crate) fn new(name: &str) -> Self {
        Progress {
            began: Instant::now(),
            name: name.to_owned(),
        }
    }

    /// Awaits `phase` and prints one line when it ends, failed or not.
    pub(crate) async fn phase<T>(&self, what: &str, phase: impl Future<Output = T>) -> T {
        let started = Instant::now();
        let out = phase.await;
        eprintln!(
            "docket bench {}: {:>6.1} s  {what} ({:.1} s)",
            self.name,
            self.began.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        out
    }
}
