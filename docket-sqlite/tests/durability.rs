//! Durability knobs, persistence across reopen, schema versioning, lock contention.

mod common;

use std::time::Duration;

use common::*;
use docket_core::model::{RunStatus, Scope};
use docket_core::store::{
    BatchedCommit, ClaimedSchedule, ReleaseWake, RunStore, StoreError, StoreErrorKind,
};
use docket_sqlite::testing::{execute_sql, raw_snapshot, SqliteGuard};
use docket_sqlite::{SqliteOptions, SqliteStore, Synchronous, SCHEMA_VERSION};

#[tokio::test]
async fn the_defaults_are_wal_with_full_synchronous_and_foreign_keys() {
    let fx = fx().await;
    let settings = fx.store.effective_settings().await.unwrap();
    assert_eq!(settings.journal_mode, "wal");
    assert_eq!(settings.synchronous, Synchronous::Full.pragma_code());
    assert!(settings.foreign_keys);
    assert_eq!(settings.busy_timeout_ms, 5_000);
    assert_eq!(settings.schema_version, SCHEMA_VERSION);
    assert_eq!(settings.wal_size_limit_bytes, 64 * 1024 * 1024);
    assert!(!settings.sqlite_version.is_empty());
}

#[tokio::test]
async fn normal_synchronous_is_an_explicit_option() {
    let fx = fx_with(
        SqliteOptions::default()
            .with_synchronous(Synchronous::Normal)
            .with_busy_timeout(Duration::from_millis(750)),
    )
    .await;
    let settings = fx.store.effective_settings().await.unwrap();
    assert_eq!(settings.synchronous, Synchronous::Normal.pragma_code());
    assert_eq!(settings.busy_timeout_ms, 750);
    assert_eq!(settings.journal_mode, "wal");
}

#[tokio::test]
async fn a_claim_leaves_the_writer_at_the_configured_synchronous_level() {
    // A claim commits without syncing (`sql::immediate_unsynced`); every other write must
    // still sync as configured, so the writer is back at its level after each claim, whether
    // the claim leased something, found nothing or was refused.
    for level in [Synchronous::Full, Synchronous::Normal] {
        let fx = fx_with(SqliteOptions::default().with_synchronous(level)).await;
        fx.start("r1", t(0)).await;
        let leased = fx.store.claim_due(&policy(t(1), 1)).await.unwrap();
        assert_eq!(leased.leases.len(), 1, "{level:?}");
        let settings = fx.store.effective_settings().await.unwrap();
        assert_eq!(
            settings.synchronous,
            level.pragma_code(),
            "{level:?} after a lease"
        );
        let none = fx.store.claim_due(&policy(t(1), 1)).await.unwrap();
        assert!(none.leases.is_empty(), "{level:?}");
        let settings = fx.store.effective_settings().await.unwrap();
        assert_eq!(
            settings.synchronous,
            level.pragma_code(),
            "{level:?} after nothing"
        );
        // The lease still commits under its fence: the claim landed.
        let lease = &leased.leases[0];
        let run = fx
            .store
            .fetch_run(&Scope::System, &lease.run_id)
            .await
            .unwrap();
        let (next, events) = advance(&run, RunStatus::Running, t(2));
        fx.store
            .commit_claimed(
                &Scope::System,
                claimed(
                    next,
                    run.checkpoint_seq,
                    &lease.claim_token,
                    ClaimedSchedule::RetainClaim,
                    t(2),
                ),
                events,
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn the_url_form_opens_the_named_file_with_its_options() {
    let guard = SqliteGuard::new().unwrap();
    let url = format!(
        "sqlite://{}?synchronous=normal&readers=2",
        guard.path().display()
    );
    let store = SqliteStore::connect(&url).await.unwrap();
    assert_eq!(store.path(), guard.path());
    assert_eq!(store.options().readers, 2);
    assert_eq!(store.effective_settings().await.unwrap().synchronous, 1);
    let error = SqliteStore::connect("sqlite://x.db?journal=off")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::InvalidArgument);
}

#[tokio::test]
async fn committed_state_survives_closing_and_reopening() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (next, events) = advance(&run, RunStatus::Running, t(1));
    let next = fx
        .store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Immediate, t(1)),
            events,
        )
        .await
        .unwrap();
    let before = fx.snapshot();
    let Fx { store, guard, .. } = fx;
    drop(store);
    let reopened = SqliteStore::open(SqliteOptions::new(guard.path()))
        .await
        .unwrap();
    assert_eq!(
        reopened.fetch_run(&Scope::System, &run.id).await.unwrap(),
        next
    );
    assert_eq!(
        raw_snapshot(guard.path()).unwrap(),
        before,
        "reopening migrates nothing"
    );
}

#[tokio::test]
async fn a_newer_schema_version_is_refused_without_touching_the_file() {
    let guard = SqliteGuard::new().unwrap();
    drop(
        SqliteStore::open(SqliteOptions::new(guard.path()))
            .await
            .unwrap(),
    );
    execute_sql(
        guard.path(),
        &format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1),
    )
    .unwrap();
    let before = raw_snapshot(guard.path()).unwrap();
    let error = SqliteStore::open(SqliteOptions::new(guard.path()))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Unavailable {
                retryable: false,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("newer"), "{error}");
    assert_eq!(raw_snapshot(guard.path()).unwrap(), before);
}

