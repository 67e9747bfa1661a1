//! The graph every test job runs, and its node: the job's tool name says how it ends.

use serde_json::json;

use docket::nodes;
use docket_core::graph::GraphDocument;
use docket_core::model::ValueMap;
use docket_core::node::{FnNode, NodeContext, NodeOutcome, NodeRegistry};
use meerkat_compose::jobs::terminal::{failed_reason, needs_attention_reason, worker_lost_reason};
use meerkat_compose::{JobFailureCode, JobSpec};

/// Tool names and the terminal class their job ends in.
pub const SUCCEED: &str = "succeed";
pub const FAIL: &str = "fail";
pub const LOSE: &str = "lose";
pub const ATTENTION: &str = "attention";
/// Fails its first attempt with a transient error, then succeeds.
pub const FLAKY: &str = "flaky";

pub fn graph() -> GraphDocument {
    GraphDocument::from_value(json!({
        "schema_version": 1,
        "id": "compose-test-job",
        "inputs": { "outcome": { "schema": { "type": "string" }, "required": true } },
        "fields": { "result_ref": { "schema": { "type": "string" } } },
        "outputs": { "result_ref": {} },
        "nodes": { "work": {
            "implementation": "test.job",
            "policies": { "retry": { "max_attempts": 2, "backoff_ms": 0 } }
        } },
        "edges": {
            "begin": { "from": "$start", "to": "work" },
            "end": { "from": "work", "to": "$finish" }
        }
    }))
    .expect("the test graph is valid")
}

pub fn input(spec: &JobSpec) -> ValueMap {
    let mut input = ValueMap::new();
    input.insert("outcome".into(), json!(spec.tool.0.name));
    input
}

fn code(text: &str) -> JobFailureCode {
    JobFailureCode::new(text).expect("valid code")
}

pub fn registry() -> NodeRegistry {
    let node = FnNode::new(|state: &ValueMap, _: &ValueMap, ctx: &NodeContext| {
        match state.get("outcome").and_then(|v| v.as_str()).unwrap_or("") {
            FLAKY if ctx.attempt == 1 => NodeOutcome::Error("transient".into()),
            FLAKY => NodeOutcome::update(json!({"result_ref": "result-1"})),
            SUCCEED => NodeOutcome::update(json!({"result_ref": "result-1"})),
            FAIL => NodeOutcome::Fail(failed_reason(&code("scan_failed"))),
            LOSE => NodeOutcome::Fail(worker_lost_reason()),
            ATTENTION => NodeOutcome::Fail(needs_attention_reason(&code("credentials_blocked"))),
            other => NodeOutcome::Fail(format!("unknown outcome {other:?}")),
        }
    });
    nodes::registry()
        .with("test.job", node)
        .expect("registers test.job")
}
