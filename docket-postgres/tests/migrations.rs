//! Schema management: our own bookkeeping inside our schema, idempotent, serialized,
//! refusing newer schemas; an application's `public._sqlx_migrations` is never touched.

mod common;

use common::*;
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreError};
use docket_postgres::testing::{self, test_url, PostgresHarness};
use docket_postgres::{PostgresOptions, PostgresStore, LATEST_VERSION};
use sqlx::{Connection, PgConnection};

async fn admin() -> PgConnection {
    PgConnection::connect(&test_url())
        .await
        .expect("the PostgreSQL test server must be reachable")
}

async fn dump(conn: &mut PgConnection, table: &str) -> String {
    sqlx::query_scalar(&format!(
        "SELECT COALESCE(string_agg(t::text, E'\\n' ORDER BY t::text), '') FROM {table} AS t"
    ))
    .fetch_one(conn)
    .await
    .expect("dump")
}

/// `dump_version_9_runs` and the events, the rows a migration past version 9 must leave as
/// they were.
async fn dump_version_9_store(conn: &mut PgConnection, schema: &str) -> (String, String) {
    let runs = dump_version_9_runs(conn, schema).await;
    (runs, dump(conn, &format!("{schema}.events")).await)
}

/// The columns schema version 10 added to `runs`.
const VERSION_10_RUN_COLUMNS: [&str; 2] = ["claim_started_at", "retained_since"];

/// `dump` of the columns of `runs` that schema version 9 knew (each row as JSON), so a store
/// migrated past 9 compares with what it stored before.
async fn dump_version_9_runs(conn: &mut PgConnection, schema: &str) -> String {
    sqlx::query_scalar(&format!(
        "SELECT COALESCE(string_agg(r, E'\\n' ORDER BY r), '')
         FROM (SELECT (to_jsonb(t) - $1::text[])::text AS r FROM {schema}.runs AS t) AS d"
    ))
    .bind(VERSION_10_RUN_COLUMNS)
    .fetch_one(conn)
    .await
    .expect("dump runs")
}

#[tokio::test]
async fn migrating_twice_is_a_no_op_and_leaves_public_sqlx_migrations_alone() {
    let mut conn = admin().await;
    let existed: bool =
        sqlx::query_scalar("SELECT to_regclass('public._sqlx_migrations') IS NOT NULL")
            .fetch_one(&mut conn)
            .await
            .expect("probe");
    if !existed {
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS public._sqlx_migrations (version BIGINT PRIMARY KEY,
             description TEXT NOT NULL, installed_on TIMESTAMPTZ NOT NULL DEFAULT now(),
             success BOOLEAN NOT NULL, checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)",
        )
        .execute(&mut conn)
        .await
        .expect("create the application's table");
    }
    let marker: i64 = -(i64::from(rand_u16()) + 1_000_000);
    sqlx::query(
        "INSERT INTO public._sqlx_migrations
             (version, description, success, checksum, execution_time)
         VALUES ($1, 'app', true, '\\x00', 1)",
    )
    .bind(marker)
    .execute(&mut conn)
    .await
    .expect("marker");
    let app_before = dump(&mut conn, "public._sqlx_migrations").await;

    let (store, guard) = open().await;
    let before = snapshot(&store).await;
    let again =
        PostgresStore::open(PostgresOptions::with_schema(guard.schema()).with_url(test_url()))
            .await
            .expect("second migration");
    assert_eq!(
        snapshot(&again).await,
        before,
        "the second run changed nothing"
    );
    let versions: Vec<i32> = sqlx::query_scalar(&format!(
        "SELECT version FROM {}.docket_schema_migrations ORDER BY version",
        guard.schema()
    ))
    .fetch_all(&mut conn)
    .await
    .expect("versions");
    assert_eq!(versions, (1..=LATEST_VERSION).collect::<Vec<_>>());
    let ours: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(format!("{}._sqlx_migrations", guard.schema()))
        .fetch_one(&mut conn)
        .await
        .expect("probe");
    assert!(!ours);
    assert_eq!(dump(&mut conn, "public._sqlx_migrations").await, app_before);

    sqlx::query("DELETE FROM public._sqlx_migrations WHERE version = $1")
        .bind(marker)
        .execute(&mut conn)
        .await
        .expect("remove marker");
    if !existed {
        sqlx::raw_sql("DROP TABLE IF EXISTS public._sqlx_migrations")
            .execute(&mut conn)
            .await
            .expect("drop");
    }
}

