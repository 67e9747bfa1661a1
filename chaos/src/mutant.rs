//! Deliberately broken layers: an oracle that cannot fail proves nothing, so the tests (and
//! `chaos-worker --mutant`) run the workload with one of these and expect the verdict to fail.
//!
//! * [`TokenBlind`] — a store that never checks claim tokens: it learns every token
//!   `claim_due` mints and substitutes the newest into every claimed commit. With
//!   [`TokenBlind::shared`] the tokens are shared between processes through files, so a
//!   worker that was frozen past its TTL commits under the thief's token.
//! * [`AssumeLanded`] — an engine that takes an ambiguous commit as landed instead of
//!   re-reading.
//! * [`BlindRetry`] — an engine that sends an ambiguous commit again, unchanged.
//!
//! Test code: the shared variant writes claim tokens, which are secrets, into files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use docket_core::model::{ClaimToken, Event, Run, RunId, Scope};
use docket_core::store::layer::commit_each;
use docket_core::store::{
    Backend, BatchedCommit, ClaimBatch, ClaimRequest, ClaimedCommit, StoreError, StoreLayer,
};

/// Commits with the token `claim_due` minted last for the run, whatever the caller presents.
#[derive(Debug)]
pub struct TokenBlind {
    inner: Arc<dyn Backend>,
    minted: Mutex<HashMap<RunId, ClaimToken>>,
    /// Where tokens are shared between processes (one `<run>.token` file per run).
    dir: Option<PathBuf>,
}

impl TokenBlind {
    /// Learns only the tokens minted through this layer.
    #[must_use]
    pub fn new(inner: Arc<dyn Backend>) -> Self {
        TokenBlind {
            inner,
            minted: Mutex::default(),
            dir: None,
        }
    }

    /// Learns the tokens minted through every layer sharing `dir`.
    #[must_use]
    pub fn shared(inner: Arc<dyn Backend>, dir: PathBuf) -> Self {
        TokenBlind {
            inner,
            minted: Mutex::default(),
            dir: Some(dir),
        }
    }

    fn newest(&self, run: &RunId) -> Option<ClaimToken> {
        if let Some(dir) = &self.dir {
            let text = std::fs::read_to_string(dir.join(format!("{run}.token"))).ok()?;
            return ClaimToken::new(text.trim()).ok();
        }
        self.minted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run)
            .cloned()
    }
}

#[async_trait]
impl StoreLayer for TokenBlind {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        // Each member is substituted, as a single commit would be.
        commit_each(self, commits).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        mut proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        if let Some(token) = self.newest(&proposal.run.id) {
            proposal.claim_token = token;
        }
        self.inner.commit_claimed(scope, proposal, events).await
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let batch = self.inner.claim_due(policy).await?;
        for lease in &batch.leases {
            if let Some(dir) = &self.dir {
                let path = dir.join(format!("{}.token", lease.run_id));
                let _ = std::fs::write(path, lease.claim_token.as_str());
            }
            self.minted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(lease.run_id.clone(), lease.claim_token.clone());
        }
        Ok(batch)
    }
}

/// Answers `Ok` (with the proposed run) whenever the commit's outcome was ambiguous.
#[derive(Debug)]
pub struct AssumeLanded {
    /// The store below.
    pub inner: Arc<dyn Backend>,
}

#[async_trait]
impl StoreLayer for AssumeLanded {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        commit_each(self, commits).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let proposed = proposal.run.clone();
        match self.inner.commit_claimed(scope, proposal, events).await {
            Err(StoreError::Ambiguous { .. }) => Ok(proposed),
            other => other,
        }
    }
}

/// Sends an ambiguous commit again, unchanged, and answers what the second try answers.
#[derive(Debug)]
pub struct BlindRetry {
    /// The store below.
    pub inner: Arc<dyn Backend>,
}

#[async_trait]
impl StoreLayer for BlindRetry {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        commit_each(self, commits).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        match self
            .inner
            .commit_claimed(scope, proposal.clone(), events.clone())
            .await
        {
            Err(StoreError::Ambiguous { .. }) => {
                self.inner.commit_claimed(scope, proposal, events).await
            }
            other => other,
        }
    }
}
