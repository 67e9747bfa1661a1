//! Every SQL statement of the store, rendered once per store for its schema.
//!
//! Statements are plain text with `{s}` standing for the (validated) schema name; they are
//! rendered at connect so the hot path never formats SQL. Scope filters use the pair
//! `($system OR scope_key = $key)`; timestamps are bigint microseconds from the caller's clock.

/// Columns of a run row, in the order [`crate::codec::decode_run_row`] reads them by name.
const RUN_COLUMNS: &str = "run_id, tenant_id, graph_id, graph_hash, status, step, \
    checkpoint_seq, event_seq, document, latest_checkpoint_type, claim_token::text AS claim_token, \
    claimed_at, wake_at, claim_attempts, claim_abandons, poisoned_at, poison_reason, admitted_at, \
    started_at, updated_at, finished_at";

/// Columns of a run row a transition compares against: everything but the document.
const HEAD_COLUMNS: &str = "run_id, graph_id, graph_hash, status, checkpoint_seq, started_at, \
    latest_checkpoint_type, claim_token::text AS claim_token, claimed_at, wake_at, \
    claim_attempts, claim_abandons, poisoned_at, poison_reason, admitted_at";

/// Columns of an event row.
pub(crate) const EVENT_COLUMNS: &str =
    "run_id, seq, event_type, step, node_id, channel_id, task_id, payload, metadata, occurred_at";

/// The proposed events of a transition as parallel arrays (`$a` … `$a+8`).
fn unnest_events(first: usize) -> String {
    let p = |i: usize| format!("${}", first + i);
    format!(
        "unnest({}::bigint[], {}::text[], {}::bigint[], {}::text[], {}::text[], {}::text[], \
         {}::bytea[], {}::bytea[], {}::bigint[]) \
         AS p(seq, event_type, step, node_id, channel_id, task_id, payload, metadata, occurred_at)",
        p(0),
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        p(6),
        p(7),
        p(8)
    )
}

/// The columns of a run's listing row (schema version 13), which a statement inserting runs
/// returns from its `inserted` step for [`LIST_INSERTED`].
pub(crate) const LISTED_COLUMNS: &str = "run_id, scope_key, started_at, graph_id, graph_hash";

/// The step of every statement inserting runs that writes their listing rows, from the rows
/// its `inserted` step returned ([`LISTED_COLUMNS`]): a run is never stored without its row.
pub(crate) const LIST_INSERTED: &str = "INSERT INTO {s}.run_listing \
    (run_id, scope_key, started_at, graph_id, graph_hash) \
    SELECT run_id, scope_key, started_at, graph_id, graph_hash FROM inserted";

/// `initialize`, one statement: the run row is inserted only if the graph exists in the
/// owner's scope (zero rows → `NotFound`; a taken run id raises `unique_violation` →
/// `Conflict`), then its listing row (`run_listing`, schema version 13), its events and the
/// wake notification.
///
/// `$1` run_id, `$2` scope_key, `$3` graph_id, `$4` graph_hash, `$5` tenant_id, `$6` status,
/// `$7` step, `$8` checkpoint_seq, `$9` event_seq, `$10` document, `$11` started_at,
/// `$12` updated_at, `$13` finished_at, `$14` latest_checkpoint_type, `$15` wake_at,
/// `$16` inserted_at (caller's now), `$17..=$25` events, `$26` notify?, `$27` payload.
fn initialize() -> String {
    format!(
        "WITH graph AS (
            SELECT 1 FROM {{s}}.graph_versions
            WHERE scope_key = $2 AND graph_id = $3 AND graph_hash = $4
        ), inserted AS (
            INSERT INTO {{s}}.runs (run_id, tenant_id, graph_id, graph_hash, status, step,
                checkpoint_seq, event_seq, document, latest_checkpoint_type, wake_at,
                started_at, updated_at, finished_at, inserted_at)
            SELECT $1, $5, $3, $4, $6, $7, $8, $9, $10, $14, $15, $11, $12, $13, $16 FROM graph
            RETURNING {LISTED_COLUMNS}
        ), listed AS ({LIST_INSERTED}), events AS (
            INSERT INTO {{s}}.events (run_id, seq, event_type, step, node_id, channel_id, task_id,
                payload, metadata, occurred_at, inserted_at)
            SELECT i.run_id, p.seq, p.event_type, p.step, p.node_id, p.channel_id, p.task_id,
                p.payload, p.metadata, p.occurred_at, $16
            FROM {} CROSS JOIN inserted AS i
            RETURNING 1
        ), notified AS (
            SELECT pg_notify('docket_wake', $27) FROM inserted WHERE $26
        )
        SELECT (SELECT count(*) FROM inserted) AS inserted,
               (SELECT count(*) FROM events) AS events,
               (SELECT count(*) FROM notified) AS notified",
        unnest_events(17)
    )
}

