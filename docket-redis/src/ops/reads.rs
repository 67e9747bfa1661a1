//! The registry's reads: one command or one read-only script each.

use docket_core::ops::rules::operation_page;
use docket_core::ops::{
    OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery, OpsError, SessionId,
};

use super::record::{decode, decode_tagged, pair};
use crate::error::Access;
use crate::keys::Keys;
use crate::store::{Params, RedisStore};

impl RedisStore {
    /// The record of `(owner, id)`, if any: one `HGETALL`.
    pub(super) async fn ops_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        let flat: Vec<Vec<u8>> = self
            .query(
                redis::cmd("HGETALL").arg(self.keys().ops_record(owner, id)),
                Access::Read,
            )
            .await?;
        if flat.is_empty() {
            return Ok(None);
        }
        let what = format!("operation record {owner}/{id}");
        decode(owner, id, &pair(flat, &what)?).map(Some)
    }

    /// One page of the owner's records in listing order: one read-only script walking the
    /// owner's `display_name NUL id` index from the cursor and reading each record.
    pub(super) async fn ops_list(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        let k = self.keys();
        let min = match &query.after {
            Some(cursor) => format!(
                "({}",
                Keys::ops_name_member(&cursor.display_name, &cursor.id)
            ),
            None => "-".to_owned(),
        };
        let params = Params::new()
            .set("count", u64::from(query.limit) + 1)
            .set("op_prefix", k.ops_record_prefix(owner));
        let reply = self
            .script(
                &self.scripts().ops_list,
                &[k.ops_names(owner)],
                &[params.into_arg(), min.into_bytes()],
                Access::Read,
            )
            .await?;
        let records = (1..reply.len())
            .map(|i| decode_tagged(owner, reply.byte_strings(i)?))
            .collect::<Result<Vec<_>, OpsError>>()?;
        Ok(operation_page(records, query))
    }

    /// Whether `owner` is retired: one `HGET`.
    pub(super) async fn ops_is_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        let retired: Option<String> = self
            .query(
                redis::cmd("HGET")
                    .arg(self.keys().ops_owner(owner))
                    .arg("retired"),
                Access::Read,
            )
            .await?;
        Ok(retired.as_deref() == Some("1"))
    }
}