fn rand_u16() -> u16 {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    u16::from_be_bytes([bytes[0], bytes[1]])
}

#[tokio::test]
async fn concurrent_first_migrations_of_one_schema_serialize() {
    let (_store, guard) = open().await;
    let schema = format!("{}_x", guard.schema());
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let schema = schema.clone();
        tasks.push(tokio::spawn(async move {
            PostgresStore::open(
                PostgresOptions {
                    pool_size: 1,
                    ..PostgresOptions::with_schema(schema)
                }
                .with_url(test_url()),
            )
            .await
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task").map(|_| ()));
    }
    let mut conn = admin().await;
    let count: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {schema}.docket_schema_migrations"
    ))
    .fetch_one(&mut conn)
    .await
    .expect("count");
    sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&mut conn)
        .await
        .expect("drop");
    for result in results {
        result.expect("every starter succeeds");
    }
    assert_eq!(count, i64::from(LATEST_VERSION));
}

#[tokio::test]
async fn a_schema_newer_than_this_build_or_missing_without_migrate_is_refused() {
    let (_store, guard) = open().await;
    let mut conn = admin().await;
    sqlx::query(&format!(
        "INSERT INTO {}.docket_schema_migrations (version, description) VALUES (99, 'future')",
        guard.schema()
    ))
    .execute(&mut conn)
    .await
    .expect("future version");
    for migrate in [true, false] {
        let result = PostgresStore::open(
            PostgresOptions {
                migrate,
                ..PostgresOptions::with_schema(guard.schema())
            }
            .with_url(test_url()),
        )
        .await;
        assert!(
            matches!(
                result,
                Err(StoreError::Unavailable {
                    retryable: false,
                    ..
                })
            ),
            "{result:?}"
        );
    }
    let missing = PostgresStore::open(
        PostgresOptions {
            migrate: false,
            ..PostgresOptions::with_schema(format!("{}_missing", guard.schema()))
        }
        .with_url(test_url()),
    )
    .await;
    assert!(
        matches!(
            missing,
            Err(StoreError::Unavailable {
                retryable: false,
                ..
            })
        ),
        "{missing:?}"
    );
}

#[tokio::test]
async fn bad_options_and_unreachable_servers_fail_with_typed_errors() {
    let bad =
        PostgresStore::open(PostgresOptions::with_schema("Robert'); DROP").with_url(test_url()))
            .await;
    assert!(
        matches!(bad, Err(StoreError::InvalidArgument { .. })),
        "{bad:?}"
    );
    let zero = PostgresStore::open(
        PostgresOptions {
            pool_size: 0,
            ..PostgresOptions::default()
        }
        .with_url(test_url()),
    )
    .await;
    assert!(
        matches!(zero, Err(StoreError::InvalidArgument { .. })),
        "{zero:?}"
    );
    let unreachable = PostgresHarness::new()
        .url("postgres://postgres@127.0.0.1:1/test")
        .open_store()
        .await;
    assert!(
        matches!(
            unreachable,
            Err(StoreError::Unavailable {
                retryable: true,
                ..
            })
        ),
        "{unreachable:?}"
    );
    let url = format!("{}?schema=docket_t_url_probe&pool_size=2", test_url());
    let via_url = PostgresStore::connect(&url).await.expect("connect via url");
    assert_eq!(via_url.schema(), "docket_t_url_probe");
    let mut conn = admin().await;
    sqlx::raw_sql("DROP SCHEMA docket_t_url_probe CASCADE")
        .execute(&mut conn)
        .await
        .expect("drop");
    let _ = testing::fresh_schema_name();
}

/// Docket's relations and function in `schema`, as the catalogue lists them.
async fn docket_objects_in(conn: &mut PgConnection, schema: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1
            AND c.relname IN ('docket_schema_migrations', 'graph_versions', 'runs', 'events')
         UNION ALL
         SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = $1 AND p.proname = 'raise_event_conflict'
         ORDER BY 1",
    )
    .bind(schema)
    .fetch_all(conn)
    .await
    .expect("catalogue")
}

