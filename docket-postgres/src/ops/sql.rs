//! The registry's statements, rendered once per store for its schema (`{s}`).
//!
//! Writes call the functions of schema version 3 (`sql/v3.sql`), one call per write; reads
//! are plain selects. Every statement returns a record under the same `r_*` column names, so
//! one decoder reads them all ([`super::rows`]).

/// The record columns of a plain select, named like the write functions' `r_*` columns.
const RECORD_COLUMNS: &str = "op_id::text AS r_op_id, kind::text AS r_kind, \
    display_name::text AS r_display_name, source_label AS r_source_label, source AS r_source, \
    status AS r_status, progress_count AS r_progress_count, outcome AS r_outcome, \
    completion_seq AS r_completion_seq, created_at AS r_created_at, \
    started_at AS r_started_at, completed_at AS r_completed_at";

/// Every registry statement of one schema.
#[derive(Debug)]
pub(crate) struct OpsSql {
    /// `$1` owner, `$2` id, `$3` kind, `$4` display name, `$5` source label, `$6` source
    /// JSON, `$7` status, `$8` now, `$9` admission limit (NULL: none).
    pub register: String,
    /// `$1` owner, `$2` id, `$3` from-set, `$4` target status (NULL: unchanged), `$5` progress
    /// increment, `$6` stamp start?, `$7` mint a completion sequence?, `$8` outcome JSON,
    /// `$9` now, `$10` retention, `$11` wake payload.
    pub transition: String,
    /// `$1` owner, `$2` from-set, `$3` target status, `$4` outcome JSON, `$5` now,
    /// `$6` retention, `$7` retire?, `$8` wake payload.
    pub terminate: String,
    /// `$1` owner.
    pub collect: String,
    /// `$1` owner, `$2` id.
    pub snapshot: String,
    /// `$1` owner, `$2` cursor display name (NULL: from the start), `$3` cursor id,
    /// `$4` rows.
    pub list: String,
    /// `$1` owner.
    pub retired: String,
}

impl OpsSql {
    /// The statements for `schema` (a validated identifier).
    pub(crate) fn render(schema: &str) -> Self {
        let s = |sql: &str| sql.replace("{s}", schema);
        OpsSql {
            register: s("SELECT inserted, owner_retired, id_taken, active \
                 FROM {s}.docket_ops_register($1::uuid, $2::uuid, $3, $4, $5, $6, $7, $8, $9)"),
            transition: s(
                "SELECT * FROM {s}.docket_ops_transition($1::uuid, $2::uuid, $3, $4, \
                 $5, $6, $7, $8, $9, $10, $11)",
            ),
            terminate: s("SELECT owner_retired, r_op_id, r_completion_seq \
                 FROM {s}.docket_ops_terminate($1::uuid, $2, $3, $4, $5, $6, $7, $8)"),
            collect: s("SELECT * FROM {s}.docket_ops_collect($1::uuid)"),
            snapshot: s(&format!(
                "SELECT {RECORD_COLUMNS} FROM {{s}}.ops_operations \
                 WHERE owner_id = $1::uuid AND op_id = $2::uuid"
            )),
            list: s(&format!(
                "SELECT {RECORD_COLUMNS} FROM {{s}}.ops_operations \
                 WHERE owner_id = $1::uuid \
                   AND ($2::text IS NULL OR (display_name, op_id) > ($2, $3::uuid)) \
                 ORDER BY display_name, op_id LIMIT $4"
            )),
            retired: s("SELECT retired FROM {s}.ops_owners WHERE owner_id = $1::uuid"),
        }
    }
}
