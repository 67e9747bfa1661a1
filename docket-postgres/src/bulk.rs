//! `initialize_batch`: many `initialize` statements in one transaction.
//!
//! The first attempt sends the members' statements one after another in one transaction —
//! one round trip per member and one durable commit for the batch. A member that is refused
//! (run id taken, graph absent, or any other error of its statement) may have aborted the
//! transaction, so the attempt is rolled back (nothing of it committed), that member is
//! answered, and the others are sent again in a second attempt where each member runs under
//! a savepoint and a refusal rolls back that member alone (two round trips per member: the
//! statement, then the savepoint's release and the next one's creation — or the rollback to
//! it — in one simple query). A batch without losers therefore costs one attempt, a batch with
//! losers two.

use docket_core::model::{OwnerScope, Run};
use docket_core::store::rules::transition::Init;
use docket_core::store::{BatchedInit, StoreError};

use crate::error;
use crate::store::PostgresStore;

/// The savepoint each member of a guarded attempt runs under.
const SAVEPOINT: &str = "SAVEPOINT docket_batch_member";
/// After a winner: keep its writes, open the next member's savepoint (one round trip).
const NEXT_SAVEPOINT: &str = "RELEASE SAVEPOINT docket_batch_member; SAVEPOINT docket_batch_member";
/// After a refused member: undo it; the savepoint stays for the next member.
const ROLLBACK_TO_SAVEPOINT: &str = "ROLLBACK TO SAVEPOINT docket_batch_member";

/// Sends `sql` (savepoint control) as one simple query.
async fn simple(conn: &mut sqlx::PgConnection, sql: &'static str) -> Result<(), sqlx::Error> {
    sqlx::Executor::execute(conn, sql).await.map(|_| ())
}

/// A member still to be sent: its owner and its checked proposal.
type Pending = Option<(OwnerScope, Init)>;

/// How one attempt ended.
enum InitAttempt {
    /// Every member in play has its outcome (index into the batch).
    Settled(Vec<(usize, Result<Run, StoreError>)>),
    /// An unguarded attempt met a refused member; the transaction was rolled back and
    /// committed nothing.
    Refused { index: usize, error: StoreError },
}

impl PostgresStore {
    /// `initialize_batch` (see the module documentation). Answers one outcome per member, in
    /// order, each as `initialize` would have answered it one after another: members are sent
    /// in order, so a repeated run id finds the earlier member's row (`Conflict`). An
    /// infrastructure failure before `COMMIT` fails the members still in play with that
    /// (retryable) error, since nothing of theirs was committed; a lost `COMMIT` makes every
    /// winner `Ambiguous`.
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
            match Init::new(&owner, proposal, &events) {
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
        let mut guarded = false;
        while pending.iter().any(Option::is_some) {
            match self.init_attempt(&pending, guarded).await {
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

    /// One transaction over the members still in play; `guarded` puts each under a
    /// savepoint.
    async fn init_attempt(&self, pending: &[Pending], guarded: bool) -> InitAttempt {
        let in_play: Vec<(usize, &OwnerScope, &Init)> = pending
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.as_ref().map(|(owner, init)| (i, owner, init)))
            .collect();
        let fail_all = |error: StoreError| {
            InitAttempt::Settled(
                in_play
                    .iter()
                    .map(|(i, _, _)| (*i, Err(error.clone())))
                    .collect(),
            )
        };
        let mut conn = match self.conn().await {
            Ok(conn) => conn,
            Err(e) => return fail_all(e),
        };
        let mut tx = match self.begin(&mut conn).await {
            Ok(tx) => tx,
            Err(e) => return fail_all(e),
        };
        // Guarded, one savepoint stays open ahead of the next member: a refused member rolls
        // back to it (which keeps it), a winner releases it and opens the next.
        if guarded {
            if let Err(e) = simple(&mut tx, SAVEPOINT).await {
                let _ = tx.rollback().await;
                return fail_all(error::safe(e));
            }
        }
        let mut settled = Vec::with_capacity(in_play.len());
        for &(index, owner, init) in &in_play {
            let outcome = self.initialize_on(&mut tx, owner, init, error::safe).await;
            if guarded {
                let next = if outcome.is_ok() {
                    NEXT_SAVEPOINT
                } else {
                    ROLLBACK_TO_SAVEPOINT
                };
                if let Err(e) = simple(&mut tx, next).await {
                    let _ = tx.rollback().await;
                    return fail_all(error::safe(e));
                }
            } else if let Err(error) = outcome {
                let _ = tx.rollback().await;
                return InitAttempt::Refused { index, error };
            }
            settled.push((index, outcome));
        }
        if let Err(e) = tx.commit().await {
            let error = error::sent(e);
            for (_, outcome) in &mut settled {
                if outcome.is_ok() {
                    *outcome = Err(error.clone());
                }
            }
        }
        InitAttempt::Settled(settled)
    }
}