/// The conflict clause of an idempotent event append into `{s}.events AS e`: a proposed event
/// identical to the stored one at its seq is "updated" to itself (and so returned), a
/// different one is left alone (and not returned).
pub(crate) const APPEND_IDEMPOTENTLY: &str =
    "ON CONFLICT (run_id, seq) DO UPDATE SET run_id = EXCLUDED.run_id
            WHERE e.event_type = EXCLUDED.event_type
              AND e.step = EXCLUDED.step
              AND e.node_id IS NOT DISTINCT FROM EXCLUDED.node_id
              AND e.channel_id IS NOT DISTINCT FROM EXCLUDED.channel_id
              AND e.task_id IS NOT DISTINCT FROM EXCLUDED.task_id
              AND e.payload = EXCLUDED.payload
              AND e.metadata = EXCLUDED.metadata
              AND e.occurred_at = EXCLUDED.occurred_at";

/// `commit_claimed`, one statement (one round trip on success):
///
/// * `updated`: the fenced UPDATE — run id, scope, immutable identity (graph id, graph hash,
///   started_at), `checkpoint_seq = expected`, `claim_token = token`, and the status matrix
///   (the stored statuses `rules::transition::allowed_from` lists for the proposed one); it
///   writes the document columns and the operational columns of
///   `rules::transition::Commit::committed_state` (counters and poison as the rules leave
///   them, schedule applied) and keeps the stored admission marker only when
///   `Commit::keeps_admission` (`$37`), so the marker costs no read;
/// * `inserted`: idempotent event append — an identical stored event is "updated" to itself
///   and returned, a different one is not returned;
/// * `conflict`: when the update matched but some proposed event was not returned, raises
///   `DK001` with the lowest such seq, aborting the whole statement;
/// * `notified`: `pg_notify` when the new wake is due.
///
/// `$1` run_id, `$2` system?, `$3` scope_key, `$4` graph_id, `$5` graph_hash, `$6` started_at,
/// `$7` expected seq, `$8` token, `$9` status, `$10` step, `$11` checkpoint_seq,
/// `$12` event_seq, `$13` document, `$14` updated_at, `$15` finished_at,
/// `$16` latest_checkpoint_type, `$17` new claim_token, `$18` claimed_at, `$19` wake_at,
/// `$20..=$28` events, `$29` inserted_at, `$30` notify?, `$31` payload, `$32` the stored
/// statuses that may become `$9`, `$33` claim_attempts, `$34` claim_abandons,
/// `$35` poisoned_at, `$36` poison_reason, `$37` keep the admission marker?
fn commit_claimed() -> String {
    format!(
        "WITH updated AS (
            UPDATE {{s}}.runs SET
                status = $9, step = $10, checkpoint_seq = $11, event_seq = $12, document = $13,
                updated_at = $14, finished_at = $15, latest_checkpoint_type = $16,
                claim_token = $17::uuid, claimed_at = $18, {}, wake_at = $19,
                claim_attempts = $33, claim_abandons = $34, poisoned_at = $35,
                poison_reason = $36,
                admitted_at = CASE WHEN $37 THEN admitted_at END
            WHERE run_id = $1
              AND ($2 OR scope_key = $3)
              AND graph_id = $4 AND graph_hash = $5 AND started_at = $6
              AND checkpoint_seq = $7
              AND claim_token = $8::uuid
              AND status = ANY($32::text[])
            RETURNING run_id
        ), proposed AS (
            SELECT * FROM {}
        ), inserted AS (
            INSERT INTO {{s}}.events AS e (run_id, seq, event_type, step, node_id, channel_id,
                task_id, payload, metadata, occurred_at, inserted_at)
            SELECT u.run_id, p.seq, p.event_type, p.step, p.node_id, p.channel_id, p.task_id,
                p.payload, p.metadata, p.occurred_at, $29
            FROM proposed AS p CROSS JOIN updated AS u
            {}
            RETURNING e.seq
        ), conflict AS (
            SELECT {{s}}.raise_event_conflict(c.seq) AS seq
            FROM (SELECT min(p.seq) AS seq FROM proposed AS p
                  WHERE EXISTS (SELECT 1 FROM updated)
                    AND p.seq NOT IN (SELECT seq FROM inserted)) AS c
            WHERE c.seq IS NOT NULL
        ), notified AS (
            SELECT pg_notify('docket_wake', $31) FROM updated WHERE $30
        )
        SELECT (SELECT count(*) FROM updated) AS updated,
               (SELECT count(*) FROM inserted) AS inserted,
               (SELECT count(*) FROM conflict) AS conflicts,
               (SELECT count(*) FROM notified) AS notified",
        claim_start("$17::uuid", "$18"),
        unnest_events(20),
        APPEND_IDEMPOTENTLY
    )
}

