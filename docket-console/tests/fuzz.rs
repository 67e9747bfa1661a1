//! The router under random requests (paths, methods, headers, cookies, bodies, oversized
//! bodies), in process over a real SQLite store: never a 5xx or a panic, and every refused
//! request (anything but 2xx) leaves the store exactly as it was.

mod support;

use axum::body::Body;
use axum::http::{header, Method, Request};
use proptest::prelude::*;
use serde_json::json;

use support::{send, Browser, Env, ACME_ADMIN, ADMIN, READ};

#[derive(Clone, Debug)]
struct Fuzzed {
    /// `None`: the method the route expects.
    method: Option<Method>,
    path: String,
    auth: Option<String>,
    cookie: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("w1".to_owned()),
        Just("done1".to_owned()),
        Just("poisoned1".to_owned()),
        Just("approval".to_owned()),
        Just("1".to_owned()),
        Just("%2F..%2F".to_owned()),
        Just("%00".to_owned()),
        Just("%FF%FE".to_owned()),
        "[a-zA-Z0-9_%<>\"'.-]{0,12}",
        "\\PC{0,8}".prop_map(|s| docket_console::paths::encode(&s)),
    ]
}

fn path() -> impl Strategy<Value = String> {
    let template = prop_oneof![
        Just("/api/v1/runs".to_owned()),
        Just("/api/v1/runs/{}".to_owned()),
        Just("/api/v1/runs/{}/events".to_owned()),
        Just("/api/v1/runs/{}/checkpoints/{}".to_owned()),
        Just("/api/v1/runs/{}/cancel".to_owned()),
        Just("/api/v1/runs/{}/retry".to_owned()),
        Just("/api/v1/runs/{}/interrupts/{}/resolve".to_owned()),
        Just("/api/v1/graphs".to_owned()),
        Just("/api/v1/graphs/{}/versions".to_owned()),
        Just("/api/v1/graphs/{}/versions/{}".to_owned()),
        Just("/api/v1/sessions/{}/operations".to_owned()),
        Just("/api/v1/engine".to_owned()),
        Just("/api/v1/openapi.json".to_owned()),
        Just("/metrics".to_owned()),
        Just("/ui/runs".to_owned()),
        Just("/ui/runs/{}".to_owned()),
        Just("/ui/runs/{}/cancel".to_owned()),
        Just("/ui/runs/{}/retry".to_owned()),
        Just("/ui/runs/{}/interrupts/{}/resolve".to_owned()),
        Just("/ui/login".to_owned()),
        Just("/ui/logout".to_owned()),
        Just("/ui/poisoned".to_owned()),
        Just("/ui/graphs/{}/{}".to_owned()),
        Just("/{}".to_owned()),
        Just("/{}/{}".to_owned()),
    ];
    let query = prop_oneof![
        Just(String::new()),
        Just("?limit=0".to_owned()),
        Just("?limit=1001".to_owned()),
        Just("?status=waiting,nope".to_owned()),
        Just("?cursor=1_x".to_owned()),
        Just("?after_seq=-1".to_owned()),
        Just("?checkpoint=18446744073709551615".to_owned()),
        "\\?[a-z_]{1,10}=[a-zA-Z0-9%,_-]{0,10}",
    ];
    (template, segment(), segment(), query).prop_map(|(t, a, b, q)| {
        let once = t.replacen("{}", &a, 1);
        format!("{}{q}", once.replacen("{}", &b, 1))
    })
}

