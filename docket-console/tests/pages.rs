//! The pages over a real SQLite store and a PostgreSQL schema: login with an HttpOnly,
//! SameSite=Strict cookie; CSRF on every form; read sessions cannot act; XSS payloads in run
//! input and ids render only escaped; the CSP header; no secret in any page; live status over
//! SSE.

mod support;

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use futures::StreamExt;
use serde_json::json;

use docket::core::model::{RunId, RunStatus};
use docket::StartOptions;

use support::{form_value, login, page, post_form, send, Env, ADMIN, ALL_TOKENS, READ};

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = "\"><img src=x onerror=alert(1)>";

/// Two string inputs and an approval, so a run carrying the payloads waits on the page.
const XSS_GRAPH: &str = r#"{"schema_version": 1, "id": "xss",
  "inputs": {"note": {"schema": {"type": "string"}}, "other": {"schema": {"type": "string"}}},
  "fields": {"approved": {"schema": {"type": "boolean"}}},
  "outputs": {"approved": {}},
  "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
  "edges": {"a": {"from": "$start", "to": "approve"}, "b": {"from": "approve", "to": "$finish"}}}"#;

fn assert_only_escaped(html: &str) {
    assert!(!html.contains(SCRIPT), "raw script payload in the page");
    assert!(!html.contains("<img"), "an injected img in the page");
    assert!(
        !html.contains("onerror=alert(1)>"),
        "raw attribute payload in the page"
    );
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "escaped payload missing"
    );
    assert!(
        html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"),
        "escaped payload missing"
    );
}

