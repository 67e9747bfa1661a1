//! The oracle: reads every run back through the store and holds it against the journal.
//!
//! What it checks, per run:
//!
//! * the history is whole: checkpoint events carry seqs `1..=checkpoint_seq`, none twice,
//!   none missing, event seqs contiguous (the same check `docket run verify` makes);
//! * no node attempt result was committed twice for one task, and the store never accepted
//!   two commits of one checkpoint seq (exactly-once commit);
//! * every acknowledged commit is present with the content the engine proposed (every event
//!   of the moment compares equal, canonically, with the stored one); so is every commit the
//!   store accepted, acknowledged or not;
//! * no accepted commit was sent after a newer claim on its run had been handed out (the
//!   journal bounds every mint between the ticks its `claim_due` was called and returned, and
//!   ticks every send, on one clock);
//! * the run is terminal, or waiting on an open interrupt, after the heal phase;
//! * every committed node attempt result has at least one execution under its idempotency
//!   key (at-least-once execution), and the executions beyond the committed results are
//!   counted.
//!
//! What it cannot see: a commit the store accepted and then lost *and* that nobody
//! acknowledged or journalled (there is no such path in-process: every claimed commit goes
//! through the fault layer); writes made below the layer by another process; whether a
//! claim that was never used for a commit overlapped another one (only commits are fenced);
//! and anything pruned (the workload configures no pruner). A stale commit is only
//! recognised when the newer claim was minted through the same layer.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use docket::history::check_history;
use docket_core::model::{
    Event, EventQuery, EventType, Run, RunId, RunQuery, RunStatus, Scope, MAX_PAGE_LIMIT,
};
use docket_core::store::rules::events::same_event;
use docket_core::store::{RunStore, StoreError};

use crate::fault::FaultCounts;
use crate::journal::{Applied, CommitKind, JournalSnapshot, Reply};
use crate::report::{CommitTally, EffectTally, Report};

/// What the oracle is told besides the store and the journal.
#[derive(Clone, Debug, Default)]
pub struct OracleInput {
    /// The backend's name, for the report.
    pub backend: String,
    /// The fault seed, for the report.
    pub seed: u64,
    /// Every run the workload started.
    pub runs: Vec<RunId>,
    /// The faults the layer injected.
    pub faults: FaultCounts,
    /// Poisoned runs the heal phase retried.
    pub poisoned_retried: u64,
    /// Node ids whose attempts record side effects (the others are not counted).
    pub effect_nodes: HashSet<String>,
}

/// One run as read back.
struct Stored {
    run: Run,
    poisoned: bool,
    /// Events by seq.
    events: BTreeMap<u64, Event>,
}

async fn read_run<S: RunStore + ?Sized>(store: &S, id: &RunId) -> Result<Stored, StoreError> {
    let info = store.inspect_run(&Scope::System, id).await?;
    let mut events = BTreeMap::new();
    let mut query = EventQuery {
        after_seq: 0,
        limit: MAX_PAGE_LIMIT,
    };
    loop {
        let page = store.list_events(&Scope::System, id, &query).await?;
        for event in page.events {
            events.insert(event.seq, event);
        }
        if !page.has_more {
            break;
        }
        query.after_seq = page.next_after_seq;
    }
    Ok(Stored {
        poisoned: info.is_poisoned(),
        run: info.run,
        events,
    })
}

/// Whether every event of a moment is stored, unchanged.
fn present(stored: Option<&Stored>, events: &[Event]) -> bool {
    let Some(stored) = stored else {
        return false;
    };
    events.iter().all(|event| {
        stored
            .events
            .get(&event.seq)
            .is_some_and(|kept| same_event(kept, event))
    })
}

/// The checkpoint seq a moment's events commit (the envelope of its last event).
fn checkpoint_seq_of(events: &[Event]) -> Option<u64> {
    events
        .last()
        .and_then(|e| e.metadata.get("checkpoint_seq"))
        .and_then(Value::as_u64)
}

