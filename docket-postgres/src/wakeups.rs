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

/// Starts the listener on first subscription and stops it when the store is dropped.
pub(crate) struct WakeHub {
    /// The LISTEN connection's options; `None` in poll-only mode.
    connect: Option<PgConnectOptions>,
    schema: String,
    state: Mutex<Option<(broadcast::Sender<()>, JoinHandle<()>)>>,
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

    /// A new subscription, or `None` in poll-only mode or outside a tokio runtime.
    pub(crate) fn subscribe(&self) -> Option<Wakeups> {
        let connect = self.connect.as_ref()?;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = match state.as_ref() {
            Some((sender, task)) if !task.is_finished() => sender.subscribe(),
            _ => {
                let (sender, receiver) = broadcast::channel(16);
                let task =
                    runtime.spawn(listen(connect.clone(), self.schema.clone(), sender.clone()));
                *state = Some((sender, task));
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
async fn listen(connect: PgConnectOptions, schema: String, sender: broadcast::Sender<()>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match listen_once(&connect, &schema, &sender).await {
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
    sender: &broadcast::Sender<()>,
) -> Result<(), sqlx::Error> {
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
    let _ = sender.send(());
    loop {
        match listener.try_recv().await? {
            Some(notification) if notification.payload() == schema => {
                let _ = sender.send(());
            }
            Some(_) => {}
            // The connection was lost; start over with a fresh one.
            None => return Ok(()),
        }
    }
}
