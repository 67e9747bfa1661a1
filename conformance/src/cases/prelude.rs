//! Imports every case file shares.

pub(crate) use docket_core::model::{
    CheckpointType, ClaimToken, Event, EventType, OwnerScope, PoisonReason, Run, RunId, RunInfo,
    RunStatus, Scope, Timestamp, ValueMap,
};
pub(crate) use docket_core::store::{
    AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy, ClaimClass, ClaimLease,
    ClaimRequest, ClaimedSchedule, ReleaseWake, StoreError, StoreErrorKind as K,
};
pub(crate) use serde_json::json;

pub(crate) use crate::env::Env;
pub(crate) use crate::fixtures::{
    abandon_policy, claim_policy, claimed_commit, event_query, init_moment, init_proposal, map,
    moment_to, nz, ok, rid, run_query, t, tenant, tenant_scope, tiny_graph, tiny_graph_version,
    unclaimed_commit, version_query, with_schedule, Claimed, Published, SuiteGraph,
};
