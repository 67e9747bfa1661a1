//! A run as of one of its checkpoints (read-only time travel), from what the store keeps.
//!
//! Stores keep the run's current document and its events; events never carry channel values
//! (`docs/runs-and-moments.md`, “Events”). So the state at checkpoint `n` is told honestly:
//! the checkpoint's envelope and its moment's events, and for each channel the checkpoints
//! whose moments touched it. A channel no event touched after checkpoint `n` has the same
//! value then as now, and that value is shown; a channel touched later shows its value as
//! "not retained"; a channel first touched after `n` did not exist yet.

use serde::Serialize;
use serde_json::Value;

use docket::core::model::{Event, EventQuery, EventType, Run, RunId, MAX_PAGE_LIMIT};
use docket::{Docket, DocketError};

/// What is known of one channel at the chosen checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChannelAt {
    /// The channel (`input:<id>`, `state:<id>`, `edge:<id>`, ...).
    pub channel_id: String,
    /// `unchanged_since` (value known: it is the current one), `changed_later` (the value then
    /// is not retained), `not_yet_written`, or `unknown` when events were pruned.
    pub status: &'static str,
    /// The value then, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Checkpoints up to and including the chosen one whose moments touched the channel.
    pub touched_at: Vec<u64>,
}

/// A run as of checkpoint `checkpoint_seq`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckpointState {
    /// The chosen checkpoint.
    pub checkpoint_seq: u64,
    /// The run's latest checkpoint.
    pub latest_checkpoint_seq: u64,
    /// The checkpoint event's metadata (the envelope: type, step, disposition, ...).
    pub envelope: Value,
    /// The events of the moment that committed it, checkpoint event last.
    pub events: Vec<Event>,
    /// Each channel of the run.
    pub channels: Vec<ChannelAt>,
    /// False when events were pruned, so the history is partial and no value is claimed.
    pub complete: bool,
}

/// The state of `run_id` as of checkpoint `n`; `Ok(None)` when the run has no checkpoint `n`
/// (or its event was pruned).
///
/// # Errors
/// As [`Docket::fetch_run`] and [`Docket::list_events`].
pub async fn at_checkpoint(
    docket: &Docket,
    run_id: &RunId,
    n: u64,
) -> Result<Option<CheckpointState>, DocketError> {
    let run = docket.fetch_run(run_id).await?;
    if n == 0 || n > run.checkpoint_seq {
        return Ok(None);
    }
    let mut events = Vec::new();
    let mut query = EventQuery {
        after_seq: 0,
        limit: MAX_PAGE_LIMIT,
    };
    let mut complete = true;
    loop {
        let page = docket.list_events(run_id, &query).await?;
        if query.after_seq == 0 && page.oldest_available_seq.is_some_and(|s| s > 1) {
            complete = false;
        }
        events.extend(page.events);
        if !page.has_more {
            break;
        }
        query.after_seq = page.next_after_seq;
    }
    Ok(fold(&run, &events, n, complete))
}

/// The pure part of [`at_checkpoint`]: `events` are the run's retained events, ascending.
#[must_use]
pub fn fold(run: &Run, events: &[Event], n: u64, complete: bool) -> Option<CheckpointState> {
    // Checkpoint number of the moment each event belongs to.
    let mut moment = 1u64;
    let mut touched: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
    let mut moment_events = Vec::new();
    let mut envelope = None;
    for event in events {
        if let Some(channel) = event.channel_id.as_deref() {
            let list = touched.entry(channel).or_default();
            if list.last() != Some(&moment) {
                list.push(moment);
            }
        }
        if moment == n {
            moment_events.push(event.clone());
        }
        if event.event_type == EventType::CheckpointCommitted {
            if moment == n {
                envelope = Some(Value::Object(event.metadata.clone()));
            }
            moment += 1;
        }
    }
    let envelope = envelope?;
    let channels = run
        .channels
        .iter()
        .map(|(id, channel)| {
            let all = touched.get(id.as_str()).cloned().unwrap_or_default();
            let (then, later): (Vec<u64>, Vec<u64>) = all.into_iter().partition(|&c| c <= n);
            let status = if !complete {
                "unknown"
            } else if then.is_empty() && !later.is_empty() {
                "not_yet_written"
            } else if later.is_empty() {
                "unchanged_since"
            } else {
                "changed_later"
            };
            ChannelAt {
                channel_id: id.clone(),
                status,
                value: (status == "unchanged_since").then(|| channel.value.clone()),
                touched_at: then,
            }
        })
        .collect();
    Some(CheckpointState {
        checkpoint_seq: n,
        latest_checkpoint_seq: run.checkpoint_seq,
        envelope,
        events: moment_events,
        channels,
        complete,
    })
}
