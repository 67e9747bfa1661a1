//! Run events (`docs/runs-and-moments.md`, “Events”) and checkpoint types
//! (`docs/runs-and-moments.md`, “Checkpoints and the envelope”).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ids::RunId;
use super::time::Timestamp;
use super::value::ValueMap;

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The snake_case wire name.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }

            /// Parses a wire name produced by `as_str`.
            #[must_use]
            pub fn parse(name: &str) -> Option<Self> {
                match name {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum!(
    /// The type of a run event.
    EventType {
        /// A run was initialized.
        RunInitialized => "run_initialized",
        /// A run completed.
        RunCompleted => "run_completed",
        /// A run failed.
        RunFailed => "run_failed",
        /// A run was cancelled.
        RunCancelled => "run_cancelled",
        /// The last event of every moment.
        CheckpointCommitted => "checkpoint_committed",
        /// A node attempt completed.
        NodeCompleted => "node_completed",
        /// A node attempt failed.
        NodeFailed => "node_failed",
        /// A channel was written.
        ChannelUpdated => "channel_updated",
        /// An edge fired.
        EdgeTriggered => "edge_triggered",
        /// A node asked for an interrupt.
        InterruptRequested => "interrupt_requested",
        /// An interrupt was resolved.
        InterruptResolved => "interrupt_resolved",
    }
);

wire_enum!(
    /// The type of a committed moment.
    CheckpointType {
        /// Initialization.
        RunInitialized => "run_initialized",
        /// A barrier without interrupts.
        StepCommitted => "step_committed",
        /// A retry park.
        RetryScheduled => "retry_scheduled",
        /// A barrier that registered interrupts.
        InterruptRequested => "interrupt_requested",
        /// A resolution signal.
        InterruptResolved => "interrupt_resolved",
        /// Completion.
        RunCompleted => "run_completed",
        /// Failure.
        RunFailed => "run_failed",
        /// Cancellation signal.
        RunCancelled => "run_cancelled",
    }
);

/// One fact of a run's history. Events are written only by transitions, idempotently by
/// `(run_id, seq)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// The run the event belongs to.
    pub run_id: RunId,
    /// Positive, per-run sequence.
    pub seq: u64,
    /// Event type.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// Graph step (pre-barrier for runtime facts, committed step for the checkpoint).
    pub step: u64,
    /// Node concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Channel concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    /// Task concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The moment's proposal time.
    pub timestamp: Timestamp,
    /// Type-specific payload; never carries channel values.
    #[serde(default)]
    pub payload: ValueMap,
    /// The checkpoint envelope for `checkpoint_committed`, else empty.
    #[serde(default)]
    pub metadata: ValueMap,
}
