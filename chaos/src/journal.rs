//! The journal: what the fault layer and the engine's observer saw, in one logical order.
//!
//! Every entry carries a tick from one shared counter, so the oracle can say "this token was
//! superseded before that commit was sent" without trusting any clock. The journal is
//! append-only while the workload runs; the oracle reads a copy afterwards.
//!
//! A journal opened with [`Journal::persistent`] (one per worker process of the process-level
//! harness) also appends every entry, as one JSON line, to a file before the call that made it
//! returns, so a process killed with SIGKILL loses nothing it had already recorded; its ticks
//! are then wall-clock nanoseconds, the one order several processes on one machine share.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use docket_core::model::{ClaimToken, Event, RunId};
use docket_core::store::StoreErrorKind;

/// A short, stable digest of a claim token: enough to tell tokens apart in a log without
/// writing the secret itself anywhere.
#[must_use]
pub fn token_digest(token: &ClaimToken) -> String {
    let digest = Sha256::digest(token.as_str().as_bytes());
    hex::encode(&digest[..8])
}

/// One claim the store handed out (recorded when `claim_due` returned it to the layer, whether
/// or not the layer then hid the reply from the engine).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mint {
    /// The claimed run.
    pub run_id: String,
    /// Digest of the minted token.
    pub token: String,
    /// When `claim_due` returned (logical tick).
    pub tick: u64,
    /// When `claim_due` was called: the store minted the token between this tick and
    /// [`Mint::tick`]. (A process frozen between the store's reply and the journal records
    /// the mint late; only this bound says how early it may have been.)
    #[serde(default)]
    pub called_tick: u64,
}

/// What the store did with a claimed commit the layer forwarded (or did not forward).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    /// The inner store accepted it: the commit is durable.
    Landed,
    /// The inner store refused it.
    Refused,
    /// The layer never sent it (an injected error before applying).
    NotSent,
    /// The store's own reply was lost (a real `Ambiguous`, e.g. a cut connection): only a
    /// read of the store can tell; the oracle resolves it to `Landed` or `Refused`.
    Unknown,
}

/// The reply the caller of a commit received from the fault layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// `Ok`: the caller knows its commit landed.
    Ok,
    /// `Ambiguous`: the caller must find out by reading.
    Ambiguous,
    /// Any other error.
    Error,
}

/// Which write a journalled commit was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitKind {
    /// `initialize`: a run's first checkpoint.
    Initialize,
    /// `commit_claimed`: a claim holder's moment, fenced by seq and token.
    Claimed,
    /// `commit_unclaimed`: a signal (an interrupt resolved, a cancellation), fenced by seq.
    Unclaimed,
}

/// One commit call (`initialize`, `commit_claimed`, `commit_unclaimed`) as the fault layer
/// saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommitAttempt {
    /// Which write.
    pub kind: CommitKind,
    /// The run.
    pub run_id: String,
    /// The seq the proposal builds on (it proposes `expected_seq + 1`; 0 for `initialize`).
    pub expected_seq: u64,
    /// Digest of the token the caller presented (empty when the write carries none).
    pub token: String,
    /// The proposed events (the last is the checkpoint event).
    pub events: Vec<Event>,
    /// When the layer forwarded the call to the inner store (after any delay or stall).
    pub sent_tick: u64,
    /// What the inner store did.
    pub applied: Applied,
    /// The inner store's error, when it refused.
    pub refused_with: Option<String>,
    /// What the caller received.
    pub reply: Reply,
}

/// One commit the engine acknowledged: its lifecycle announced it to the observers, which it
/// does only for an `Ok` reply or an ambiguous reply a re-read proved landed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    /// The run.
    pub run_id: String,
    /// The committed checkpoint seq.
    pub checkpoint_seq: u64,
    /// The committed events, as proposed.
    pub events: Vec<Event>,
    /// When the observer saw it (logical tick).
    pub tick: u64,
}

/// A node side effect: one execution of a node attempt, keyed by its idempotency key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectLedger {
    /// Executions per idempotency key (`"<task>:<attempt>"`).
    pub executions: HashMap<String, u64>,
}

/// One line of a persistent journal file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// A minted claim.
    Mint(Mint),
    /// A commit call and its outcome.
    Attempt(CommitAttempt),
    /// An acknowledged commit.
    Ack(Ack),
    /// One execution of a node attempt, by idempotency key.
    Effect(String),
}

#[derive(Debug, Default)]
struct Entries {
    mints: Vec<Mint>,
    attempts: Vec<CommitAttempt>,
    acks: Vec<Ack>,
    effects: EffectLedger,
}

/// The shared, append-only record of a chaos run. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct Journal {
    ticks: AtomicU64,
    entries: Mutex<Entries>,
    minted: Notify,
    /// The append-only file of a persistent journal (ticks are then wall-clock based).
    sink: Option<Mutex<File>>,
}

/// A copy of everything journalled, for the oracle.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JournalSnapshot {
    /// Claims minted, in tick order.
    pub mints: Vec<Mint>,
    /// Claimed commits, in the order they returned.
    pub attempts: Vec<CommitAttempt>,
    /// The ack log: commits the engine acknowledged.
    pub acks: Vec<Ack>,
    /// Node side effects.
    pub effects: EffectLedger,
}

