//! The steps of a generated registry history and their strategies.

use proptest::prelude::*;

/// Owners a history uses.
pub const OWNERS: u64 = 2;
/// Operation ids a history uses per owner.
pub const OPERATIONS: u64 = 4;

/// A call asked of one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// `provisioning_succeeded`.
    Start,
    /// `complete_operation`.
    Complete,
    /// `fail_operation`.
    Fail,
    /// `cancel_operation`.
    Cancel,
    /// `abort_provisioning`.
    Abort,
    /// `request_retire`.
    RequestRetire,
    /// `mark_retired`.
    MarkRetired,
    /// `report_progress`.
    Progress,
    /// A completion carrying a failure outcome (always `InvalidArgument`).
    Mismatched,
}

/// One step of a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Register operation `op` (display name `name`) for `owner`, with an admission limit.
    Register {
        /// Owner index.
        owner: u64,
        /// Operation index.
        op: u64,
        /// Display name index (names repeat, so ties occur).
        name: u8,
        /// Admission limit (`Some(0)` is invalid).
        limit: Option<u32>,
    },
    /// Ask `act` of operation `op` of `owner`.
    Act {
        /// Owner index.
        owner: u64,
        /// Operation index.
        op: u64,
        /// The call.
        act: Act,
    },
    /// `terminate_owner`.
    Terminate {
        /// Owner index.
        owner: u64,
    },
    /// `retire_owner`.
    Retire {
        /// Owner index.
        owner: u64,
    },
    /// `collect_completed`.
    Collect {
        /// Owner index.
        owner: u64,
    },
    /// Move the clock forward.
    Advance {
        /// Milliseconds.
        ms: u16,
    },
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        4 => Just(Act::Start),
        3 => Just(Act::Complete),
        2 => Just(Act::Fail),
        2 => Just(Act::Cancel),
        2 => Just(Act::Abort),
        2 => Just(Act::RequestRetire),
        2 => Just(Act::MarkRetired),
        2 => Just(Act::Progress),
        1 => Just(Act::Mismatched),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let owner = 0..OWNERS;
    let op = 0..OPERATIONS;
    let limit = prop_oneof![
        6 => Just(None),
        3 => (1u32..4).prop_map(Some),
        1 => Just(Some(0)),
    ];
    prop_oneof![
        6 => (owner.clone(), op.clone(), 0u8..3, limit)
            .prop_map(|(owner, op, name, limit)| Step::Register { owner, op, name, limit }),
        10 => (owner.clone(), op, act()).prop_map(|(owner, op, act)| Step::Act { owner, op, act }),
        1 => owner.clone().prop_map(|owner| Step::Terminate { owner }),
        1 => owner.clone().prop_map(|owner| Step::Retire { owner }),
        2 => owner.prop_map(|owner| Step::Collect { owner }),
        1 => (1u16..5_000).prop_map(|ms| Step::Advance { ms }),
    ]
}

/// Histories of 1 to 40 steps.
pub fn history() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(step(), 1..40)
}
