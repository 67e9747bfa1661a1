//! Live status over server-sent events: `GET /ui/events` (the newest runs of the session's
//! owner) or `GET /ui/events?run=<id>` (one run), one `status` event per second with a JSON
//! array of `{run_id, status, step, checkpoint_seq}`. The page script updates the elements
//! that carry the same `data-run-id`.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::stream::{self, Stream};
use serde::Deserialize;
use serde_json::{json, Value};

use docket::core::model::{RunId, RunQuery};
use docket::Docket;

use crate::extract::{UiCaller, Q};

/// How often the status is read and sent.
const PERIOD: Duration = Duration::from_secs(1);

/// Rows sent for the runs page.
const NEWEST: u32 = 100;

/// Query of [`events`].
#[derive(Debug, Deserialize)]
pub struct LiveQuery {
    run: Option<String>,
}

async fn snapshot(docket: &Docket, run: Option<&RunId>) -> Value {
    let rows: Vec<Value> = match run {
        Some(id) => match docket.inspect_run(id).await {
            Ok(info) => vec![json!({
                "run_id": info.run.id.as_str(),
                "status": info.run.status.as_str(),
                "step": info.run.step,
                "checkpoint_seq": info.run.checkpoint_seq,
            })],
            Err(_) => Vec::new(),
        },
        None => match docket
            .list_runs(&RunQuery {
                limit: NEWEST,
                ..RunQuery::default()
            })
            .await
        {
            Ok(page) => page
                .runs
                .iter()
                .map(|s| {
                    json!({
                        "run_id": s.id.as_str(),
                        "status": s.status.as_str(),
                        "step": s.step,
                        "checkpoint_seq": s.checkpoint_seq,
                    })
                })
                .collect(),
            Err(_) => Vec::new(),
        },
    };
    Value::Array(rows)
}

/// `GET /ui/events`.
pub async fn events(
    caller: UiCaller,
    Q(query): Q<LiveQuery>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let run = query.run.and_then(|r| RunId::new(r).ok());
    let docket = caller.docket;
    let stream = stream::unfold((docket, run, true), |(docket, run, first)| async move {
        if !first {
            tokio::time::sleep(PERIOD).await;
        }
        let data = snapshot(&docket, run.as_ref()).await;
        let event = Event::default().event("status").data(data.to_string());
        Some((Ok(event), (docket, run, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