impl Journal {
    /// An empty journal.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A journal that also appends every entry to `path` (created, or appended to), one
    /// JSON [`Line`] per entry, each written with one `write` call before the recording call
    /// returns. Its ticks are nanoseconds since the Unix epoch (kept strictly increasing within
    /// the process), so the journals of several processes on one machine merge into one
    /// order.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn persistent(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Journal {
            sink: Some(Mutex::new(file)),
            ..Journal::default()
        })
    }

    /// The next tick: a counter, or wall-clock nanoseconds for a persistent journal.
    pub fn tick(&self) -> u64 {
        if self.sink.is_none() {
            return self.ticks.fetch_add(1, Ordering::SeqCst) + 1;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        // Strictly increasing within the process even if two calls read the same instant.
        let previous = self.ticks.fetch_max(now, Ordering::SeqCst);
        if previous >= now {
            self.ticks.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            now
        }
    }

    /// Appends `line` to the file of a persistent journal. A failed write is reported on
    /// stderr and otherwise ignored: a missing line can only hide a violation from the
    /// oracle (an acknowledgement or a mint it never learns of), never invent one.
    fn persist(&self, line: &Line) {
        let Some(sink) = &self.sink else {
            return;
        };
        let Ok(mut text) = serde_json::to_string(line) else {
            return;
        };
        text.push('\n');
        let mut file = sink.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = file.write_all(text.as_bytes()) {
            eprintln!("chaos journal: cannot append a line: {e}");
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records claims the store minted and wakes every stalled call waiting for a steal (the
    /// call is taken to have been made at the same tick).
    pub fn record_mints<'a>(&self, leases: impl IntoIterator<Item = (&'a RunId, &'a ClaimToken)>) {
        self.record_mints_called(None, leases);
    }

    /// Records claims the store minted by a `claim_due` called at tick `called` (`None`: now),
    /// and wakes every stalled call waiting for a steal.
    pub fn record_mints_called<'a>(
        &self,
        called: Option<u64>,
        leases: impl IntoIterator<Item = (&'a RunId, &'a ClaimToken)>,
    ) {
        let tick = self.tick();
        let called_tick = called.unwrap_or(tick);
        let mut entries = self.entries();
        for (run_id, token) in leases {
            let mint = Mint {
                run_id: run_id.as_str().to_owned(),
                token: token_digest(token),
                tick,
                called_tick,
            };
            self.persist(&Line::Mint(mint.clone()));
            entries.mints.push(mint);
        }
        drop(entries);
        self.minted.notify_waiters();
    }

    /// Whether a token other than `token` was minted for `run_id` after tick `since`.
    #[must_use]
    pub fn superseded_since(&self, run_id: &RunId, token: &str, since: u64) -> bool {
        self.entries()
            .mints
            .iter()
            .any(|m| m.tick > since && m.run_id == run_id.as_str() && m.token != token)
    }

    /// Waits until a token other than `token` is minted for `run_id` after tick `since`, or
    /// `deadline` passes. Returns whether it was.
    pub async fn await_steal(
        &self,
        run_id: &RunId,
        token: &str,
        since: u64,
        deadline: tokio::time::Instant,
    ) -> bool {
        loop {
            let notified = self.minted.notified();
            tokio::pin!(notified);
            // Registered before the check, so a mint between the check and the wait wakes us.
            notified.as_mut().enable();
            if self.superseded_since(run_id, token, since) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.superseded_since(run_id, token, since);
            }
        }
    }

    /// Appends one claimed commit.
    pub fn record_attempt(&self, attempt: CommitAttempt) {
        self.persist(&Line::Attempt(attempt.clone()));
        self.entries().attempts.push(attempt);
    }

    /// Appends one acknowledged commit to the ack log.
    pub fn record_ack(&self, run_id: &RunId, checkpoint_seq: u64, events: Vec<Event>) {
        let tick = self.tick();
        let ack = Ack {
            run_id: run_id.as_str().to_owned(),
            checkpoint_seq,
            events,
            tick,
        };
        self.persist(&Line::Ack(ack.clone()));
        self.entries().acks.push(ack);
    }

    /// Counts one execution of a node attempt.
    pub fn record_effect(&self, idempotency_key: &str) {
        self.persist(&Line::Effect(idempotency_key.to_owned()));
        *self
            .entries()
            .effects
            .executions
            .entry(idempotency_key.to_owned())
            .or_default() += 1;
    }

    /// How many acknowledgements the ack log holds.
    #[must_use]
    pub fn ack_count(&self) -> usize {
        self.entries().acks.len()
    }

    /// A copy of everything recorded so far.
    #[must_use]
    pub fn snapshot(&self) -> JournalSnapshot {
        let entries = self.entries();
        JournalSnapshot {
            mints: entries.mints.clone(),
            attempts: entries.attempts.clone(),
            acks: entries.acks.clone(),
            effects: entries.effects.clone(),
        }
    }
}

impl JournalSnapshot {
    /// Adds one line read back from a persistent journal file.
    pub fn push(&mut self, line: Line) {
        match line {
            Line::Mint(mint) => self.mints.push(mint),
            Line::Attempt(attempt) => self.attempts.push(attempt),
            Line::Ack(ack) => self.acks.push(ack),
            Line::Effect(key) => *self.effects.executions.entry(key).or_default() += 1,
        }
    }

    /// Reads every line of a persistent journal file into this snapshot; returns how many
    /// lines could not be read (a line torn by a SIGKILL in the middle of its write can only
    /// be the last one).
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn read_file(&mut self, path: &Path) -> std::io::Result<u64> {
        let text = std::fs::read_to_string(path)?;
        let mut torn = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Line>(line) {
                Ok(line) => self.push(line),
                Err(_) => torn += 1,
            }
        }
        Ok(torn)
    }
}

/// The error kind of a refusal, as a short name for the journal.
#[must_use]
pub fn kind_name(kind: StoreErrorKind) -> String {
    format!("{kind:?}")
}

#[cfg(test)]
mod tests;
