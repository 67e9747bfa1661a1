//! Corrupt records are reported as `Corrupt`, never as absent, and never spread to other runs.

use docket_conformance::Harness;
use docket_core::model::{EventQuery, OwnerScope, RunQuery, Scope};
use docket_core::store::{RunStore, StoreErrorKind};
use docket_redis::testing::RedisHarness;

use crate::common::*;

#[tokio::test]
async fn an_undecodable_document_is_corrupt_and_other_runs_are_unaffected() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let bad = start_simple(&fx.store, &owner, "bad").await;
    let good = start_simple(&fx.store, &owner, "good").await;
    RedisHarness::from_env()
        .corrupt_run(&fx.guard, &bad.id)
        .await
        .expect("corrupt");
    for err in [
        fx.store
            .fetch_run(&Scope::System, &bad.id)
            .await
            .map(|_| ()),
        fx.store
            .inspect_run(&Scope::Tenantless, &bad.id)
            .await
            .map(|_| ()),
    ] {
        assert_eq!(err.expect_err("corrupt").kind(), StoreErrorKind::Corrupt);
    }
    assert_eq!(
        fx.store
            .fetch_run(&Scope::System, &good.id)
            .await
            .expect("good"),
        good
    );
    // Concealment still wins: another tenant sees nothing, corrupt or not.
    let hidden = fx
        .store
        .fetch_run(&scope_of(&tenant("other")), &bad.id)
        .await
        .expect_err("hidden");
    assert_eq!(hidden.kind(), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn wrong_types_and_disagreeing_fields_in_the_run_hash_are_corrupt() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let key = fx.store.keys().run(&run.id);
    for (field, value) in [
        ("attempts", &b"-1"[..]),
        ("seq", b"7"),
        ("wake_at", b"soon"),
        ("status", b"sleeping"),
        ("ckpt_type", b"nap"),
        ("poison_reason", b"max_claim_attempts_exceeded"),
        ("admitted_at", b"early"),
    ] {
        let original: Option<Vec<u8>> = fx
            .guard
            .command(redis::cmd("HGET").arg(&key).arg(field))
            .await
            .expect("read field");
        fx.guard
            .overwrite_field(&key, field, value)
            .await
            .expect("corrupt field");
        let err = fx
            .store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect_err(field);
        assert_eq!(err.kind(), StoreErrorKind::Corrupt, "{field}: {err}");
        match original {
            Some(v) => fx
                .guard
                .overwrite_field(&key, field, &v)
                .await
                .expect("restore"),
            None => fx
                .guard
                .command::<()>(redis::cmd("HDEL").arg(&key).arg(field))
                .await
                .expect("restore"),
        }
    }
    assert_eq!(
        fx.store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("restored"),
        run
    );
    fx.guard
        .overwrite_field(&key, "status", b"sleeping")
        .await
        .expect("corrupt status");
    let err = fx
        .store
        .list_runs(
            &Scope::System,
            &RunQuery {
                limit: 10,
                ..RunQuery::default()
            },
        )
        .await
        .expect_err("listing decodes summaries strictly");
    assert_eq!(err.kind(), StoreErrorKind::Corrupt);
}

#[tokio::test]
async fn a_corrupt_event_is_corrupt_in_every_read_and_never_skipped() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    RedisHarness::from_env()
        .corrupt_event(&fx.guard, &run.id, 1)
        .await
        .expect("corrupt");
    for err in [
        fx.store
            .fetch_event(&Scope::System, &run.id, 1)
            .await
            .map(|_| ()),
        fx.store
            .fetch_latest_event(&Scope::System, &run.id)
            .await
            .map(|_| ()),
        fx.store
            .list_events(
                &Scope::System,
                &run.id,
                &EventQuery {
                    after_seq: 0,
                    limit: 5,
                },
            )
            .await
            .map(|_| ()),
    ] {
        assert_eq!(err.expect_err("corrupt").kind(), StoreErrorKind::Corrupt);
    }
    // An event stored under another run's key is corrupt too.
    let other = start_simple(&fx.store, &OwnerScope::Tenantless, "r2").await;
    let body = serde_json::to_vec(&event(&other, 1, t(0), "init")).expect("json");
    fx.guard
        .overwrite_field(
            &fx.store.keys().events(&run.id),
            "0000000000000000001",
            &body,
        )
        .await
        .expect("misplace");
    let err = fx
        .store
        .fetch_event(&Scope::System, &run.id, 1)
        .await
        .expect_err("misplaced");
    assert_eq!(err.kind(), StoreErrorKind::Corrupt);
}

#[tokio::test]
async fn a_lease_carries_its_run_unless_the_document_is_undecodable() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let bad = start_simple(&fx.store, &owner, "bad").await;
    let good = start_simple(&fx.store, &owner, "good").await;
    RedisHarness::from_env()
        .corrupt_run(&fx.guard, &bad.id)
        .await
        .expect("corrupt");
    for fair in [false, true] {
        let mut request = policy(t(if fair { 70_000 } else { 10 }), 10, 60_000, 5, None);
        if fair {
            request.policy = docket_core::store::ClaimPolicy::TenantFair;
        }
        let batch = fx
            .store
            .claim_due(&request)
            .await
            .expect("one bad document blocks no claim");
        let mut carried: Vec<_> = batch
            .leases
            .iter()
            .map(|l| (l.run_id.clone(), l.run.clone()))
            .collect();
        carried.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            carried,
            vec![
                (bad.id.clone(), None),
                (good.id.clone(), Some(good.clone()))
            ],
            "fair: {fair}: the sound run travels with its lease, the damaged one is left to \
             fetch_run"
        );
    }
}
