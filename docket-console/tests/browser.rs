//! The pages in a real browser: headless Chromium driven through chromedriver (WebDriver,
//! `fantoccini`), against the console served on a free loopback port over SQLite and over
//! PostgreSQL. A run moves to waiting and the page follows it live; its interrupt is resolved
//! from the page and the page sees it finish; a run is cancelled and a poisoned run retried
//! from the pages; the XSS payloads do not execute; a read session's action is refused.
//! Screenshots of each page go to `target/console/`.
//!
//! `chromium` and `chromium-driver` must be installed (`.ci/run` installs them); without them
//! the test fails.

mod support;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use docket::core::model::RunId;
use docket::StartOptions;

use support::{Env, ADMIN, READ};

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = "\"><img src=x onerror=alert(1)>";
const XSS_GRAPH: &str = r#"{"schema_version": 1, "id": "xss",
  "inputs": {"note": {"schema": {"type": "string"}}, "other": {"schema": {"type": "string"}}},
  "fields": {"approved": {"schema": {"type": "boolean"}}},
  "outputs": {"approved": {}},
  "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
  "edges": {"a": {"from": "$start", "to": "approve"}, "b": {"from": "approve", "to": "$finish"}}}"#;

/// How long a page may take to show what the test waits for.
const PATIENCE: Duration = Duration::from_secs(30);

/// chromedriver on a free port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

async fn start_driver() -> Driver {
    let binary = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("chromedriver");
    let port = free_port();
    let child = Command::new(binary)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver runs (install chromium and chromium-driver)");
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + PATIENCE;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    driver
}

async fn browser(driver: &Driver) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_owned(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]}),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a browser session")
}

/// The console on a free loopback port; returns its base URL.
async fn serve(env: &Env) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let router = env.router.clone();
    tokio::spawn(async move {
        let _ = docket_console::serve(listener, router, std::future::pending()).await;
    });
    base
}

fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("console");
    std::fs::create_dir_all(&dir).expect("target/console");
    dir
}

async fn screenshot(client: &Client, kind: &str, name: &str) {
    let png = client.screenshot().await.expect("screenshot");
    std::fs::write(shots().join(format!("{kind}-{name}.png")), png).expect("write screenshot");
}

async fn text_of(client: &Client, css: &str) -> String {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .expect("text")
}