/// The `claim_started_at` assignment of an UPDATE that sets `claim_token = token` and
/// `claimed_at = claimed_at` (SQL expressions; schema version 10, `sql/v10.sql`): NULL without
/// a claim; with the stored token kept, the stored start, lowered to `claimed_at` only if that
/// is earlier (a clock that went back), so a commit that keeps its claim changes no indexed
/// column and can be a HOT update; with another token, `claimed_at`. The start stays a lower
/// bound of `claimed_at` (`runs_claim_start_check`), which is what the expired-claim lookups
/// bound their index range with.
pub(crate) fn claim_start(token: &str, claimed_at: &str) -> String {
    format!(
        "claim_started_at = CASE WHEN {token} IS NULL THEN NULL \
             WHEN claim_token IS NOT DISTINCT FROM {token} \
             THEN LEAST(claim_started_at, {claimed_at}) ELSE {claimed_at} END"
    )
}

/// Appends already-merged events inside a transaction. `$1` run_id, `$2..=$10` events,
/// `$11` inserted_at.
fn insert_events() -> String {
    format!(
        "INSERT INTO {{s}}.events (run_id, seq, event_type, step, node_id, channel_id, task_id,
            payload, metadata, occurred_at, inserted_at)
         SELECT $1, p.seq, p.event_type, p.step, p.node_id, p.channel_id, p.task_id, p.payload,
            p.metadata, p.occurred_at, $11
         FROM {}",
        unnest_events(2)
    )
}

