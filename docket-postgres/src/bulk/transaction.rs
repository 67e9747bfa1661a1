//! A batch of starts as the members' single `initialize` statements in one transaction.
//!
//! The first attempt sends them one after another — one round trip per member and one
//! durable commit for the batch. A member that is refused (run id taken, graph absent, or any
//! other error of its statement) may have aborted the transaction, so the attempt is rolled
//! back (nothing of it committed), that member is answered, and the others are sent again in
//! a second attempt where each member runs under a savepoint and a refusal rolls back that
//! member alone (two round trips per member: the statement, then the savepoint's release and
//! the next one's creation — or the rollback to it — in one simple query).

use docket_core::model::{OwnerScope, Run};
use docket_core::store::rules::transition::Init;
use docket_core::store::StoreError;

use super::Pending;
use crate::error;
use crate::store::{hand_back, PostgresStore};
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

/// How one attempt ended.
pub(super) enum InitAttempt {
    /// Every member in play has its outcome (index into the batch).
    Settled(Vec<(usize, Result<Run, StoreError>)>),
    /// An unguarded attempt met a refused member; the transaction was rolled back and
    /// committed nothing.
    Refused { index: usize, error: StoreError },
}

impl PostgresStore {
    /// One transaction over the members still in play; `guarded` puts each under a
    /// savepoint.
    pub(super) async fn init_transaction_attempt(
        &self,
        pending: &[Pending],
        guarded: bool,
    ) -> InitAttempt {
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
        hand_back(conn, settled.iter().map(|(_, outcome)| outcome));
        InitAttempt::Settled(settled)
    }
}
