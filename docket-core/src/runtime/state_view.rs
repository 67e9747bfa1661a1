//! State views (`docs/runs-and-moments.md`, “Activations and identity”): what nodes and guards see
//! of the committed channels.
//!
//! Public input/field id → value; a never-written field shows its effective default when that
//! default is non-null, otherwise it is absent. `versions` carries every declared id (0 when
//! unwritten).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::graph::{Channel, RuntimeGraph, StateView};
use crate::model::{ChannelState, ValueMap};

/// Builds the view of `channels` under `rtg`, with `changed` as the guard `changed` set.
#[must_use]
pub fn state_view(
    rtg: &RuntimeGraph,
    channels: &BTreeMap<String, ChannelState>,
    changed: BTreeSet<String>,
) -> StateView {
    let mut values = ValueMap::new();
    let mut versions = BTreeMap::new();
    for (public_id, channel_id, channel) in rtg.value_channels() {
        let committed = channels.get(channel_id);
        versions.insert(public_id.to_owned(), committed.map_or(0, |c| c.version));
        match committed {
            Some(state) => {
                values.insert(public_id.to_owned(), state.value.clone());
            }
            None => {
                if let Channel::Value {
                    default: Some(default),
                    ..
                } = channel
                {
                    if !default.is_null() {
                        values.insert(public_id.to_owned(), default.clone());
                    }
                }
            }
        }
    }
    StateView {
        values,
        versions,
        changed,
    }
}

/// The value a reducer folds into: the committed value, else the channel's effective default,
/// else nothing.
#[must_use]
pub fn current_value<'a>(
    channel: &'a Channel,
    committed: Option<&'a ChannelState>,
) -> Option<&'a Value> {
    match committed {
        Some(state) => Some(&state.value),
        None => match channel {
            Channel::Value { default, .. } => default.as_ref(),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::testing::rtg;

    #[test]
    fn views_show_committed_values_non_null_defaults_and_every_version() {
        let g = rtg(json!({
            "inputs": {"i": {"schema": {"type": "string"}, "default": "d"}},
            "fields": {
                "plain": {"schema": {"type": "integer"}},
                "nulled": {"schema": {"type": "integer"}, "default": null},
                "n": {"schema": {"type": "integer"}, "reducer": "sum"},
                "w": {"schema": {"type": "integer"}},
            },
        }));
        let mut channels = BTreeMap::new();
        channels.insert(
            "state:w".to_owned(),
            ChannelState {
                channel_id: "state:w".into(),
                value: Value::Null,
                version: 3,
                barrier_seen: vec![],
            },
        );
        let view = state_view(&g, &channels, BTreeSet::new());
        assert_eq!(
            Value::Object(view.values),
            json!({"i": "d", "n": 0, "w": null}),
            "a written null is a value; an unwritten null default is absent"
        );
        assert_eq!(view.versions.len(), 5);
        assert_eq!(view.versions["w"], 3);
        assert_eq!(view.versions["plain"], 0);
    }
}
