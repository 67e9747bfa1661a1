//! Graph versions: insert-if-absent then compare bytes (save), hash-verified fetch, and the
//! `(published_at DESC, graph_hash DESC)` version order.

use rusqlite::{params, Connection, OptionalExtension};

use docket_core::graph::GraphDocument;
use docket_core::model::{
    GraphHash, GraphId, GraphRef, GraphVersion, GraphVersionPage, GraphVersionQuery, OwnerScope,
    Timestamp,
};
use docket_core::store::rules::graph::decode_stored;
use docket_core::store::rules::queries::graph_version_page;
use docket_core::store::StoreError;

use crate::error::SqlResult;

/// `save_graph` with the canonical bytes already checked against the address. The publication
/// time is the caller's `now` of the first save; a re-save keeps it.
pub(crate) fn save(
    conn: &Connection,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
    bytes: &[u8],
    now: Timestamp,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO docket_graph_versions \
         (scope_key, tenant_id, graph_id, graph_hash, graph, published_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (scope_key, graph_id, graph_hash) DO NOTHING",
    )
    .sql()?
    .execute(params![
        owner.scope_key(),
        owner.tenant_id().map(|t| t.as_str()),
        graph_ref.graph_id.as_str(),
        graph_ref.graph_hash.as_str(),
        bytes,
        now.as_micros(),
    ])
    .sql()?;
    let stored = stored_bytes(conn, owner, graph_ref)?.ok_or_else(|| {
        StoreError::corrupt(
            format!("graph {}", graph_ref.graph_id),
            "the saved version is missing after insert",
        )
    })?;
    if stored == bytes {
        Ok(())
    } else {
        Err(StoreError::GraphContentConflict)
    }
}

fn stored_bytes(
    conn: &Connection,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> Result<Option<Vec<u8>>, StoreError> {
    conn.prepare_cached(
        "SELECT graph FROM docket_graph_versions \
         WHERE scope_key = ?1 AND graph_id = ?2 AND graph_hash = ?3",
    )
    .sql()?
    .query_row(
        params![
            owner.scope_key(),
            graph_ref.graph_id.as_str(),
            graph_ref.graph_hash.as_str()
        ],
        |row| row.get::<_, rusqlite::types::Value>(0),
    )
    .optional()
    .sql()?
    .map(|value| match value {
        rusqlite::types::Value::Blob(bytes) => Ok(bytes),
        rusqlite::types::Value::Text(text) => Ok(text.into_bytes()),
        other => Err(StoreError::CorruptGraph {
            detail: format!("stored graph is {other:?}, not bytes"),
        }),
    })
    .transpose()
}

/// `fetch_graph`: re-verified by `rules::graph::decode_stored`.
pub(crate) fn fetch(
    conn: &Connection,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> Result<GraphDocument, StoreError> {
    let bytes = stored_bytes(conn, owner, graph_ref)?.ok_or(StoreError::NotFound)?;
    decode_stored(graph_ref, &bytes)
}

fn version_from(
    graph_id: &GraphId,
    hash: String,
    published_at: i64,
) -> Result<GraphVersion, StoreError> {
    let graph_hash = GraphHash::new(hash).map_err(|e| StoreError::CorruptGraph {
        detail: format!("stored graph hash: {e}"),
    })?;
    Ok(GraphVersion {
        graph_ref: GraphRef {
            graph_id: graph_id.clone(),
            graph_hash,
        },
        published_at: Timestamp::from_micros(published_at),
    })
}

/// `fetch_latest_graph_ref`: metadata only.
pub(crate) fn latest(
    conn: &Connection,
    owner: &OwnerScope,
    graph_id: &GraphId,
) -> Result<GraphRef, StoreError> {
    let row: Option<(String, i64)> = conn
        .prepare_cached(
            "SELECT graph_hash, published_at FROM docket_graph_versions \
             WHERE scope_key = ?1 AND graph_id = ?2 \
             ORDER BY published_at DESC, graph_hash DESC LIMIT 1",
        )
        .sql()?
        .query_row(params![owner.scope_key(), graph_id.as_str()], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()
        .sql()?;
    let (hash, published_at) = row.ok_or(StoreError::NotFound)?;
    Ok(version_from(graph_id, hash, published_at)?.graph_ref)
}

/// `list_graph_versions` (query already validated).
pub(crate) fn list(
    conn: &Connection,
    owner: &OwnerScope,
    graph_id: &GraphId,
    query: &GraphVersionQuery,
) -> Result<GraphVersionPage, StoreError> {
    let (after_at, after_hash) = match &query.before {
        Some(c) => (
            Some(c.published_at.as_micros()),
            Some(c.graph_hash.as_str()),
        ),
        None => (None, None),
    };
    let mut stmt = conn
        .prepare_cached(
            "SELECT graph_hash, published_at FROM docket_graph_versions \
             WHERE scope_key = ?1 AND graph_id = ?2 \
               AND (?3 IS NULL OR published_at < ?3 OR (published_at = ?3 AND graph_hash < ?4)) \
             ORDER BY published_at DESC, graph_hash DESC LIMIT ?5",
        )
        .sql()?;
    let rows = stmt
        .query_map(
            params![
                owner.scope_key(),
                graph_id.as_str(),
                after_at,
                after_hash,
                i64::from(query.limit) + 1
            ],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
        )
        .sql()?;
    let mut versions = Vec::new();
    for row in rows {
        let (hash, published_at) = row.sql()?;
        versions.push(version_from(graph_id, hash, published_at)?);
    }
    Ok(graph_version_page(versions, query))
}
