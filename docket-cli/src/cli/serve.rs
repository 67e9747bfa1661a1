//! `docket serve`: the operator console (JSON API, pages, Prometheus metrics) over the backend
//! of `--backend`, on loopback unless told otherwise (`docs/console.md`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use docket::engine::WorkerStats;
use docket::{Docket, DocketError};
use docket_console::metrics::MetricsSource;
use docket_console::tokens::{parse_tenant_token, parse_token_file};
use docket_console::{Console, ConsoleConfig, Grant, Role};

use super::CliResult;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback by default; anything else is reachable from the
    /// network, so put TLS in front of it).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// File of tokens, one per line: `read TOKEN`, `admin TOKEN`, or `read|admin TENANT TOKEN`.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// A read-only token (prefer the environment or a token file: arguments are visible to
    /// other users of the machine).
    #[arg(long, env = "DOCKET_CONSOLE_READ_TOKEN", hide_env_values = true)]
    read_token: Option<String>,
    /// An admin token (may start, cancel, retry and resolve).
    #[arg(long, env = "DOCKET_CONSOLE_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// A read-only token bound to one tenant, as TENANT=TOKEN (repeatable).
    #[arg(long, value_name = "TENANT=TOKEN")]
    tenant_token: Vec<String>,
    /// An admin token bound to one tenant, as TENANT=TOKEN (repeatable).
    #[arg(long, value_name = "TENANT=TOKEN")]
    tenant_admin_token: Vec<String>,
    /// Serve only /metrics (no token needed unless tokens are given).
    #[arg(long)]
    metrics_only: bool,
}

fn grants(args: &ServeArgs) -> Result<Vec<Grant>, DocketError> {
    let invalid = |what: &str, e: String| DocketError::InvalidOptions(format!("{what}: {e}"));
    let mut grants = Vec::new();
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            DocketError::InvalidOptions(format!("--token-file {}: {e}", path.display()))
        })?;
        grants.extend(parse_token_file(&text).map_err(|e| invalid("--token-file", e))?);
    }
    if let Some(token) = &args.read_token {
        grants.push(Grant::new(token, Role::Read, None).map_err(|e| invalid("--read-token", e))?);
    }
    if let Some(token) = &args.admin_token {
        grants.push(Grant::new(token, Role::Admin, None).map_err(|e| invalid("--admin-token", e))?);
    }
    for text in &args.tenant_token {
        grants
            .push(parse_tenant_token(text, Role::Read).map_err(|e| invalid("--tenant-token", e))?);
    }
    for text in &args.tenant_admin_token {
        grants.push(
            parse_tenant_token(text, Role::Admin)
                .map_err(|e| invalid("--tenant-admin-token", e))?,
        );
    }
    Ok(grants)
}

/// Runs the console until Ctrl-C.
///
/// # Errors
/// Bad options, a backend that cannot be opened, an address that cannot be bound.
pub async fn run(url: &str, args: ServeArgs) -> CliResult {
    let grants = grants(&args)?;
    let docket = Docket::connect(url).await?;
    let scheme = url.split("://").next().unwrap_or("?").to_owned();
    let router = if args.metrics_only {
        docket_console::metrics_router(MetricsSource {
            stats: Vec::<std::sync::Arc<WorkerStats>>::new(),
            docket: Some(docket),
            grants,
            facts: Default::default(),
        })
    } else {
        let console = Console::new(docket, ConsoleConfig::new(grants))
            .map_err(|e| DocketError::InvalidOptions(e.to_string()))?;
        docket_console::router(&console)
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| DocketError::InvalidOptions(format!("--listen {}: {e}", args.listen)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| DocketError::InvalidOptions(format!("--listen: {e}")))?;
    if !bound.ip().is_loopback() {
        note!("docket serve: {bound} is reachable from the network; put TLS in front of it");
    }
    // The backend is named by its scheme only: a URL may hold a password or a host name.
    out!("docket serve: listening on http://{bound} ({scheme} backend)");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    docket_console::serve(listener, router, shutdown)
        .await
        .map_err(|e| DocketError::InvalidOptions(format!("serving: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
