//! `Moment::yield_for` (`docs/runs-and-moments.md`, “Yielding at a drain budget”): the only
//! sanctioned rewrite of a proposed moment.

use super::moment::{Disposition, Moment, ParkKind, ParkReason};
use super::sequencing::park_fields;
use crate::model::EventType;

/// Why a moment cannot be yielded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum YieldError {
    /// Only a `continue` moment can be narrowed; this one already parks.
    #[error("only a continuing moment can yield; this one is {0:?}")]
    NotContinue(Disposition),
    /// The checkpoint event is missing, duplicated or misplaced, or its metadata differs from
    /// the moment's envelope.
    #[error("the moment is malformed: {0}")]
    MalformedMoment(&'static str),
}

impl Moment {
    /// Narrows a `continue` moment to an immediate park for `reason`, rebuilding the envelope
    /// (and the checkpoint event's metadata). Run, sequences, timestamps, payloads, checkpoint
    /// type, pending attempts and `proposed_at` are preserved.
    ///
    /// # Errors
    /// [`YieldError::MalformedMoment`] for a structurally invalid moment (checked first),
    /// [`YieldError::NotContinue`] for a moment that already parks.
    pub fn yield_for(&self, reason: ParkReason) -> Result<Moment, YieldError> {
        self.check_structure()?;
        if self.disposition != Disposition::Continue {
            return Err(YieldError::NotContinue(self.disposition));
        }
        let disposition = Disposition::Park {
            kind: ParkKind::Immediate,
            reason,
        };
        let (wake, park_reason) = park_fields(disposition);
        let mut out = self.clone();
        out.disposition = disposition;
        out.checkpoint_metadata
            .insert("wake_disposition".into(), wake);
        out.checkpoint_metadata
            .insert("park_reason".into(), park_reason);
        if let Some(last) = out.events.last_mut() {
            last.metadata = out.checkpoint_metadata.clone();
        }
        Ok(out)
    }

    /// Checks that exactly one `checkpoint_committed` event closes the moment and carries its
    /// envelope.
    ///
    /// # Errors
    /// [`YieldError::MalformedMoment`] naming the broken rule.
    pub fn check_structure(&self) -> Result<(), YieldError> {
        let checkpoints = self
            .events
            .iter()
            .filter(|e| e.event_type == EventType::CheckpointCommitted)
            .count();
        match checkpoints {
            0 => return Err(YieldError::MalformedMoment("no checkpoint event")),
            1 => {}
            _ => return Err(YieldError::MalformedMoment("duplicated checkpoint event")),
        }
        let Some(last) = self.events.last() else {
            return Err(YieldError::MalformedMoment("no checkpoint event"));
        };
        if last.event_type != EventType::CheckpointCommitted {
            return Err(YieldError::MalformedMoment("misplaced checkpoint event"));
        }
        if last.metadata != self.checkpoint_metadata {
            return Err(YieldError::MalformedMoment(
                "the checkpoint event's metadata differs from the envelope",
            ));
        }
        Ok(())
    }
}
