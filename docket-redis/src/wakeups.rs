//! Wake hints over pub/sub (`PUBLISH docket:<ns>:wake`), with polling as the correctness
//! mechanism: a lost hint costs latency only.
//!
//! Each subscription is one task holding one dedicated pub/sub connection. Every time it has
//! (re)subscribed it emits one hint, because hints published before the subscription was in
//! place (or while it was away) are lost: a consumer that subscribes and then triggers a wake
//! can therefore never miss it. When the connection drops, the task reconnects with a capped
//! exponential backoff. Hints coalesce (the buffer holds one), and the task ends when the
//! stream is dropped.

use std::time::Duration;

use docket_core::store::Wakeups;
use futures::StreamExt;
use tokio::sync::mpsc;

const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Subscribes to `channel` on a task spawned on `runtime`.
pub(crate) fn subscribe(
    client: redis::Client,
    channel: String,
    runtime: &tokio::runtime::Handle,
) -> Wakeups {
    let (tx, rx) = mpsc::channel::<()>(1);
    runtime.spawn(pump(client, channel, tx));
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|()| ((), rx))
    }))
}

async fn pump(client: redis::Client, channel: String, tx: mpsc::Sender<()>) {
    let mut backoff = MIN_BACKOFF;
    loop {
        match client.get_async_pubsub().await {
            Ok(mut pubsub) => match pubsub.subscribe(&channel).await {
                Ok(()) => {
                    backoff = MIN_BACKOFF;
                    let _ = tx.try_send(());
                    let mut messages = pubsub.into_on_message();
                    loop {
                        tokio::select! {
                            message = messages.next() => match message {
                                Some(_) => { let _ = tx.try_send(()); }
                                None => break,
                            },
                            () = tx.closed() => return,
                        }
                    }
                    tracing::debug!(channel, "wake-hint subscription lost; reconnecting");
                }
                Err(e) => tracing::debug!(channel, error = %e, "wake-hint subscribe failed"),
            },
            Err(e) => tracing::debug!(channel, error = %e, "wake-hint connection failed"),
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = tx.closed() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
