//! TCP proxies in front of the test server, for the tests that lose, stall or cut replies.

use std::future::Future;

use docket_redis::testing::test_url;
use tokio::net::{TcpListener, TcpStream};

/// The `host:port` of the test server.
pub fn upstream_host() -> String {
    test_url()
        .split_once("://")
        .map(|(_, rest)| rest.rsplit_once('@').map_or(rest, |(_, h)| h))
        .expect("url")
        .trim_end_matches('/')
        .to_owned()
}

/// Listens on a free local port and, for each client, connects to the test server and hands
/// both connections to `relay`; returns the `redis://` URL of the proxy.
pub async fn spawn_proxy<R, F>(relay: R) -> String
where
    R: Fn(TcpStream, TcpStream) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let upstream = upstream_host();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(&upstream).await else {
                continue;
            };
            tokio::spawn(relay(client, server));
        }
    });
    format!("redis://{addr}")
}
