//! The example graphs bundled with the crate (`docket/graphs/*.json`), used by `docket demo`
//! and by the tests: an approval interrupt, a retrying node, a fan-out with a barrier join and
//! a bounded guarded cycle.

use serde_json::json;

use docket_core::model::{RunStatus, ValueMap};

/// One bundled graph and what its runs must end as.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    /// The graph id.
    pub id: &'static str,
    /// The JSON document.
    pub json: &'static str,
    /// The status every run of it must end in (interrupts resolved with `true`).
    pub expected: RunStatus,
    /// Whether its runs wait for an interrupt resolution.
    pub needs_approval: bool,
}

impl Example {
    /// The input of the `n`-th run of this graph.
    #[must_use]
    pub fn input(&self, n: usize) -> ValueMap {
        match self.id {
            "approval" => json!({"amount": 100 + n}),
            _ => json!({}),
        }
        .as_object()
        .cloned()
        .unwrap_or_default()
    }
}

/// Every bundled example, in demo order.
pub const EXAMPLES: [Example; 4] = [
    Example {
        id: "approval",
        json: include_str!("../graphs/approval.json"),
        expected: RunStatus::Done,
        needs_approval: true,
    },
    Example {
        id: "retry",
        json: include_str!("../graphs/retry.json"),
        expected: RunStatus::Done,
        needs_approval: false,
    },
    Example {
        id: "fanout",
        json: include_str!("../graphs/fanout.json"),
        expected: RunStatus::Done,
        needs_approval: false,
    },
    Example {
        id: "cycle",
        json: include_str!("../graphs/cycle.json"),
        expected: RunStatus::Done,
        needs_approval: false,
    },
];
