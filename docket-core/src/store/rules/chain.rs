//! Folding a batch's chained commits (`docs/storage-contract.md`, “Folded chains”): the
//! members of one run that build on one another, written as one commit.
//!
//! A worker commits a run's last barrier and its completion in one
//! [`RunStore::commit_claimed_batch`](crate::store::RunStore::commit_claimed_batch) call (the
//! engine's chained completion). A store that writes one commit per statement or script call
//! can write such a pair as one, with [`Commit::then`]: the second's row and both moments'
//! events under the first's fences. [`fold_chains`] decides, for a whole batch, which members
//! fold together; the store writes the folded commits and answers each member from them:
//!
//! * a folded commit that landed: every member it stands for landed, with its own run;
//! * one whose outcome is unknown (`Ambiguous`): every member's is unknown (they landed
//!   together or not at all);
//! * one that did not land: nothing exact is known about its members (which of them a fence,
//!   a status or an event refused), so the store commits them again unfolded, one after the
//!   other, and answers from that.

use std::collections::HashMap;

use crate::model::Scope;
use crate::store::StoreError;

use super::transition::Commit;

/// A commit that stands for one or more members of a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldedCommit {
    /// The scope the members are committed in (all the same).
    pub scope: Scope,
    /// The commit to write: a member's own, or several folded with [`Commit::then`].
    pub commit: Commit,
    /// The places in the batch of the members it stands for, in batch order.
    pub members: Vec<usize>,
}

impl FoldedCommit {
    /// Whether it stands for more than one member.
    #[must_use]
    pub fn is_folded(&self) -> bool {
        self.members.len() > 1
    }

    /// Whether the store's `outcome` for this commit answers its members: a landing or an
    /// unknown outcome does (each member landed, or each is `Ambiguous`), and so does any
    /// outcome of a commit standing for one member. A folded commit that was refused does
    /// not: its members must be committed again unfolded, one after the other.
    #[must_use]
    pub fn decides<T>(&self, outcome: &Result<T, StoreError>) -> bool {
        match outcome {
            Ok(_) | Err(StoreError::Ambiguous { .. }) => true,
            Err(_) => !self.is_folded(),
        }
    }
}

/// Folds each run's members of a batch into one commit, in batch order: `members` yields each
/// member still to be written with its place in the batch. The folded commits name distinct
/// runs, so a store can write them as it writes a batch of distinct runs.
///
/// `None` when nothing folds (no run is named twice), and when some run is named twice by
/// members that do not fold (other scopes, other tokens, a second member not built on the
/// first — see [`Commit::then`]): such a batch must be written member after member.
#[must_use]
pub fn fold_chains<'a>(
    members: impl IntoIterator<Item = (usize, &'a Scope, &'a Commit)>,
) -> Option<Vec<FoldedCommit>> {
    // Group first, so that nothing is copied for a batch that does not fold and each chain
    // is copied once, as its fold.
    let mut chains: Vec<Vec<(usize, &Scope, &Commit)>> = Vec::new();
    let mut by_run: HashMap<&str, usize> = HashMap::new();
    let mut any = false;
    for (index, scope, commit) in members {
        let Some(&at) = by_run.get(commit.run().id.as_str()) else {
            by_run.insert(commit.run().id.as_str(), chains.len());
            chains.push(vec![(index, scope, commit)]);
            continue;
        };
        if chains[at][0].1 != scope {
            return None;
        }
        chains[at].push((index, scope, commit));
        any = true;
    }
    if !any {
        return None;
    }
    chains
        .into_iter()
        .map(|chain| {
            let commits: Vec<&Commit> = chain.iter().map(|&(_, _, commit)| commit).collect();
            Some(FoldedCommit {
                scope: chain[0].1.clone(),
                commit: Commit::chain_cloned(&commits)?,
                members: chain.iter().map(|&(index, _, _)| index).collect(),
            })
        })
        .collect()
}
