//! The row invariants (`docs/state-machines.md`, “Row invariants”) hold in the database itself
//! (scenario 173 of `docs/scenarios.md`): a write that breaks one — from a buggy build, a
//! hand-edited row or another tool — is refused by a `CHECK` constraint (SQLSTATE 23514) and leaves
//! the schema unchanged, whatever wrote it.

mod common;

use common::*;
use docket_core::model::OwnerScope;
use sqlx::{Connection, PgConnection};

/// `(the invariant, an UPDATE/INSERT that breaks it)`; `{s}` is the schema, `$1` the run id.
const VIOLATIONS: &[(&str, &str)] = &[
    (
        "status is one of the five",
        "UPDATE {s}.runs SET status = 'paused' WHERE run_id = $1",
    ),
    (
        "a terminal run has finished_at",
        "UPDATE {s}.runs SET status = 'done', wake_at = NULL WHERE run_id = $1",
    ),
    (
        "a claim token comes with its claim time",
        "UPDATE {s}.runs SET claim_token = gen_random_uuid(), claim_started_at = 0,
             wake_at = NULL WHERE run_id = $1",
    ),
    (
        "a claim start comes with a claim token",
        "UPDATE {s}.runs SET claim_started_at = 1 WHERE run_id = $1",
    ),
    (
        "a claim token comes with its claim start",
        "UPDATE {s}.runs SET claim_token = gen_random_uuid(), claimed_at = 1, wake_at = NULL
         WHERE run_id = $1",
    ),
    (
        "a claim start is never after its claim time",
        "UPDATE {s}.runs SET claim_token = gen_random_uuid(), claimed_at = 1,
             claim_started_at = 2, wake_at = NULL WHERE run_id = $1",
    ),
    (
        "poison has both its time and its reason",
        "UPDATE {s}.runs SET poisoned_at = 1, wake_at = NULL WHERE run_id = $1",
    ),
    (
        "the poison reason is a known one",
        "UPDATE {s}.runs SET poisoned_at = 1, poison_reason = 'bored', wake_at = NULL
         WHERE run_id = $1",
    ),
    (
        "a waiting run has no wake",
        "UPDATE {s}.runs SET status = 'waiting' WHERE run_id = $1",
    ),
    (
        "a running, healthy run has exactly one of wake and claim",
        "UPDATE {s}.runs SET wake_at = NULL WHERE run_id = $1",
    ),
    (
        "counters are never negative",
        "UPDATE {s}.runs SET claim_attempts = -1 WHERE run_id = $1",
    ),
    (
        "the checkpoint type is a known one",
        "UPDATE {s}.runs SET latest_checkpoint_type = 'step_skipped' WHERE run_id = $1",
    ),
    (
        "a tenant id is never empty",
        "UPDATE {s}.runs SET tenant_id = '' WHERE run_id = $1",
    ),
    (
        "only a running, healthy run holds an admission marker",
        "UPDATE {s}.runs SET admitted_at = 1, poisoned_at = 1,
             poison_reason = 'max_claim_attempts_exceeded', wake_at = NULL WHERE run_id = $1",
    ),
    (
        "a tenant share has a positive weight",
        "INSERT INTO {s}.tenant_shares (tenant_id, weight, cap) VALUES ($1, 0, NULL)",
    ),
    (
        "a tenant share's cap is positive",
        "INSERT INTO {s}.tenant_shares (tenant_id, weight, cap) VALUES ($1, 1, 0)",
    ),
    (
        "the claim cursor names an owner and a count together",
        "UPDATE {s}.claim_cursor SET scope_key = $1",
    ),
    (
        "event seqs start at 1",
        "UPDATE {s}.events SET seq = 0 WHERE run_id = $1",
    ),
];

/// `(the invariant, the rule the refusal names)` for the invariants of `runs`, which one
/// constraint checks (`runs_row_invariants_check`): its message names the rule and the run.
const RUN_RULES: &[(&str, &str)] = &[
    (
        "status is one of the five",
        "the status is one of running, waiting, done, failed, cancelled",
    ),
    (
        "a terminal run has finished_at",
        "a run has finished_at exactly when it is terminal",
    ),
    (
        "a claim token comes with its claim time",
        "a claim token is present exactly when claimed_at is",
    ),
    (
        "poison has both its time and its reason",
        "poisoned_at and poison_reason are present together",
    ),
    (
        "the poison reason is a known one",
        "the poison reason is a known one",
    ),
    (
        "a waiting run has no wake",
        "a run that is not running has no claim, no wake and no poison",
    ),
    (
        "a running, healthy run has exactly one of wake and claim",
        "a healthy running run has exactly one of a wake and a claim",
    ),
    ("counters are never negative", "counters are never negative"),
    (
        "the checkpoint type is a known one",
        "the latest checkpoint type is a known one",
    ),
    ("a tenant id is never empty", "a tenant id is never empty"),
    (
        "only a running, healthy run holds an admission marker",
        "only a healthy running run holds an admission marker",
    ),
];

#[tokio::test]
async fn every_row_invariant_is_a_check_constraint_that_refuses_the_write() {
    let (store, guard) = open().await;
    start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let before = snapshot(&store).await;
    let mut conn = PgConnection::connect(&docket_postgres::testing::test_url())
        .await
        .expect("the PostgreSQL test server must be reachable");
    for (invariant, sql) in VIOLATIONS {
        let sql = sql.replace("{s}", guard.schema());
        let error = sqlx::query(&sql)
            .bind("r1")
            .execute(&mut conn)
            .await
            .expect_err(invariant);
        let code = error
            .as_database_error()
            .and_then(|e| e.code())
            .map(|c| c.into_owned());
        assert_eq!(
            code.as_deref(),
            Some("23514"),
            "{invariant}: expected a check violation, got {error}"
        );
        if let Some((_, rule)) = RUN_RULES.iter().find(|(name, _)| name == invariant) {
            let message = error.as_database_error().map(|e| e.message().to_owned());
            let message = message.unwrap_or_default();
            assert!(
                message.contains(rule) && message.contains("run r1 "),
                "{invariant}: the refusal names the rule ({rule}) and the run, got {message}"
            );
        }
    }
    assert_eq!(
        VIOLATIONS
            .iter()
            .filter(|(name, _)| RUN_RULES.iter().any(|(rule, _)| rule == name))
            .count(),
        RUN_RULES.len(),
        "every rule of runs has a violation above"
    );
    assert_eq!(
        snapshot(&store).await,
        before,
        "every refused write left no trace"
    );

    // The same columns accept a write that keeps the invariants, so the refusals above are
    // the constraints' doing and not a broken statement.
    let healthy = format!(
        "UPDATE {}.runs SET wake_at = wake_at + 1 WHERE run_id = $1",
        guard.schema()
    );
    let done = sqlx::query(&healthy)
        .bind("r1")
        .execute(&mut conn)
        .await
        .expect("a valid write");
    assert_eq!(done.rows_affected(), 1);
}
