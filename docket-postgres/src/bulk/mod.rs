//! `initialize_batch`: many starts, each with its own outcome, in one transaction.
//!
//! A batch whose members name distinct run ids (what group start and bulk start send) is one
//! statement ([`statement`]): one round trip and one durable commit for the whole batch, a
//! member whose run id is taken or whose graph version is absent skipped and answered on its
//! own. A batch that names a run id twice must answer the second as `Conflict` against the
//! first, in order, and is sent as the members' single statements one after another in one
//! transaction ([`transaction`]); so is a batch whose statement met an integrity error it
//! could not step around (a graph version deleted under it), since that aborted the
//! statement whole.

mod statement;
mod transaction;

pub(crate) use statement::initialize_batch;

use std::collections::HashSet;

use docket_core::model::{OwnerScope, Run};
use docket_core::store::rules::transition::Init;
use docket_core::store::{BatchedInit, StoreError};

use crate::store::PostgresStore;
use statement::StatementAttempt;
use transaction::InitAttempt;

/// A member still to be sent: its owner and its checked proposal.
type Pending = Option<(OwnerScope, Init)>;

/// Whether two members in play name the same run id.
fn names_a_run_twice(pending: &[Pending]) -> bool {
    let mut seen = HashSet::new();
    pending
        .iter()
        .flatten()
        .any(|(_, init)| !seen.insert(init.run().id.as_str()))
}

impl PostgresStore {
    /// `initialize_batch` (see the module documentation). Answers one outcome per member, in
    /// order, each as `initialize` would have answered it one after another. An
    /// infrastructure failure before anything could commit fails the members still in play
    /// with that (retryable) error; a failure after the batch was sent makes them
    /// `Ambiguous`.
    pub(crate) async fn do_initialize_batch(
        &self,
        members: Vec<BatchedInit>,
    ) -> Vec<Result<Run, StoreError>> {
        let mut outcomes: Vec<Option<Result<Run, StoreError>>> = Vec::with_capacity(members.len());
        let mut pending: Vec<Pending> = Vec::with_capacity(members.len());
        for BatchedInit {
            owner,
            proposal,
            events,
        } in members
        {
            // The stateless checks first, as for a single `initialize`.
            match Init::new(&owner, proposal, events) {
                Ok(init) => {
                    pending.push(Some((owner, init)));
                    outcomes.push(None);
                }
                Err(e) => {
                    pending.push(None);
                    outcomes.push(Some(Err(e)));
                }
            }
        }
        if !names_a_run_twice(&pending) {
            if let StatementAttempt::Settled(settled) = self.init_statement_attempt(&pending).await
            {
                for (index, outcome) in settled {
                    outcomes[index] = Some(outcome);
                }
                return crate::transitions::every_outcome(outcomes);
            }
        }
        let mut guarded = false;
        while pending.iter().any(Option::is_some) {
            match self.init_transaction_attempt(&pending, guarded).await {
                InitAttempt::Settled(settled) => {
                    for (index, outcome) in settled {
                        outcomes[index] = Some(outcome);
                    }
                    break;
                }
                InitAttempt::Refused { index, error } => {
                    outcomes[index] = Some(Err(error));
                    pending[index] = None;
                    guarded = true;
                }
            }
        }
        crate::transitions::every_outcome(outcomes)
    }
}
