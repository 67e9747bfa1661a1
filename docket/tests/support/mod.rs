//! Shared fixtures of the docket integration tests: a facade over the memory store with a
//! manual clock, sequential ids and zero jitter, and helpers to drive runs.
#![allow(dead_code)]

pub mod scripted;

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