/// `claim_due`, one statement: both candidate classes are read from their partial indexes in
/// `(eligible_at, run_id)` order, at most `limit` each, locked with `SKIP LOCKED` (the expired
/// class's index range is bounded by `claim_started_at < cutoff`, implied by the expiry test
/// `claimed_at < cutoff`, and sorted by `claimed_at`: schema version 10); merged with
/// a per-class rank (class heads first when `limit ≥ 2`, the preferred class first when
/// `limit = 1`, then `(eligible_at, class, run_id)` — the tie-break of
/// `rules::claim_order`, byte order like every other backend); the chosen rows are leased
/// (fresh UUID, `claimed_at = now`, attempts + 1; the admission marker untouched) or
/// poisoned (attempts ≥ max; the marker cleared), and returned — a lease with its run's
/// document, so the claimer need not read it (`ClaimLease::run`).
///
/// The claim's transaction commits without waiting for its WAL flush: the last condition of
/// the `UPDATE` sets `synchronous_commit = off` for this transaction only (evaluated once,
/// when the first chosen row reaches it; a claim that chooses nothing writes nothing to
/// flush). A claim need not survive a crash to be safe — a lost claim fences its holder out
/// at the holder's next write, as a steal does, and the run is claimed again — and WAL is
/// flushed in order, so any durable write of the holder flushes its claim first. The fair
/// claim function commits the same way. Waiting would put the disk's flush, and its
/// stalls, between a due run and the worker that starts it.
///
/// `$1` now, `$2` expiry cutoff (claimed_at < cutoff), `$3` limit, `$4` max attempts,
/// `$5` preferred class (0 ready, 1 expired, NULL none).
const CLAIM_DUE: &str = "WITH ready AS (
        SELECT id, run_id, wake_at AS eligible_at, 0 AS class
        FROM {s}.runs
        WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL
          AND wake_at IS NOT NULL AND wake_at <= $1
        ORDER BY wake_at, run_id
        LIMIT $3
        FOR UPDATE SKIP LOCKED
    ), expired AS (
        SELECT id, run_id, claimed_at AS eligible_at, 1 AS class
        FROM {s}.runs
        WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL
          AND claim_started_at < $2 AND claimed_at < $2
        ORDER BY claimed_at, run_id
        LIMIT $3
        FOR UPDATE SKIP LOCKED
    ), candidates AS (
        SELECT c.id, c.run_id, c.eligible_at, c.class,
               row_number() OVER (PARTITION BY c.class ORDER BY c.eligible_at, c.run_id)
                   AS class_rank
        FROM (SELECT * FROM ready UNION ALL SELECT * FROM expired) AS c
    ), chosen AS (
        SELECT id, eligible_at, class FROM candidates
        ORDER BY CASE WHEN $3 >= 2 AND class_rank = 1 THEN 0 ELSE 1 END,
                 CASE WHEN $3 = 1 AND class = $5 THEN 0 ELSE 1 END,
                 eligible_at, class, run_id
        LIMIT $3
    )
    UPDATE {s}.runs AS r SET
        claim_token    = CASE WHEN r.claim_attempts < $4 THEN gen_random_uuid() END,
        claimed_at     = CASE WHEN r.claim_attempts < $4 THEN $1 END,
        claim_started_at = CASE WHEN r.claim_attempts < $4 THEN $1 END,
        wake_at        = NULL,
        claim_attempts = CASE WHEN r.claim_attempts < $4 THEN r.claim_attempts + 1
                              ELSE r.claim_attempts END,
        poisoned_at    = CASE WHEN r.claim_attempts < $4 THEN NULL ELSE $1 END,
        poison_reason  = CASE WHEN r.claim_attempts < $4 THEN NULL
                              ELSE 'max_claim_attempts_exceeded' END,
        admitted_at    = CASE WHEN r.claim_attempts < $4 THEN r.admitted_at END
    FROM chosen AS c
    WHERE r.id = c.id AND r.status = 'running' AND r.poisoned_at IS NULL
      AND ((c.class = 0 AND r.claim_token IS NULL AND r.wake_at <= $1)
           OR (c.class = 1 AND r.claim_token IS NOT NULL AND r.claimed_at < $2))
      AND (SELECT pg_catalog.set_config('synchronous_commit', 'off', true)) = 'off'
    RETURNING r.run_id, r.tenant_id, r.graph_id, r.graph_hash, r.checkpoint_seq,
              r.claim_token::text AS claim_token, r.claimed_at, r.claim_attempts,
              r.poisoned_at, r.poison_reason, c.class, c.eligible_at,
              CASE WHEN r.poisoned_at IS NULL THEN r.document END AS document";

