//! Shared fixtures of the docket integration tests: a facade over the memory store with a
//! manual clock, sequential ids and zero jitter, and helpers to drive runs.
#![allow(dead_code)]

pub mod scripted;
pub mod telemetry;

use std::sync::Arc;

use docket::core::memory::MemoryStore;
use docket::core::model::{Clock, ManualClock, Run, RunId, RunStatus, Timestamp};
use docket::core::node::NodeRegistry;
use docket::core::runtime::SequentialIds;
use docket::core::store::Backend;
use docket::engine::{NoJitter, WorkerConfig};
use docket::{Docket, DocketBuilder, TestingMode};

/// The instant every fixture clock starts at.
pub const T0_MS: i64 = 1_700_000_000_000;

/// `T0 + ms`.
pub fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(T0_MS + ms)
}

/// A facade in a testing mode over a memory store.
pub struct Fx {
    pub clock: ManualClock,
    pub store: Arc<MemoryStore>,
    pub docket: Docket,
}

/// A builder with the fixture's clock, ids and jitter over `backend`.
pub fn builder(
    backend: Arc<dyn Backend>,
    nodes: NodeRegistry,
    clock: &ManualClock,
) -> DocketBuilder {
    Docket::builder(backend, nodes)
        .clock(Arc::new(clock.clone()))
        .ids(Arc::new(SequentialIds::new()))
        .jitter(Arc::new(NoJitter))
}

impl Fx {
    /// Manual testing mode, std nodes, default configuration.
    pub fn manual() -> Self {
        Self::with(
            TestingMode::Manual,
            docket::nodes::registry(),
            WorkerConfig::default(),
        )
    }

    pub fn with(mode: TestingMode, nodes: NodeRegistry, config: WorkerConfig) -> Self {
        let clock = ManualClock::new(at(0));
        let store = Arc::new(MemoryStore::new());
        let docket = builder(store.clone(), nodes, &clock)
            .config(config)
            .testing(mode)
            .build()
            .expect("valid configuration");
        Fx {
            clock,
            store,
            docket,
        }
    }

    /// Drains until the run waits or ends, moving the manual clock to each retry deadline.
    pub async fn drive(&self, run_id: &RunId) -> Run {
        for _ in 0..100 {
            self.docket.drain_runs(100).await.expect("drain");
            let info = self.docket.inspect_run(run_id).await.expect("inspect");
            if info.run.status != RunStatus::Running {
                return info.run;
            }
            match info.wake_at {
                Some(wake) if wake > self.clock.now() => self.clock.set(wake),
                _ => {}
            }
        }
        panic!("run {run_id} did not settle within 100 drains");
    }
}

pub mod graphs;

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use docket::core::lifecycle::{Checkpoint, CheckpointObserver, ObserverError};
use docket::core::model::{CheckpointType, Event, GraphRef, RunInfo, ValueMap};
use docket::core::store::{ClaimLease, ClaimRequest, Layered, RunStore};
use docket::engine::{Drained, GraphCompiler, MonotonicClock, Vehicle, VehicleError, WorkerStats};
use docket::StartOptions;

use scripted::Scripted;

/// Records the checkpoint types it observes.
#[derive(Debug, Default)]
pub struct Recorder(pub Mutex<Vec<CheckpointType>>);

#[async_trait]
impl CheckpointObserver for Recorder {
    async fn observe(&self, checkpoint: &Checkpoint) -> Result<(), ObserverError> {
        self.0
            .lock()
            .expect("lock")
            .push(checkpoint.checkpoint_type);
        Ok(())
    }
}

impl Recorder {
    pub fn seen(&self) -> Vec<CheckpointType> {
        self.0.lock().expect("lock").clone()
    }

    pub fn clear(&self) {
        self.0.lock().expect("lock").clear();
    }

    /// Waits (bounded) until `n` checkpoints were observed; observers run on their own tasks.
    pub async fn wait_for(&self, n: usize) -> Vec<CheckpointType> {
        poll_until(Duration::from_secs(5), || self.seen().len() >= n).await;
        self.seen()
    }
}

