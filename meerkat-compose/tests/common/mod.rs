//! One harness for every backend: each case gets an isolated store (memory; a temp dir for
//! SQLite; a fresh schema for PostgreSQL; a fresh key namespace for Redis, all through the
//! backends' own `testing` modules) and can "reopen" it: drop every handle and connect again
//! to the same data, as a restarted process would.

#![allow(dead_code, missing_docs)]

pub mod cases;
pub mod job_graph;
pub mod wrappers;

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use docket::{Docket, TestingMode};
use docket_core::memory::MemoryStore;
use docket_core::model::{Clock, SystemClock};
use docket_core::ops::{OpsLifecycleRegistry, SessionId};
use docket_core::store::Backend;
use meerkat_compose::{
    BackendOps, ComposeStore, DocketJobAuthority, JobAuthority, MemoryComposeStore,
};

/// Which backend a case runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Postgres,
    Redis,
}

/// Open handles over one case's data.
pub struct Handles {
    pub docket: Docket,
    pub backend: Arc<dyn Backend>,
    pub store: ComposeStore,
    pub authority: DocketJobAuthority,
    pub jobs: Arc<dyn JobAuthority>,
    ops: Option<Arc<dyn OpsLifecycleRegistry>>,
    pub clock: Arc<dyn Clock>,
}

/// One case's isolated data and its cleanup guard.
pub struct Case {
    pub kind: Kind,
    location: Location,
    _guard: Box<dyn Any + Send>,
}

enum Location {
    Memory(Arc<MemoryStore>, MemoryComposeStore),
    #[cfg(feature = "sqlite")]
    Sqlite(std::path::PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
    #[cfg(feature = "redis")]
    Redis(String, String),
}

impl Case {
    /// A fresh, isolated case and its first handles.
    pub async fn open(kind: Kind) -> (Case, Handles) {
        let case = match kind {
            Kind::Memory => Case {
                kind,
                location: Location::Memory(Arc::new(MemoryStore::new()), MemoryComposeStore::new()),
                _guard: Box::new(()),
            },
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => {
                let guard = docket_sqlite::testing::SqliteGuard::new().expect("temp dir");
                Case {
                    kind,
                    location: Location::Sqlite(guard.path().to_owned()),
                    _guard: Box::new(guard),
                }
            }
            #[cfg(feature = "postgres")]
            Kind::Postgres => {
                let (store, guard) = docket_postgres::testing::PostgresHarness::new()
                    .open_store()
                    .await
                    .expect("PostgreSQL test server (DOCKET_TEST_POSTGRES_URL)");
                drop(store);
                let base = docket_postgres::testing::test_url();
                let separator = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{separator}schema={}", guard.schema());
                Case {
                    kind,
                    location: Location::Postgres(url),
                    _guard: Box::new(guard),
                }
            }
            #[cfg(feature = "redis")]
            Kind::Redis => {
                let (store, guard) = docket_redis::testing::RedisHarness::from_env()
                    .open_store()
                    .await
                    .expect("Redis test server (DOCKET_TEST_REDIS_URL)");
                let namespace = store.namespace().to_owned();
                drop(store);
                Case {
                    kind,
                    location: Location::Redis(docket_redis::testing::test_url(), namespace),
                    _guard: Box::new(guard),
                }
            }
            #[allow(unreachable_patterns)]
            other => panic!("backend {other:?} is compiled out: enable its feature"),
        };
        let handles = case.connect().await;
        (case, handles)
    }

