//! Release, refresh, abandon and poison recovery: each compared with the shared rules, and
//! stale tokens proven to change nothing.

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::OwnerScope;
use docket_core::store::rules::effects;
use docket_core::store::{AbandonBackoff, AbandonMode, AbandonPolicy, RunStore};
use docket_postgres::testing;

fn abandon(now: i64, retry_at: i64, max: u32, mode: AbandonMode) -> AbandonPolicy {
    AbandonPolicy {
        expected_seq: 1,
        now: t(now),
        retry_at: t(retry_at),
        max_claim_abandons: NonZeroU32::new(max).expect("max"),
        mode,
    }
}

/// The SQL backoff saturates like `rules::effects::backoff_wake` at the extremes.
#[tokio::test]
async fn backoff_arithmetic_saturates_like_the_rules() {
    let (store, _guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    for (abandons, base, cap) in [
        (0, 1, 1),
        (30, u64::MAX / 2, u64::MAX),
        (45, 7, 1 << 40),
        (3, u64::MAX, u64::MAX),
    ] {
        let lease = claim_one(&store, t(0)).await;
        let mut state = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        state.claim_abandons = abandons;
        testing::write_operational_state(&store, &run.id, &state)
            .await
            .expect("write");
        let mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff {
                base_ms: base,
                cap_ms: cap,
            }),
        };
        let policy = abandon(0, 0, 1, mode);
        store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        let wake = testing::operational_state(&store, &run.id)
            .await
            .expect("ops")
            .wake_at;
        assert_eq!(
            wake,
            Some(effects::backoff_wake(t(0), abandons, base, cap)),
            "{abandons} {base} {cap}"
        );
        // Make the run claimable again for the next case.
        let mut state = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        state.wake_at = Some(t(0));
        testing::write_operational_state(&store, &run.id, &state)
            .await
            .expect("write");
    }
}
