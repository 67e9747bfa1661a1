//! The committed checkpoint handed to observers (spec §2.7).

use crate::model::{CheckpointType, Event, Run, Timestamp, ValueMap};
use crate::runtime::Moment;

/// One durably committed moment, as observers see it.
///
/// Built only by the lifecycle after the store acknowledged the commit (its constructor is
/// crate-private), so holding a `Checkpoint` means the moment is durable.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    checkpoint_type: CheckpointType,
    seq: u64,
    run: Run,
    events: Vec<Event>,
    created_at: Timestamp,
    envelope: ValueMap,
}

impl Checkpoint {
    /// The checkpoint of `moment`, whose run is the document the store committed.
    pub(crate) fn committed(moment: &Moment) -> Self {
        Checkpoint {
            checkpoint_type: moment.checkpoint_type,
            seq: moment.run.checkpoint_seq,
            run: moment.run.clone(),
            events: moment.events.clone(),
            created_at: moment.proposed_at,
            envelope: moment.checkpoint_metadata.clone(),
        }
    }

    /// The type of the committed moment.
    #[must_use]
    pub fn checkpoint_type(&self) -> CheckpointType {
        self.checkpoint_type
    }

    /// The committed `checkpoint_seq`.
    #[must_use]
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The committed run document.
    #[must_use]
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The moment's events (the last one is its `checkpoint_committed`).
    #[must_use]
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The moment's proposal time.
    #[must_use]
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// The checkpoint envelope (the metadata of the `checkpoint_committed` event).
    #[must_use]
    pub fn envelope(&self) -> &ValueMap {
        &self.envelope
    }
}
