//! `commit_claimed_batch`: many claimed commits, each under its own double fence, written in
//! one transaction — one durable commit (one WAL flush) for the batch — with an outcome of
//! its own for every member.
//!
//! A batch whose members name distinct runs (what a worker's group commit sends: one
//! commit in flight per run) is one statement ([`statement`]): one round trip. A batch that
//! names some run twice must apply its members in order, the second seeing the first's
//! write, which one statement cannot do (its parts all read the same snapshot); it is sent
//! as the members' single statements one after another inside one transaction
//! ([`transaction`]).
//!
//! A run named twice because a worker sent a moment and the one built on it together (its
//! chained completion) is first [folded](fold) into one member, so such a batch is one
//! statement too; only what does not fold, or a folded pair that did not land, takes the
//! transaction.
//!
//! Either way a member whose fences do not match writes nothing and is classified by one
//! read, answering what a single `commit_claimed` would have answered at that point; its
//! neighbours are unaffected. A member whose proposed events differ from stored ones aborts
//! the attempt (nothing of it commits): it is answered `EventConflict` and the others are sent
//! again without it.

mod fold;
mod statement;
mod transaction;

pub(crate) use statement::{commit_claimed_batch, commit_claimed_batch_fresh};

use docket_core::model::{Run, Scope};
use docket_core::store::rules::transition::Commit;
use docket_core::store::{BatchedCommit, Message, StoreError};

use crate::store::PostgresStore;
use crate::transitions::every_outcome;

/// How one attempt at a batch ended.
enum Attempt {
    /// Every member in play has its outcome (index into the batch); `Ok` is a member that
    /// landed as proposed, whose answer is its own proposed document (taken from the member
    /// with [`landed`], not copied).
    Settled(Vec<(usize, Result<(), StoreError>)>),
    /// The member at `index` conflicts with stored events; the attempt committed nothing.
    Conflict { index: usize, error: StoreError },
}

/// The members still to be answered: `Some` until an answer takes one out.
type Members = [Option<(Scope, Commit)>];

/// The members one attempt sends, borrowed: `Some` while in play.
type InPlay<'a> = [Option<(&'a Scope, &'a Commit)>];

/// The members of `members` still to be answered, borrowed for one attempt.
fn in_play(members: &Members) -> Vec<Option<(&Scope, &Commit)>> {
    members
        .iter()
        .map(|member| member.as_ref().map(|(scope, commit)| (scope, commit)))
        .collect()
}

/// The indexes of the members still in play.
fn pending<T>(members: &[Option<T>]) -> impl Iterator<Item = usize> + '_ {
    members
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_some())
        .map(|(i, _)| i)
}

/// The answer of the member at `index`, which landed: its proposed document, taken out of
/// the batch (the member is answered).
fn landed(members: &mut Members, index: usize) -> Result<Run, StoreError> {
    members[index]
        .take()
        .map(|(_, commit)| commit.into_run())
        .ok_or_else(|| StoreError::ambiguous(Message("a batch member was answered twice".into())))
}

/// Whether two members in play name the same run.
fn names_a_run_twice(members: &Members) -> bool {
    let mut seen = std::collections::HashSet::new();
    members
        .iter()
        .flatten()
        .any(|(_, commit)| !seen.insert(commit.run().id.as_str()))
}

impl PostgresStore {
    /// See the [module docs](self).
    pub(crate) async fn do_commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        let mut outcomes: Vec<Option<Result<Run, StoreError>>> = Vec::with_capacity(commits.len());
        let mut members: Vec<Option<(Scope, Commit)>> = Vec::with_capacity(commits.len());
        for BatchedCommit {
            scope,
            proposal,
            events,
        } in commits
        {
            // The kernel's stateless checks, before anything is sent for this member.
            match Commit::claimed(proposal, events) {
                Ok(commit) => {
                    members.push(Some((scope, commit)));
                    outcomes.push(None);
                }
                Err(e) => {
                    members.push(None);
                    outcomes.push(Some(Err(e)));
                }
            }
        }
        if names_a_run_twice(&members) {
            self.folded_attempt(&mut members, &mut outcomes).await;
        }
        let in_order = names_a_run_twice(&members);
        while pending(&members).next().is_some() {
            let sent = in_play(&members);
            let attempt = if in_order {
                self.transaction_attempt(&sent).await
            } else {
                self.statement_attempt(&sent).await
            };
            drop(sent);
            match attempt {
                Attempt::Settled(settled) => {
                    for (index, outcome) in settled {
                        outcomes[index] = Some(outcome.and_then(|()| landed(&mut members, index)));
                    }
                    break;
                }
                Attempt::Conflict { index, error } => {
                    members[index] = None;
                    outcomes[index] = Some(Err(error));
                }
            }
        }
        every_outcome(outcomes)
    }
}
