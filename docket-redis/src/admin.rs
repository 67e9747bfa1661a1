//! Namespace administration: deleting every key of a namespace.

use docket_core::store::StoreError;

use crate::error::Access;
use crate::store::RedisStore;

/// Keys asked for per `SCAN` step (a hint to the server, not a bound).
const SCAN_COUNT: usize = 1_000;

impl RedisStore {
    /// Deletes every key of this store's namespace (`SCAN MATCH` + `UNLINK`, never
    /// `FLUSHDB`: other namespaces and other data on the server are untouched) and returns how
    /// many keys were deleted.
    ///
    /// This is for demos, test set-ups and decommissioning: it is not atomic, so a writer
    /// running at the same time may leave keys behind (or half of a run). Stop every worker
    /// first.
    ///
    /// # Errors
    /// Any failure to reach the server; keys deleted before the failure stay deleted.
    pub async fn purge_namespace(&self) -> Result<u64, StoreError> {
        let pattern = self.keys().scan_pattern();
        let mut cursor: u64 = 0;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = self
                .query(
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(SCAN_COUNT),
                    Access::Read,
                )
                .await?;
            if !keys.is_empty() {
                let n: u64 = self
                    .query(redis::cmd("UNLINK").arg(&keys), Access::Write)
                    .await?;
                deleted += n;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}
