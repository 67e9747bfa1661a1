//! Chained commits of one run written as one member (`docs/storage-contract.md`, “Folded
//! chains”), so a batch that holds them still goes as one statement.
//!
//! A worker sends a run's last barrier and its completion together (the engine's chained
//! completion): two members of one run, the second built on the first. Sent as they are,
//! they need the [transaction](super::transaction) path — a statement's parts all read one
//! snapshot, so the second could not see the first — at four round trips (`BEGIN`, two
//! statements, `COMMIT`). Folded by the kernel (`rules::chain::fold_chains`), the pair is one
//! member that writes the second's row and both moments' events under the first's fences,
//! and the batch names each run once again: one statement, one round trip.
//!
//! A folded member that lands is both members landing; one whose outcome is unknown
//! (`Ambiguous`) is unknown for both, which is also what the transaction path answers when
//! its `COMMIT` is lost. One that does not land (fenced out, refused, an event conflict) says
//! nothing exact about which of its two failed, so its members stay in play and are answered
//! by the transaction path, one statement each, exactly as if nothing had been folded.

use docket_core::model::{Run, Scope};
use docket_core::store::rules::chain::{fold_chains, FoldedCommit};
use docket_core::store::rules::transition::Commit;
use docket_core::store::StoreError;

use super::{landed, pending, Attempt, Members};
use crate::store::PostgresStore;

impl PostgresStore {
    /// Sends `members` with each run's chain folded into one member, as one statement, and
    /// settles what that decides: every member of a folded member that landed (or whose
    /// outcome is unknown), and every unfolded member. Members left in play are those of
    /// folded members that did not land. Does nothing when the chains do not fold.
    pub(super) async fn folded_attempt(
        &self,
        members: &mut [Option<(Scope, Commit)>],
        outcomes: &mut [Option<Result<Run, StoreError>>],
    ) {
        let folds = fold_chains(
            pending(members).filter_map(|i| members[i].as_ref().map(|(s, c)| (i, s, c))),
        );
        let Some(folds) = folds else {
            return;
        };
        let mut sent: Vec<Option<(&Scope, &Commit)>> =
            folds.iter().map(|f| Some((&f.scope, &f.commit))).collect();
        loop {
            match self.statement_attempt(&sent).await {
                Attempt::Settled(settled) => {
                    for (at, outcome) in settled {
                        settle(&folds[at], outcome, members, outcomes);
                    }
                    return;
                }
                Attempt::Conflict { index, error } => {
                    // A folded member that conflicts is sent again unfolded, later; a lone
                    // one has its answer.
                    sent[index] = None;
                    if let [only] = folds[index].members[..] {
                        members[only] = None;
                        outcomes[only] = Some(Err(error));
                    }
                }
            }
        }
    }
}

/// Answers the batch members `fold` stands for from its outcome, or leaves them in play.
fn settle(
    fold: &FoldedCommit,
    outcome: Result<(), StoreError>,
    members: &mut Members,
    outcomes: &mut [Option<Result<Run, StoreError>>],
) {
    if !fold.decides(&outcome) {
        return;
    }
    for &index in &fold.members {
        if members[index].is_none() {
            continue;
        }
        let answer = match &outcome {
            // Each member landed with its own document, not the folded one's.
            Ok(()) => landed(members, index),
            Err(error) => {
                members[index] = None;
                Err(error.clone())
            }
        };
        outcomes[index] = Some(answer);
    }
}