#[tokio::test]
async fn system_schemas_and_public_are_refused_before_anything_is_created() {
    let mut conn = admin().await;
    for schema in ["information_schema", "pg_catalog", "pg_toast", "public"] {
        let before = docket_objects_in(&mut conn, schema).await;
        let url = format!("{}?schema={schema}", test_url());
        let err = PostgresStore::connect(&url)
            .await
            .expect_err("a reserved schema is refused");
        assert!(
            matches!(err, StoreError::InvalidArgument { .. }),
            "{schema}: {err}"
        );
        assert!(err.to_string().contains(schema), "{err}");
        assert_eq!(
            docket_objects_in(&mut conn, schema).await,
            before,
            "{schema}"
        );
    }
    let err = PostgresStore::connect(&format!("{}?schema=docket_a&schema=docket_b", test_url()))
        .await
        .expect_err("a repeated schema is refused");
    assert!(err.to_string().contains("more than once"), "{err}");
}

/// A starter's version check finds no schema; while it waits for the migration lock, the
/// holder creates the schema (and nothing else). The starter must end with a fully migrated
/// schema, whether its `CREATE SCHEMA IF NOT EXISTS` sees the new schema or collides with it
/// and starts over.
#[tokio::test]
async fn a_starter_that_waited_while_another_created_the_schema_still_migrates() {
    let (_store, guard) = open().await;
    let schema = format!("{}_w", guard.schema());
    let mut holder = admin().await;
    let mut tx = holder.begin().await.expect("begin");
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("docket:migrate:{schema}"))
        .execute(&mut *tx)
        .await
        .expect("take the migration lock");
    let starter = tokio::spawn({
        let schema = schema.clone();
        async move {
            PostgresStore::open(
                PostgresOptions {
                    pool_size: 1,
                    ..PostgresOptions::with_schema(schema)
                }
                .with_url(test_url()),
            )
            .await
            .map(|_| ())
        }
    });
    let mut watcher = admin().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND pid IN (SELECT pid FROM pg_stat_activity WHERE query LIKE '%' || $1 || '%')",
        )
        .bind(&schema)
        .fetch_one(&mut watcher)
        .await
        .expect("locks");
        if waiting > 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the starter never waited for the lock"
        );
        tokio::task::yield_now().await;
    }
    sqlx::raw_sql(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut *tx)
        .await
        .expect("create the schema under the lock");
    tx.commit().await.expect("commit");
    let migrated = starter.await.expect("task");
    let version: Result<i32, _> = sqlx::query_scalar(&format!(
        "SELECT max(version) FROM {schema}.docket_schema_migrations"
    ))
    .fetch_one(&mut watcher)
    .await;
    sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&mut watcher)
        .await
        .expect("drop");
    migrated.expect("the starter migrates");
    assert_eq!(version.expect("version"), LATEST_VERSION);
}

