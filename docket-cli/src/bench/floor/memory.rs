//! The floor of the in-memory store: the same conditional update and claim on plain maps
//! behind one mutex (the memory store also serializes every write behind one lock).

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;

use super::{floor_error, Floor};
use crate::bench::BenchError;

/// Commit rows and claim rows.
#[derive(Debug, Default)]
pub(crate) struct MemoryFloor {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Row → (seq, token).
    commits: Vec<(u64, String)>,
    /// Due, unclaimed rows in claim order.
    ready: BTreeSet<u64>,
    /// Claimed row → token.
    claimed: HashMap<u64, String>,
}

impl MemoryFloor {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>, BenchError> {
        self.state
            .lock()
            .map_err(|_| floor_error("memory", "a floor task panicked while holding the lock"))
    }
}

#[async_trait]
impl Floor for MemoryFloor {
    fn commit_statement(&self) -> &'static str {
        "compare-and-set of (seq, token) in a map behind one mutex"
    }

    fn claim_statement(&self) -> &'static str {
        "pop the oldest due rows from an ordered set behind one mutex"
    }

    async fn prepare_commits(&self, tokens: &[String]) -> Result<(), BenchError> {
        self.lock()?.commits = tokens.iter().map(|t| (0, t.clone())).collect();
        Ok(())
    }

    async fn commit(&self, row: usize, seq: u64, token: &str) -> Result<bool, BenchError> {
        let mut state = self.lock()?;
        match state.commits.get_mut(row) {
            Some((stored, held)) if *stored == seq && held == token => {
                *stored += 1;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn commit_seqs(&self) -> Result<Vec<u64>, BenchError> {
        Ok(self.lock()?.commits.iter().map(|(seq, _)| *seq).collect())
    }

    async fn prepare_claims(&self, rows: usize) -> Result<(), BenchError> {
        let mut state = self.lock()?;
        state.ready = (0..rows as u64).collect();
        state.claimed.clear();
        Ok(())
    }

    async fn claim(&self, limit: u32, token: &str) -> Result<Vec<u64>, BenchError> {
        let mut state = self.lock()?;
        let mut claimed = Vec::new();
        while claimed.len() < limit as usize {
            let Some(row) = state.ready.pop_first() else {
                break;
            };
            state.claimed.insert(row, token.to_owned());
            claimed.push(row);
        }
        Ok(claimed)
    }

    async fn claim_counts(&self) -> Result<(u64, u64), BenchError> {
        let state = self.lock()?;
        Ok((state.ready.len() as u64, state.claimed.len() as u64))
    }

    async fn teardown(&self) -> Result<(), BenchError> {
        *self.lock()? = State::default();
        Ok(())
    }
}
