//! Claiming ahead (`docs/engine.md`, “The dispatcher”): a vehicle about to send the last
//! commit of its drain tells its dispatcher, which then counts the vehicle's slot as free and
//! claims the next run while that commit travels.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::dispatcher::Shared;

/// How a vehicle tells its dispatcher that its last commit is in flight (a commit that parks
/// or ends the run): from then on it runs no node, so its slot counts as free and the
/// dispatcher claims the next run at once, while that commit travels, instead of after the
/// vehicle exits. The lease claimed early starts running while the finishing vehicle still
/// awaits its answer, so at most `concurrency` vehicles run nodes at once, and briefly more
/// than `concurrency` hold claims.
#[derive(Clone, Debug)]
pub(crate) struct Finishing {
    shared: Arc<Shared>,
    requests: mpsc::UnboundedSender<()>,
}

impl Finishing {
    /// Announcements of the vehicles whose dispatcher keeps `shared` and takes poll
    /// requests on `requests`.
    pub(crate) fn new(shared: Arc<Shared>, requests: mpsc::UnboundedSender<()>) -> Self {
        Finishing { shared, requests }
    }

    /// Counts the calling vehicle's task as finishing until the dispatcher reaps it, and asks
    /// for a poll. Outside a task (a drain called by hand) it does nothing.
    pub(crate) fn announce(&self) {
        let Some(id) = tokio::task::try_id() else {
            return;
        };
        if let Ok(mut finishing) = self.shared.finishing.lock() {
            finishing.insert(id);
        }
        // A dispatcher that has stopped no longer wants the poll.
        let _ = self.requests.send(());
    }

    /// Takes an announcement back: the commit announced as the last left the run to continue
    /// (a chain the store refused whole, whose first moment landed alone), so the vehicle
    /// runs nodes again. A lease the dispatcher claimed meanwhile keeps its vehicle: until
    /// one of them exits, one more vehicle than `concurrency` may run nodes.
    pub(crate) fn withdraw(&self) {
        if let (Some(id), Ok(mut finishing)) = (tokio::task::try_id(), self.shared.finishing.lock())
        {
            finishing.remove(&id);
        }
    }
}