/// A store written at schema version 3 (rows claimed and due, no fair-claim objects yet)
/// migrates to the latest version in place: its rows decode with no admission marker, `Oldest` and
/// `TenantFair` claims both work on it, and the claimed run keeps its claim.
#[tokio::test]
async fn a_version_3_store_with_runs_migrates_to_tenant_fair_claiming() {
    let (store, guard) = open().await;
    let schema = guard.schema().to_owned();
    start(&store, &tenant("a"), "held", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    start(&store, &tenant("a"), "a-due", t(0)).await;
    start(&store, &tenant("b"), "b-due", t(0)).await;
    // Back to what version 3 stored: the objects versions 4 to 10 added are gone and the
    // constraints version 9 replaced are back.
    let mut conn = admin().await;
    roll_back_version_9(&mut conn, &schema).await;
    sqlx::raw_sql(&format!(
        "ALTER TABLE {schema}.runs DROP CONSTRAINT runs_admitted_shape_check;
         DROP FUNCTION {schema}.docket_claim_fair;
         DROP FUNCTION {schema}.raise_batch_event_conflict;
         DROP TABLE {schema}.claim_cursor, {schema}.tenant_shares;
         DROP INDEX {schema}.runs_ready_owner_index;
         ALTER TABLE {schema}.runs DROP COLUMN admitted_at;
         DELETE FROM {schema}.docket_schema_migrations WHERE version >= 4;"
    ))
    .execute(&mut conn)
    .await
    .expect("back to version 3");
    drop(store);
    let store = migrate_in_place(&mut conn, &schema).await;
    let held = testing::operational_state(&store, &rid("held"))
        .await
        .expect("decode");
    assert_eq!(held.claim_token.as_ref(), Some(&lease.claim_token));
    assert_eq!(held.admitted_at, None);
    let fair = docket_core::store::ClaimRequest {
        policy: docket_core::store::ClaimPolicy::TenantFair,
        ..policy(t(2), 1)
    };
    let batch = store.claim_due(&fair).await.expect("fair claim");
    assert_eq!(lease_ids(&batch), ["a-due"]);
    let admitted = testing::operational_state(&store, &rid("a-due"))
        .await
        .expect("decode");
    assert_eq!(admitted.admitted_at, Some(t(2)));
    let batch = store
        .claim_due(&policy(t(2), 5))
        .await
        .expect("oldest claim");
    assert_eq!(lease_ids(&batch), ["b-due"]);
    drop(guard);
}

/// The constraints schema versions 1 and 4 declared on `runs`, which version 9 replaced with
/// one: a schema rolled back to version 8 has them again.
const VERSION_8_RUN_CHECKS: &str = "
    ADD CONSTRAINT runs_tenant_id_check CHECK (tenant_id IS NULL OR tenant_id <> ''),
    ADD CONSTRAINT runs_status_check
        CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
    ADD CONSTRAINT runs_finished_at_check
        CHECK ((status IN ('done', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    ADD CONSTRAINT runs_claim_pair_check CHECK ((claim_token IS NULL) = (claimed_at IS NULL)),
    ADD CONSTRAINT runs_poison_pair_check CHECK ((poisoned_at IS NULL) = (poison_reason IS NULL)),
    ADD CONSTRAINT runs_poison_reason_check
        CHECK (poison_reason IN ('max_claim_attempts_exceeded', 'max_claim_abandons_exceeded')),
    ADD CONSTRAINT runs_waiting_terminal_idle_check
        CHECK (status = 'running' OR (claim_token IS NULL AND wake_at IS NULL AND poisoned_at IS NULL)),
    ADD CONSTRAINT runs_poisoned_shape_check
        CHECK (poisoned_at IS NULL OR (status = 'running' AND claim_token IS NULL AND wake_at IS NULL)),
    ADD CONSTRAINT runs_running_schedule_check
        CHECK (status <> 'running' OR poisoned_at IS NOT NULL
               OR ((wake_at IS NOT NULL) <> (claim_token IS NOT NULL))),
    ADD CONSTRAINT runs_counters_check
        CHECK (step >= 0 AND checkpoint_seq >= 0 AND event_seq >= 0
               AND claim_attempts >= 0 AND claim_abandons >= 0),
    ADD CONSTRAINT runs_checkpoint_type_check
        CHECK (latest_checkpoint_type IN ('run_initialized', 'step_committed', 'retry_scheduled',
               'interrupt_requested', 'interrupt_resolved', 'run_completed', 'run_failed',
               'run_cancelled')),
    ADD CONSTRAINT runs_admitted_shape_check
        CHECK (admitted_at IS NULL OR (status = 'running' AND poisoned_at IS NULL))";

/// Opens the store of `schema` again, which migrates it to the latest version, and checks that
/// it recorded that version.
async fn migrate_in_place(conn: &mut PgConnection, schema: &str) -> PostgresStore {
    let options = PostgresOptions {
        schema: schema.to_owned(),
        ..docket_postgres::parse_url(&test_url()).expect("url")
    };
    let store = PostgresStore::open(options)
        .await
        .expect("migrate to the latest version");
    let version: i32 = sqlx::query_scalar(&format!(
        "SELECT max(version) FROM {schema}.docket_schema_migrations"
    ))
    .fetch_one(conn)
    .await
    .expect("version");
    assert_eq!(version, LATEST_VERSION);
    store
}

/// Takes `schema` back to what version 12 stored: the listing and graph indexes are on `runs`
/// again and `run_listing` is gone.
async fn roll_back_version_13(conn: &mut PgConnection, schema: &str) {
    sqlx::raw_sql(&format!(
        "DROP TABLE {schema}.run_listing;
         ALTER TABLE {schema}.runs ADD CONSTRAINT runs_graph_fkey
             FOREIGN KEY (scope_key, graph_id, graph_hash)
             REFERENCES {schema}.graph_versions (scope_key, graph_id, graph_hash)
             ON DELETE RESTRICT;
         CREATE INDEX runs_list_index ON {schema}.runs (started_at DESC, run_id DESC);
         CREATE INDEX runs_scope_list_index
             ON {schema}.runs (scope_key, started_at DESC, run_id DESC);
         CREATE INDEX runs_graph_index ON {schema}.runs (scope_key, graph_id, graph_hash);
         DELETE FROM {schema}.docket_schema_migrations WHERE version >= 13;"
    ))
    .execute(conn)
    .await
    .expect("back to version 12");
}

/// Takes `schema` back to what version 11 stored: `events.run_id` references `runs` again,
/// deleting a run's events with it.
async fn roll_back_version_12(conn: &mut PgConnection, schema: &str) {
    roll_back_version_13(conn, schema).await;
    sqlx::raw_sql(&format!(
        "ALTER TABLE {schema}.events ADD CONSTRAINT events_run_id_fkey FOREIGN KEY (run_id)
             REFERENCES {schema}.runs (run_id) ON DELETE CASCADE;
         DELETE FROM {schema}.docket_schema_migrations WHERE version >= 12;"
    ))
    .execute(conn)
    .await
    .expect("back to version 11");
}

/// Takes `schema` back to what version 9 stored: the claim start and the generated retention
/// column are gone (and the two indexes keyed on them with them), the version-9 indexes and
/// the version-8 tenant-fair claim function are back.
async fn roll_back_version_10(conn: &mut PgConnection, schema: &str) {
    roll_back_version_12(conn, schema).await;
    let fair_claim = include_str!("../src/sql/v8.sql").replace("{s}", schema);
    sqlx::raw_sql(&format!(
        "ALTER TABLE {schema}.runs DROP CONSTRAINT runs_claim_start_check,
             DROP COLUMN retained_since, DROP COLUMN claim_started_at, RESET (fillfactor);
         CREATE INDEX runs_expired_index ON {schema}.runs (claimed_at, run_id)
             WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;
         CREATE INDEX runs_terminal_retention_index ON {schema}.runs (updated_at, run_id)
             WHERE status IN ('done', 'failed', 'cancelled');
         {fair_claim}
         DELETE FROM {schema}.docket_schema_migrations WHERE version >= 10;"
    ))
    .execute(conn)
    .await
    .expect("back to version 9");
}

/// Takes `schema` back to what version 8 stored.
async fn roll_back_version_9(conn: &mut PgConnection, schema: &str) {
    roll_back_version_10(conn, schema).await;
    sqlx::raw_sql(&format!(
        "ALTER TABLE {schema}.runs DROP CONSTRAINT runs_row_invariants_check,
             {VERSION_8_RUN_CHECKS};
         DROP FUNCTION {schema}.docket_check_run_row;
         DELETE FROM {schema}.docket_schema_migrations WHERE version >= 9;"
    ))
    .execute(conn)
    .await
    .expect("back to version 8");
}

/// Starts run `id` of tenant `a`, claims it at 1 ms and commits it done at 7 ms.
async fn finish_a_run(store: &PostgresStore, id: &str) {
    let run = start(store, &tenant("a"), id, t(0)).await;
    let lease = claim_one(store, t(1)).await;
    let terminal = ClaimedSchedule::Release(ReleaseWake::Terminal);
    commit_moment(
        store,
        &lease.claim_token,
        &run,
        done(&run, t(7)),
        terminal,
        t(7),
    )
    .await;
}

/// A pruner pass at 10 s deleting, one per category, what is older than a second.
fn prune_one_of_each_older_than_a_second() -> docket_core::store::PrunePolicy {
    docket_core::store::PrunePolicy {
        now: t(10_000),
        run_retention_ms: 1_000,
        event_retention_ms: 1_000,
        batch_size: std::num::NonZeroU32::MIN,
    }
}

/// The names of the constraints of kind `kind` (`pg_constraint.contype`: `c` check, `f`
/// foreign key) on `schema.table`, sorted.
async fn constraints(
    conn: &mut PgConnection,
    schema: &str,
    table: &str,
    kind: &str,
) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT c.conname::text FROM pg_constraint AS c
         JOIN pg_class AS t ON t.oid = c.conrelid
         JOIN pg_namespace AS n ON n.oid = t.relnamespace
         WHERE n.nspname = $1 AND t.relname = $2 AND c.contype = $3::\"char\"
         ORDER BY 1",
    )
    .bind(schema)
    .bind(table)
    .bind(kind)
    .fetch_all(conn)
    .await
    .expect("constraints")
}

/// The names of the `CHECK` constraints on `runs`, sorted.
async fn run_checks(conn: &mut PgConnection, schema: &str) -> Vec<String> {
    constraints(conn, schema, "runs", "c").await
}

/// The foreign keys declared on `events`, sorted.
async fn event_foreign_keys(conn: &mut PgConnection, schema: &str) -> Vec<String> {
    constraints(conn, schema, "events", "f").await
}

/// A store written at schema version 8, with runs due, claimed, poisoned, admitted and done,
/// migrates to the one row-invariant constraint of version 9 in place: every stored row passes
/// it, the twelve constraints it replaces are gone, the store works on, and a write that breaks
/// an invariant is still refused, now naming the invariant and the run.
#[tokio::test]
async fn a_version_8_store_with_runs_in_every_shape_migrates_to_one_row_constraint() {
    let (store, guard) = open().await;
    let schema = guard.schema().to_owned();
    start(&store, &tenant("a"), "held", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    start(&store, &tenant("a"), "due", t(0)).await;
    start(&store, &tenant("a"), "finished", t(0)).await;
    let finisher = claim_one(&store, t(2)).await;
    assert_eq!(
        finisher.run_id,
        rid("due"),
        "claims go oldest first, by run id"
    );
    let mut conn = admin().await;
    // A poisoned row and a finished one, written as version 8 allowed them.
    sqlx::raw_sql(&format!(
        "UPDATE {schema}.runs SET wake_at = NULL, poisoned_at = 5,
             poison_reason = 'max_claim_attempts_exceeded' WHERE run_id = 'finished';
         UPDATE {schema}.runs SET status = 'done', claim_token = NULL, claimed_at = NULL,
             claim_started_at = NULL, finished_at = 6, latest_checkpoint_type = 'run_completed'
         WHERE run_id = 'due';"
    ))
    .execute(&mut conn)
    .await
    .expect("poison one run and finish another");
    start(&store, &tenant("b"), "admitted", t(0)).await;
    let fair = docket_core::store::ClaimRequest {
        policy: docket_core::store::ClaimPolicy::TenantFair,
        ..policy(t(3), 1)
    };
    let batch = store.claim_due(&fair).await.expect("fair claim");
    assert_eq!(lease_ids(&batch), ["admitted"]);
    roll_back_version_9(&mut conn, &schema).await;
    assert_eq!(run_checks(&mut conn, &schema).await.len(), 12);
    let before = dump_version_9_store(&mut conn, &schema).await;
    drop(store);

    let store = migrate_in_place(&mut conn, &schema).await;
    assert_eq!(
        run_checks(&mut conn, &schema).await,
        ["runs_claim_start_check", "runs_row_invariants_check"]
    );
    let migrated = dump_version_9_store(&mut conn, &schema).await;
    assert_eq!(migrated, before, "migrating changed no row");
    let held = testing::operational_state(&store, &rid("held"))
        .await
        .expect("decode");
    assert_eq!(held.claim_token.as_ref(), Some(&lease.claim_token));
    let admitted = testing::operational_state(&store, &rid("admitted"))
        .await
        .expect("decode");
    assert_eq!(admitted.admitted_at, Some(t(3)));

    let refused = sqlx::query(&format!(
        "UPDATE {schema}.runs SET claim_token = NULL, claim_started_at = NULL
         WHERE run_id = 'held'"
    ))
    .execute(&mut conn)
    .await
    .expect_err("a claim time without its token");
    let database = refused.as_database_error().expect("a database error");
    assert_eq!(database.code().as_deref(), Some("23514"));
    assert_eq!(database.constraint(), Some("runs_row_invariants_check"));
    let message = database.message();
    assert!(
        message.contains("held") && message.contains("claimed_at"),
        "the refusal names the run and the invariant: {message}"
    );
    let after = dump_version_9_store(&mut conn, &schema).await;
    assert_eq!(after, before, "the refused write left no trace");
    drop(guard);
}

/// A store written at schema version 9 — a claim renewed by a commit, a finished run, a due
/// one — migrates in place to version 10: every column version 9 stored is unchanged, the held
/// claim's start is its claim time, the finished run's retention key is its `updated_at`, and
/// the renewed claim still expires a TTL after its last commit.
#[tokio::test]
async fn a_version_9_store_migrates_to_claim_starts_and_a_generated_retention_key() {
    let (store, guard) = open().await;
    let schema = guard.schema().to_owned();
    let held = start(&store, &tenant("a"), "held", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let retain = ClaimedSchedule::RetainClaim;
    let renewed = next(&held, t(5));
    commit_moment(&store, &lease.claim_token, &held, renewed, retain, t(5)).await;
    let finishing = start(&store, &tenant("b"), "finished", t(0)).await;
    let finisher = claim_one(&store, t(2)).await;
    let terminal = ClaimedSchedule::Release(ReleaseWake::Terminal);
    let finished = done(&finishing, t(7));
    let token = &finisher.claim_token;
    commit_moment(&store, token, &finishing, finished, terminal, t(7)).await;
    start(&store, &tenant("a"), "due", t(10)).await;
    let mut conn = admin().await;
    roll_back_version_10(&mut conn, &schema).await;
    let before = dump_version_9_store(&mut conn, &schema).await;
    drop(store);

    let store = migrate_in_place(&mut conn, &schema).await;
    let migrated = dump_version_9_store(&mut conn, &schema).await;
    assert_eq!(
        migrated, before,
        "migrating changed no column version 9 stored"
    );
    let added: Vec<(String, Option<i64>, Option<i64>)> = sqlx::query_as(&format!(
        "SELECT run_id::text, claim_started_at, retained_since FROM {schema}.runs
         ORDER BY run_id"
    ))
    .fetch_all(&mut conn)
    .await
    .expect("the added columns");
    let micros = |ms: i64| Some(t(ms).as_micros());
    assert_eq!(
        added,
        [
            ("due".to_owned(), None, None),
            ("finished".to_owned(), None, micros(7)),
            ("held".to_owned(), micros(5), None),
        ]
    );
    let ttl = 60_000;
    let after_claim = store
        .claim_due(&policy(t(1 + ttl).add_micros(1), 5))
        .await
        .expect("claim");
    assert_eq!(lease_ids(&after_claim), ["due"], "the renewed claim holds");
    let after_commit = store
        .claim_due(&policy(t(5 + ttl).add_micros(1), 5))
        .await
        .expect("claim");
    assert_eq!(lease_ids(&after_commit), ["held"], "then it expires");
    drop(guard);
}

/// A store written at schema version 11 migrates in place to version 12: the foreign key of
/// `events` is gone, every stored event is kept, commits append to the migrated store, and the
/// pruner still deletes an old finished run's remaining events with the run (which the key's
/// cascade did up to version 11), counts them, and leaves a live run's events alone.
#[tokio::test]
async fn a_version_11_store_migrates_to_events_without_a_foreign_key() {
    let (store, guard) = open().await;
    let schema = guard.schema().to_owned();
    finish_a_run(&store, "finished").await;
    let held = start(&store, &tenant("b"), "held", t(0)).await;
    let mut conn = admin().await;
    roll_back_version_12(&mut conn, &schema).await;
    assert_eq!(
        event_foreign_keys(&mut conn, &schema).await,
        ["events_run_id_fkey"]
    );
    let events_before = dump(&mut conn, &format!("{schema}.events")).await;
    drop(store);

    let store = migrate_in_place(&mut conn, &schema).await;
    assert!(event_foreign_keys(&mut conn, &schema).await.is_empty());
    assert_eq!(
        dump(&mut conn, &format!("{schema}.events")).await,
        events_before,
        "migrating kept every event"
    );
    let lease = claim_one(&store, t(2)).await;
    let retain = ClaimedSchedule::RetainClaim;
    commit_moment(
        &store,
        &lease.claim_token,
        &held,
        next(&held, t(3)),
        retain,
        t(3),
    )
    .await;
    let count_sql = format!("SELECT count(*) FROM {schema}.events WHERE run_id = $1");
    let count = |run: &'static str| sqlx::query_scalar::<_, i64>(&count_sql).bind(run);
    let finished_events = count("finished").fetch_one(&mut conn).await.expect("count");
    assert!(finished_events >= 2, "the finished run has its history");
    let held_events = count("held").fetch_one(&mut conn).await.expect("count");
    // With a batch of one, the age category deletes the oldest event — the finished run's
    // first (`finished` < `held` at the same time) — and the run takes the rest with it.
    let retention = prune_one_of_each_older_than_a_second();
    let report = store.prune(&retention).await.expect("prune");
    let cascaded = u64::try_from(finished_events - 1).expect("count");
    assert_eq!(
        (
            report.events_deleted,
            report.runs_deleted,
            report.cascade_events_deleted
        ),
        (1, 1, cascaded)
    );
    assert_eq!(
        count("finished").fetch_one(&mut conn).await.expect("count"),
        0
    );
    assert_eq!(
        count("held").fetch_one(&mut conn).await.expect("count"),
        held_events,
        "the live run keeps its events"
    );
    drop(guard);
}

/// The names of the indexes on `schema.table`, sorted.
async fn indexes(conn: &mut PgConnection, schema: &str, table: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 AND tablename = $2
         ORDER BY 1",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(conn)
    .await
    .expect("indexes")
}

/// Every page of `list_runs` in `scope` (one run per page, so the cursor is used), as run ids.
async fn listed(store: &PostgresStore, scope: &docket_core::model::Scope) -> Vec<String> {
    let mut ids = Vec::new();
    let mut before = None;
    loop {
        let page = store
            .list_runs(
                scope,
                &docket_core::model::RunQuery {
                    limit: 1,
                    before: before.clone(),
                    ..docket_core::model::RunQuery::default()
                },
            )
            .await
            .expect("page");
        ids.extend(page.runs.iter().map(|r| r.id.as_str().to_owned()));
        if !page.has_more {
            return ids;
        }
        before = page.next_before;
    }
}

/// A store written at schema version 12 migrates in place to version 13: every run gets its
/// listing row, the listing and graph indexes leave `runs`, the pages listed before are listed
/// after (the whole store and one owner's), a run started afterwards is listed, and the
/// pruner deletes a finished run's listing row with it.
#[tokio::test]
async fn a_version_12_store_migrates_to_a_listing_table_written_once_per_run() {
    let (store, guard) = open().await;
    let schema = guard.schema().to_owned();
    finish_a_run(&store, "finished").await;
    for (owner, id) in [("a", "a-live"), ("b", "b-live"), ("b", "b-other")] {
        start(&store, &tenant(owner), id, t(0)).await;
    }
    let owner_b = docket_core::model::Scope::from(tenant("b"));
    let (all_before, b_before) = (
        listed(&store, &SYSTEM).await,
        listed(&store, &owner_b).await,
    );
    assert_eq!(all_before.len(), 4);
    assert_eq!(b_before.len(), 2);
    let mut conn = admin().await;
    roll_back_version_13(&mut conn, &schema).await;
    assert!(indexes(&mut conn, &schema, "runs")
        .await
        .contains(&"runs_list_index".to_owned()));
    drop(store);

    let store = migrate_in_place(&mut conn, &schema).await;
    let on_runs = indexes(&mut conn, &schema, "runs").await;
    for gone in [
        "runs_list_index",
        "runs_scope_list_index",
        "runs_graph_index",
    ] {
        assert!(
            !on_runs.contains(&gone.to_owned()),
            "{gone} left runs: {on_runs:?}"
        );
    }
    assert_eq!(
        indexes(&mut conn, &schema, "run_listing").await,
        [
            "run_listing_graph_index",
            "run_listing_list_index",
            "run_listing_scope_list_index"
        ]
    );
    assert_eq!(listed(&store, &SYSTEM).await, all_before);
    assert_eq!(listed(&store, &owner_b).await, b_before);

    start(&store, &tenant("b"), "b-new", t(0)).await;
    let mut all_after = listed(&store, &SYSTEM).await;
    assert_eq!(all_after.len(), 5);
    all_after.retain(|id| id != "b-new");
    assert_eq!(
        all_after, all_before,
        "a start lists its run among the others"
    );

    let listing_rows = format!("SELECT count(*) FROM {schema}.run_listing WHERE run_id = $1");
    let rows_of = |run: &'static str| sqlx::query_scalar::<_, i64>(&listing_rows).bind(run);
    assert_eq!(
        rows_of("finished")
            .fetch_one(&mut conn)
            .await
            .expect("count"),
        1
    );
    let retention = prune_one_of_each_older_than_a_second();
    let report = store.prune(&retention).await.expect("prune");
    assert_eq!(report.runs_deleted, 1);
    assert_eq!(
        rows_of("finished")
            .fetch_one(&mut conn)
            .await
            .expect("count"),
        0
    );
    assert_eq!(listed(&store, &SYSTEM).await.len(), 4);
    drop(guard);
}