#[tokio::test]
async fn a_database_of_another_application_is_refused() {
    let guard = SqliteGuard::new().unwrap();
    execute_sql(
        guard.path(),
        "PRAGMA application_id = 42; CREATE TABLE notes (body TEXT);",
    )
    .unwrap();
    let error = SqliteStore::open(SqliteOptions::new(guard.path()))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("another application"), "{error}");
}

#[tokio::test]
async fn concurrent_openers_of_a_fresh_file_migrate_once() {
    let guard = SqliteGuard::new().unwrap();
    let (a, b) = tokio::join!(
        SqliteStore::open(SqliteOptions::new(guard.path())),
        SqliteStore::open(SqliteOptions::new(guard.path())),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        a.effective_settings().await.unwrap().schema_version,
        SCHEMA_VERSION
    );
    assert_eq!(
        b.effective_settings().await.unwrap().schema_version,
        SCHEMA_VERSION
    );
}

#[tokio::test]
async fn invalid_options_and_unreachable_paths_are_refused() {
    let guard = SqliteGuard::new().unwrap();
    let error = SqliteStore::open(SqliteOptions::new(guard.path()).with_readers(0))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::InvalidArgument);
    let missing = guard.path().join("no-such-dir").join("x.db");
    let error = SqliteStore::open(SqliteOptions::new(&missing))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Unavailable {
                retryable: false,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_write_lock_held_elsewhere_past_the_busy_timeout_is_retryable_and_changes_nothing() {
    let fx = fx_with(SqliteOptions::default().with_busy_timeout(Duration::from_millis(100))).await;
    let run = fx.start("r1", t(0)).await;
    let mut other = rusqlite::Connection::open(fx.guard.path()).unwrap();
    let holder = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let (next, events) = advance(&run, RunStatus::Running, t(1));
    let proposal = unclaimed(next, ReleaseWake::Immediate, t(1));
    let error = fx
        .rejected(
            fx.store
                .commit_unclaimed(&Scope::System, 1, proposal.clone(), events.clone()),
        )
        .await;
    assert!(error.is_retryable(), "{error:?}");
    assert_eq!(error.kind(), StoreErrorKind::Unavailable);
    // Reads are not blocked by the writer in WAL mode.
    assert_eq!(
        fx.store.fetch_run(&Scope::System, &run.id).await.unwrap(),
        run
    );
    drop(holder);
    fx.store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .unwrap();
}

/// A whole batch fails as one when its transaction cannot begin: every member gets the same
/// retryable error, nothing is written, and the same batch lands in full once the lock is free.
#[tokio::test]
async fn a_commit_batch_that_cannot_take_the_write_lock_fails_every_member_alike_and_changes_nothing(
) {
    let fx = fx_with(SqliteOptions::default().with_busy_timeout(Duration::from_millis(100))).await;
    fx.start("r1", t(0)).await;
    fx.start("r2", t(0)).await;
    let leases = fx
        .store
        .claim_due(&policy(t(1), 2))
        .await
        .expect("claim")
        .leases;
    assert_eq!(leases.len(), 2);
    let mut members = Vec::new();
    for lease in &leases {
        let current = fx
            .store
            .fetch_run(&Scope::System, &lease.run_id)
            .await
            .expect("fetch");
        let (next, events) = advance(&current, RunStatus::Running, t(2));
        members.push(BatchedCommit {
            scope: Scope::System,
            proposal: claimed(
                next,
                current.checkpoint_seq,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            events,
        });
    }
    let mut other = rusqlite::Connection::open(fx.guard.path()).unwrap();
    let holder = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let before = fx.snapshot();
    let outcomes = fx.store.commit_claimed_batch(members.clone()).await;
    assert_eq!(before, fx.snapshot(), "a failed batch changed the store");
    assert_eq!(outcomes.len(), 2);
    let errors: Vec<StoreError> = outcomes
        .into_iter()
        .map(|o| o.expect_err("no member can land without the lock"))
        .collect();
    for error in &errors {
        assert_eq!(error.kind(), StoreErrorKind::Unavailable, "{error:?}");
        assert!(error.is_retryable(), "{error:?}");
    }
    assert_eq!(
        errors[0].to_string(),
        errors[1].to_string(),
        "one failure, told alike"
    );
    drop(holder);
    let outcomes = fx.store.commit_claimed_batch(members.clone()).await;
    for (outcome, member) in outcomes.into_iter().zip(&members) {
        let stored = outcome.expect("the same batch lands once the lock is free");
        assert_eq!(stored.checkpoint_seq, member.proposal.run.checkpoint_seq);
        assert_eq!(
            fx.store
                .fetch_run(&Scope::System, &stored.id)
                .await
                .expect("re-read"),
            stored
        );
    }
}

#[tokio::test]
async fn an_open_waiting_for_the_write_lock_gives_up_at_the_connect_timeout() {
    let fx = fx().await;
    let mut other = rusqlite::Connection::open(fx.guard.path()).unwrap();
    let holder = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    // The busy timeout alone would wait a minute for the lock the migration needs.
    let url = format!(
        "sqlite://{}?busy_timeout_ms=60000&connect_timeout_ms=300",
        fx.guard.path().display()
    );
    let started = std::time::Instant::now();
    let error = tokio::time::timeout(Duration::from_secs(30), SqliteStore::connect(&url))
        .await
        .expect("the open answers before the outer deadline")
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(error.is_retryable(), "{error:?}");
    assert_eq!(error.kind(), StoreErrorKind::Unavailable);
    assert!(error.to_string().contains("connect_timeout_ms"), "{error}");
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    drop(holder);
}
