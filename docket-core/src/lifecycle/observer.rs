//! After-commit checkpoint observers (`docs/runs-and-moments.md`, “The lifecycle”).
//!
//! Observers see a moment only after it is durable, run on their own tokio tasks, and can
//! neither change nor delay the result of the operation that committed it: an error, a panic
//! or a task that never finishes is logged and counted, nothing more.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt;

use crate::runtime::{Checkpoint, Moment};

/// What an observer may fail with.
pub type ObserverError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Receives every durably committed checkpoint of a [`super::Lifecycle`].
#[async_trait]
pub trait CheckpointObserver: Send + Sync + fmt::Debug + 'static {
    /// A short name for logs.
    fn name(&self) -> &str {
        "checkpoint_observer"
    }

    /// Observes one committed checkpoint. Runs on its own task after the commit.
    ///
    /// # Errors
    /// Any failure; it is logged and counted and never affects durable state.
    ///
    /// # Cancel safety
    /// The task is not cancelled by the lifecycle, but it is dropped if the runtime shuts down.
    async fn observe(&self, checkpoint: &Checkpoint) -> Result<(), ObserverError>;
}

/// The configured observers and the count of their failures.
#[derive(Clone, Default)]
pub(super) struct Observers {
    list: Vec<Arc<dyn CheckpointObserver>>,
    failures: Arc<AtomicU64>,
}

impl Observers {
    pub fn push(&mut self, observer: Arc<dyn CheckpointObserver>) {
        self.list.push(observer);
    }

    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Starts one task per observer with the checkpoint of `moment` and returns at once.
    ///
    /// The checkpoint copies the whole run and its events, and this runs after every commit:
    /// it is built only when there is an observer to see it (the engine's default has none).
    pub fn notify(&self, moment: &Moment) {
        if self.list.is_empty() {
            return;
        }
        let checkpoint = &Arc::new(Checkpoint::from_moment(moment));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Without a runtime there is nowhere to run observers; the commit still stands.
            self.failures
                .fetch_add(self.list.len() as u64, Ordering::Relaxed);
            tracing::warn!(
                observers = self.list.len(),
                checkpoint_seq = checkpoint.seq,
                "docket.checkpoint.observer.failure: no tokio runtime to run observers on"
            );
            return;
        };
        for observer in &self.list {
            let observer = Arc::clone(observer);
            let checkpoint = Arc::clone(checkpoint);
            let failures = Arc::clone(&self.failures);
            runtime.spawn(async move {
                let outcome = AssertUnwindSafe(observer.observe(&checkpoint))
                    .catch_unwind()
                    .await;
                let failure = match outcome {
                    Ok(Ok(())) => return,
                    Ok(Err(error)) => error.to_string(),
                    Err(_) => "the observer panicked".to_owned(),
                };
                failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    observer = observer.name(),
                    run_id = %checkpoint.run.id,
                    checkpoint_seq = checkpoint.seq,
                    checkpoint_type = %checkpoint.checkpoint_type,
                    failure = %failure,
                    "docket.checkpoint.observer.failure"
                );
            });
        }
    }
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observers")
            .field("observers", &self.list)
            .field("failures", &self.failures())
            .finish()
    }
}
