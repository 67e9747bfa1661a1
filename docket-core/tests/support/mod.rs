//! Shared fixtures for the runtime integration tests: a manual clock, a recording sleeper,
//! sequential ids, logged test nodes and small graph helpers.
#![allow(dead_code, unused_imports)]

pub mod nodes;

use std::sync::Arc;

use docket_core::graph::{compile_for_publication, CompileOptions, GraphDocument, RuntimeGraph};
use docket_core::inline::{run_inline, InlineOptions, InlineRun, ManualSleeper};
use docket_core::model::{CheckpointType, Event, EventType, ManualClock, Run, Timestamp, ValueMap};
use docket_core::node::NodeRegistry;
use docket_core::runtime::{
    build_initial_run, propose_advance, propose_init, Initialization, Moment, Proposal,
    RuntimeConfig, SequentialIds,
};
use serde_json::{json, Value};

pub use nodes::{register, CallLog};

/// The instant every fixture clock starts at.
pub const T0_MS: i64 = 1_700_000_000_000;

/// `T0 + ms`.
pub fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(T0_MS + ms)
}

/// A test fixture.
pub struct Fx {
    pub clock: ManualClock,
    pub sleeper: Arc<ManualSleeper>,
    pub config: RuntimeConfig,
    pub log: CallLog,
    pub nodes: NodeRegistry,
    pub max_steps: Option<u64>,
}

impl Default for Fx {
    fn default() -> Self {
        Self::new()
    }
}

impl Fx {
    /// Clock at `T0`, sequential ids, the standard logged registry.
    pub fn new() -> Self {
        let clock = ManualClock::new(at(0));
        let log = CallLog::default();
        Fx {
            sleeper: Arc::new(ManualSleeper::new(clock.clone())),
            config: RuntimeConfig::new(Arc::new(clock.clone()))
                .with_ids(Arc::new(SequentialIds::new())),
            nodes: nodes::registry(&log),
            log,
            clock,
            max_steps: None,
        }
    }

    /// Sets the host attempt ceiling.
    pub fn max_attempt_ms(mut self, ms: u64) -> Self {
        self.config = self
            .config
            .with_max_attempt_elapsed_ms(ms)
            .expect("positive");
        self
    }

    /// Sets the host superstep fallback.
    pub fn host_max_supersteps(mut self, limit: u64) -> Self {
        self.config = self
            .config
            .with_max_supersteps(Some(limit))
            .expect("positive");
        self
    }

    /// Inline options over this fixture.
    pub fn options(&self) -> InlineOptions {
        InlineOptions::new(self.config.clone())
            .with_sleeper(self.sleeper.clone())
            .with_max_steps(self.max_steps)
    }

    /// Compiles `doc` for publication with this fixture's registry and host limits.
    pub fn compile(&self, doc: &GraphDocument) -> RuntimeGraph {
        compile_for_publication(
            doc,
            &self.nodes,
            CompileOptions {
                max_supersteps: self.config.max_supersteps(),
            },
        )
        .unwrap_or_else(|e| panic!("test graph must compile: {e:?}"))
        .runtime
    }

    /// Runs `doc` inline from `input` to its stop.
    pub async fn run(&self, doc: &GraphDocument, input: Value) -> InlineRun {
        run_inline(doc, input, &self.nodes, &self.options())
            .await
            .unwrap_or_else(|e| panic!("inline run failed: {e:?}"))
    }

    /// Builds and initializes a run of `rtg` (the committed `run_initialized` moment).
    pub fn start(&self, rtg: &RuntimeGraph, input: Value) -> Moment {
        let input = match input {
            Value::Object(map) => map,
            _ => ValueMap::new(),
        };
        let run = build_initial_run(rtg, input, None, ValueMap::new(), self.config.ids())
            .expect("run builds");
        match propose_init(rtg, &run, self.clock.now_ts()).expect("init proposes") {
            Initialization::Moment(m) => *m,
            Initialization::Terminal(_) => panic!("fresh run is not terminal"),
        }
    }

    /// One `propose_advance` with this fixture's config.
    pub async fn advance(&self, rtg: &RuntimeGraph, run: &Run) -> Proposal {
        propose_advance(rtg, run, &self.nodes, &self.config)
            .await
            .unwrap_or_else(|e| panic!("advance failed: {e:?}"))
    }

    /// One `propose_advance` that must propose a moment.
    pub async fn moment(&self, rtg: &RuntimeGraph, run: &Run) -> Moment {
        match self.advance(rtg, run).await {
            Proposal::Moment(m) => *m,
            other => panic!("expected a moment, got {other:?}"),
        }
    }
}

/// Reads a manual clock as a timestamp.
pub trait NowTs {
    /// The current instant.
    fn now_ts(&self) -> Timestamp;
}

impl NowTs for ManualClock {
    fn now_ts(&self) -> Timestamp {
        docket_core::model::Clock::now(self)
    }
}

/// A graph document from a JSON body; `schema_version` and `id` default to 1 and `"g"`.
pub fn doc(body: Value) -> GraphDocument {
    let mut map = body.as_object().cloned().expect("graph body is a map");
    map.entry("schema_version").or_insert(json!(1));
    map.entry("id").or_insert(json!("g"));
    GraphDocument::from_value(Value::Object(map)).expect("valid graph document")
}

/// `{"schema": {"type": ty}}`.
pub fn field(ty: &str) -> Value {
    json!({"schema": {"type": ty}})
}

/// A node running `implementation` with `config`.
pub fn node(implementation: &str, config: Value) -> Value {
    json!({"implementation": implementation, "config": config})
}

/// A `set` node writing `values`.
pub fn set(values: Value) -> Value {
    node("set", json!({"values": values}))
}

/// An edge.
pub fn edge(from: &str, to: &str) -> Value {
    json!({"from": from, "to": to})
}

/// Checkpoint types of an inline run.
pub fn types(run: &InlineRun) -> Vec<CheckpointType> {
    run.checkpoints.iter().map(|c| c.checkpoint_type).collect()
}

/// Event types of a moment's events.
pub fn event_types(events: &[Event]) -> Vec<EventType> {
    events.iter().map(|e| e.event_type).collect()
}

/// The committed value of state field `id` (or `None`).
pub fn state(run: &Run, id: &str) -> Option<Value> {
    run.channels
        .get(&format!("state:{id}"))
        .map(|c| c.value.clone())
}

/// `run.output[key]`.
pub fn output(run: &Run, key: &str) -> Value {
    run.output
        .as_ref()
        .and_then(|o| o.get(key))
        .cloned()
        .unwrap_or_else(|| panic!("output {key} missing from {:?}", run.output))
}

/// All events of an inline run, in commit order.
pub fn all_events(run: &InlineRun) -> Vec<Event> {
    run.checkpoints
        .iter()
        .flat_map(|c| c.events.iter().cloned())
        .collect()
}
