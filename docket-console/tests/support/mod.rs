//! Shared by the console tests: a console over a real store (a SQLite file in a temp dir, or a
//! PostgreSQL schema per test, dropped at the end), requests sent through the router in
//! process, and a dump of the store to compare before and after a refused request.
//!
//! PostgreSQL is `DOCKET_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`);
//! without a server the PostgreSQL tests fail.
#![allow(dead_code)]

use std::num::NonZeroU32;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use serde_json::Value;
use tower::ServiceExt;

use docket::core::model::{GraphRef, RunId, RunQuery, TenantId, MAX_PAGE_LIMIT};
use docket::core::store::ClaimRequest;
use docket::engine::WorkerConfig;
use docket::examples::EXAMPLES;
use docket::{Docket, StartOptions, TestingMode};
use docket_console::{Console, ConsoleConfig, Grant, Role};

pub const READ: &str = "read-token-0123456789abcdef";
pub const ADMIN: &str = "admin-token-0123456789abcdef";
pub const ACME_READ: &str = "acme-read-token-0123456789";
pub const ACME_ADMIN: &str = "acme-admin-token-0123456789";
pub const ALL_TOKENS: [&str; 4] = [READ, ADMIN, ACME_READ, ACME_ADMIN];

/// Where the store lives; dropping it removes it.
pub enum Place {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Place::Postgres(url) = self {
            let url = url.clone();
            // `Drop` cannot await: drop the schema on a helper thread with its own runtime.
            let dropped = std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?
                    .block_on(docket_postgres::PostgresStore::drop_schema(&url))
                    .map_err(|e| e.to_string())
            })
            .join();
            if !matches!(dropped, Ok(Ok(_))) {
                eprintln!("could not drop a console test schema");
            }
        }
    }
}

/// A console over a fresh store, with the bundled example graphs published for the
/// tenantless owner and for tenant `acme`.
pub struct Env {
    pub docket: Docket,
    pub router: Router,
    pub url: String,
    pub graphs: Vec<GraphRef>,
    _place: Place,
}

fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}_{nanos}", std::process::id())
}

pub fn postgres_server() -> String {
    std::env::var("DOCKET_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

impl Env {
    pub async fn sqlite() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("console.db").display());
        Env::open(url, Place::Sqlite(dir)).await
    }

    pub async fn postgres(tag: &str) -> Env {
        let url = format!(
            "{}?schema=docket_console_{tag}_{}",
            postgres_server(),
            unique()
        );
        Env::open(url.clone(), Place::Postgres(url)).await
    }

    pub async fn with(kind: &str, tag: &str) -> Env {
        match kind {
            "sqlite" => Env::sqlite().await,
            _ => Env::postgres(tag).await,
        }
    }

    async fn open(url: String, place: Place) -> Env {
        let backend = docket::connect_backend(&url)
            .await
            .expect("the store opens");
        let docket = Docket::builder(backend, docket::nodes::registry())
            .config(WorkerConfig {
                max_claim_attempts: 1,
                ..WorkerConfig::default()
            })
            .testing(TestingMode::Manual)
            .build()
            .expect("facade");
        let mut graphs = Vec::new();
        for example in EXAMPLES {
            let published = docket
                .publish_graph_json(example.json)
                .await
                .expect("publish");
            graphs.push(published.graph_ref);
            docket
                .tenant(acme())
                .publish_graph_json(example.json)
                .await
                .expect("publish for acme");
        }
        let grants = vec![
            Grant::new(READ, Role::Read, None).expect("grant"),
            Grant::new(ADMIN, Role::Admin, None).expect("grant"),
            Grant::new(ACME_READ, Role::Read, Some(acme())).expect("grant"),
            Grant::new(ACME_ADMIN, Role::Admin, Some(acme())).expect("grant"),
        ];
        let console = Console::new(docket.clone(), ConsoleConfig::new(grants)).expect("console");
        let router = docket_console::router(&console);
        Env {
            docket,
            router,
            url,
            graphs,
            _place: place,
        }
    }

    /// The published reference of example `id`.
    pub fn graph(&self, id: &str) -> GraphRef {
        self.graphs
            .iter()
            .find(|g| g.graph_id.as_str() == id)
            .cloned()
            .expect("a bundled example")
    }

    /// Starts a run of example `id` as `docket`'s owner with `input`.
    pub async fn start(&self, docket: &Docket, id: &str, input: Value) -> RunId {
        let graph = docket
            .fetch_latest_graph_ref(&docket::core::model::GraphId::new(id).expect("id"))
            .await
            .expect("published");
        let input = input.as_object().cloned().unwrap_or_default();
        docket
            .start_run(&graph, input, StartOptions::default())
            .await
            .expect("start")
            .id
    }

    /// Advances every due run until nothing is due.
    pub async fn drain(&self) {
        for _ in 0..50 {
            let summary = self.docket.drain_runs(100).await.expect("drain");
            if summary.drained == 0 && summary.poisoned.is_empty() {
                return;
            }
        }
    }

    /// A run of example `fanout` poisoned (call it when nothing else is due): one claim handed back without progress, then the
    /// next claim finds its attempts spent (`max_claim_attempts` is 1 here).
    pub async fn poisoned_run(&self) -> RunId {
        let run = self
            .start(&self.docket, "fanout", serde_json::json!({}))
            .await;
        let config = self.docket.engine().config();
        let batch = self
            .docket
            .backend()
            .claim_due(&ClaimRequest {
                policy: Default::default(),
                now: self.docket.engine().clock().now(),
                limit: NonZeroU32::MIN,
                orphan_ttl_ms: config.orphan_ttl_ms,
                max_claim_attempts: NonZeroU32::new(config.max_claim_attempts).expect("positive"),
                preference: None,
            })
            .await
            .expect("claim");
        let lease = batch.leases.into_iter().next().expect("the run is due");
        assert_eq!(lease.run_id, run);
        self.docket
            .backend()
            .release_claim(
                &lease.run_id,
                &lease.claim_token,
                self.docket.engine().clock().now(),
            )
            .await
            .expect("release");
        let summary = self.docket.drain_runs(1).await.expect("drain");
        assert_eq!(summary.poisoned.len(), 1, "{summary:?}");
        assert!(self
            .docket
            .inspect_run(&run)
            .await
            .expect("inspect")
            .is_poisoned());
        run
    }

    /// Every run (tenantless and acme) with its operational state and all its events, as
    /// text: equal dumps mean nothing changed.
    pub async fn dump(&self) -> String {
        let mut out = String::new();
        for docket in [self.docket.clone(), self.docket.tenant(acme())] {
            let mut query = RunQuery {
                limit: MAX_PAGE_LIMIT,
                ..RunQuery::default()
            };
            loop {
                let page = docket.list_runs(&query).await.expect("list");
                for summary in &page.runs {
                    let info = docket.inspect_run(&summary.id).await.expect("inspect");
                    let events = docket.all_events(&summary.id).await.expect("events");
                    out.push_str(&format!(
                        "{}\n{:?} {:?} {} {} {:?}\n{}\n",
                        serde_json::to_string(&info.run).expect("run"),
                        info.wake_at,
                        info.claimed_at,
                        info.claim_attempts,
                        info.claim_abandons,
                        info.poison,
                        serde_json::to_string(&events).expect("events"),
                    ));
                }
                if !page.has_more {
                    break;
                }
                query.before = page.next_before;
            }
        }
        out
    }
}

