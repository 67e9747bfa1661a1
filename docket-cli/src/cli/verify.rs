//! `docket run verify`: every run's history is sound (and, optionally, terminal), for every
//! owner of the store.

use std::process::ExitCode;

use serde_json::json;

use docket::history::verify_store;
use docket::Docket;

use super::CliResult;

/// The label of an owner in reports.
fn owner_label(tenant: Option<&str>) -> String {
    tenant.map_or_else(|| "tenantless".to_owned(), |t| format!("tenant {t}"))
}

pub async fn run(docket: &Docket, expect_terminal: bool, as_json: bool) -> CliResult {
    // System work: every run of every tenant, not only the tenantless ones a facade sees.
    let verification = verify_store(docket.backend().as_ref(), expect_terminal).await?;
    let bad = verification.violations();
    if as_json {
        let runs: Vec<_> = verification
            .runs
            .iter()
            .map(|r| {
                json!({
                    "id": r.id.as_str(),
                    "tenant": r.owner.tenant_id().map(|t| t.as_str()),
                    "status": r.status.as_str(),
                    "checkpoint_seq": r.checkpoint_seq,
                    "events": r.events,
                    "problems": r.problems,
                })
            })
            .collect();
        let owners: Vec<_> = verification
            .per_owner
            .iter()
            .map(|(tenant, tally)| {
                json!({"tenant": tenant, "runs": tally.runs, "violations": tally.violations})
            })
            .collect();
        out!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "runs": runs,
                "violations": bad,
                "owners": owners,
            }))
            .unwrap_or_default()
        );
    } else {
        for r in verification.runs.iter().filter(|r| !r.problems.is_empty()) {
            out!(
                "{}  {}  {}  {}",
                r.id,
                owner_label(r.owner.tenant_id().map(|t| t.as_str())),
                r.status,
                r.problems.join("; ")
            );
        }
        for (tenant, tally) in &verification.per_owner {
            out!(
                "{}: {} runs, {} with violations",
                owner_label(tenant.as_deref()),
                tally.runs,
                tally.violations
            );
        }
        out!(
            "verified {} runs: {} with violations",
            verification.runs.len(),
            bad
        );
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