/// `release_claim`: `$1` run_id, `$2` token, `$3` now.
const RELEASE: &str = "UPDATE {s}.runs SET claim_token = NULL, claimed_at = NULL,
        claim_started_at = NULL, wake_at = $3
    WHERE run_id = $1 AND claim_token = $2::uuid";

/// `abandon_claim`, `rules::effects::apply_abandon` as one conditional UPDATE (every SET
/// expression sees the row as it was, so `claim_abandons` below is the count before); every
/// abandon ends the admission.
///
/// `$1` run_id, `$2` token, `$3` expected seq, `$4` non-poisoning?, `$5` max abandons,
/// `$6` now, `$7` retry_at, `$8` backoff?, `$9` base_ms (text), `$10` cap_ms (text).
/// The backoff is `now + min(base · 2^min(abandons, 30), cap)` with the same saturation as
/// `rules::effects::backoff_wake` (milliseconds clamped to i64, microseconds clamped to i64).
const ABANDON: &str = "UPDATE {s}.runs SET
        admitted_at = NULL,
        claim_token = NULL,
        claimed_at = NULL,
        claim_started_at = NULL,
        claim_attempts = GREATEST(claim_attempts - 1, 0),
        claim_abandons = CASE WHEN $4 OR claim_abandons < $5 THEN claim_abandons + 1
                              ELSE claim_abandons END,
        wake_at = CASE
            WHEN $4 AND $8 THEN LEAST(
                $6::numeric + LEAST(
                    LEAST(
                        LEAST($9::text::numeric * power(2::numeric, LEAST(claim_abandons, 30)),
                              $10::text::numeric),
                        9223372036854775807::numeric) * 1000,
                    9223372036854775807::numeric),
                9223372036854775807::numeric)::bigint
            WHEN $4 OR claim_abandons < $5 THEN $7
            ELSE NULL END,
        poisoned_at = CASE WHEN $4 OR claim_abandons < $5 THEN NULL ELSE $6 END,
        poison_reason = CASE WHEN $4 OR claim_abandons < $5 THEN NULL
                             ELSE 'max_claim_abandons_exceeded' END
    WHERE run_id = $1 AND claim_token = $2::uuid AND checkpoint_seq = $3
    RETURNING poisoned_at IS NOT NULL AS poisoned";

/// A scoped run row: `$1` run_id, `$2` system?, `$3` scope_key.
fn select_run(lock: bool) -> String {
    format!(
        "SELECT {RUN_COLUMNS} FROM {{s}}.runs WHERE run_id = $1 AND ($2 OR scope_key = $3){}",
        if lock { " FOR UPDATE" } else { "" }
    )
}

/// The transition head of a scoped run row, locked: `$1` run_id, `$2` system?, `$3` scope_key.
fn select_head_for_update() -> String {
    format!("SELECT {HEAD_COLUMNS} FROM {{s}}.runs WHERE run_id = $1 AND ($2 OR scope_key = $3) FOR UPDATE")
}

/// The transition head of a scoped run row: `$1` run_id, `$2` system?, `$3` scope_key.
fn select_head() -> String {
    format!("SELECT {HEAD_COLUMNS} FROM {{s}}.runs WHERE run_id = $1 AND ($2 OR scope_key = $3)")
}

/// Writes the operational columns decided by the rules: `$1` run_id, `$2` token, `$3`
/// claimed_at, `$4` wake_at, `$5` attempts, `$6` abandons, `$7` poisoned_at, `$8` reason,
/// `$9` admitted_at.
fn write_ops() -> String {
    format!(
        "UPDATE {{s}}.runs SET claim_token = $2::uuid, claimed_at = $3, {},
            wake_at = $4, claim_attempts = $5, claim_abandons = $6, poisoned_at = $7,
            poison_reason = $8, admitted_at = $9
        WHERE run_id = $1",
        claim_start("$2::uuid", "$3")
    )
}

