//! A batch that names some run twice: the members' single fenced statements one after
//! another in one transaction, in batch order, so a member sees the writes of those before
//! it. A member whose statement matches no row is classified by a read inside the same
//! transaction. Any other failure before `COMMIT` fails the pending members with a retryable
//! error (nothing committed); a lost `COMMIT` makes every winner `Ambiguous`.

use docket_core::store::StoreError;
use sqlx::Row;

use super::{Attempt, InPlay};
use crate::error::{self, EVENT_CONFLICT};
use crate::store::{hand_back, PostgresStore};
use crate::transitions::{conflict_seq, first_seq};

impl PostgresStore {
    /// One transaction over the members still in play, each member's single statement in
    /// batch order.
    pub(super) async fn transaction_attempt(&self, members: &InPlay<'_>) -> Attempt {
        let pending = || members.iter().enumerate().filter(|(_, m)| m.is_some());
        let fail_all = |error: StoreError| {
            Attempt::Settled(pending().map(|(i, _)| (i, Err(error.clone()))).collect())
        };
        let mut conn = match self.conn().await {
            Ok(conn) => conn,
            Err(e) => return fail_all(e),
        };
        let mut tx = match self.begin(&mut conn).await {
            Ok(tx) => tx,
            Err(e) => return fail_all(e),
        };
        let mut settled = Vec::new();
        for (index, member) in pending() {
            let Some((scope, commit)) = member else {
                continue;
            };
            let statement = match self.claimed_statement(scope, commit) {
                Ok(statement) => statement,
                Err(e) => {
                    // Encoding refused before anything was sent for this member.
                    settled.push((index, Err(e)));
                    continue;
                }
            };
            let written = match statement {
                None => false,
                Some(query) => match query.fetch_one(&mut tx).await {
                    Ok(row) => match row.try_get::<i64, _>("updated") {
                        Ok(updated) => updated == 1,
                        Err(e) => {
                            let _ = tx.rollback().await;
                            return fail_all(error::safe(e));
                        }
                    },
                    Err(e) if error::sqlstate(&e).as_deref() == Some(EVENT_CONFLICT) => {
                        let _ = tx.rollback().await;
                        return Attempt::Conflict {
                            index,
                            error: StoreError::EventConflict {
                                seq: conflict_seq(&e).unwrap_or_else(|| first_seq(commit.events())),
                            },
                        };
                    }
                    Err(e) => {
                        let _ = tx.rollback().await;
                        return fail_all(error::safe(e));
                    }
                },
            };
            if written {
                settled.push((index, Ok(())));
                continue;
            }
            match self.classify_claimed_failure(&mut tx, scope, commit).await {
                Err(e @ (StoreError::Unavailable { .. } | StoreError::Ambiguous { .. })) => {
                    // The read failed, and the transaction with it.
                    let _ = tx.rollback().await;
                    return fail_all(e);
                }
                outcome => settled.push((index, outcome)),
            }
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
        Attempt::Settled(settled)
    }
}
