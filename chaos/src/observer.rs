//! The engine side of the ack log: a checkpoint observer.
//!
//! The engine's lifecycle announces a commit to its observers only once it knows the commit
//! is durable — an `Ok` reply, or an ambiguous reply that the vehicle's re-read proved landed.
//! So "the observer saw it" is exactly "the engine acknowledged it", including the
//! acknowledgements the fault layer cannot see (it only saw the `Ambiguous` it sent).

use std::sync::Arc;

use async_trait::async_trait;

use docket_core::lifecycle::{Checkpoint, CheckpointObserver, ObserverError};

use crate::journal::Journal;

/// Appends every announced checkpoint to the journal's ack log.
#[derive(Debug)]
pub struct AckObserver {
    journal: Arc<Journal>,
}

impl AckObserver {
    /// An observer writing into `journal`.
    #[must_use]
    pub fn new(journal: Arc<Journal>) -> Self {
        AckObserver { journal }
    }
}

#[async_trait]
impl CheckpointObserver for AckObserver {
    fn name(&self) -> &str {
        "chaos_ack_log"
    }

    /// # Errors
    /// Never.
    async fn observe(&self, checkpoint: &Checkpoint) -> Result<(), ObserverError> {
        self.journal.record_ack(
            &checkpoint.run.id,
            checkpoint.seq,
            checkpoint.events.clone(),
        );
        Ok(())
    }
}
