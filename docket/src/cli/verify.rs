//! `docket run verify`: every run's history is sound (and, optionally, terminal).

use std::process::ExitCode;

use serde_json::json;

use docket::core::model::RunQuery;
use docket::history::check_history;
use docket::Docket;

use super::admin::all_runs;
use super::CliResult;

pub async fn run(docket: &Docket, expect_terminal: bool, as_json: bool) -> CliResult {
    let runs = all_runs(docket, RunQuery::default(), usize::MAX).await?;
    let mut report = Vec::new();
    let mut bad = 0_usize;
    for summary in &runs {
        let run = docket.fetch_run(&summary.id).await?;
        let events = docket.all_events(&run.id).await?;
        let mut problems = check_history(&run, &events);
        if expect_terminal && !run.status.is_terminal() {
            problems.push(format!("status is {}, not terminal", run.status));
        }
        if !problems.is_empty() {
            bad += 1;
            if !as_json {
                out!("{}  {}  {}", run.id, run.status, problems.join("; "));
            }
        }
        report.push(json!({
            "id": run.id.as_str(),
            "status": run.status.as_str(),
            "checkpoint_seq": run.checkpoint_seq,
            "events": events.len(),
            "problems": problems,
        }));
    }
    if as_json {
        out!(
            "{}",
            serde_json::to_string_pretty(&json!({"runs": report, "violations": bad}))
                .unwrap_or_default()
        );
    } else {
        out!("verified {} runs: {} with violations", runs.len(), bad);
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
