//! Tenant-fair claiming (`docs/claim-order.md`, “Tenant-fair claiming”, “Weights and caps”,
//! “The admission marker”): the breadth-first order across owners and its cursor, weights,
//! caps under racing claimers, how steals merge in, stored shares, and the lifecycle of the
//! admission marker.

mod admission;
mod order;
mod shares;

pub use admission::*;
pub use order::*;
pub use shares::*;

use docket_core::model::TenantId;
use docket_core::store::{ClaimBatch, ClaimPolicy, TenantShare};

use crate::cases::prelude::*;

/// A tenant-fair claim request at `now` for at most `limit` outcomes (TTL 60 s, 5 attempts).
pub(crate) fn fair(now: Timestamp, limit: u32) -> ClaimRequest {
    ClaimRequest {
        policy: ClaimPolicy::TenantFair,
        ..claim_policy(now, limit)
    }
}

/// `fair` with a demand-one preference.
pub(crate) fn fair_preferring(now: Timestamp, class: ClaimClass) -> ClaimRequest {
    ClaimRequest {
        preference: Some(class),
        ..fair(now, 1)
    }
}

/// Ids of a batch's leases, in batch order.
pub(crate) fn leased(batch: &ClaimBatch) -> Vec<String> {
    batch
        .leases
        .iter()
        .map(|l| l.run_id.as_str().to_owned())
        .collect()
}

/// The owner `name`: `""` is the tenantless owner, anything else a tenant.
pub(crate) fn owner(name: &str) -> OwnerScope {
    if name.is_empty() {
        OwnerScope::Tenantless
    } else {
        tenant(name)
    }
}

/// Stores a share for tenant `name`.
pub(crate) async fn share(env: &Env<'_>, name: &str, weight: u32, cap: Option<u32>) {
    let tenant = TenantId::new(name).expect("tenant id");
    let share = TenantShare {
        weight: nz(weight),
        cap: cap.map(nz),
    };
    ok(
        env.store().set_tenant_share(&tenant, share).await,
        "set_tenant_share",
    );
}

/// Publishes the tiny graph for each owner and starts, for each `(owner, run id, wake ms)`,
/// a run initialized at `t(0)` that wakes then.
pub(crate) async fn backlog(env: &Env<'_>, runs: &[(&str, &str, i64)]) {
    let mut graphs: Vec<(String, Published)> = Vec::new();
    for (name, id, wake_ms) in runs {
        let graph = match graphs.iter().find(|(n, _)| n == name) {
            Some((_, g)) => g.clone(),
            None => {
                let g = env.publish_tiny(&owner(name)).await;
                graphs.push(((*name).to_owned(), g.clone()));
                g
            }
        };
        env.start_waking(&graph, id, t(0), t(*wake_ms)).await;
    }
}
