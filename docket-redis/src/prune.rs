//! Retention (`docs/storage-contract.md`, “Retention”): one `prune.lua` pass.

use docket_core::store::rules::queries::validate_prune_policy;
use docket_core::store::{PrunePolicy, PruneReport, StoreError, KEEP_GRAPH_VERSIONS};

use crate::claims::terminal_statuses;
use crate::error::Access;
use crate::scripts::expect_ok;
use crate::store::{Params, RedisStore};

fn cutoff(policy: &PrunePolicy, retention_ms: u64) -> i64 {
    let ms = i64::try_from(retention_ms).unwrap_or(i64::MAX);
    policy.now.add_millis(-ms).as_micros()
}

impl RedisStore {
    pub(crate) async fn do_prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        validate_prune_policy(policy)?;
        let k = self.keys();
        let params = Params::new()
            .set("prefix", k.prefix())
            .set("event_cutoff", cutoff(policy, policy.event_retention_ms))
            .set("run_cutoff", cutoff(policy, policy.run_retention_ms))
            .set("batch", policy.batch_size.get())
            .set("keep", KEEP_GRAPH_VERSIONS)
            .set("terminal_statuses", terminal_statuses());
        let keys = vec![
            k.events_by_time(),
            k.terminal(),
            k.graphs_by_time(),
            k.runs_all(),
        ];
        let reply = self
            .script(
                &self.scripts().prune,
                &keys,
                &[params.into_arg()],
                Access::Write,
            )
            .await?;
        expect_ok(&reply)?;
        Ok(PruneReport {
            events_deleted: reply.number(1)?,
            runs_deleted: reply.number(2)?,
            cascade_events_deleted: reply.number(3)?,
            graphs_deleted: reply.number(4)?,
            skipped_locked: false,
        })
    }
}
