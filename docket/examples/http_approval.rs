//! Docket behind an HTTP API (axum): one endpoint starts expense runs, one shows a run, one
//! answers the run's approval interrupt. A worker runs in the same process.
//!
//! ```text
//! cargo run -p docket --example http_approval              # drives itself, then exits
//! cargo run -p docket --example http_approval -- --serve   # serves until Ctrl-C
//!
//! POST /expenses                {"amount": 120}  → 201 {"run_id": …}
//! GET  /expenses/{id}                            → 200 {"status": "waiting", "waiting_on": ["approve"], …}
//! POST /expenses/{id}/approval  {"approved": true} → 200; 409 once decided; 404 unknown run
//! ```
//!
//! Without `--serve` it listens on an ephemeral port of 127.0.0.1, sends itself a few
//! requests with a minimal HTTP/1.1 client over a TCP stream (submit, wait for the approval
//! step, approve, approve again, bad input, unknown run), checks every answer, and exits.

use std::error::Error;
use std::future::IntoFuture;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use docket::core::model::{GraphRef, InterruptStatus, RunId};
use docket::{Docket, DocketError, StartOptions};

/// An expense: checked, then a person approves or rejects it, then it is recorded.
const EXPENSE_GRAPH: &str = r#"{
    "schema_version": 1,
    "id": "expense",
    "inputs": {"amount": {"schema": {"type": "integer", "min": 1}, "required": true}},
    "fields": {"approved": {"schema": {"type": "boolean"}}, "status": {"schema": {"type": "string"}}},
    "outputs": {"approved": {}, "status": {}},
    "nodes": {
        "check": {"implementation": "std.set", "config": {"values": {"status": "submitted"}}},
        "approve": {"implementation": "std.approval", "config": {"field": "approved"}},
        "record": {"implementation": "std.set", "config": {"values": {"status": "recorded"}}}
    },
    "edges": {
        "begin": {"from": "$start", "to": "check"},
        "ask": {"from": "check", "to": "approve"},
        "decided": {"from": "approve", "to": "record"},
        "end": {"from": "record", "to": "$finish"}
    }
}"#;

/// What every handler shares: a cheap clone per request.
#[derive(Clone)]
struct AppState {
    docket: Docket,
    graph: GraphRef,
}

/// A [`DocketError`] as an HTTP answer: the caller's mistakes are 4xx, the rest 500.
struct ApiError(DocketError);

impl From<DocketError> for ApiError {
    fn from(error: DocketError) -> Self {
        ApiError(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match self.0.kind() {
            "not_found" => StatusCode::NOT_FOUND,
            "invalid_input" | "invalid_json" | "invalid_options" => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            // A stale or duplicate decision: the run moved on.
            "already_resolved" | "inactive_run" => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = Json(json!({"error": self.0.kind(), "message": self.0.to_string()}));
        (status, body).into_response()
    }
}

async fn submit(
    State(app): State<AppState>,
    Json(body): Json<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let input = match body {
        Value::Object(map) => map,
        other => {
            return Err(
                DocketError::InvalidOptions(format!("expected an object, got {other}")).into(),
            )
        }
    };
    let run = app
        .docket
        .start_run(&app.graph, input, StartOptions::default())
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"run_id": run.id.as_str(), "status": run.status.as_str()})),
    ))
}

async fn show(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let run_id = RunId::new(id).map_err(|_| DocketError::NotFound)?;
    let run = app.docket.fetch_run(&run_id).await?;
    let waiting_on: Vec<&str> = run
        .interrupts
        .values()
        .filter(|i| i.status == InterruptStatus::Open)
        .map(|i| i.id.as_str())
        .collect();
    Ok(Json(json!({
        "run_id": run.id.as_str(),
        "status": run.status.as_str(),
        "waiting_on": waiting_on,
        "output": run.output,
    })))
}