/// Writes a committed document and the operational columns: `$1` run_id, `$2` status,
/// `$3` step, `$4` checkpoint_seq, `$5` event_seq, `$6` document, `$7` updated_at,
/// `$8` finished_at, `$9` latest_checkpoint_type, `$10..=$17` as `$2..=$9` of [`write_ops`].
fn write_commit() -> String {
    format!(
        "UPDATE {{s}}.runs SET status = $2, step = $3, checkpoint_seq = $4,
            event_seq = $5, document = $6, updated_at = $7, finished_at = $8,
            latest_checkpoint_type = $9, claim_token = $10::uuid, claimed_at = $11, {},
            wake_at = $12, claim_attempts = $13, claim_abandons = $14, poisoned_at = $15,
            poison_reason = $16, admitted_at = $17
        WHERE run_id = $1",
        claim_start("$10::uuid", "$11")
    )
}

/// Stored events of one run at the given seqs: `$1` run_id, `$2` seqs.
fn events_at() -> String {
    format!(
        "SELECT {EVENT_COLUMNS} FROM {{s}}.events WHERE run_id = $1 AND seq = ANY($2) ORDER BY seq"
    )
}

/// One event through its visible run: `$1` run_id, `$2` seq, `$3` system?, `$4` scope_key.
/// No row: the run is not visible; a row with a NULL seq: the event is absent.
fn fetch_event() -> String {
    format!(
        "SELECT e.{} FROM {{s}}.runs AS r
         LEFT JOIN {{s}}.events AS e ON e.run_id = r.run_id AND e.seq = $2
         WHERE r.run_id = $1 AND ($3 OR r.scope_key = $4)",
        EVENT_COLUMNS.replace(", ", ", e.")
    )
}

/// The newest retained event through its visible run: `$1` run_id, `$2` system?,
/// `$3` scope_key.
fn fetch_latest_event() -> String {
    format!(
        "SELECT e.* FROM {{s}}.runs AS r
         LEFT JOIN LATERAL (
             SELECT {EVENT_COLUMNS} FROM {{s}}.events
             WHERE run_id = r.run_id ORDER BY seq DESC LIMIT 1
         ) AS e ON true
         WHERE r.run_id = $1 AND ($2 OR r.scope_key = $3)"
    )
}

/// A page of events plus the retained bounds and the run's `event_seq`, one snapshot:
/// `$1` run_id, `$2` after_seq, `$3` limit, `$4` system?, `$5` scope_key.
fn list_events() -> String {
    format!(
        "SELECT r.event_seq AS latest_seq, b.oldest, b.latest, e.*
         FROM {{s}}.runs AS r
         CROSS JOIN LATERAL (
             SELECT min(seq) AS oldest, max(seq) AS latest FROM {{s}}.events WHERE run_id = r.run_id
         ) AS b
         LEFT JOIN LATERAL (
             SELECT {EVENT_COLUMNS} FROM {{s}}.events
             WHERE run_id = r.run_id AND seq > $2 ORDER BY seq LIMIT $3
         ) AS e ON true
         WHERE r.run_id = $1 AND ($4 OR r.scope_key = $5)
         ORDER BY e.seq"
    )
}

/// Insert-if-absent of a graph version: `$1` tenant_id, `$2` graph_id, `$3` graph_hash,
/// `$4` bytes, `$5` published_at.
const SAVE_GRAPH: &str = "INSERT INTO {s}.graph_versions (tenant_id, graph_id, graph_hash, graph,
        published_at)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (scope_key, graph_id, graph_hash) DO NOTHING
    RETURNING 1";

