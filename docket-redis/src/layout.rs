//! The namespace's layout version and the migration that brings an older namespace up to it
//! (`lua/migrate.lua`), run by every store at open.

use docket_core::store::StoreError;

use crate::error::Access;
use crate::scripts::expect_ok;
use crate::store::{Params, RedisStore};

/// The current layout: 2 added the per-owner ready sets (`ready_of:<owner>`,
/// `ready_owners`) that tenant-fair claims walk and the per-owner claim counts
/// (`claims_by_owner`) they compare with caps. Layout 1 (no marker) had neither. 3 added the
/// share summary (the `capped` and `weighted` counts of the fair cursor hash) that a
/// tenant-fair claim of one run reads with the cursor.
pub const LAYOUT_VERSION: u32 = 3;

impl RedisStore {
    /// Brings the namespace to [`LAYOUT_VERSION`]: one script that, when the namespace has no
    /// current marker, indexes every ready run under its owner and recounts the claims per
    /// owner (a namespace without any marker that has ready or claimed runs) and recounts the
    /// share summary from the stored shares. Returns how many entries it indexed (0 when there
    /// was nothing to do).
    ///
    /// A namespace written by an older version while this one already runs (a rolling
    /// upgrade) can hold ready runs missing from their owner's set, claims missing from the
    /// counts and shares missing from the summary: stop the older processes before any worker
    /// claims with `ClaimPolicy::TenantFair`. `Oldest` claims are unaffected.
    pub(crate) async fn migrate_layout(&self) -> Result<u64, StoreError> {
        let k = self.keys();
        let params = Params::new()
            .set("prefix", k.prefix())
            .set("layout", LAYOUT_VERSION);
        let reply = self
            .script(
                &self.scripts().migrate,
                &[
                    k.layout(),
                    k.ready(),
                    k.ready_owners(),
                    k.claims(),
                    k.claims_by_owner(),
                    k.tenant_shares(),
                    k.fair_cursor(),
                ],
                &[params.into_arg()],
                Access::Write,
            )
            .await?;
        expect_ok(&reply)?;
        let indexed: u64 = reply.number(2)?;
        if reply.string(1)? == "migrated" {
            tracing::info!(
                namespace = self.namespace(),
                indexed,
                layout = LAYOUT_VERSION,
                "migrated the Redis namespace: per-owner indexes and share summary built"
            );
        }
        Ok(indexed)
    }
}
