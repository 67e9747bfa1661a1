//! Measures the runs page over a large SQLite store: inserts `RUNS` runs (default 100,000;
//! `cargo run --release -p docket-console --example runs_page_100k -- 100000`) through the
//! facade, then times the first page of `/ui/runs` and of `/api/v1/runs` through the router,
//! and one uncached load of the engine facts. A measurement, not a test: it prints the figures and asserts nothing about time.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use futures::stream::{self, StreamExt};
use tower::ServiceExt;

use docket::{Docket, StartOptions};
use docket_console::{Console, ConsoleConfig, Grant, Role};

const TOKEN: &str = "measure-token-0123456789";

const GRAPH: &str = r#"{"schema_version": 1, "id": "tiny",
  "nodes": {"hi": {"implementation": "std.set"}},
  "edges": {"a": {"from": "$start", "to": "hi"}, "b": {"from": "hi", "to": "$finish"}}}"#;

async fn time_get(router: &axum::Router, path: &str, auth: (&str, String)) -> (Duration, usize) {
    let started = Instant::now();
    let response = router
        .clone()
        .oneshot(
            Request::get(path)
                .header(auth.0, auth.1)
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (started.elapsed(), body.len())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000);
    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?synchronous=normal",
        dir.path().join("big.db").display()
    );
    let docket = Docket::connect(&url).await?;
    let graph = docket.publish_graph_json(GRAPH).await?.graph_ref;
    let started = Instant::now();
    let results: Vec<_> = stream::iter(0..runs)
        .map(|_| {
            let docket = docket.clone();
            let graph = graph.clone();
            async move {
                docket
                    .start_run(&graph, Default::default(), StartOptions::default())
                    .await
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    let failed = results.iter().filter(|r| r.is_err()).count();
    println!(
        "inserted {} runs in {:.1?} ({failed} failed)",
        runs - failed,
        started.elapsed()
    );
    let console = Console::new(
        docket,
        ConsoleConfig::new(vec![Grant::new(TOKEN, Role::Admin, None)?]),
    )?;
    let router = docket_console::router(&console);
    let session = console.sessions().open(0);
    for (name, path, auth) in [
        (
            "api first page (50)",
            "/api/v1/runs",
            (header::AUTHORIZATION.as_str(), format!("Bearer {TOKEN}")),
        ),
        (
            "ui runs page (50)",
            "/ui/runs",
            (header::COOKIE.as_str(), format!("docket_session={session}")),
        ),
        (
            "ui filtered page (status=running)",
            "/ui/runs?status=running",
            (header::COOKIE.as_str(), format!("docket_session={session}")),
        ),
    ] {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..11 {
            let (t, n) = time_get(&router, path, (auth.0, auth.1.clone())).await;
            times.push(t);
            bytes = n;
        }
        times.sort();
        println!(
            "{name}: median {:.1?}, max {:.1?} over 11 loads ({bytes} bytes)",
            times[5], times[10]
        );
    }
    // The engine facts count from pages (no store counts): one uncached load.
    let (t, _) = time_get(
        &router,
        "/api/v1/engine",
        (header::AUTHORIZATION.as_str(), format!("Bearer {TOKEN}")),
    )
    .await;
    println!(
        "engine facts (uncached: every status counted by pages, 1000 runs inspected): {t:.1?}"
    );
    Ok(())
}
