//! Domain types: identifiers, time, portable values, scopes, the run document, events,
//! operational projections and pages (`docs/runs-and-moments.md`).

pub mod event;
pub mod ids;
pub mod info;
pub mod interrupt;
pub mod page;
pub mod run;
pub mod run_validate;
pub mod scope;
pub mod strict_json;
pub mod text;
pub mod time;
pub mod value;

pub use event::{CheckpointType, Event, EventType};
pub use ids::{ClaimToken, GraphHash, GraphId, IdError, RunId, TenantId, MAX_ID_BYTES};
pub use info::{OperationalState, Poison, PoisonReason, RunInfo};
pub use interrupt::Interrupt;
pub use page::{
    EventPage, EventQuery, GraphCursor, GraphRef, GraphVersion, GraphVersionPage,
    GraphVersionQuery, RunCursor, RunPage, RunQuery, RunSummary, MAX_PAGE_LIMIT,
};
pub use run::{
    idempotency_key, task_id, AttemptFailure, ChannelState, Failure, InterruptState,
    InterruptStatus, PendingWrite, PendingWriteKind, Run, RunStatus, TaskState, TaskStatus,
    TimerKind, TimerState,
};
pub use run_validate::{validate_durable, InvalidRun, MAX_SEQ};
pub use scope::{OwnerScope, Scope};
pub use strict_json::{parse_json_strict, JsonError};
pub use text::excerpt;
pub use time::{Clock, ManualClock, SystemClock, Timestamp};
pub use value::{check_portable, check_portable_map, ValueError, ValueMap};