/// Reads every run and returns the verdict.
///
/// # Errors
/// A store error while reading (the report is not produced: an unreadable store proves
/// nothing either way).
pub async fn check<S: RunStore + ?Sized>(
    store: &S,
    journal: &JournalSnapshot,
    input: &OracleInput,
) -> Result<Report, StoreError> {
    let mut report = Report {
        backend: input.backend.clone(),
        seed: input.seed,
        runs: input.runs.len() as u64,
        faults: input.faults,
        poisoned_retried: input.poisoned_retried,
        ..Report::default()
    };

    // Every run the workload started, plus any other the store holds (there should be none).
    let mut ids: Vec<RunId> = input.runs.clone();
    let known: HashSet<RunId> = ids.iter().cloned().collect();
    let mut query = RunQuery {
        limit: MAX_PAGE_LIMIT,
        ..RunQuery::default()
    };
    loop {
        let page = store.list_runs(&Scope::System, &query).await?;
        ids.extend(
            page.runs
                .iter()
                .filter(|r| !known.contains(&r.id))
                .map(|r| r.id.clone()),
        );
        if !page.has_more {
            break;
        }
        query.before = page.next_before;
    }

    let mut stored: HashMap<String, Stored> = HashMap::new();
    for id in &ids {
        match read_run(store, id).await {
            Ok(run) => {
                stored.insert(id.as_str().to_owned(), run);
            }
            Err(StoreError::NotFound) => {
                report.stuck += 1;
                report.problem(format!("run {id} was started but is not in the store"));
            }
            Err(error) => return Err(error),
        }
    }

    for (id, run) in &stored {
        check_run(&mut report, id, run);
    }
    let resolved = resolve_unknown(journal, &stored);
    let journal = &resolved;
    check_acks(&mut report, journal, &stored);
    check_stale(&mut report, journal);
    check_double_landing(&mut report, journal);
    check_effects(&mut report, journal, &stored, input);
    Ok(report)
}

/// Decides every commit whose own reply the store lost ([`Applied::Unknown`]) by reading:
/// it landed when its events are stored, unchanged, and no other commit of the same
/// checkpoint is known to have landed (events carry their instants, so two proposals of one
/// seq never compare equal; should they, the known landing wins and this one counts as not
/// landed, which can hide a duplicate but never invent one).
fn resolve_unknown(journal: &JournalSnapshot, stored: &HashMap<String, Stored>) -> JournalSnapshot {
    let key = |a: &crate::journal::CommitAttempt| {
        (
            a.run_id.clone(),
            checkpoint_seq_of(&a.events).unwrap_or(a.expected_seq + 1),
        )
    };
    let known: HashSet<(String, u64)> = journal
        .attempts
        .iter()
        .filter(|a| a.applied == Applied::Landed)
        .map(key)
        .collect();
    let mut out = journal.clone();
    for attempt in &mut out.attempts {
        if attempt.applied == Applied::Unknown {
            let landed = !known.contains(&key(attempt))
                && present(stored.get(&attempt.run_id), &attempt.events);
            attempt.applied = if landed {
                Applied::Landed
            } else {
                Applied::Refused
            };
        }
    }
    out
}

