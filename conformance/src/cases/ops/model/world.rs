//! One history applied to the registry under test and to a fresh reference memory registry
//! side by side: every result and every owner's whole state are compared after each step.

use std::fmt::Debug;
use std::sync::Arc;

use docket_core::memory::MemoryStore;
use docket_core::model::Timestamp;
use docket_core::ops::{
    OperationAction, OperationKind, OperationLifecycleSnapshot, OperationQuery, OperationResult,
    OperationSpec, OperationTerminalOutcome, OperationTransition, OpsError, OpsLifecycleRegistry,
    SessionId,
};
use docket_core::store::Backend;

use super::steps::{Act, Step, OWNERS};
use crate::fixtures::{op_id, session, t};

/// A divergence or a setup failure, described for the failure report.
pub type Divergence = String;

const NAMES: [&str; 3] = ["beta", "alpha", "Beta"];

/// An error as the comparison sees it: the domain errors with their payloads, the others by
/// kind (their messages belong to the backend).
fn comparable(error: &OpsError) -> String {
    match error {
        OpsError::AlreadyRegistered { .. }
        | OpsError::NotFound { .. }
        | OpsError::InvalidTransition { .. }
        | OpsError::MaxConcurrentExceeded { .. }
        | OpsError::OwnerRetired { .. } => error.to_string(),
        other => format!("{:?}", other.kind()),
    }
}

fn same<T: PartialEq + Debug>(
    what: &str,
    sut: &Result<T, OpsError>,
    model: &Result<T, OpsError>,
) -> Result<(), Divergence> {
    let agree = match (sut, model) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => comparable(a) == comparable(b),
        _ => false,
    };
    if agree {
        Ok(())
    } else {
        Err(format!("{what}:\n  backend: {sut:?}\n  model:   {model:?}"))
    }
}

fn transition(act: Act) -> OperationTransition {
    match act {
        Act::Start => OperationTransition::provisioning_succeeded(),
        Act::Complete => OperationTransition::complete(OperationResult::new("done")),
        Act::Fail => OperationTransition::fail("boom"),
        Act::Cancel => OperationTransition::cancel(Some("stop".into())),
        Act::Abort => OperationTransition::abort_provisioning(None),
        Act::RequestRetire => OperationTransition::request_retire(),
        Act::MarkRetired => OperationTransition::mark_retired(),
        Act::Progress => OperationTransition::report_progress(),
        Act::Mismatched => OperationTransition {
            action: OperationAction::Complete,
            outcome: Some(OperationTerminalOutcome::Failed {
                error: "mismatched".into(),
            }),
        },
    }
}

/// The registry under test, the model and the shared clock.
struct World {
    sut: Arc<dyn Backend>,
    model: MemoryStore,
    now: Timestamp,
}

impl World {
    fn sut(&self) -> Result<&dyn OpsLifecycleRegistry, Divergence> {
        self.sut
            .ops_registry()
            .ok_or_else(|| "the backend offers no registry".to_owned())
    }

    async fn step(&mut self, index: usize, step: Step) -> Result<(), Divergence> {
        self.now = self.now.add_millis(1);
        let now = self.now;
        let sut = self.sut()?;
        let model: &dyn OpsLifecycleRegistry = &self.model;
        let what = format!("step {index} {step:?}");
        match step {
            Step::Register {
                owner,
                op,
                name,
                limit,
            } => {
                let spec = OperationSpec::new(
                    op_id(op),
                    OperationKind::BackgroundToolOp,
                    NAMES[usize::from(name) % NAMES.len()],
                );
                let owner = session(owner);
                same(
                    &what,
                    &sut.register_operation(&owner, &spec, limit, now).await,
                    &model.register_operation(&owner, &spec, limit, now).await,
                )
            }
            Step::Act { owner, op, act } => {
                let (owner, id, transition) = (session(owner), op_id(op), transition(act));
                same(
                    &what,
                    &sut.transition_operation(&owner, &id, &transition, now)
                        .await,
                    &model
                        .transition_operation(&owner, &id, &transition, now)
                        .await,
                )
            }
            Step::Terminate { owner } => {
                let owner = session(owner);
                same(
                    &what,
                    &sut.terminate_owner(&owner, "terminated", now).await,
                    &model.terminate_owner(&owner, "terminated", now).await,
                )
            }
            Step::Retire { owner } => {
                let owner = session(owner);
                same(
                    &what,
                    &sut.retire_owner(&owner, "retired", now).await,
                    &model.retire_owner(&owner, "retired", now).await,
                )
            }
            Step::Collect { owner } => {
                let owner = session(owner);
                same(
                    &what,
                    &sut.collect_completed(&owner).await,
                    &model.collect_completed(&owner).await,
                )
            }
            Step::Advance { ms } => {
                self.now = self.now.add_millis(i64::from(ms));
                Ok(())
            }
        }
    }

    /// Every owner's retired flag and records, on both sides.
    async fn compare_state(&self, index: usize) -> Result<(), Divergence> {
        let sut = self.sut()?;
        let model: &dyn OpsLifecycleRegistry = &self.model;
        for owner in (0..OWNERS).map(session) {
            same(
                &format!("after step {index}: owner {owner} retired"),
                &sut.is_owner_retired(&owner).await,
                &model.is_owner_retired(&owner).await,
            )?;
            same(
                &format!("after step {index}: operations of {owner}"),
                &all(sut, &owner).await,
                &all(model, &owner).await,
            )?;
        }
        Ok(())
    }
}

/// Every record of `owner`, through pages of two (so paging is compared too).
async fn all(
    registry: &dyn OpsLifecycleRegistry,
    owner: &SessionId,
) -> Result<Vec<OperationLifecycleSnapshot>, OpsError> {
    let mut records = Vec::new();
    let mut query = OperationQuery::first(2);
    loop {
        let page = registry.list_operations(owner, &query).await?;
        records.extend(page.operations);
        if !page.has_more {
            return Ok(records);
        }
        query.after = page.next_after;
    }
}

/// Applies `history` to `sut` and to a fresh memory registry, comparing every result and the
/// whole state after every step.
///
/// # Errors
/// The first divergence.
pub async fn run_history(sut: Arc<dyn Backend>, history: &[Step]) -> Result<(), Divergence> {
    let mut world = World {
        sut,
        model: MemoryStore::new(),
        now: t(0),
    };
    for (index, step) in history.iter().enumerate() {
        world.step(index, *step).await?;
        world.compare_state(index).await?;
    }
    Ok(())
}
