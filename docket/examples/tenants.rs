//! Tenant-scoped handles: one database, one worker, many customers that never see each
//! other's graphs or runs.
//!
//! ```text
//! cargo run -p docket --example tenants
//! ```
//!
//! A multi-tenant service keeps one [`Docket`] and derives a handle per request with
//! [`Docket::tenant`] (a clone, no I/O). Every read and write through that handle is scoped:
//! another tenant's run looks exactly like a run that does not exist, and each tenant
//! publishes its own version of a graph under the same graph id. One worker serves all of
//! them.

use std::error::Error;
use std::time::Duration;

use docket::core::model::{RunQuery, RunStatus, TenantId};
use docket::{AwaitOptions, Docket, DocketError, StartOptions};

/// Each tenant configures its own welcome message: same graph id, different content.
fn onboarding(greeting: &str) -> String {
    format!(
        r#"{{"schema_version": 1, "id": "onboarding",
            "fields": {{"message": {{"schema": {{"type": "string"}}}}}}, "outputs": {{"message": {{}}}},
            "nodes": {{"welcome": {{"implementation": "std.set", "config": {{"values": {{"message": "{greeting}"}}}}}}}},
            "edges": {{"a": {{"from": "$start", "to": "welcome"}}, "b": {{"from": "welcome", "to": "$finish"}}}}}}"#
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let docket = Docket::connect(&format!(
        "sqlite://{}",
        dir.path().join("saas.db").display()
    ))
    .await?;
    let worker = docket.start_worker();
    let wait = AwaitOptions {
        timeout: Duration::from_secs(30),
        ..AwaitOptions::default()
    };

    let tenants = [("acme", "Welcome to Acme!"), ("globex", "Globex says hi.")];
    let mut runs = Vec::new();
    for (tenant, greeting) in tenants {
        let handle = docket.tenant(TenantId::new(tenant)?);
        let published = handle.publish_graph_json(&onboarding(greeting)).await?;
        for _ in 0..3 {
            let run = handle
                .start_run(
                    &published.graph_ref,
                    Default::default(),
                    StartOptions::default(),
                )
                .await?;
            runs.push((tenant, handle.clone(), run.id));
        }
        println!(
            "{tenant}: published onboarding {} and started 3 runs",
            published.graph_ref.graph_hash
        );
    }

    for (tenant, handle, run_id) in &runs {
        let run = handle.await_run(run_id, wait).await?;
        let message = run.output.unwrap_or_default()["message"].clone();
        let expected = tenants.iter().find(|(t, _)| t == tenant).map(|(_, g)| *g);
        if run.status != RunStatus::Done || message.as_str() != expected {
            return Err(format!(
                "{tenant}'s run {run_id} ended as {:?} with {message}",
                run.status
            )
            .into());
        }
    }

    // Each tenant lists only its own runs; the other tenant's runs are not found.
    let acme = docket.tenant(TenantId::new("acme")?);
    let globex = docket.tenant(TenantId::new("globex")?);
    let listed = acme
        .list_runs(&RunQuery {
            limit: 100,
            ..RunQuery::default()
        })
        .await?;
    println!("acme lists {} runs", listed.runs.len());
    if listed.runs.len() != 3 {
        return Err(format!("acme should list 3 runs, got {}", listed.runs.len()).into());
    }
    let (_, _, globex_run) = runs
        .iter()
        .find(|(t, _, _)| *t == "globex")
        .ok_or("no globex run")?;
    for (who, handle) in [("acme", &acme), ("the tenantless handle", &docket)] {
        match handle.fetch_run(globex_run).await {
            Err(DocketError::NotFound) => println!("{who} cannot see globex's run {globex_run}"),
            other => return Err(format!("{who} saw globex's run: {other:?}").into()),
        }
    }
    println!(
        "globex still sees it: {:?}",
        globex.fetch_run(globex_run).await?.status
    );

    let report = worker.shutdown().await;
    println!(
        "one worker served both tenants; shut down (drained: {})",
        report.drained
    );
    Ok(())
}