fn check_run(report: &mut Report, id: &str, stored: &Stored) {
    let run = &stored.run;
    let events: Vec<Event> = stored.events.values().cloned().collect();
    let mut seen: HashMap<u64, u64> = HashMap::new();
    for event in &events {
        if event.event_type == EventType::CheckpointCommitted {
            if let Some(seq) = event.metadata.get("checkpoint_seq").and_then(Value::as_u64) {
                *seen.entry(seq).or_default() += 1;
            }
        }
    }
    let twice = seen.values().filter(|n| **n > 1).count() as u64;
    let missing = (1..=run.checkpoint_seq)
        .filter(|seq| !seen.contains_key(seq))
        .count() as u64;
    report.duplicated += twice;
    report.gaps += missing;
    let history = check_history(run, &events);
    if twice == 0 && missing == 0 && !history.is_empty() {
        // A break the seq counts above do not show (event seqs, a trailing non-checkpoint).
        report.gaps += 1;
    }
    for problem in history {
        report.problem(format!("run {id}: {problem}"));
    }

    let mut completed: HashMap<&str, u64> = HashMap::new();
    for event in &events {
        if event.event_type == EventType::NodeCompleted {
            if let Some(task) = event.task_id.as_deref() {
                *completed.entry(task).or_default() += 1;
            }
        }
    }
    for (task, n) in completed {
        if n > 1 {
            report.duplicated += n - 1;
            report.problem(format!(
                "run {id}: task {task} committed as completed {n} times"
            ));
        }
    }

    let open = !run.open_interrupt_ids().is_empty();
    match run.status {
        s if s.is_terminal() => report.terminal += 1,
        RunStatus::Waiting if open && !stored.poisoned => report.waiting_on_interrupt += 1,
        status => {
            report.stuck += 1;
            report.problem(format!(
                "run {id} is stuck: status {status}, seq {}, poisoned {}",
                run.checkpoint_seq, stored.poisoned
            ));
        }
    }
}

fn check_acks(report: &mut Report, journal: &JournalSnapshot, stored: &HashMap<String, Stored>) {
    report.acks = journal.acks.len() as u64;
    for ack in &journal.acks {
        if !present(stored.get(&ack.run_id), &ack.events) {
            report.lost += 1;
            report.problem(format!(
                "run {}: acknowledged checkpoint {} is missing or differs",
                ack.run_id, ack.checkpoint_seq
            ));
        }
    }
    let announced: HashSet<(&str, u64)> = journal
        .acks
        .iter()
        .map(|a| (a.run_id.as_str(), a.checkpoint_seq))
        .collect();
    let mut claimed = CommitTally::default();
    let mut unclaimed = CommitTally::default();
    for attempt in &journal.attempts {
        let tally = if attempt.kind == CommitKind::Claimed {
            &mut claimed
        } else {
            &mut unclaimed
        };
        tally.attempted += 1;
        let key = (
            attempt.run_id.as_str(),
            checkpoint_seq_of(&attempt.events).unwrap_or(attempt.expected_seq + 1),
        );
        match attempt.applied {
            Applied::Landed => tally.landed += 1,
            Applied::Refused => tally.refused += 1,
            // Resolved above; kept apart should a caller skip the resolution.
            Applied::NotSent | Applied::Unknown => tally.not_sent += 1,
        }
        match (attempt.reply, attempt.applied) {
            (Reply::Ok, _) => {
                tally.replied_ok += 1;
                if !announced.contains(&key) {
                    report.acks_unannounced += 1;
                }
                // An Ok the engine received is an acknowledgement even if no observer ran.
                if !present(stored.get(&attempt.run_id), &attempt.events) {
                    report.lost += 1;
                    report.problem(format!(
                        "run {}: commit answered Ok at seq {} is missing or differs",
                        attempt.run_id, key.1
                    ));
                }
            }
            (Reply::Ambiguous, Applied::Landed) => {
                tally.ambiguous_landed += 1;
                if announced.contains(&key) {
                    tally.ambiguous_resolved_by_reread += 1;
                }
            }
            (Reply::Ambiguous, _) => tally.ambiguous_not_landed += 1,
            (Reply::Error, _) => {}
        }
        if attempt.applied == Applied::Landed
            && !present(stored.get(&attempt.run_id), &attempt.events)
        {
            report.landed_missing += 1;
            report.problem(format!(
                "run {}: a commit the store accepted at seq {} is missing or differs",
                attempt.run_id, key.1
            ));
        }
    }
    report.commits = claimed;
    report.starts_and_signals = unclaimed;
}