async fn approve(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Result<Json<Value>, ApiError> {
    let run_id = RunId::new(id).map_err(|_| DocketError::NotFound)?;
    let approved = body.get("approved").cloned().unwrap_or(Value::Null);
    // The interrupt id is the node id of the `std.approval` node.
    let run = app
        .docket
        .resolve_interrupt(&run_id, "approve", approved)
        .await?;
    Ok(Json(
        json!({"run_id": run.id.as_str(), "status": run.status.as_str()}),
    ))
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/expenses", post(submit))
        .route("/expenses/{id}", get(show))
        .route("/expenses/{id}/approval", post(approve))
        .with_state(state)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let serve = std::env::args().skip(1).any(|arg| arg == "--serve");
    let dir = tempfile::tempdir()?;
    let docket = Docket::connect(&format!(
        "sqlite://{}",
        dir.path().join("http.db").display()
    ))
    .await?;
    let graph = docket.publish_graph_json(EXPENSE_GRAPH).await?.graph_ref;
    let worker = docket.start_worker();

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!("listening on http://{addr}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        axum::serve(listener, router(AppState { docket, graph }))
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .into_future(),
    );

    let outcome = if serve {
        tokio::signal::ctrl_c().await?;
        Ok(())
    } else {
        tokio::time::timeout(Duration::from_secs(60), drive(addr)).await?
    };

    let _ = stop.send(());
    server.await??;
    worker.shutdown().await;
    outcome
}

/// The self-test: every request and the answer it must get.
async fn drive(addr: std::net::SocketAddr) -> Result<(), Box<dyn Error>> {
    let (status, created) = request(addr, "POST", "/expenses", Some(r#"{"amount": 120}"#)).await?;
    expect(status, 201, &created)?;
    let id = created["run_id"].as_str().ok_or("no run_id")?.to_owned();
    println!("POST /expenses → {status} {created}");

    // The worker runs the expense up to its approval step.
    let shown = poll(addr, &id, "waiting").await?;
    println!("GET  /expenses/{id} → {shown}");
    if shown["waiting_on"] != json!(["approve"]) {
        return Err(format!("expected to wait on approve, got {shown}").into());
    }

    let path = format!("/expenses/{id}/approval");
    let (status, body) = request(addr, "POST", &path, Some(r#"{"approved": true}"#)).await?;
    expect(status, 200, &body)?;
    println!("POST {path} → {status} {body}");
    let shown = poll(addr, &id, "done").await?;
    println!("GET  /expenses/{id} → {shown}");
    if shown["output"] != json!({"approved": true, "status": "recorded"}) {
        return Err(format!("unexpected output: {shown}").into());
    }

    // A second click on "approve" is stale: the run has moved on.
    let (status, body) = request(addr, "POST", &path, Some(r#"{"approved": false}"#)).await?;
    expect(status, 409, &body)?;
    println!("POST {path} again → {status} {body}");

    // Input that does not fit the graph, and a run that does not exist.
    let (status, body) = request(addr, "POST", "/expenses", Some(r#"{"amount": "lots"}"#)).await?;
    expect(status, 422, &body)?;
    println!(
        "POST /expenses with a bad amount → {status} {}",
        body["error"]
    );
    let (status, body) = request(addr, "GET", "/expenses/no-such-run", None).await?;
    expect(status, 404, &body)?;
    println!("GET  /expenses/no-such-run → {status}");
    Ok(())
}

fn expect(status: u16, wanted: u16, body: &Value) -> Result<(), Box<dyn Error>> {
    if status == wanted {
        Ok(())
    } else {
        Err(format!("expected HTTP {wanted}, got {status}: {body}").into())
    }
}

/// GETs the run until its status is `status` (deadline: 30 s).
async fn poll(addr: std::net::SocketAddr, id: &str, status: &str) -> Result<Value, Box<dyn Error>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = request(addr, "GET", &format!("/expenses/{id}"), None).await?;
        expect(code, 200, &body)?;
        if body["status"] == status {
            return Ok(body);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("run {id} never reached {status}: {body}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`): the status code and
/// the JSON body. Enough for a self-test; use a real client (hyper, reqwest) in an application.
async fn request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<(u16, Value), Box<dyn Error>> {
    let mut stream = TcpStream::connect(addr).await?;
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let text = String::from_utf8(response)?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no end of headers")?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or("no status code")?;
    let value = if body.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body)?
    };
    Ok((code, value))
}
