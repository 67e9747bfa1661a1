//! Wake hints over LISTEN/NOTIFY.
//!
//! Writers call `pg_notify('docket_wake', <schema>)` inside the writing statement or
//! transaction when the wake they record is due, so a hint is delivered only after commit.
//! One dedicated listener connection per store (its own single-connection pool, never taken
//! from the store's pool) fans hints out to every subscriber. Each time LISTEN is (re)established
//! the listener emits a hint, because notifications sent before were missed. The listener's
//! connection carries the `application_name` [`listener_application_name`] so operators (and
//! tests) can find it in `pg_stat_activity`.
//! Polling stays the correctness mechanism: a lost hint costs latency only.
//!
//! The operation registry's hints ("an operation may have turned terminal") travel on the
//! same channel and the same listener with their own payload ([`ops_wake_payload`]), so they
//! wake only the registry's completion watches, never the run workers.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use docket_core::store::Wakeups;
use futures::StreamExt;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

/// The channel every Docket store notifies on; the payload is the schema name.
pub const WAKE_CHANNEL: &str = "docket_wake";

/// The `application_name` of a store's listener connection: `docket-wake <schema>`, cut to
/// the 63 bytes PostgreSQL keeps (schema names are ASCII identifiers, so the cut is clean).
#[must_use]
pub fn listener_application_name(schema: &str) -> String {
    let mut name = format!("docket-wake {schema}");
    name.truncate(63);
    name
}

/// The payload of the registry's hints for `schema`: `<schema>/ops` (a schema name has no
/// `/`, so it never equals another schema's run payload).
#[must_use]
pub fn ops_wake_payload(schema: &str) -> String {
    format!("{schema}/ops")
}

/// Which hints a subscription wants.
#[derive(Clone, Copy)]
pub(crate) enum Topic {
    /// Run wakeups (payload: the schema).
    Runs,
    /// Operation completions (payload: [`ops_wake_payload`]).
    Ops,
}

/// The fan-out of one listener: one broadcast per topic.
#[derive(Clone)]
struct Senders {
    runs: broadcast::Sender<()>,
    ops: broadcast::Sender<()>,
}

impl Senders {
    fn send_all(&self) {
        let _ = self.runs.send(());
        let _ = self.ops.send(());
    }
}

/// Starts the listener on first subscription and stops it when the store is dropped.
pub(crate) struct WakeHub {
    /// The LISTEN connection's options; `None` in poll-only mode.
    connect: Option<PgConnectOptions>,
    schema: String,
    state: Mutex<Option<(Senders, JoinHandle<()>)>>,
}

impl WakeHub {
    /// A hub listening through `connect` (a direct route to the server: LISTEN does not work
    /// through a transaction pooler), or offering no wakeups when it is `None`.
    pub(crate) fn new(connect: Option<PgConnectOptions>, schema: String) -> Self {
        let name = listener_application_name(&schema);
        Self {
            connect: connect.map(|c| c.application_name(&name)),
            schema,
            state: Mutex::new(None),
        }
    }

    /// A new subscription to run wakeups, or `None` in poll-only mode or outside a tokio
    /// runtime.
    pub(crate) fn subscribe(&self) -> Option<Wakeups> {
        self.subscribe_to(Topic::Runs)
    }

    /// A new subscription to `topic`, or `None` in poll-only mode or outside a tokio runtime.
    pub(crate) fn subscribe_to(&self, topic: Topic) -> Option<Wakeups> {
        let connect = self.connect.as_ref()?;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let pick = |senders: &Senders| match topic {
            Topic::Runs => senders.runs.subscribe(),
            Topic::Ops => senders.ops.subscribe(),
        };
        let receiver = match state.as_ref() {
            Some((senders, task)) if !task.is_finished() => pick(senders),
            _ => {
                let senders = Senders {
                    runs: broadcast::channel(16).0,
                    ops: broadcast::channel(16).0,
                };
                let receiver = pick(&senders);
                let task = runtime.spawn(listen(
                    connect.clone(),
                    self.schema.clone(),
                    senders.clone(),
                ));
                *state = Some((senders, task));
                receiver
            }
        };
        let stream = futures::stream::unfold(receiver, |mut receiver| async move {
            match receiver.recv().await {
                // A lagging subscriber missed hints; one hint covers them all.
                Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => Some(((), receiver)),
                Err(broadcast::error::RecvError::Closed) => None,
            }
        });
        Some(stream.boxed())
    }
}

impl Drop for WakeHub {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, task)) = state.take() {
            task.abort();
        }
    }
}

/// The listener loop: connect, LISTEN, forward matching payloads; on any failure back off
/// (bounded exponential) and start over, emitting a hint after every reconnect.
async fn listen(connect: PgConnectOptions, schema: String, senders: Senders) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match listen_once(&connect, &schema, &senders).await {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(error) => {
                tracing::warn!(%error, "docket wake listener failed; reconnecting");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}

async fn listen_once(
    connect: &PgConnectOptions,
    schema: &str,
    senders: &Senders,
) -> Result<(), sqlx::Error> {
    let ops_payload = ops_wake_payload(schema);
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .max_lifetime(None)
        .idle_timeout(None)
        .connect_with(connect.clone())
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.eager_reconnect(false);
    listener.listen(WAKE_CHANNEL).await?;
    // Listening from now on; anything notified before (or while disconnected) was missed, so
    // subscribers should poll once. This first hint also tells them the listener is live.
    senders.send_all();
    loop {
        match listener.try_recv().await? {
            Some(notification) if notification.payload() == schema => {
                let _ = senders.runs.send(());
            }
            Some(notification) if notification.payload() == ops_payload => {
                let _ = senders.ops.send(());
            }
            Some(_) => {}
            // The connection was lost; start over with a fresh one.
            None => return Ok(()),
        }
    }
}
