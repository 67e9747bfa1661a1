//! Wake hints of this process: after a write that made a run due (or ended an operation)
//! commits, every subscriber of the same store value gets a hint.
//!
//! The hints are in-process only (a broadcast channel per kind): SQLite has no notification
//! channel between processes, so workers of other processes find the work when they poll,
//! which the engine does anyway. A lost or folded hint costs latency, never correctness.

use futures::stream;
use tokio::sync::broadcast::{self, error::RecvError};

use docket_core::store::Wakeups;

/// Hints buffered per subscriber before older ones are folded into one.
const CAPACITY: usize = 16;

/// One kind of hint (runs due, operations ended) and its subscribers.
#[derive(Clone)]
pub(crate) struct Hints {
    sender: broadcast::Sender<()>,
}

impl Hints {
    /// A channel nobody listens to yet.
    pub(crate) fn new() -> Self {
        let (sender, _) = broadcast::channel(CAPACITY);
        Hints { sender }
    }

    /// Sends a hint to every subscriber (nobody listening is fine).
    pub(crate) fn send(&self) {
        let _ = self.sender.send(());
    }

    /// A new subscription, ending when the store value is dropped.
    pub(crate) fn subscribe(&self) -> Wakeups {
        let receiver = self.sender.subscribe();
        Box::pin(stream::unfold(receiver, |mut rx| async move {
            match rx.recv().await {
                // A lagging subscriber missed hints; one hint stands for all of them.
                Ok(()) | Err(RecvError::Lagged(_)) => Some(((), rx)),
                Err(RecvError::Closed) => None,
            }
        }))
    }
}
