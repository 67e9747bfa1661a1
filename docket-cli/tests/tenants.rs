//! Tenant-fair claiming from the command line: `docket tenant set|show`, the worker's
//! `--claim-policy`, and a tenant cap of 2 holding across four `docket worker` processes on
//! one SQLite file (`support::caps`; the PostgreSQL run of that check is in `postgres.rs`).

mod support;

use std::time::Duration;

use support::cli::docket;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_of_two_holds_across_four_worker_processes_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("caps.db").display());
    support::caps::a_cap_of_two_holds_across_four_worker_processes(&url).await;
}

#[test]
fn tenant_set_keeps_what_it_is_not_told_and_show_lists_by_tenant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("shares.db").display());
    let run = |args: &[&str]| {
        let mut all = vec!["--backend", url.as_str()];
        all.extend_from_slice(args);
        let done = docket(&all).within(Duration::from_secs(60));
        assert!(done.status.success(), "{args:?}: {}", done.stderr);
        done.stdout
    };
    let empty = run(&["tenant", "show"]);
    assert!(empty.contains("no tenant shares"), "{empty}");
    run(&["tenant", "set", "zeta", "--weight", "3", "--cap", "2"]);
    run(&["tenant", "set", "alpha", "--cap", "5"]);
    run(&["tenant", "set", "zeta", "--no-cap"]);
    let shown: serde_json::Value =
        serde_json::from_str(&run(&["tenant", "show", "--json"])).expect("JSON");
    assert_eq!(
        shown,
        serde_json::json!([
            {"tenant": "alpha", "weight": 1, "cap": 5},
            {"tenant": "zeta", "weight": 3, "cap": null},
        ])
    );
    let table = run(&["tenant", "show"]);
    assert!(table.find("alpha") < table.find("zeta"), "{table}");
}

#[test]
fn bad_tenant_options_and_an_unknown_claim_policy_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("bad.db").display());
    for args in [
        vec!["tenant", "set", "acme", "--weight", "0"],
        vec!["tenant", "set", "acme", "--cap", "2", "--no-cap"],
        vec!["tenant", "set", "", "--weight", "2"],
        vec!["worker", "--claim-policy", "round-robin", "--until-idle"],
    ] {
        let mut all = vec!["--backend", url.as_str()];
        all.extend(args.iter().copied());
        let done = docket(&all).within(Duration::from_secs(60));
        assert!(!done.status.success(), "{args:?} was accepted");
        assert!(!done.stderr.trim().is_empty(), "{args:?} failed silently");
    }
    let done = docket(&["--backend", url.as_str(), "tenant", "show", "--json"])
        .within(Duration::from_secs(60));
    assert_eq!(done.stdout.trim(), "[]", "a refused command stored a share");
}
