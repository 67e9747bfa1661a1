//! The `docket ops` check shared by the backends: operations registered through the library
//! are what the command lists and shows, for their owner only.

use std::time::Duration;

use docket::core::model::Timestamp;
use docket::core::ops::{OperationId, OperationKind, OperationResult, OperationSpec, SessionId};
use docket::Docket;
use serde_json::Value;

use super::cli::docket;

/// What the library registered, so the command's output can be checked against it.
pub struct Registered {
    pub owner: SessionId,
    pub other_owner: SessionId,
    /// `(id, display name)` in registration order: running, completed, provisioning.
    pub operations: Vec<(OperationId, String)>,
}

/// Registers three operations for one session (one completed, one running, one still
/// provisioning) and one for another session, through the library on `url`.
pub fn register_through_the_library(url: &str) -> Registered {
    let url = url.to_owned();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(register(&url))
    })
    .join()
    .expect("registration thread")
}

async fn register(url: &str) -> Registered {
    let docket = Docket::connect(url).await.expect("connect");
    let registry = docket.ops_registry().expect("the store offers a registry");
    let owner = SessionId::random();
    let other_owner = SessionId::random();
    let now = Timestamp::now_utc();
    let mut operations = Vec::new();
    for (name, ends) in [
        ("waits on job b", 1),
        ("builds the index", 2),
        ("copies tape", 0),
    ] {
        let spec = OperationSpec::new(OperationId::random(), OperationKind::DetachedJobWait, name);
        registry
            .register_operation(&owner, &spec, None, now)
            .await
            .expect("register");
        if ends >= 1 {
            registry
                .provisioning_succeeded(&owner, &spec.id, now)
                .await
                .expect("start");
        }
        if ends >= 2 {
            registry
                .complete_operation(&owner, &spec.id, OperationResult::default(), now)
                .await
                .expect("complete");
        }
        operations.push((spec.id, name.to_owned()));
    }
    let stranger = OperationSpec::new(
        OperationId::random(),
        OperationKind::Custom("elsewhere".into()),
        "belongs to another session",
    );
    registry
        .register_operation(&other_owner, &stranger, None, now)
        .await
        .expect("register for the other owner");
    Registered {
        owner,
        other_owner,
        operations,
    }
}

/// `docket ops list` and `docket ops show` on `url` show exactly what was registered.
pub fn check_the_ops_commands(url: &str) {
    let registered = register_through_the_library(url);
    let owner = registered.owner.to_string();
    let deadline = Duration::from_secs(60);

    let listed =
        docket(&["--backend", url, "ops", "list", "--owner", &owner, "--json"]).within(deadline);
    assert!(listed.status.success(), "{}", listed.stderr);
    let json: Value = serde_json::from_str(&listed.stdout).expect("JSON list");
    let names: Vec<&str> = json
        .as_array()
        .expect("an array")
        .iter()
        .map(|op| op["display_name"].as_str().expect("a name"))
        .collect();
    let mut expected: Vec<&str> = registered
        .operations
        .iter()
        .map(|(_, name)| name.as_str())
        .collect();
    expected.sort_unstable();
    assert_eq!(names, expected, "listed by display name, this owner only");
    let statuses: Vec<&str> = json
        .as_array()
        .expect("an array")
        .iter()
        .map(|op| op["status"].as_str().expect("a status"))
        .collect();
    assert_eq!(statuses, ["completed", "provisioning", "running"], "{json}");

    let text = docket(&["--backend", url, "ops", "list", "--owner", &owner]).within(deadline);
    assert!(text.status.success(), "{}", text.stderr);
    assert_eq!(text.stdout.lines().count(), 3, "{}", text.stdout);
    for (id, name) in &registered.operations {
        let line = text
            .stdout
            .lines()
            .find(|l| l.starts_with(&id.to_string()))
            .unwrap_or_else(|| panic!("{id} listed in\n{}", text.stdout));
        assert!(line.contains(&format!("{name:?}")), "{line}");
    }

    let (done_id, done_name) = &registered.operations[1];
    let shown = docket(&[
        "--backend",
        url,
        "ops",
        "show",
        "--owner",
        &owner,
        &done_id.to_string(),
    ])
    .within(deadline);
    assert!(shown.status.success(), "{}", shown.stderr);
    assert!(
        shown.stdout.contains(&format!("{done_name:?}")),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("completed"), "{}", shown.stdout);
    assert!(shown.stdout.contains("seq        1"), "{}", shown.stdout);

    // Another session's view: its own operation only, and ours is not found.
    let other = registered.other_owner.to_string();
    let theirs = docket(&["--backend", url, "ops", "list", "--owner", &other]).within(deadline);
    assert!(theirs.status.success(), "{}", theirs.stderr);
    assert_eq!(theirs.stdout.lines().count(), 1, "{}", theirs.stdout);
    let hidden = docket(&[
        "--backend",
        url,
        "ops",
        "show",
        "--owner",
        &other,
        &done_id.to_string(),
    ])
    .within(deadline);
    assert!(
        !hidden.status.success(),
        "another owner's operation is not found"
    );
    assert!(hidden.stderr.contains("not found"), "{}", hidden.stderr);

    let bad = docket(&["--backend", url, "ops", "list", "--owner", "not-a-uuid"]).within(deadline);
    assert!(!bad.status.success());
    assert!(
        bad.stderr.contains("--owner must be a UUID"),
        "{}",
        bad.stderr
    );
}