    /// New handles over the same data (the old ones should be dropped first).
    pub async fn connect(&self) -> Handles {
        let (backend, store): (Arc<dyn Backend>, ComposeStore) = match &self.location {
            Location::Memory(backend, store) => (backend.clone(), ComposeStore::of(store.clone())),
            #[cfg(feature = "sqlite")]
            Location::Sqlite(path) => {
                let backend =
                    docket_sqlite::SqliteStore::open(docket_sqlite::SqliteOptions::new(path))
                        .await
                        .expect("open sqlite");
                let store = meerkat_compose::store::sqlite::SqliteComposeStore::open(path)
                    .await
                    .expect("open sqlite compose store");
                (Arc::new(backend), ComposeStore::of(store))
            }
            #[cfg(feature = "postgres")]
            Location::Postgres(url) => {
                let backend = docket_postgres::PostgresStore::connect(url)
                    .await
                    .expect("connect postgres");
                let store =
                    meerkat_compose::store::postgres::PostgresComposeStore::connect_url(url)
                        .await
                        .expect("connect postgres compose store");
                (Arc::new(backend), ComposeStore::of(store))
            }
            #[cfg(feature = "redis")]
            Location::Redis(url, namespace) => {
                let backend = docket_redis::RedisStore::open(docket_redis::RedisOptions::new(
                    url.as_str(),
                    namespace.as_str(),
                ))
                .await
                .expect("connect redis");
                let store =
                    meerkat_compose::store::redis::RedisComposeStore::connect(url, namespace)
                        .await
                        .expect("connect redis compose store");
                (Arc::new(backend), ComposeStore::of(store))
            }
        };
        let docket = Docket::builder(backend.clone(), job_graph::registry())
            .testing(TestingMode::Manual)
            .build()
            .expect("docket");
        let authority =
            DocketJobAuthority::new(docket.clone(), job_graph::graph(), store.ledger.clone())
                .expect("authority")
                .with_input(job_graph::input);
        let ops = BackendOps::new(backend.clone())
            .ok()
            .map(|ops| Arc::new(ops) as Arc<dyn OpsLifecycleRegistry>);
        Handles {
            docket,
            backend,
            store,
            jobs: Arc::new(authority.clone()),
            authority,
            ops,
            clock: Arc::new(SystemClock),
        }
    }
}

impl Handles {
    /// The backend's operation registry. A backend without one fails the case that needs it
    /// (never a skip).
    pub fn ops(&self) -> &Arc<dyn OpsLifecycleRegistry> {
        self.ops
            .as_ref()
            .expect("this backend offers no operation registry (`RunStore::ops_registry` is None)")
    }
}

/// A fresh session id.
pub fn session() -> SessionId {
    SessionId::random()
}

/// Drains due runs until none is left, with a deadline (the machine may be slow).
pub async fn drain(docket: &Docket) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let summary = docket.drain_runs(100).await.expect("drain");
        if !summary.limit_reached {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "drain did not finish in time"
        );
    }
}

/// Stamps one `#[tokio::test]` per case for a backend.
#[macro_export]
macro_rules! compose_suite {
    ($kind:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                common::cases::$case($kind).await;
            }
        )*
    };
}

/// Every shared case, in one list, so each backend file runs the same set.
#[macro_export]
macro_rules! all_compose_cases {
    ($kind:expr) => {
        $crate::compose_suite!($kind;
            redelivering_one_occurrence_ten_times_yields_one_job_and_one_run,
            changed_template_is_a_submission_conflict_and_starts_no_second_run,
            submission_keys_never_deduplicate_across_realms,
            eight_racing_projectors_add_exactly_one_evidence_entry,
            every_terminal_class_maps_to_its_evidence_exactly_once,
            disabled_workgraph_still_checks_job_truth,
            projecting_a_non_terminal_job_or_a_conflicting_entry_is_corrupt,
            await_is_durable_authorized_and_reopen_does_not_advance_the_job,
            awaiting_an_ended_job_closes_the_binding_for_every_class,
            completion_racing_await_registration_resolves_from_latest_truth,
            delivery_racing_await_registration_still_completes_the_wait,
            terminal_delivery_closes_the_wait_once_and_still_reaches_the_sink,
            delivery_without_a_binding_never_blocks_the_sink,
            a_foreign_operation_at_the_wait_id_is_rejected_and_left_running,
            activity_is_projected_only_while_the_binding_runs,
            delivery_after_owner_termination_applies_cleanly,
            two_concurrent_awaits_both_succeed_with_one_operation,
            failed_or_cancelled_delivery_while_provisioning_lets_await_succeed,
            a_terminal_that_disagrees_with_the_job_is_corrupt_and_leaves_the_op,
            crash_between_terminal_commit_and_delivery_delivers_once_after_restart,
            crash_after_delivery_before_acknowledgement_delivers_once_after_restart,
            evidence_port_refuses_stale_revisions_and_reserved_evidence,
            restart_classes_choose_the_retry_policy,
            a_blocked_delivery_holds_back_neither_other_jobs_nor_other_realms,
        );
    };
}