/// A landed claimed commit under token `T`, sent at tick `s`, is stale when the journal proves
/// another token `T'` was minted for its run after `T` and before `s`: `T'`'s `claim_due` was
/// called after `T`'s returned, and returned before `s`. Only bounds are compared, never a
/// recorded mint tick alone: a process frozen between the store's reply and its journal
/// records a mint late, and taking that tick as the mint's moment would make the newer holder
/// look stale. A commit whose own mint is not in the journal is not judged (a miss, never an
/// invention).
fn check_stale(report: &mut Report, journal: &JournalSnapshot) {
    let mut mints: HashMap<&str, Vec<&crate::journal::Mint>> = HashMap::new();
    for mint in &journal.mints {
        mints.entry(mint.run_id.as_str()).or_default().push(mint);
    }
    for attempt in &journal.attempts {
        // Only claimed commits carry a token to be stale with.
        if attempt.applied != Applied::Landed || attempt.kind != CommitKind::Claimed {
            continue;
        }
        let Some(list) = mints.get(attempt.run_id.as_str()) else {
            continue;
        };
        // The earliest the commit's own token is known to have been handed back.
        let Some(own) = list
            .iter()
            .filter(|m| m.token == attempt.token)
            .map(|m| m.tick)
            .min()
        else {
            continue;
        };
        let newer = list.iter().find(|m| {
            m.token != attempt.token && m.called_tick > own && m.tick < attempt.sent_tick
        });
        if let Some(newer) = newer {
            report.stale_accepted += 1;
            report.problem(format!(
                "run {}: the store accepted a commit on seq {} under token {} after token {} was handed out (claimed at tick {} > {}, returned at {} < {})",
                attempt.run_id,
                attempt.expected_seq,
                attempt.token,
                newer.token,
                newer.called_tick,
                own,
                newer.tick,
                attempt.sent_tick
            ));
        }
    }
}

/// At most one commit may land per `(run, checkpoint seq)`: the store saying yes twice is a
/// duplicate even when the second write happened to store identical bytes.
fn check_double_landing(report: &mut Report, journal: &JournalSnapshot) {
    let mut landed: BTreeMap<(&str, u64), u64> = BTreeMap::new();
    for attempt in &journal.attempts {
        if attempt.applied == Applied::Landed {
            let seq = checkpoint_seq_of(&attempt.events).unwrap_or(attempt.expected_seq + 1);
            *landed.entry((attempt.run_id.as_str(), seq)).or_default() += 1;
        }
    }
    for ((run, seq), n) in landed {
        if n > 1 {
            report.duplicated += n - 1;
            report.problem(format!(
                "run {run}: the store accepted {n} commits of checkpoint {seq}"
            ));
        }
    }
}

fn check_effects(
    report: &mut Report,
    journal: &JournalSnapshot,
    stored: &HashMap<String, Stored>,
    input: &OracleInput,
) {
    let executions = &journal.effects.executions;
    let mut tally = EffectTally {
        executions: executions.values().sum(),
        keys_executed: executions.len() as u64,
        ..EffectTally::default()
    };
    for (id, run) in stored {
        for event in run.events.values() {
            let is_result = matches!(
                event.event_type,
                EventType::NodeCompleted | EventType::NodeFailed
            );
            let counted = event
                .node_id
                .as_deref()
                .is_some_and(|n| input.effect_nodes.contains(n));
            if !is_result || !counted {
                continue;
            }
            tally.results_committed += 1;
            // A timed-out attempt needs no execution: its clock can run out before the node
            // was first polled (a worker frozen across the attempt ceiling, then resumed).
            let timed_out = event.event_type == EventType::NodeFailed
                && event.payload.get("reason").and_then(Value::as_str) == Some("timeout");
            if timed_out {
                continue;
            }
            let attempt = event.payload.get("attempt").and_then(Value::as_u64);
            let key = format!(
                "{}:{}",
                event.task_id.as_deref().unwrap_or_default(),
                attempt.unwrap_or_default()
            );
            if executions.get(&key).copied().unwrap_or(0) == 0 {
                tally.committed_without_execution += 1;
                report.problem(format!(
                    "run {id}: result of {key} committed but never executed"
                ));
            }
        }
    }
    tally.redundant_executions = tally.executions.saturating_sub(tally.results_committed);
    report.effects = tally;
}

#[cfg(test)]
mod tests;