pub fn acme() -> TenantId {
    TenantId::new("acme").expect("tenant")
}

/// One answer, its body as text.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The typed error code.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// Sends `request` through the router.
pub async fn send(router: &Router, request: Request<Body>) -> Answer {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
        .await
        .expect("body");
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// An API call with an optional bearer token and an optional JSON body.
pub async fn api(
    router: &Router,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = match body {
        Some(v) => {
            request = request.header(header::CONTENT_TYPE, "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    send(router, request.body(body).expect("request")).await
}

/// A browser session: the cookie and the CSRF token of its forms.
#[derive(Clone, Debug)]
pub struct Browser {
    pub cookie: String,
    pub csrf: String,
}

/// The value of `name="csrf" value="..."` in a page.
pub fn csrf_in(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    page[at..].split('"').next().expect("value").to_owned()
}

/// The `name=value` of a `Set-Cookie` header named `name`.
pub fn set_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
}

/// Logs in with `token` through the login form.
pub async fn login(router: &Router, token: &str) -> Browser {
    let form = send(
        router,
        Request::get("/ui/login")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    let nonce_cookie = set_cookie(&form.headers, "docket_login").expect("login cookie");
    let nonce = csrf_in(&form.body);
    let answer = send(
        router,
        Request::post("/ui/login")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::COOKIE, nonce_cookie)
            .body(Body::from(format!("token={token}&csrf={nonce}")))
            .expect("request"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let set = answer
        .headers
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .expect("session cookie")
        .to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = set_cookie(&answer.headers, "docket_session").expect("session cookie");
    let page = page(router, &cookie, "/ui/runs").await;
    Browser {
        cookie,
        csrf: csrf_in(&page.body),
    }
}

/// GETs a page with a session cookie.
pub async fn page(router: &Router, cookie: &str, path: &str) -> Answer {
    send(
        router,
        Request::get(path)
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .expect("request"),
    )
    .await
}

/// POSTs a form with a session cookie.
pub async fn post_form(router: &Router, cookie: &str, path: &str, form: &str) -> Answer {
    send(
        router,
        Request::post(path)
            .header(header::COOKIE, cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(form.to_owned()))
            .expect("request"),
    )
    .await
}

/// Percent-encodes a form value.
pub fn form_value(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