/// Requests; some carry the cookie and CSRF token of `reader`, a logged-in read session, so
/// they reach the page handlers (whose actions a read session may not take).
fn fuzzed(reader: &Browser) -> impl Strategy<Value = Fuzzed> {
    // Mostly the method the route expects (so requests get past routing), sometimes another.
    let method = prop_oneof![
        8 => Just(None),
        2 => Just(Some(Method::POST)),
        2 => Just(Some(Method::GET)),
        1 => Just(Some(Method::PUT)),
        1 => Just(Some(Method::DELETE)),
        1 => Just(Some(Method::PATCH)),
        1 => Just(Some(Method::HEAD)),
        1 => Just(Some(Method::OPTIONS)),
    ];
    let auth = prop_oneof![
        1 => Just(None),
        2 => Just(Some(format!("Bearer {READ}"))),
        3 => Just(Some(format!("Bearer {ADMIN}"))),
        2 => Just(Some(format!("Bearer {ACME_ADMIN}"))),
        1 => Just(Some(format!("bearer  {READ}  "))),
        1 => Just(Some("Bearer".to_owned())),
        1 => "[ -~]{0,40}".prop_map(Some),
    ];
    let cookie = prop_oneof![
        3 => Just(Some(reader.cookie.clone())),
        1 => Just(None),
        1 => Just(Some("docket_session=00".to_owned())),
        1 => Just(Some("docket_login=a; docket_session=".to_owned())),
        1 => "[ -~]{0,40}".prop_map(Some),
    ];
    let content_type = prop_oneof![
        Just(None),
        Just(Some("application/json".to_owned())),
        Just(Some("application/x-www-form-urlencoded".to_owned())),
        Just(Some("application/json; charset=utf-8".to_owned())),
        "[ -~]{0,20}".prop_map(Some),
    ];
    let body = prop_oneof![
        Just(
            format!(
                "csrf={}&value=true&graph_id=retry&input=%7B%7D",
                reader.csrf
            )
            .into_bytes()
        ),
        Just(Vec::new()),
        Just(json!({"graph_id": "retry"}).to_string().into_bytes()),
        Just(
            json!({"graph_id": "approval", "input": {"amount": 1}})
                .to_string()
                .into_bytes()
        ),
        Just(json!({"value": true}).to_string().into_bytes()),
        Just(br#"{"value": 1, "value": 2}"#.to_vec()),
        Just(b"csrf=x&value=true&token=y&graph_id=retry&input=%7B%7D".to_vec()),
        Just(vec![b'{'; 300_000]),
        Just(
            format!(
                "{{\"graph_id\": \"retry\", \"input\": {{\"x\": \"{}\"}}}}",
                "a".repeat(300_000)
            )
            .into_bytes()
        ),
        proptest::collection::vec(any::<u8>(), 0..64),
    ];
    (method, path(), auth, cookie, content_type, body).prop_map(
        |(method, path, auth, cookie, content_type, body)| Fuzzed {
            method,
            path,
            auth,
            cookie,
            content_type,
            body,
        },
    )
}

/// POST for the action routes, GET for the rest.
fn natural(path: &str) -> Method {
    let path = path.split('?').next().unwrap_or_default();
    if ["/cancel", "/retry", "/resolve", "/logout"]
        .iter()
        .any(|end| path.ends_with(end))
    {
        Method::POST
    } else {
        Method::GET
    }
}

fn request(f: &Fuzzed) -> Option<Request<Body>> {
    let method = f.method.clone().unwrap_or_else(|| natural(&f.path));
    let mut builder = Request::builder().method(method).uri(f.path.as_str());
    if let Some(auth) = &f.auth {
        builder = builder.header(header::AUTHORIZATION, auth.as_str());
    }
    if let Some(cookie) = &f.cookie {
        builder = builder.header(header::COOKIE, cookie.as_str());
    }
    if let Some(content_type) = &f.content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type.as_str());
    }
    // A URI or header value the HTTP layer cannot even carry never reaches the router.
    builder.body(Body::from(f.body.clone())).ok()
}

#[test]
fn random_requests_never_fail_the_server_and_refused_ones_change_nothing() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (env, reader) = runtime.block_on(async {
        let env = Env::sqlite().await;
        env.poisoned_run().await;
        for (id, graph) in [("w1", "approval"), ("done1", "cycle")] {
            let graph_ref = env.graph(graph);
            let input = if graph == "approval" {
                json!({"amount": 1})
            } else {
                json!({})
            };
            env.docket
                .start_run(
                    &graph_ref,
                    input.as_object().cloned().unwrap_or_default(),
                    docket::StartOptions {
                        run_id: Some(docket::core::model::RunId::new(id).expect("id")),
                        ..Default::default()
                    },
                )
                .await
                .expect("start");
        }
        env.drain().await;
        let reader = support::login(&env.router, READ).await;
        (env, reader)
    });
    let config = ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(f in fuzzed(&reader))| {
        let Some(req) = request(&f) else { return Ok(()) };
        let (before, answer, after) = runtime.block_on(async {
            let before = env.dump().await;
            let answer = send(&env.router, req).await;
            let after = env.dump().await;
            (before, answer, after)
        });
        prop_assert!(!answer.status.is_server_error(), "{f:?} → {} {}", answer.status, answer.body);
        if !answer.status.is_success() {
            prop_assert!(before == after, "{f:?} was refused with {} but changed the store", answer.status);
        }
    });
}
