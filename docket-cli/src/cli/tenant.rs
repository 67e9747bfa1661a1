//! `docket tenant`: the weights and caps tenant-fair claiming gives each tenant
//! (`docs/claim-order.md`, “Weights and caps”). Workers apply them when they claim with
//! `--claim-policy tenant-fair`.

use std::num::NonZeroU32;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{json, Value};

use docket::core::model::TenantId;
use docket::core::store::TenantShare;
use docket::{Docket, DocketError};

use super::admin::print_json;
use super::{CliResult, Format};

/// `docket tenant …`
#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Store a tenant's share: its weight (claims per round) and cap (most runs claimed at
    /// once across every worker). Unset options keep the stored value (weight 1 and no cap
    /// for a tenant without one).
    Set {
        /// The tenant id.
        tenant: String,
        /// Claims the tenant gets in each round of the round robin (at least 1).
        #[arg(long)]
        weight: Option<NonZeroU32>,
        /// Most of the tenant's runs claimed at once (at least 1).
        #[arg(long, conflicts_with = "no_cap")]
        cap: Option<NonZeroU32>,
        /// Remove the tenant's cap.
        #[arg(long)]
        no_cap: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Show every stored share, by tenant id.
    Show {
        #[command(flatten)]
        format: Format,
    },
}

pub async fn tenant(docket: &Docket, cmd: TenantCommand) -> CliResult {
    match cmd {
        TenantCommand::Set {
            tenant,
            weight,
            cap,
            no_cap,
            format,
        } => {
            let id = TenantId::new(tenant.as_str())
                .map_err(|e| DocketError::InvalidOptions(format!("tenant id: {e}")))?;
            let stored = docket
                .tenant_shares()
                .await?
                .into_iter()
                .find(|(t, _)| *t == id)
                .map(|(_, share)| share)
                .unwrap_or_default();
            let share = TenantShare {
                weight: weight.unwrap_or(stored.weight),
                cap: if no_cap { None } else { cap.or(stored.cap) },
            };
            docket.set_tenant_share(&id, share).await?;
            print_shares(&[(id, share)], format);
            Ok(ExitCode::SUCCESS)
        }
        TenantCommand::Show { format } => {
            let shares = docket.tenant_shares().await?;
            print_shares(&shares, format);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_shares(shares: &[(TenantId, TenantShare)], format: Format) {
    if format.json {
        let rows: Vec<Value> = shares
            .iter()
            .map(|(tenant, share)| {
                json!({
                    "tenant": tenant.as_str(),
                    "weight": share.weight.get(),
                    "cap": share.cap.map(NonZeroU32::get),
                })
            })
            .collect();
        print_json(&Value::Array(rows));
        return;
    }
    if shares.is_empty() {
        out!("no tenant shares stored (every tenant: weight 1, no cap)");
        return;
    }
    out!("{:<32} {:>6} {:>6}", "tenant", "weight", "cap");
    for (tenant, share) in shares {
        let cap = share
            .cap
            .map_or_else(|| "-".to_owned(), |c| c.get().to_string());
        out!("{:<32} {:>6} {:>6}", tenant.as_str(), share.weight, cap);
    }
}