/// Stored bytes of one graph version: `$1` scope_key, `$2` graph_id, `$3` graph_hash.
const FETCH_GRAPH: &str = "SELECT graph FROM {s}.graph_versions
    WHERE scope_key = $1 AND graph_id = $2 AND graph_hash = $3";

/// Versions of one graph id, newest first: `$1` scope_key, `$2` graph_id, `$3` cursor
/// published_at (NULL: from the newest), `$4` cursor hash, `$5` rows to fetch.
const LIST_GRAPH_VERSIONS: &str = "SELECT graph_hash, published_at FROM {s}.graph_versions
    WHERE scope_key = $1 AND graph_id = $2
      AND ($3::bigint IS NULL OR (published_at, graph_hash) < ($3, $4::text COLLATE \"C\"))
    ORDER BY published_at DESC, graph_hash DESC
    LIMIT $5";

/// The pruner's lock, held until the pass's transaction ends: `$1` schema.
const PRUNE_LOCK: &str =
    "SELECT pg_try_advisory_xact_lock(hashtextextended('docket:pruner:' || $1, 0))";

/// Events persisted before the cutoff, oldest first: `$1` cutoff, `$2` batch.
const PRUNE_EVENTS: &str = "DELETE FROM {s}.events AS e
    USING (SELECT run_id, seq FROM {s}.events WHERE inserted_at < $1
           ORDER BY inserted_at, run_id, seq LIMIT $2 FOR UPDATE SKIP LOCKED) AS d
    WHERE e.run_id = d.run_id AND e.seq = d.seq";

/// Terminal runs last updated before the cutoff, oldest first (ties by run id, like every
/// backend), with their events and the count of those events: `$1` cutoff, `$2` batch.
///
/// No foreign key deletes a run's events with it (schema version 12, `sql/v12.sql`): this
/// statement, the only one that deletes runs, deletes them itself, and the runs' listing
/// rows (schema version 13, `sql/v13.sql`), found through the listing's unique index.
const PRUNE_RUNS: &str = "WITH victims AS (
        SELECT id, run_id FROM {s}.runs
        WHERE retained_since < $1
        ORDER BY retained_since, run_id LIMIT $2 FOR UPDATE SKIP LOCKED
    ), deleted AS (
        DELETE FROM {s}.runs AS r USING victims AS v WHERE r.id = v.id
        RETURNING r.run_id, r.started_at
    ), unlisted AS (
        DELETE FROM {s}.run_listing AS l USING deleted AS d
        WHERE l.started_at = d.started_at AND l.run_id = d.run_id
    ), deleted_events AS (
        DELETE FROM {s}.events AS e USING deleted AS d WHERE e.run_id = d.run_id RETURNING 1
    )
    SELECT (SELECT count(*) FROM deleted) AS runs,
           (SELECT count(*) FROM deleted_events) AS cascaded";

/// Graph versions unreferenced by any run and below the newest `$1` per (scope, graph id),
/// oldest first, ties by address (the order of every backend):
/// `$1` kept per graph, `$2` batch. A run's graph is read from its listing row (schema
/// version 13), which the statement that starts the run writes.
const PRUNE_GRAPHS: &str = "WITH ranked AS (
        SELECT id, row_number() OVER (PARTITION BY scope_key, graph_id
                                      ORDER BY published_at DESC, graph_hash DESC) AS rank
        FROM {s}.graph_versions
    ), victims AS (
        SELECT g.id FROM {s}.graph_versions AS g JOIN ranked AS k ON k.id = g.id
        WHERE k.rank > $1
          AND NOT EXISTS (SELECT 1 FROM {s}.run_listing AS r WHERE r.scope_key = g.scope_key
                          AND r.graph_id = g.graph_id AND r.graph_hash = g.graph_hash)
        ORDER BY g.published_at, g.scope_key, g.graph_id, g.graph_hash
        LIMIT $2
        FOR UPDATE OF g SKIP LOCKED
    )
    DELETE FROM {s}.graph_versions AS g USING victims AS v
    WHERE g.id = v.id
      AND NOT EXISTS (SELECT 1 FROM {s}.run_listing AS r WHERE r.scope_key = g.scope_key
                      AND r.graph_id = g.graph_id AND r.graph_hash = g.graph_hash)";

