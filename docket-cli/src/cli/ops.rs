//! `docket ops`: what a session holds in the store's operation registry.
//!
//! Read-only on purpose: the registry's writes belong to the session that owns the
//! operations (an operator who ends one by hand would race its owner). Both commands read
//! through [`Docket::ops_registry`], so they work on every backend whose store offers one.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::Value;

use docket::core::model::excerpt;
use docket::core::ops::{OperationId, OperationLifecycleSnapshot, SessionId};
use docket::{Docket, DocketError};

use super::admin::print_json;
use super::{CliResult, Format};

/// `docket ops …`
#[derive(Debug, Subcommand)]
pub enum OpsCommand {
    /// List the operations a session holds (live and retained terminal ones), by display name.
    List {
        #[command(flatten)]
        owner: OwnerArg,
        #[command(flatten)]
        format: Format,
    },
    /// Show one operation of a session.
    Show {
        #[command(flatten)]
        owner: OwnerArg,
        /// The operation id (a UUID).
        id: String,
        #[command(flatten)]
        format: Format,
    },
}

/// The session whose operations to read.
#[derive(Debug, Args)]
pub struct OwnerArg {
    /// The owning session id (a UUID).
    #[arg(long = "owner", value_name = "SESSION")]
    owner: String,
}

impl OwnerArg {
    fn session(&self) -> Result<SessionId, DocketError> {
        parse_uuid_arg("--owner", &self.owner)
    }
}

fn parse_uuid_arg<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, DocketError> {
    text.parse().map_err(|_| {
        DocketError::InvalidOptions(format!("{what} must be a UUID, got {:?}", excerpt(text)))
    })
}

/// Runs one `docket ops` command.
///
/// # Errors
/// [`DocketError::OpsRegistryUnavailable`] on a store without a registry; a malformed owner
/// or id is `InvalidOptions`; an unknown operation is `NotFound`; store errors.
pub async fn ops(docket: &Docket, cmd: OpsCommand) -> CliResult {
    match cmd {
        OpsCommand::List { owner, format } => {
            let operations = docket.all_operations(&owner.session()?).await?;
            if format.json {
                print_json(&Value::Array(operations.iter().map(to_json).collect()));
            } else {
                for op in &operations {
                    out!("{}", line(op));
                }
            }
        }
        OpsCommand::Show { owner, id, format } => {
            let id: OperationId = parse_uuid_arg("the operation id", &id)?;
            let op = docket.fetch_operation(&owner.session()?, &id).await?;
            if format.json {
                print_json(&to_json(&op));
            } else {
                show(&op);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(op: &OperationLifecycleSnapshot) -> Value {
    // The snapshot is plain data with derived serde; a failure here would be a bug in it.
    serde_json::to_value(op).unwrap_or(Value::Null)
}

/// One operation per line: id, status, kind, progress, completion sequence, display name
/// (last, because it is free text).
fn line(op: &OperationLifecycleSnapshot) -> String {
    let seq = op
        .completion_seq
        .map_or_else(|| "-".to_owned(), |s| s.to_string());
    format!(
        "{}  {:<20}  {:<20}  progress {}  seq {}  {:?}",
        op.id,
        op.status.to_string(),
        op.kind.to_string(),
        op.progress_count,
        seq,
        op.display_name
    )
}

fn show(op: &OperationLifecycleSnapshot) {
    out!("operation  {}", op.id);
    out!("owner      {}", op.owner);
    out!("kind       {}", op.kind);
    out!("name       {:?}", op.display_name);
    if !op.source_label.is_empty() {
        out!("source     {:?}", op.source_label);
    }
    out!("status     {} ({:?})", op.status, op.public_result_class());
    out!("progress   {}", op.progress_count);
    out!("created    {}", op.created_at);
    if let Some(at) = op.started_at {
        out!("started    {at}");
    }
    if let Some(at) = op.completed_at {
        out!("completed  {at}");
    }
    if let Some(seq) = op.completion_seq {
        out!("seq        {seq}");
    }
    if let Some(outcome) = &op.terminal_outcome {
        out!(
            "outcome    {}",
            serde_json::to_string(outcome).unwrap_or_default()
        );
    }
}
