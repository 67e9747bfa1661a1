//! Store traits, proposals, claim types, the error algebra and the shared decision tables.

pub mod claim;
pub mod error;
pub mod layer;
pub mod proposal;
pub mod prune;
pub mod rules;
pub mod schedule;
pub mod traits;
pub mod url;

pub use claim::{
    AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimClass,
    ClaimCursor, ClaimLease, ClaimPolicy, ClaimRequest, PoisonedClaim, TenantShare,
};
pub use error::{Message, SourceError, StoreError, StoreErrorKind};
pub use layer::{Layered, StoreLayer};
pub use proposal::{BatchedCommit, BatchedInit, ClaimedCommit, InitProposal, UnclaimedCommit};
pub use prune::{PrunePolicy, PruneReport, KEEP_GRAPH_VERSIONS};
pub use schedule::{ClaimedSchedule, ReleaseWake};
pub use traits::{Backend, GraphStore, RunStore, Wakeups};
