//! Acceptance criterion: for every script, each of its checks failing writes nothing. Every case
//! takes a raw snapshot of the whole namespace (every key, type and content), makes the call
//! and compares a fresh snapshot with the first one byte for byte.

mod others;
mod transitions;

use std::future::Future;

use docket_core::model::{Run, RunStatus, Scope};
use docket_core::store::{ClaimLease, ClaimedSchedule, ReleaseWake, StoreError, StoreErrorKind};

use crate::common::*;

/// Runs `op`, which must fail with `kind`, and proves the namespace is byte-identical after.
pub async fn rejected<T: std::fmt::Debug>(
    fx: &Fx,
    kind: StoreErrorKind,
    op: impl Future<Output = Result<T, StoreError>>,
) {
    let before = fx.snapshot().await;
    let err = op.await.expect_err("the call must be rejected");
    assert_eq!(err.kind(), kind, "{err}");
    assert_eq!(fx.snapshot().await, before, "a rejected call wrote: {err}");
}

/// Runs `op`, which answers success-shaped without changing anything, and proves it.
pub async fn no_op<T>(fx: &Fx, op: impl Future<Output = Result<T, StoreError>>) -> T {
    let before = fx.snapshot().await;
    let value = op.await.expect("success-shaped answer");
    assert_eq!(fx.snapshot().await, before, "a no-op call wrote");
    value
}

/// A namespace with a claimed run `r1` of tenant `acme` (lease returned), a waiting run `r2`
/// and a done run `r3`.
pub async fn populated() -> (Fx, Run, ClaimLease, Run, Run) {
    let fx = open().await;
    let owner = tenant("acme");
    let graph = publish(&fx.store, &owner, "g").await;
    let r2 = start(&fx.store, &owner, "r2", &graph, t(0)).await;
    let lease2 = claim_one(&fx.store, t(0)).await;
    let r2 = commit_as_holder(
        &fx.store,
        &r2,
        &lease2.claim_token,
        RunStatus::Waiting,
        ClaimedSchedule::Release(ReleaseWake::External),
        t(1),
    )
    .await;
    let r3 = start(&fx.store, &owner, "r3", &graph, t(0)).await;
    let lease3 = claim_one(&fx.store, t(1)).await;
    let r3 = commit_as_holder(
        &fx.store,
        &r3,
        &lease3.claim_token,
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        t(2),
    )
    .await;
    let r1 = start(&fx.store, &owner, "r1", &graph, t(2)).await;
    let lease = claim_one(&fx.store, t(3)).await;
    assert_eq!(lease.run_id, r1.id);
    (fx, r1, lease, r2, r3)
}

pub fn acme() -> Scope {
    scope_of(&tenant("acme"))
}
