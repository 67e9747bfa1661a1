//! Committed checkpoints (`docs/runs-and-moments.md`, “Checkpoints and the envelope”): what
//! observers and the inline driver receive after a moment commits.

use super::moment::Moment;
use crate::model::{CheckpointType, Event, Run, Timestamp, ValueMap};

/// A committed moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Checkpoint type.
    pub checkpoint_type: CheckpointType,
    /// `run.checkpoint_seq`.
    pub seq: u64,
    /// The committed run.
    pub run: Run,
    /// The committed events (the last is the `checkpoint_committed` fact).
    pub events: Vec<Event>,
    /// The moment's `proposed_at`.
    pub created_at: Timestamp,
    /// The envelope.
    pub metadata: ValueMap,
}

impl Checkpoint {
    /// The checkpoint of a committed `moment`.
    #[must_use]
    pub fn from_moment(moment: &Moment) -> Self {
        Checkpoint {
            checkpoint_type: moment.checkpoint_type,
            seq: moment.run.checkpoint_seq,
            run: moment.run.clone(),
            events: moment.events.clone(),
            created_at: moment.proposed_at,
            metadata: moment.checkpoint_metadata.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::testing::{rtg, t};
    use crate::runtime::{build_initial_run, propose_init, Initialization, SequentialIds};

    #[test]
    fn a_checkpoint_mirrors_its_committed_moment() {
        let g = rtg(json!({}));
        let run = build_initial_run(
            &g,
            ValueMap::new(),
            None,
            ValueMap::new(),
            &SequentialIds::new(),
        )
        .expect("build");
        let Initialization::Moment(m) = propose_init(&g, &run, t(3)).expect("init") else {
            panic!("moment");
        };
        let c = Checkpoint::from_moment(&m);
        assert_eq!(c.seq, 1);
        assert_eq!(c.checkpoint_type, CheckpointType::RunInitialized);
        assert_eq!(c.created_at, t(3));
        assert_eq!(c.metadata, m.checkpoint_metadata);
        assert_eq!(c.events, m.events);
        assert_eq!(c.run, m.run);
    }
}