/// Polls until `#run-status` shows `want` (the page reloads itself on each commit).
async fn wait_status(client: &Client, want: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(el) = client.find(Locator::Css("#run-status")).await {
            if el.text().await.map(|t| t == want).unwrap_or(false) {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed status {want}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn login(client: &Client, base: &str, token: &str) {
    client
        .goto(&format!("{base}/ui/login"))
        .await
        .expect("login page");
    client
        .find(Locator::Css("#token"))
        .await
        .expect("token field")
        .send_keys(token)
        .await
        .expect("type");
    client
        .find(Locator::Css("#login-submit"))
        .await
        .expect("submit")
        .click()
        .await
        .expect("click");
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#runs"))
        .await
        .expect("the runs page after login");
}

async fn scenario(kind: &str) {
    let env = Env::with(kind, "browser").await;
    let poisoned = env.poisoned_run().await;
    let base = serve(&env).await;
    let driver = start_driver().await;
    let client = browser(&driver).await;

    login(&client, &base, ADMIN).await;

    // Start an approval run from the runs page.
    client
        .find(Locator::Css("#start-graph option[value='approval']"))
        .await
        .expect("approval option")
        .click()
        .await
        .expect("select");
    let input = client
        .find(Locator::Css("#start-input"))
        .await
        .expect("input");
    input.clear().await.expect("clear");
    input.send_keys(r#"{"amount": 42}"#).await.expect("type");
    client
        .find(Locator::Css("#start-submit"))
        .await
        .expect("start")
        .click()
        .await
        .expect("click");
    wait_status(&client, "running").await;
    let url = client.current_url().await.expect("url").to_string();
    // A worker's work, done here: the run reaches its approval; the open page follows live.
    env.drain().await;
    wait_status(&client, "waiting").await;
    screenshot(&client, kind, "run-waiting").await;

    // Time travel: checkpoint 1 from the selector.
    client
        .goto(&format!("{url}?checkpoint=1"))
        .await
        .expect("checkpoint");
    assert!(text_of(&client, "#checkpoint-state h3")
        .await
        .starts_with("Checkpoint 1 of"));
    client
        .execute(
            "document.getElementById('checkpoint-state').scrollIntoView()",
            Vec::new(),
        )
        .await
        .expect("scroll");
    screenshot(&client, kind, "run-checkpoint").await;
    client.goto(&url).await.expect("run page");

    // Resolve the interrupt from the page; the page sees it finish.
    client
        .find(Locator::Css("#resolve-form .resolve-submit"))
        .await
        .expect("resolve button")
        .click()
        .await
        .expect("click");
    wait_status(&client, "running").await;
    env.drain().await;
    wait_status(&client, "done").await;
    screenshot(&client, kind, "run-done").await;

    // Cancel a waiting run from its page.
    let victim = env
        .start(&env.docket, "approval", json!({"amount": 1}))
        .await;
    env.drain().await;
    client
        .goto(&format!(
            "{base}/ui/runs/{}",
            docket_console::paths::encode(victim.as_str())
        ))
        .await
        .expect("victim");
    wait_status(&client, "waiting").await;
    client
        .find(Locator::Css("#cancel-submit"))
        .await
        .expect("cancel")
        .click()
        .await
        .expect("click");
    wait_status(&client, "cancelled").await;

    // Retry the poisoned run from the poisoned page.
    client
        .goto(&format!("{base}/ui/poisoned"))
        .await
        .expect("poisoned");
    let row = format!(
        "tr.run-row[data-run-id='{}'] .retry-form button",
        poisoned.as_str()
    );
    screenshot(&client, kind, "poisoned").await;
    client
        .find(Locator::Css(&row))
        .await
        .expect("the poisoned run's retry button")
        .click()
        .await
        .expect("click");
    wait_status(&client, "running").await;
    assert!(
        client.find(Locator::Css("#run-poisoned")).await.is_err(),
        "still poisoned"
    );
    assert!(!env
        .docket
        .inspect_run(&poisoned)
        .await
        .expect("inspect")
        .is_poisoned());

    // XSS payloads in input and id: shown as text, never executed.
    let graph = env
        .docket
        .publish_graph_json(XSS_GRAPH)
        .await
        .expect("publish")
        .graph_ref;
    let hostile = env
        .docket
        .start_run(
            &graph,
            json!({"note": SCRIPT, "other": IMG})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            StartOptions {
                run_id: Some(RunId::new(format!("x{IMG}{SCRIPT}")).expect("id")),
                ..StartOptions::default()
            },
        )
        .await
        .expect("start")
        .id;
    env.drain().await;
    for page in [
        format!(
            "{base}/ui/runs/{}",
            docket_console::paths::encode(hostile.as_str())
        ),
        format!("{base}/ui/runs"),
    ] {
        client.goto(&page).await.expect("page");
        client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css("main"))
            .await
            .expect("main");
        assert!(
            client.get_alert_text().await.is_err(),
            "an alert opened on {page}"
        );
        assert!(
            client
                .find_all(Locator::Css("img"))
                .await
                .expect("query")
                .is_empty(),
            "an injected img on {page}"
        );
        assert!(client
            .find_all(Locator::Css("main script"))
            .await
            .expect("query")
            .is_empty());
    }
    assert!(
        text_of(&client, "main").await.contains(SCRIPT),
        "the payload is shown as text"
    );
    client
        .goto(&format!(
            "{base}/ui/runs/{}",
            docket_console::paths::encode(hostile.as_str())
        ))
        .await
        .expect("hostile");
    assert!(text_of(&client, "#run-input").await.contains(IMG));
    screenshot(&client, kind, "run-xss").await;
    client.goto(&format!("{base}/ui/runs")).await.expect("runs");
    screenshot(&client, kind, "runs").await;
    client
        .goto(&format!("{base}/ui/graphs"))
        .await
        .expect("graphs");
    screenshot(&client, kind, "graphs").await;
    let fanout = env.graph("fanout");
    client
        .goto(&format!(
            "{base}/ui/graphs/fanout/{}",
            fanout.graph_hash.as_str()
        ))
        .await
        .expect("fanout graph");
    assert!(client
        .find(Locator::Css(
            "#graph g.edge.barrier[data-edge-id='join'] polygon.barrier-mark"
        ))
        .await
        .is_ok());
    screenshot(&client, kind, "graph").await;
    client
        .goto(&format!("{base}/ui/engine"))
        .await
        .expect("engine");
    screenshot(&client, kind, "engine").await;

    // A read session: no action form, and a forged one is refused with 403.
    client
        .find(Locator::Css("#logout-form button"))
        .await
        .expect("logout")
        .click()
        .await
        .expect("click");
    login(&client, &base, READ).await;
    let hostile_page = format!(
        "{base}/ui/runs/{}",
        docket_console::paths::encode(hostile.as_str())
    );
    client.goto(&hostile_page).await.expect("hostile as reader");
    assert!(client.find(Locator::Css("#resolve-form")).await.is_err());
    assert!(client.find(Locator::Css("#cancel-form")).await.is_err());
    let before = env.dump().await;
    client
        .execute(
            "const csrf = document.querySelector('#logout-form input[name=csrf]').value;\
             const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];\
             const c = document.createElement('input'); c.name = 'csrf'; c.value = csrf; f.appendChild(c);\
             document.body.appendChild(f); f.submit();",
            vec![json!(format!("{hostile_page}/cancel"))],
        )
        .await
        .expect("submit a forged form");
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#error[data-code='forbidden']"))
        .await
        .expect("the action is refused with 403");
    assert_eq!(
        env.dump().await,
        before,
        "the refused action changed the store"
    );

    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_headless_chromium_on_sqlite_and_postgres() {
    scenario("sqlite").await;
    scenario("postgres").await;
}
