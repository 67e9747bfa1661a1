//! Graph versions (`docs/storage-contract.md`, “Graph versions”): content-addressed, owner-scoped,
//! idempotent by content.

use docket_core::graph::GraphDocument;
use docket_core::model::{
    GraphHash, GraphId, GraphRef, GraphVersion, GraphVersionPage, GraphVersionQuery, OwnerScope,
    Timestamp,
};
use docket_core::store::rules::graph::{decode_stored, encode_for_save};
use docket_core::store::rules::queries::{graph_version_page, validate_graph_query};
use docket_core::store::StoreError;

use crate::codec::split_index_member;
use crate::error::Access;
use crate::keys::Keys;
use crate::scripts::expect_ok;
use crate::store::{Params, RedisStore};

fn parse_version(versions_key: &str, member: &str) -> Result<(Timestamp, GraphHash), StoreError> {
    split_index_member(member)
        .and_then(|(at, hash)| GraphHash::new(hash).ok().map(|h| (at, h)))
        .ok_or_else(|| StoreError::CorruptGraph {
            detail: format!("version index {versions_key} has a malformed member {member:?}"),
        })
}

impl RedisStore {
    pub(crate) async fn do_save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let bytes = encode_for_save(graph_ref, graph)?;
        let k = self.keys();
        let keys = vec![
            k.graph(owner, &graph_ref.graph_id, &graph_ref.graph_hash),
            k.graph_versions(owner, &graph_ref.graph_id),
            k.graphs_by_time(),
        ];
        let params = Params::new()
            .set("published_at", now.as_micros())
            .set(
                "version_member",
                Keys::graph_version_member(now, &graph_ref.graph_hash),
            )
            .set(
                "time_member",
                Keys::graph_time_member(now, owner, &graph_ref.graph_id, &graph_ref.graph_hash),
            );
        let reply = self
            .script(
                &self.scripts().save_graph,
                &keys,
                &[params.into_arg(), bytes],
                Access::Write,
            )
            .await?;
        expect_ok(&reply)
    }

    pub(crate) async fn do_fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        let key = self
            .keys()
            .graph(owner, &graph_ref.graph_id, &graph_ref.graph_hash);
        let bytes: Option<Vec<u8>> = self
            .query(redis::cmd("HGET").arg(&key).arg("bytes"), Access::Read)
            .await?;
        match bytes {
            Some(bytes) => decode_stored(graph_ref, &bytes),
            None => Err(StoreError::NotFound),
        }
    }

    async fn versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        max: &str,
        count: usize,
    ) -> Result<Vec<(Timestamp, GraphHash)>, StoreError> {
        let key = self.keys().graph_versions(owner, graph_id);
        let members: Vec<String> = self
            .query(
                redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(max)
                    .arg("-")
                    .arg("BYLEX")
                    .arg("REV")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(count),
                Access::Read,
            )
            .await?;
        members.iter().map(|m| parse_version(&key, m)).collect()
    }

    pub(crate) async fn do_fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        let newest = self.versions(owner, graph_id, "+", 1).await?;
        match newest.into_iter().next() {
            Some((_, graph_hash)) => Ok(GraphRef {
                graph_id: graph_id.clone(),
                graph_hash,
            }),
            None => Err(StoreError::NotFound),
        }
    }

    pub(crate) async fn do_list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        validate_graph_query(query)?;
        let max = match &query.before {
            Some(c) => format!(
                "({}",
                Keys::graph_version_member(c.published_at, &c.graph_hash)
            ),
            None => "+".to_owned(),
        };
        let rows = self
            .versions(owner, graph_id, &max, query.limit as usize + 1)
            .await?;
        let versions = rows
            .into_iter()
            .map(|(published_at, graph_hash)| GraphVersion {
                graph_ref: GraphRef {
                    graph_id: graph_id.clone(),
                    graph_hash,
                },
                published_at,
            })
            .collect();
        Ok(graph_version_page(versions, query))
    }
}