async fn suite(kind: &str) {
    let env = Env::with(kind, "pages").await;
    let router = &env.router;

    // Without a session every page sends the browser to the login form.
    let answer = send(
        router,
        Request::get("/ui/runs")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.headers[header::LOCATION], "/ui/login");
    // A wrong token or a forged login form does not log in.
    let answer = post_form(
        router,
        "docket_login=abc",
        "/ui/login",
        &format!("token={ADMIN}&csrf=abc"),
    )
    .await;
    assert_eq!(
        answer.status,
        StatusCode::SEE_OTHER,
        "a matching double-submit token logs in"
    );
    let answer = post_form(
        router,
        "docket_login=abc",
        "/ui/login",
        &format!("token={ADMIN}&csrf=abd"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    let answer = post_form(
        router,
        "docket_login=abc",
        "/ui/login",
        "token=wrong-token-wrong-token&csrf=abc",
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);

    let admin = login(router, ADMIN).await;
    let reader = login(router, READ).await;
    assert_ne!(admin.csrf, reader.csrf);

    // A run whose input and id carry the payloads, waiting on an approval.
    let graph = env
        .docket
        .publish_graph_json(XSS_GRAPH)
        .await
        .expect("publish")
        .graph_ref;
    let hostile_id = format!("x{IMG}{SCRIPT}");
    let run_id = env
        .docket
        .start_run(
            &graph,
            json!({"note": SCRIPT, "other": IMG})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            StartOptions {
                run_id: Some(RunId::new(hostile_id.clone()).expect("id")),
                ..StartOptions::default()
            },
        )
        .await
        .expect("start")
        .id;
    env.drain().await;
    let href = docket_console::paths::encode(run_id.as_str());
    let run_page = page(router, &admin.cookie, &format!("/ui/runs/{href}")).await;
    assert_eq!(run_page.status, StatusCode::OK, "{}", run_page.body);
    assert_only_escaped(&run_page.body);
    assert_eq!(
        run_page.headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .expect("csp")
            .split(';')
            .next(),
        Some("default-src 'self'")
    );
    for id in [
        "id=\"run-status\"",
        "id=\"resolve-form\"",
        "id=\"cancel-form\"",
        "id=\"timeline\"",
        "id=\"graph\"",
        "class=\"node active\"",
        "id=\"checkpoint-form\"",
    ] {
        assert!(run_page.body.contains(id), "{id} missing from the run page");
    }
    assert!(!run_page.body.contains("<script>"), "no inline script");
    let list = page(router, &admin.cookie, "/ui/runs").await;
    assert_only_escaped(&list.body);
    assert!(list.body.contains("class=\"run-row\""));
    // Time travel: the state at checkpoint 1.
    let at = page(
        router,
        &admin.cookie,
        &format!("/ui/runs/{href}?checkpoint=1"),
    )
    .await;
    assert!(
        at.body
            .contains("id=\"checkpoint-state\" data-checkpoint=\"1\""),
        "{}",
        at.body
    );

    // The read session sees no action form, and its posts are refused even with its token.
    let read_page = page(router, &reader.cookie, &format!("/ui/runs/{href}")).await;
    assert!(!read_page.body.contains("id=\"resolve-form\""));
    let interrupt = env
        .docket
        .fetch_run(&run_id)
        .await
        .expect("run")
        .interrupts
        .keys()
        .next()
        .expect("an open interrupt")
        .clone();
    let resolve = format!(
        "/ui/runs/{href}/interrupts/{}/resolve",
        docket_console::paths::encode(&interrupt)
    );
    let before = env.dump().await;
    let refused = post_form(
        router,
        &reader.cookie,
        &resolve,
        &format!("csrf={}&value=true", reader.csrf),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // An admin post with another session's CSRF token, or none, is refused.
    let refused = post_form(
        router,
        &admin.cookie,
        &resolve,
        &format!("csrf={}&value=true", reader.csrf),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.body.contains("csrf_failed"));
    let refused = post_form(router, &admin.cookie, &resolve, "value=true").await;
    assert!(refused.status.is_client_error());
    // Without the cookie (a cross-site post) nothing happens either.
    let refused = post_form(
        router,
        "",
        &resolve,
        &format!("csrf={}&value=true", admin.csrf),
    )
    .await;
    assert_eq!(refused.status, StatusCode::SEE_OTHER);
    assert_eq!(env.dump().await, before, "a refused form changed the store");

    // The admin resolves from the page; the run finishes.
    let done = post_form(
        router,
        &admin.cookie,
        &resolve,
        &format!("csrf={}&value={}", admin.csrf, form_value("true")),
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    env.drain().await;
    assert_eq!(
        env.docket.fetch_run(&run_id).await.expect("run").status,
        RunStatus::Done
    );

    // Start and cancel from the pages.
    let started = post_form(
        router,
        &admin.cookie,
        "/ui/runs",
        &format!(
            "csrf={}&graph_id=approval&input={}",
            admin.csrf,
            form_value(r#"{"amount": 2}"#)
        ),
    )
    .await;
    assert_eq!(started.status, StatusCode::SEE_OTHER, "{}", started.body);
    let location = started.headers[header::LOCATION]
        .to_str()
        .expect("location")
        .to_owned();
    let cancelled = post_form(
        router,
        &admin.cookie,
        &format!("{location}/cancel"),
        &format!("csrf={}", admin.csrf),
    )
    .await;
    assert_eq!(
        cancelled.status,
        StatusCode::SEE_OTHER,
        "{}",
        cancelled.body
    );
    let shown = page(router, &admin.cookie, &location).await;
    assert!(
        shown.body.contains("data-status=\"cancelled\""),
        "{}",
        shown.body
    );

    // Every other page renders, escaped, with stable ids and no secret.
    let mut pages = vec![run_page, list, at, read_page, shown];
    for path in [
        "/ui/runs?status=done",
        "/ui/poisoned",
        "/ui/graphs",
        "/ui/engine",
        &format!("/ui/graphs/xss/{}", graph.graph_hash.as_str()),
    ] {
        let answer = page(router, &admin.cookie, path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.body);
        pages.push(answer);
    }
    assert!(pages[pages.len() - 1].body.contains("id=\"graph\""));
    for answer in &pages {
        for secret in ALL_TOKENS.iter().copied().chain([env.url.as_str()]) {
            assert!(!answer.body.contains(secret), "a page holds a secret");
        }
    }

    // Live status: the first server-sent event names the run's status.
    let response = tower::ServiceExt::oneshot(
        router.clone(),
        Request::get(format!("/ui/events?run={href}"))
            .header(header::COOKIE, &admin.cookie)
            .body(Body::empty())
            .expect("request"),
    )
    .await
    .expect("infallible");
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let mut stream = response.into_body().into_data_stream();
    let first = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("an event within the deadline")
        .expect("a frame")
        .expect("bytes");
    let first = String::from_utf8_lossy(&first).into_owned();
    assert!(
        first.contains("event: status") && first.contains("\"status\":\"done\""),
        "{first}"
    );

    // Logout ends the session.
    let out = post_form(
        router,
        &admin.cookie,
        "/ui/logout",
        &format!("csrf={}", admin.csrf),
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    let gone = page(router, &admin.cookie, "/ui/runs").await;
    assert_eq!(gone.status, StatusCode::SEE_OTHER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_escape_authenticate_and_act_on_sqlite() {
    suite("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_escape_authenticate_and_act_on_postgres() {
    suite("postgres").await;
}
