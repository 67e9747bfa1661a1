//! `docket run start GRAPH --from FILE.jsonl`: many runs from a JSON-lines file, started in
//! batches ([`Docket::start_runs`]), one outcome line per input line and a summary.
//!
//! Each non-blank line is one JSON object, `{"input": {...}, "run_id": "optional"}` — the
//! same two things `run start` takes as `--input` and `--run-id`; `input` defaults to `{}`,
//! and any other key makes the line invalid (a typo should not start a run with defaults).
//! A line that cannot be read fails alone, with its line number, and the others still start.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};

use docket::core::model::{parse_json_strict, GraphRef, RunId, ValueMap};
use docket::{Docket, DocketError, StartOptions, START_BATCH_LIMIT};

use super::CliResult;

/// One input line, read: its 1-based number and what to start, or why it cannot start.
struct Line {
    number: usize,
    parsed: Result<(ValueMap, StartOptions), DocketError>,
}

/// Counts for the summary.
#[derive(Default)]
struct Tally {
    started: usize,
    failed: usize,
}

/// Starts one run of `graph_ref` per line of `path`, `START_BATCH_LIMIT` lines at a time;
/// exit status 1 when any line failed.
///
/// # Errors
/// `InvalidOptions` when the file cannot be opened or read; the graph's errors
/// (`NotFound`, ...) fail the whole command, since no line could start.
pub async fn start_from_file(
    docket: &Docket,
    graph_ref: &GraphRef,
    path: &Path,
    json_output: bool,
) -> CliResult {
    let file = std::fs::File::open(path).map_err(|e| {
        DocketError::InvalidOptions(format!("cannot read --from {}: {e}", path.display()))
    })?;
    let mut tally = Tally::default();
    let mut pending: Vec<Line> = Vec::new();
    let mut valid = 0;
    for (index, text) in BufReader::new(file).lines().enumerate() {
        let text = text.map_err(|e| {
            DocketError::InvalidOptions(format!("cannot read --from {}: {e}", path.display()))
        })?;
        if text.trim().is_empty() {
            continue;
        }
        let parsed = parse_line(&text);
        valid += usize::from(parsed.is_ok());
        pending.push(Line {
            number: index + 1,
            parsed,
        });
        if valid == START_BATCH_LIMIT {
            flush(docket, graph_ref, &mut pending, &mut tally, json_output).await?;
            valid = 0;
        }
    }
    flush(docket, graph_ref, &mut pending, &mut tally, json_output).await?;
    if json_output {
        out!(
            "{}",
            json!({"summary": {"started": tally.started, "failed": tally.failed}})
        );
    } else {
        out!(
            "{} started, {} failed, {} lines",
            tally.started,
            tally.failed,
            tally.started + tally.failed
        );
    }
    Ok(if tally.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Starts the valid lines of `pending` in one `start_runs` call and prints every line's
/// outcome in line order.
async fn flush(
    docket: &Docket,
    graph_ref: &GraphRef,
    pending: &mut Vec<Line>,
    tally: &mut Tally,
    json_output: bool,
) -> Result<(), DocketError> {
    if pending.is_empty() {
        return Ok(());
    }
    let lines = std::mem::take(pending);
    let mut numbers = Vec::with_capacity(lines.len());
    let mut outcomes: Vec<Option<Result<String, DocketError>>> = Vec::new();
    let mut runs = Vec::new();
    let mut sent = Vec::new();
    for (slot, line) in lines.into_iter().enumerate() {
        numbers.push(line.number);
        match line.parsed {
            Ok(run) => {
                runs.push(run);
                sent.push(slot);
                outcomes.push(None);
            }
            Err(e) => outcomes.push(Some(Err(e))),
        }
    }
    if !runs.is_empty() {
        let answers = docket.start_runs(graph_ref, runs).await?;
        for (slot, answer) in sent.into_iter().zip(answers) {
            outcomes[slot] = Some(answer.map(|run| run.id.to_string()));
        }
    }
    for (number, outcome) in numbers.into_iter().zip(outcomes) {
        // Every slot was filled: a line is either refused above or answered by the store.
        let outcome = outcome.unwrap_or(Err(DocketError::NotFound));
        report(number, &outcome, json_output);
        match outcome {
            Ok(_) => tally.started += 1,
            Err(_) => tally.failed += 1,
        }
    }
    Ok(())
}

/// Prints one line's outcome.
fn report(number: usize, outcome: &Result<String, DocketError>, json_output: bool) {
    match (outcome, json_output) {
        (Ok(id), false) => out!("line {number}: {id}"),
        (Err(e), false) => out!("line {number}: error ({}): {e}", e.kind()),
        (Ok(id), true) => out!("{}", json!({"line": number, "run_id": id})),
        (Err(e), true) => out!(
            "{}",
            json!({"line": number, "error": {"kind": e.kind(), "message": e.to_string()}})
        ),
    }
}

/// One line as the run it asks for.
fn parse_line(text: &str) -> Result<(ValueMap, StartOptions), DocketError> {
    let object = match parse_json_strict(text) {
        Ok(Value::Object(object)) => object,
        Ok(_) => {
            return Err(DocketError::InvalidOptions(
                "a line must be a JSON object like {\"input\": {...}, \"run_id\": \"...\"}".into(),
            ))
        }
        Err(error) => {
            return Err(DocketError::InvalidJson {
                what: "jsonl line",
                error,
            })
        }
    };
    let mut input = ValueMap::new();
    let mut options = StartOptions::default();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("input", Value::Object(map)) => input = map,
            ("input", _) => {
                return Err(DocketError::InvalidOptions(
                    "\"input\" must be a JSON object".into(),
                ))
            }
            ("run_id", Value::String(id)) => {
                options.run_id =
                    Some(RunId::new(id).map_err(|e| DocketError::InvalidOptions(e.to_string()))?);
            }
            ("run_id", Value::Null) => {}
            ("run_id", _) => {
                return Err(DocketError::InvalidOptions(
                    "\"run_id\" must be a string".into(),
                ))
            }
            (other, _) => {
                return Err(DocketError::InvalidOptions(format!(
                    "unknown key {other:?} (a line has \"input\" and \"run_id\")"
                )))
            }
        }
    }
    Ok((input, options))
}