/// Summary columns for `list_runs`, of the run `r` a listing row `l` names (the rest of the
/// statement is built per query, over [`Sql::listed_runs`]).
pub(crate) const SUMMARY_COLUMNS: &str = "r.run_id, r.tenant_id, r.graph_id, r.graph_hash, \
    r.status, r.step, r.checkpoint_seq, r.started_at, r.updated_at, r.finished_at";

/// The rendered statements of one store.
#[derive(Debug)]
pub(crate) struct Sql {
    pub initialize: String,
    pub initialize_batch: String,
    pub commit_claimed: String,
    pub commit_claimed_batch: String,
    pub commit_claimed_batch_fresh: String,
    pub insert_events: String,
    pub claim_due: String,
    pub claim_fair: String,
    pub set_tenant_share: String,
    pub tenant_shares: String,
    pub release: String,
    pub abandon: String,
    pub select_run: String,
    pub select_run_for_update: String,
    pub select_head: String,
    pub select_head_for_update: String,
    pub write_ops: String,
    pub write_commit: String,
    pub events_at: String,
    pub fetch_event: String,
    pub fetch_latest_event: String,
    pub list_events: String,
    pub save_graph: String,
    pub fetch_graph: String,
    pub list_graph_versions: String,
    pub prune_lock: String,
    pub prune_events: String,
    pub prune_runs: String,
    pub prune_graphs: String,
    /// The `FROM` of `list_runs`: each listing row `l` joined to its run `r` (the order and
    /// the owner, graph and cursor filters read `l`, whose indexes serve them).
    pub listed_runs: String,
}

impl Sql {
    pub(crate) fn render(schema: &str) -> Self {
        let r = |sql: &str| sql.replace("{s}", schema);
        Sql {
            initialize: r(&initialize()),
            initialize_batch: r(&crate::bulk::initialize_batch()),
            commit_claimed: r(&commit_claimed()),
            commit_claimed_batch: r(&crate::commit_batch::commit_claimed_batch()),
            commit_claimed_batch_fresh: r(&crate::commit_batch::commit_claimed_batch_fresh()),
            insert_events: r(&insert_events()),
            claim_due: r(CLAIM_DUE),
            claim_fair: r(crate::fair::CLAIM_FAIR),
            set_tenant_share: r(crate::fair::SET_TENANT_SHARE),
            tenant_shares: r(crate::fair::TENANT_SHARES),
            release: r(RELEASE),
            abandon: r(ABANDON),
            select_run: r(&select_run(false)),
            select_run_for_update: r(&select_run(true)),
            select_head: r(&select_head()),
            select_head_for_update: r(&select_head_for_update()),
            write_ops: r(&write_ops()),
            write_commit: r(&write_commit()),
            events_at: r(&events_at()),
            fetch_event: r(&fetch_event()),
            fetch_latest_event: r(&fetch_latest_event()),
            list_events: r(&list_events()),
            save_graph: r(SAVE_GRAPH),
            fetch_graph: r(FETCH_GRAPH),
            list_graph_versions: r(LIST_GRAPH_VERSIONS),
            prune_lock: PRUNE_LOCK.to_owned(),
            prune_events: r(PRUNE_EVENTS),
            prune_runs: r(PRUNE_RUNS),
            prune_graphs: r(PRUNE_GRAPHS),
            listed_runs: format!(
                "{schema}.run_listing AS l JOIN {schema}.runs AS r ON r.run_id = l.run_id"
            ),
        }
    }
}
