//! `docket graph|run|events|interrupt`: administration over any backend.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::Value;

use docket::core::model::{excerpt, parse_json_strict, JsonError};
use docket::core::model::{
    EventType, GraphHash, GraphId, GraphRef, GraphVersionQuery, RunId, RunQuery, RunStatus,
    RunSummary, TenantId, MAX_PAGE_LIMIT,
};
use docket::examples::EXAMPLES;
use docket::{parse_input, Docket, DocketError, Publication, StartOptions};

use super::{json, verify, CliResult, Format};

/// The owner a command acts as.
#[derive(Debug, Args, Clone, Default)]
pub struct TenantArg {
    /// Act as this tenant (default: tenantless): graphs and runs of other owners are
    /// invisible, and new ones belong to this tenant.
    #[arg(long)]
    tenant: Option<String>,
}

impl TenantArg {
    /// `docket` scoped to the tenant, if one is named.
    fn scope(&self, docket: &Docket) -> Result<Docket, DocketError> {
        match &self.tenant {
            None => Ok(docket.clone()),
            Some(raw) => TenantId::new(raw.as_str())
                .map(|tenant| docket.tenant(tenant))
                .map_err(|e| DocketError::InvalidOptions(format!("--tenant: {e}"))),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Compile and publish a JSON graph document; prints `graph_id@graph_hash`.
    Publish {
        /// The JSON file.
        file: PathBuf,
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// List versions of graphs (default: the bundled example ids and every id with runs).
    List {
        /// Graph ids to list.
        ids: Vec<String>,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        tenant: TenantArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// Start a run of the newest (or a given) version of a graph; prints the run id
    /// (`{"run_id": ...}` with `--json`). `--from FILE.jsonl` starts one run per line.
    Start {
        /// The graph id.
        graph_id: String,
        /// A specific version (default: the newest).
        #[arg(long)]
        hash: Option<String>,
        /// Run input as a JSON object; `-` reads it from stdin.
        #[arg(long, default_value = "{}", conflicts_with = "input_file")]
        input: String,
        /// Read the run input (a JSON object) from this file.
        #[arg(long, value_name = "PATH")]
        input_file: Option<PathBuf>,
        /// The run id (default: generated).
        #[arg(long)]
        run_id: Option<String>,
        /// Start many runs from a JSON-lines file, one `{"input": {...}, "run_id": "..."}`
        /// object per line (`run_id` optional), in batches; prints one line per input line and
        /// a summary, and exits 1 if any line failed.
        #[arg(long, value_name = "FILE.jsonl", conflicts_with_all = ["input", "input_file", "run_id"])]
        from: Option<PathBuf>,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Show a run with its operational state and open interrupts.
    Show {
        /// The run id.
        run_id: String,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// List runs, newest first.
    List {
        /// Only these statuses (repeatable): running, waiting, done, failed, cancelled.
        #[arg(long)]
        status: Vec<String>,
        /// Only runs of this graph id.
        #[arg(long)]
        graph: Option<String>,
        /// Most runs to print.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Cancel a running or waiting run.
    Cancel {
        /// The run id.
        run_id: String,
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Recover a poisoned run.
    Retry {
        /// The run id.
        run_id: String,
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Check the history of every run of every owner (tenants included): checkpoint seqs
    /// 1..n exactly once, event seqs contiguous; prints the counts per owner and exits 1 on
    /// any violation.
    Verify {
        /// Also require every run to be terminal.
        #[arg(long)]
        expect_terminal: bool,
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// The run id.
    run_id: String,
    #[command(flatten)]
    format: Format,
    #[command(flatten)]
    tenant: TenantArg,
}

#[derive(Debug, Subcommand)]
pub enum InterruptCommand {
    /// Resolve open interrupt ID of RUN with VALUE (JSON; anything else is a string).
    Resolve {
        /// The run id.
        run_id: String,
        /// The interrupt id.
        interrupt_id: String,
        /// The value, e.g. `true`, `42`, `{"ok": true}` or `text`.
        value: String,
        #[command(flatten)]
        tenant: TenantArg,
    },
}

/// The run input's text: from `--input-file`, from stdin for `--input -`, else `--input`.
fn input_text(input: String, file: Option<&Path>) -> Result<String, DocketError> {
    if let Some(path) = file {
        return std::fs::read_to_string(path).map_err(|e| {
            DocketError::InvalidOptions(format!("cannot read --input-file {}: {e}", path.display()))
        });
    }
    if input == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            DocketError::InvalidOptions(format!("cannot read the input from stdin: {e}"))
        })?;
        return Ok(text);
    }
    Ok(input)
}

fn run_id(raw: &str) -> Result<RunId, DocketError> {
    RunId::new(raw).map_err(|e| DocketError::InvalidOptions(e.to_string()))
}

fn graph_id(raw: &str) -> Result<GraphId, DocketError> {
    GraphId::new(raw).map_err(|e| DocketError::InvalidOptions(e.to_string()))
}

/// Prints `value` as pretty JSON on stdout (compact if pretty-printing fails).
pub(super) fn print_json(value: &Value) {
    out!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

pub async fn graph(docket: &Docket, cmd: GraphCommand) -> CliResult {
    match cmd {
        GraphCommand::Publish { file, tenant } => {
            let docket = &tenant.scope(docket)?;
            let text = std::fs::read_to_string(&file).map_err(|e| {
                DocketError::InvalidOptions(format!("cannot read {}: {e}", file.display()))
            })?;
            let published = docket.publish_graph_json(&text).await?;
            print_warnings(&published);
            let graph_ref = &published.graph_ref;
            out!("{}@{}", graph_ref.graph_id, graph_ref.graph_hash);
        }
        GraphCommand::List {
            ids,
            format,
            tenant,
        } => {
            let docket = &tenant.scope(docket)?;
            let ids = if ids.is_empty() {
                default_graph_ids(docket).await?
            } else {
                ids
            };
            let mut rows = Vec::new();
            for id in ids {
                let page = docket
                    .list_graph_versions(
                        &graph_id(&id)?,
                        &GraphVersionQuery {
                            limit: MAX_PAGE_LIMIT,
                            before: None,
                        },
                    )
                    .await?;
                for v in page.versions {
                    rows.push(serde_json::json!({
                        "graph_id": v.graph_ref.graph_id.as_str(),
                        "graph_hash": v.graph_ref.graph_hash.as_str(),
                        "published_at": v.published_at.to_rfc3339(),
                    }));
                }
            }
            if format.json {
                print_json(&Value::Array(rows));
            } else {
                for r in rows {
                    out!(
                        "{}@{}  {}",
                        r["graph_id"].as_str().unwrap_or(""),
                        r["graph_hash"].as_str().unwrap_or(""),
                        r["published_at"].as_str().unwrap_or("")
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Shows the compiler's warnings about a published graph on stderr (stdout keeps the address).
pub fn print_warnings(published: &Publication) {
    for warning in &published.warnings {
        note!("docket: {}: {warning}", published.graph_ref.graph_id);
    }
}

/// The bundled example ids plus every graph id some run uses (the stores have no "list graph
/// ids" operation; graphs are addressed by id).
async fn default_graph_ids(docket: &Docket) -> Result<Vec<String>, DocketError> {
    let mut ids: Vec<String> = EXAMPLES.iter().map(|e| e.id.to_owned()).collect();
    for s in all_runs(docket, RunQuery::default(), MAX_PAGE_LIMIT as usize).await? {
        ids.push(s.graph_id.into_string());
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Pages through runs matching `query`, newest first, at most `limit`.
pub async fn all_runs(
    docket: &Docket,
    mut query: RunQuery,
    limit: usize,
) -> Result<Vec<RunSummary>, DocketError> {
    let mut out = Vec::new();
    query.limit = MAX_PAGE_LIMIT;
    loop {
        let page = docket.list_runs(&query).await?;
        out.extend(page.runs);
        if !page.has_more || out.len() >= limit {
            out.truncate(limit);
            return Ok(out);
        }
        query.before = page.next_before;
    }
}

pub async fn run_command(docket: &Docket, cmd: RunCommand) -> CliResult {
    match cmd {
        RunCommand::Start {
            graph_id: id,
            hash,
            input,
            input_file,
            run_id: explicit,
            from,
            format,
            tenant,
        } => {
            let docket = &tenant.scope(docket)?;
            // The single run's input is read first, so a bad input is reported before a
            // graph lookup is made.
            let single = if from.is_none() {
                Some(parse_input(&input_text(input, input_file.as_deref())?)?)
            } else {
                None
            };
            let graph_id = graph_id(&id)?;
            let graph_ref = match hash {
                Some(h) => GraphRef {
                    graph_id,
                    graph_hash: GraphHash::new(h)
                        .map_err(|e| DocketError::InvalidOptions(e.to_string()))?,
                },
                None => docket.fetch_latest_graph_ref(&graph_id).await?,
            };
            if let Some(path) = from {
                return super::bulk_start::start_from_file(docket, &graph_ref, &path, format.json)
                    .await;
            }
            // `single` is read whenever `--from` is absent.
            let input = single.unwrap_or_default();
            let options = StartOptions {
                run_id: explicit.as_deref().map(run_id).transpose()?,
                ..StartOptions::default()
            };
            let run = docket.start_run(&graph_ref, input, options).await?;
            if format.json {
                out!("{}", serde_json::json!({"run_id": run.id.as_str()}));
            } else {
                out!("{}", run.id);
            }
        }
        RunCommand::Show {
            run_id: id,
            format,
            tenant,
        } => {
            let docket = &tenant.scope(docket)?;
            let info = docket.inspect_run(&run_id(&id)?).await?;
            if format.json {
                print_json(&json::run_info(&info));
            } else {
                let run = &info.run;
                out!("run        {}", run.id);
                out!("graph      {}@{}", run.graph_id, run.graph_hash);
                out!("status     {}", run.status);
                out!("step       {}", run.step);
                out!("checkpoint {}", run.checkpoint_seq);
                out!(
                    "claim      attempts {}, abandons {}",
                    info.claim_attempts,
                    info.claim_abandons
                );
                if let Some(p) = info.poison {
                    out!("poisoned   {} ({})", p.poisoned_at, p.reason.as_str());
                }
                let open = json::open_interrupts(&info);
                if !open.is_empty() {
                    out!("waiting on {}", open.join(", "));
                }
                if let Some(output) = &run.output {
                    out!("output     {}", Value::Object(output.clone()));
                }
                if let Some(failure) = &run.failure {
                    out!("failure    {}: {}", failure.code, failure.message);
                }
            }
        }
        RunCommand::List {
            status,
            graph,
            limit,
            format,
            tenant,
        } => {
            let docket = &tenant.scope(docket)?;
            let statuses = status
                .iter()
                .map(|s| {
                    RunStatus::parse(s).ok_or_else(|| {
                        DocketError::InvalidOptions(format!("unknown status {:?}", excerpt(s)))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let query = RunQuery {
                statuses: (!statuses.is_empty()).then_some(statuses),
                graph_id: graph.as_deref().map(graph_id).transpose()?,
                ..RunQuery::default()
            };
            let runs = all_runs(docket, query, limit).await?;
            if format.json {
                print_json(&Value::Array(runs.iter().map(json::summary).collect()));
            } else {
                for s in runs {
                    out!(
                        "{}  {:<9}  {}  step {}  seq {}",
                        s.id,
                        s.status.as_str(),
                        s.graph_id,
                        s.step,
                        s.checkpoint_seq
                    );
                }
            }
        }
        RunCommand::Cancel { run_id: id, tenant } => {
            let docket = &tenant.scope(docket)?;
            let run = docket.cancel_run(&run_id(&id)?).await?;
            out!("{} {}", run.id, run.status);
        }
        RunCommand::Retry { run_id: id, tenant } => {
            let docket = &tenant.scope(docket)?;
            let run = docket.retry_poisoned_run(&run_id(&id)?).await?;
            out!("{} {}", run.id, run.status);
        }
        RunCommand::Verify {
            expect_terminal,
            format,
        } => {
            return verify::run(docket, expect_terminal, format.json).await;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn events(docket: &Docket, args: EventsArgs) -> CliResult {
    let docket = &args.tenant.scope(docket)?;
    let events = docket.all_events(&run_id(&args.run_id)?).await?;
    if args.format.json {
        print_json(&serde_json::to_value(&events).unwrap_or(Value::Null));
    } else {
        for e in events {
            let detail = match e.event_type {
                EventType::CheckpointCommitted => format!(
                    "checkpoint {} {} ({})",
                    e.metadata
                        .get("checkpoint_seq")
                        .cloned()
                        .unwrap_or(Value::Null),
                    e.metadata
                        .get("checkpoint_type")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    e.metadata
                        .get("wake_disposition")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                ),
                _ => [e.node_id.as_deref(), e.channel_id.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            out!(
                "{:>4}  step {:<3} {:<22} {detail}",
                e.seq,
                e.step,
                e.event_type.as_str()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn interrupt(docket: &Docket, cmd: InterruptCommand) -> CliResult {
    match cmd {
        InterruptCommand::Resolve {
            run_id: id,
            interrupt_id,
            value,
            tenant,
        } => {
            let docket = &tenant.scope(docket)?;
            // JSON if it reads as JSON, else the text itself; a JSON object naming a key twice
            // is refused rather than read as either.
            let value = match parse_json_strict(&value) {
                Ok(json) => json,
                Err(JsonError::Syntax { .. }) => Value::String(value),
                Err(error) => {
                    return Err(DocketError::InvalidJson {
                        what: "interrupt value",
                        error,
                    })
                }
            };
            let run = docket
                .resolve_interrupt(&run_id(&id)?, &interrupt_id, value)
                .await?;
            out!("{} {}", run.id, run.status);
        }
    }
    Ok(ExitCode::SUCCESS)
}
