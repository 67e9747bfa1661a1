//! The JSON API over real stores (a SQLite file; a PostgreSQL schema): every route, every
//! error code, authentication and roles, tenant isolation, keyset paging over several pages,
//! and no secret in any answer.

mod support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};

use docket::core::model::RunStatus;
use docket_console::api::{OPENAPI, ROUTES};

use support::{api, send, Answer, Env, ACME_ADMIN, ACME_READ, ADMIN, ALL_TOKENS, READ};

/// Every answer of a suite, to check for secrets at the end.
#[derive(Default)]
struct Seen(Vec<Answer>);

impl Seen {
    fn keep(&mut self, answer: Answer) -> &Answer {
        self.0.push(answer);
        self.0.last().expect("just pushed")
    }
}

async fn call(
    env: &Env,
    seen: &mut Seen,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Value {
    let answer = api(&env.router, method.clone(), path, token, body).await;
    let answer = seen.keep(answer);
    assert!(
        answer.status.is_success(),
        "{method} {path}: {} {}",
        answer.status,
        answer.body
    );
    answer.json()
}

async fn refused(
    env: &Env,
    seen: &mut Seen,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
    (status, code): (StatusCode, &str),
) {
    let answer = api(&env.router, method.clone(), path, token, body).await;
    let answer = seen.keep(answer);
    assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
    assert_eq!(answer.code(), code, "{method} {path}: {}", answer.body);
    assert!(answer.json()["error"]["message"].is_string());
}

async fn suite(kind: &str) {
    let env = Env::with(kind, "api").await;
    let mut seen = Seen::default();

    // A poisoned run first, while nothing else is due.
    let poisoned = env.poisoned_run().await;

    // Authentication: no token, a wrong token, a malformed header.
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs",
        None,
        None,
        (StatusCode::UNAUTHORIZED, "unauthorized"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs",
        Some("not-a-token-at-all-xxxxxxxx"),
        None,
        (StatusCode::UNAUTHORIZED, "unauthorized"),
    )
    .await;
    let answer = send(
        &env.router,
        Request::get("/api/v1/runs")
            .header(header::AUTHORIZATION, format!("Basic {ADMIN}"))
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);

    // Start: admin only; 201; bad bodies.
    let before = env.dump().await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs",
        Some(READ),
        Some(json!({"graph_id": "approval", "input": {"amount": 5}})),
        (StatusCode::FORBIDDEN, "forbidden"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs",
        Some(ADMIN),
        Some(json!({"graph_id": "nope"})),
        (StatusCode::NOT_FOUND, "graph_not_found"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs",
        Some(ADMIN),
        Some(json!({"graph_id": "approval", "input": {"amount": "many"}})),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs",
        Some(ADMIN),
        Some(json!({"graph": "approval"})),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
    )
    .await;
    let answer = send(
        &env.router,
        Request::post("/api/v1/runs")
            .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                r#"{"graph_id": "approval", "graph_id": "retry"}"#,
            ))
            .expect("request"),
    )
    .await;
    assert_eq!(
        (answer.status, answer.code().as_str()),
        (StatusCode::BAD_REQUEST, "invalid_json"),
        "{}",
        answer.body
    );
    let answer = send(
        &env.router,
        Request::post("/api/v1/runs")
            .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
            .body(Body::from(r#"{"graph_id": "approval"}"#))
            .expect("request"),
    )
    .await;
    assert_eq!(
        (answer.status, answer.code().as_str()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
    );
    let answer = send(
        &env.router,
        Request::post("/api/v1/runs")
            .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(format!(
                r#"{{"graph_id": "approval", "input": {{"pad": "{}"}}}}"#,
                "x".repeat(400_000)
            )))
            .expect("request"),
    )
    .await;
    assert_eq!(
        (answer.status, answer.code().as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
    assert_eq!(
        env.dump().await,
        before,
        "refused requests changed the store"
    );

    let started = call(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs",
        Some(ADMIN),
        Some(json!({"graph_id": "approval", "input": {"amount": 7}, "run_id": "api-approval"})),
    )
    .await;
    assert_eq!(started["run"]["id"], "api-approval");
    assert_eq!(started["run"]["status"], "running");
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs",
        Some(ADMIN),
        Some(json!({"graph_id": "approval", "input": {"amount": 7}, "run_id": "api-approval"})),
        (StatusCode::CONFLICT, "conflict"),
    )
    .await;
    let answer = api(
        &env.router,
        Method::POST,
        "/api/v1/runs",
        Some(ADMIN),
        Some(json!({"graph_id": "cycle"})),
    )
    .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    // More runs, for paging (eight tenantless runs in all, with the poisoned one).
    for n in 0..5 {
        env.start(&env.docket, "cycle", json!({})).await;
        let _ = n;
    }
    env.drain().await;

    // Paging: limit 3 over 8 runs is 3 pages, newest first, no run twice.
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!(
                "/api/v1/runs?limit=3&cursor={}",
                docket_console::paths::encode(c)
            ),
            None => "/api/v1/runs?limit=3".to_owned(),
        };
        let page = call(&env, &mut seen, Method::GET, &path, Some(READ), None).await;
        pages += 1;
        for run in page["runs"].as_array().expect("runs") {
            ids.push(run["run_id"].as_str().expect("id").to_owned());
        }
        if page["has_more"] == false {
            assert!(page["next_cursor"].is_null());
            break;
        }
        cursor = Some(page["next_cursor"].as_str().expect("cursor").to_owned());
    }
    assert_eq!((pages, ids.len()), (3, 8), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 8);

    // Filters.
    let waiting = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?status=waiting",
        Some(READ),
        None,
    )
    .await;
    let waiting: Vec<&str> = waiting["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["run_id"].as_str().expect("id"))
        .collect();
    assert_eq!(waiting, vec!["api-approval"]);
    let retry = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?graph_id=cycle&status=done,failed",
        Some(READ),
        None,
    )
    .await;
    assert_eq!(retry["runs"].as_array().expect("runs").len(), 6);
    let none = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?started_before=0",
        Some(READ),
        None,
    )
    .await;
    assert_eq!(none["runs"].as_array().expect("runs").len(), 0);
    let none = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?started_after=9000000000000000",
        Some(READ),
        None,
    )
    .await;
    assert_eq!(none["runs"].as_array().expect("runs").len(), 0);
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?status=sleeping",
        Some(READ),
        None,
        (StatusCode::BAD_REQUEST, "invalid_argument"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?limit=0",
        Some(READ),
        None,
        (StatusCode::BAD_REQUEST, "invalid_argument"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?limit=lots",
        Some(READ),
        None,
        (StatusCode::BAD_REQUEST, "invalid_argument"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs?cursor=garbage",
        Some(READ),
        None,
        (StatusCode::BAD_REQUEST, "invalid_argument"),
    )
    .await;

    // One run, its events (paged), its state at a checkpoint.
    let shown = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/api-approval",
        Some(READ),
        None,
    )
    .await;
    assert_eq!(shown["run"]["status"], "waiting");
    assert!(shown["operational"].is_object());
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/no-such-run",
        Some(READ),
        None,
        (StatusCode::NOT_FOUND, "run_not_found"),
    )
    .await;
    let events = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/api-approval/events?limit=2",
        Some(READ),
        None,
    )
    .await;
    assert_eq!(events["events"].as_array().expect("events").len(), 2);
    assert_eq!(events["has_more"], true);
    let rest = call(
        &env,
        &mut seen,
        Method::GET,
        &format!(
            "/api/v1/runs/api-approval/events?after_seq={}",
            events["next_after_seq"]
        ),
        Some(READ),
        None,
    )
    .await;
    assert_eq!(rest["events"][0]["seq"], 3);
    let first = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/api-approval/checkpoints/1",
        Some(READ),
        None,
    )
    .await;
    assert_eq!(first["envelope"]["checkpoint_type"], "run_initialized");
    let amount = first["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .find(|c| c["channel_id"] == "input:amount")
        .expect("input channel")
        .clone();
    assert_eq!(
        (amount["status"].as_str(), amount["value"].as_i64()),
        (Some("unchanged_since"), Some(7))
    );
    let status = first["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .find(|c| c["channel_id"] == "state:status")
        .expect("status field")
        .clone();
    assert_eq!(status["status"], "not_yet_written", "{first}");
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/api-approval/checkpoints/99",
        Some(READ),
        None,
        (StatusCode::NOT_FOUND, "checkpoint_not_found"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/api-approval/checkpoints/x",
        Some(READ),
        None,
        (StatusCode::BAD_REQUEST, "invalid_argument"),
    )
    .await;

    // Tenant isolation: acme's tokens do not see tenantless runs, and act only on acme's.
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/api-approval",
        Some(ACME_READ),
        None,
        (StatusCode::NOT_FOUND, "run_not_found"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs/api-approval/cancel",
        Some(ACME_ADMIN),
        None,
        (StatusCode::NOT_FOUND, "run_not_found"),
    )
    .await;
    let acme_runs = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs",
        Some(ACME_READ),
        None,
    )
    .await;
    assert_eq!(acme_runs["runs"].as_array().expect("runs").len(), 0);
    let acme_run = call(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs",
        Some(ACME_ADMIN),
        Some(json!({"graph_id": "retry", "run_id": "acme-run"})),
    )
    .await;
    assert_eq!(acme_run["tenant"], "acme");
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/acme-run",
        Some(READ),
        None,
        (StatusCode::NOT_FOUND, "run_not_found"),
    )
    .await;
    let acme_runs = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs",
        Some(ACME_READ),
        None,
    )
    .await;
    assert_eq!(acme_runs["runs"].as_array().expect("runs").len(), 1);

    // Resolve: read token refused, unknown interrupt, then resolved, then a second time.
    let interrupt = shown["run"]["interrupts"]
        .as_object()
        .expect("interrupts")
        .keys()
        .next()
        .expect("one open interrupt")
        .clone();
    let resolve = format!("/api/v1/runs/api-approval/interrupts/{interrupt}/resolve");
    refused(
        &env,
        &mut seen,
        Method::POST,
        &resolve,
        Some(READ),
        Some(json!({"value": true})),
        (StatusCode::FORBIDDEN, "forbidden"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs/api-approval/interrupts/nope/resolve",
        Some(ADMIN),
        Some(json!({"value": true})),
        (StatusCode::NOT_FOUND, "interrupt_not_found"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        &resolve,
        Some(ADMIN),
        Some(json!({"value": "yes"})),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
    )
    .await;
    let resolved = call(
        &env,
        &mut seen,
        Method::POST,
        &resolve,
        Some(ADMIN),
        Some(json!({"value": true})),
    )
    .await;
    assert_eq!(resolved["run"]["status"], "running");
    let again = api(
        &env.router,
        Method::POST,
        &resolve,
        Some(ADMIN),
        Some(json!({"value": true})),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    env.drain().await;
    assert_eq!(
        env.docket
            .fetch_run(&docket::core::model::RunId::new("api-approval").expect("id"))
            .await
            .expect("run")
            .status,
        RunStatus::Done
    );

    // After the run finished, the state at checkpoint 2 knows `status` was written then and
    // rewritten later (so its value then is not claimed), and `amount` never changed.
    let second = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/runs/api-approval/checkpoints/2",
        Some(READ),
        None,
    )
    .await;
    let channel = |id: &str| {
        second["channels"]
            .as_array()
            .expect("channels")
            .iter()
            .find(|c| c["channel_id"] == id)
            .cloned()
            .expect("channel")
    };
    assert_eq!(
        channel("state:status")["status"],
        "changed_later",
        "{second}"
    );
    assert!(channel("state:status")["value"].is_null());
    assert_eq!(channel("input:amount")["value"], 7);

    // Cancel: a finished run is a conflict; a running one is cancelled.
    refused(
        &env,
        &mut seen,
        Method::POST,
        "/api/v1/runs/api-approval/cancel",
        Some(ADMIN),
        None,
        (StatusCode::CONFLICT, "inactive_run"),
    )
    .await;
    let victim = env
        .start(&env.docket, "approval", json!({"amount": 3}))
        .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        &format!("/api/v1/runs/{victim}/cancel"),
        Some(READ),
        None,
        (StatusCode::FORBIDDEN, "forbidden"),
    )
    .await;
    let cancelled = call(
        &env,
        &mut seen,
        Method::POST,
        &format!("/api/v1/runs/{victim}/cancel"),
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(cancelled["run"]["status"], "cancelled");

    // Retry: only a poisoned run.
    refused(
        &env,
        &mut seen,
        Method::POST,
        &format!("/api/v1/runs/{victim}/retry"),
        Some(ADMIN),
        None,
        (StatusCode::CONFLICT, "not_poisoned"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::POST,
        &format!("/api/v1/runs/{poisoned}/retry"),
        Some(READ),
        None,
        (StatusCode::FORBIDDEN, "forbidden"),
    )
    .await;
    let retried = call(
        &env,
        &mut seen,
        Method::POST,
        &format!("/api/v1/runs/{poisoned}/retry"),
        Some(ADMIN),
        None,
    )
    .await;
    assert!(retried["operational"]["poison"].is_null(), "{retried}");

    // Graphs.
    let graphs = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/graphs",
        Some(READ),
        None,
    )
    .await;
    let ids: Vec<&str> = graphs["graphs"]
        .as_array()
        .expect("graphs")
        .iter()
        .map(|g| g["graph_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, vec!["approval", "cycle", "fanout", "retry"]);
    let approval = env.graph("approval");
    let versions = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/graphs/approval/versions?limit=1",
        Some(READ),
        None,
    )
    .await;
    assert_eq!(
        versions["versions"][0]["graph_hash"],
        approval.graph_hash.as_str()
    );
    let doc = call(
        &env,
        &mut seen,
        Method::GET,
        &format!(
            "/api/v1/graphs/approval/versions/{}",
            approval.graph_hash.as_str()
        ),
        Some(READ),
        None,
    )
    .await;
    assert_eq!(doc["id"], "approval");
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/graphs/approval/versions/0000",
        Some(READ),
        None,
        (StatusCode::NOT_FOUND, "graph_not_found"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/graphs/approval/versions?cursor=x",
        Some(READ),
        None,
        (StatusCode::BAD_REQUEST, "invalid_argument"),
    )
    .await;

    // Engine facts and the operation registry.
    let facts = call(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/engine",
        Some(READ),
        None,
    )
    .await;
    let count = |status: &str| {
        facts["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .find(|c| c["status"] == status)
            .map(|c| c["count"].as_u64().expect("count"))
            .expect("status")
    };
    assert_eq!(count("cancelled"), 1, "{facts}");
    assert!(count("done") >= 6, "{facts}");
    let session = "6f1c2b9e-8a4d-4c3b-9e2f-1a2b3c4d5e6f";
    let ops = call(
        &env,
        &mut seen,
        Method::GET,
        &format!("/api/v1/sessions/{session}/operations"),
        Some(READ),
        None,
    )
    .await;
    assert_eq!(ops["operations"], json!([]));
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/sessions/not-a-uuid/operations",
        Some(READ),
        None,
        (StatusCode::BAD_REQUEST, "invalid_argument"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::GET,
        &format!("/api/v1/sessions/{session}/operations"),
        Some(ACME_READ),
        None,
        (StatusCode::NOT_FOUND, "ops_registry_unavailable"),
    )
    .await;

    // Routing errors.
    refused(
        &env,
        &mut seen,
        Method::GET,
        "/api/v1/nothing",
        Some(READ),
        None,
        (StatusCode::NOT_FOUND, "route_not_found"),
    )
    .await;
    refused(
        &env,
        &mut seen,
        Method::DELETE,
        "/api/v1/runs",
        Some(ADMIN),
        None,
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
    )
    .await;

    // Metrics: a token is needed; every sample line is `name{labels} value`.
    assert_eq!(
        api(&env.router, Method::GET, "/metrics", None, None)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let metrics = api(&env.router, Method::GET, "/metrics", Some(READ), None).await;
    assert_eq!(metrics.status, StatusCode::OK);
    check_exposition(&metrics.body);
    assert!(
        metrics.body.contains("docket_runs{status=\"cancelled\"} 1"),
        "{}",
        metrics.body
    );
    seen.keep(metrics);

    // No answer holds a token or the backend URL.
    for answer in &seen.0 {
        for secret in ALL_TOKENS.iter().copied().chain([env.url.as_str()]) {
            assert!(
                !answer.body.contains(secret),
                "an answer holds a secret: {}",
                answer.body
            );
            for value in answer.headers.values() {
                assert!(!String::from_utf8_lossy(value.as_bytes()).contains(secret));
            }
        }
    }
}

/// Each line is a comment or `name{labels} value` with a number; names start `docket_`.
fn check_exposition(text: &str) {
    let mut samples = 0;
    for line in text.lines() {
        if line.starts_with("# HELP docket_") || line.starts_with("# TYPE docket_") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("sample line: {line}"));
        assert!(
            value == "+Inf" || value.parse::<f64>().is_ok(),
            "value of {line}"
        );
        let name = series.split('{').next().expect("name");
        assert!(
            name.starts_with("docket_")
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
                for pair in labels[1..labels.len() - 1].split(',') {
                    let (k, v) = pair
                        .split_once('=')
                        .unwrap_or_else(|| panic!("label in {line}"));
                    assert!(
                        k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                        "{line}"
                    );
                    assert!(v.starts_with('"') && v.ends_with('"'), "{line}");
                }
            }
        }
        samples += 1;
    }
    for name in [
        "docket_commits_total",
        "docket_fence_losses_total",
        "docket_claims_total",
        "docket_commit_duration_seconds_bucket",
        "docket_claim_to_start_seconds_bucket",
        "docket_runs{",
    ] {
        assert!(text.contains(name), "missing {name}");
    }
    assert!(samples > 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_and_error_code_on_sqlite() {
    suite("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_and_error_code_on_postgres() {
    suite("postgres").await;
}

#[tokio::test]
async fn the_openapi_document_lists_every_api_route_and_every_route_is_routed() {
    let env = Env::sqlite().await;
    let doc: Value = serde_json::from_str(OPENAPI).expect("the OpenAPI document is JSON");
    assert_eq!(doc["openapi"], "3.0.3");
    for (method, path) in ROUTES {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} is not in openapi.json"
        );
        // The router answers it with something other than "no such route".
        let concrete = path
            .replace("{graph_id}", "approval")
            .replace("{graph_hash}", "h")
            .replace("{run_id}", "r")
            .replace("{checkpoint_seq}", "1")
            .replace("{interrupt_id}", "i")
            .replace("{session_id}", "s");
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let answer = api(&env.router, method, &concrete, Some(READ), None).await;
        assert_ne!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
        if answer.status == StatusCode::NOT_FOUND {
            assert_ne!(answer.code(), "route_not_found", "{path} is not routed");
        }
    }
    let documented = doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .map(|p| p.as_object().expect("ops").len())
        .sum::<usize>();
    assert_eq!(
        documented,
        ROUTES.len(),
        "openapi.json documents a route the router lacks"
    );
}