/// Polls `check` every 5 ms until it holds or `limit` passes (then panics).
pub async fn poll_until(limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A vehicle-level fixture: a scripted store, a manual-mode facade and an observer.
pub struct VFx {
    pub clock: ManualClock,
    pub store: Arc<Layered<Scripted>>,
    pub docket: Docket,
    pub stats: Arc<WorkerStats>,
    pub observed: Arc<Recorder>,
}

/// Optional parts of a [`VFx`].
#[derive(Default)]
pub struct Parts {
    pub compiler: Option<Arc<dyn GraphCompiler>>,
    pub monotonic: Option<Arc<dyn MonotonicClock>>,
    pub store: Option<Arc<Layered<Scripted>>>,
    pub clock: Option<ManualClock>,
    pub jitter: Option<Arc<dyn docket::engine::Jitter>>,
}

impl VFx {
    pub fn new(config: WorkerConfig) -> Self {
        Self::with(config, Parts::default())
    }

    pub fn with(config: WorkerConfig, parts: Parts) -> Self {
        let clock = parts.clock.unwrap_or_else(|| ManualClock::new(at(0)));
        let store = parts.store.unwrap_or_default();
        let observed = Arc::new(Recorder::default());
        let mut b = builder(store.clone(), docket::nodes::registry(), &clock)
            .config(config)
            .testing(TestingMode::Manual)
            .observer(observed.clone());
        if let Some(c) = parts.compiler {
            b = b.compiler(c);
        }
        if let Some(j) = parts.jitter {
            b = b.jitter(j);
        }
        if let Some(m) = parts.monotonic {
            b = b.monotonic(m);
        }
        VFx {
            clock,
            store,
            docket: b.build().expect("valid configuration"),
            stats: Arc::new(WorkerStats::new()),
            observed,
        }
    }

    pub async fn publish(&self, graph: &Value) -> GraphRef {
        self.docket
            .save_graph_json(&graph.to_string())
            .await
            .expect("the graph publishes")
    }

    pub async fn start(&self, graph: &Value) -> Run {
        let graph_ref = self.publish(graph).await;
        self.docket
            .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
            .await
            .expect("start")
    }

    /// Claims one due run at the clock's now.
    pub async fn claim(&self) -> ClaimLease {
        self.try_claim().await.expect("a due run to claim")
    }

    pub async fn try_claim(&self) -> Option<ClaimLease> {
        let config = self.docket.engine().config();
        let batch = self
            .store
            .inner
            .claim_due(&ClaimRequest {
                policy: Default::default(),
                now: self.clock.now(),
                limit: std::num::NonZeroU32::MIN,
                orphan_ttl_ms: config.orphan_ttl_ms,
                max_claim_attempts: std::num::NonZeroU32::new(config.max_claim_attempts)
                    .expect("positive"),
                preference: None,
            })
            .await
            .expect("claim");
        batch.leases.into_iter().next()
    }

    pub fn vehicle(&self) -> Vehicle {
        Vehicle::new(self.docket.engine(), self.stats.clone())
    }

    pub async fn drain(&self, lease: ClaimLease) -> Result<Drained, VehicleError> {
        self.vehicle().drain(lease).await
    }

    /// Claims and drains one run.
    pub async fn claim_and_drain(&self) -> Drained {
        let lease = self.claim().await;
        self.drain(lease)
            .await
            .expect("the drain ends without error")
    }

    /// Starts a run of `graph` and spends one claim attempt on it without launching (claim,
    /// then release), so under `max_claim_attempts: 1` its next claim poisons it.
    pub async fn start_with_an_attempt_spent(&self, graph: &Value) -> Run {
        let run = self.start(graph).await;
        let lease = self.claim().await;
        assert_eq!(lease.run_id, run.id);
        self.store
            .inner
            .release_claim(&lease.run_id, &lease.claim_token, self.clock.now())
            .await
            .expect("release");
        run
    }

    pub async fn info(&self, run_id: &RunId) -> RunInfo {
        self.docket.inspect_run(run_id).await.expect("inspect")
    }

    pub async fn events(&self, run_id: &RunId) -> Vec<Event> {
        self.docket.all_events(run_id).await.expect("events")
    }

    /// The committed runs' checkpoint events' `checkpoint_seq`s.
    pub async fn checkpoint_seqs(&self, run_id: &RunId) -> Vec<u64> {
        self.events(run_id)
            .await
            .iter()
            .filter(|e| e.event_type == docket::core::model::EventType::CheckpointCommitted)
            .filter_map(|e| e.metadata.get("checkpoint_seq").and_then(Value::as_u64))
            .collect()
    }
}

/// A jitter that always waits the full poll interval, so no early scheduled poll claims
/// during a test.
#[derive(Debug)]
pub struct FullInterval;

impl docket::engine::Jitter for FullInterval {
    fn jitter(&self, n: u64) -> u64 {
        n
    }
}
