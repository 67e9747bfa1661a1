use super::*;

use crate::journal::{CommitAttempt, CommitKind, Mint};

fn mint(run: &str, token: &str, tick: u64) -> Mint {
    Mint {
        run_id: run.into(),
        token: token.into(),
        tick,
        called_tick: tick,
    }
}

fn landed(run: &str, token: &str, sent_tick: u64) -> CommitAttempt {
    CommitAttempt {
        kind: CommitKind::Claimed,
        run_id: run.into(),
        expected_seq: 1,
        token: token.into(),
        events: Vec::new(),
        sent_tick,
        applied: Applied::Landed,
        refused_with: None,
        reply: Reply::Ok,
    }
}

#[test]
fn a_commit_sent_after_another_token_was_minted_is_stale_and_one_sent_before_is_not() {
    let journal = JournalSnapshot {
        mints: vec![mint("r", "a", 1), mint("r", "b", 5), mint("s", "c", 2)],
        attempts: vec![
            // Under a, before b existed: fine.
            landed("r", "a", 4),
            // Under a, after b was handed out: stale.
            landed("r", "a", 6),
            // Under b, after b: fine.
            landed("r", "b", 7),
            // Another run's mints do not count.
            landed("s", "c", 9),
        ],
        ..JournalSnapshot::default()
    };
    let mut report = Report::default();
    check_stale(&mut report, &journal);
    assert_eq!(report.stale_accepted, 1, "{:?}", report.problems);
    assert!(!report.is_safe());
}

#[test]
fn a_refused_unsent_or_unclaimed_commit_is_never_stale_accepted() {
    let mut refused = landed("r", "a", 6);
    refused.applied = Applied::Refused;
    let mut unsent = landed("r", "a", 7);
    unsent.applied = Applied::NotSent;
    let mut signal = landed("r", "", 8);
    signal.kind = CommitKind::Unclaimed;
    let journal = JournalSnapshot {
        mints: vec![mint("r", "a", 1), mint("r", "b", 5)],
        attempts: vec![refused, unsent, signal],
        ..JournalSnapshot::default()
    };
    let mut report = Report::default();
    check_stale(&mut report, &journal);
    assert_eq!(report.stale_accepted, 0);
    assert!(report.is_safe());
}

#[test]
fn the_headline_names_every_figure() {
    let mut report = Report {
        runs: 3,
        ..Report::default()
    };
    report.faults.delays = 2;
    report.faults.errors_before = 1;
    report.faults.ambiguous_after = 1;
    report.faults.ambiguous_unsent = 1;
    report.faults.stalls = 1;
    assert_eq!(
        report.headline(),
        "runs 3, faults 6 (delays 2, errors-before 1, ambiguous 2, stalls 1), lost 0, duplicated 0, stale accepted 0, stuck 0"
    );
    report.stuck = 1;
    assert!(!report.is_safe());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("JSON");
    assert_eq!(json["stuck"], 1);
    assert_eq!(json["faults"]["stalls"], 1);
}

#[test]
fn two_accepted_commits_of_one_checkpoint_are_a_duplicate() {
    let mut second = landed("r", "a", 6);
    second.reply = Reply::Error;
    let mut other = landed("r", "a", 7);
    other.expected_seq = 2;
    let journal = JournalSnapshot {
        attempts: vec![landed("r", "a", 4), second, other],
        ..JournalSnapshot::default()
    };
    let mut report = Report::default();
    check_double_landing(&mut report, &journal);
    assert_eq!(report.duplicated, 1, "{:?}", report.problems);
}

#[test]
fn a_commit_whose_reply_was_lost_is_not_landed_when_the_store_lacks_it() {
    let mut cut = landed("r", "a", 3);
    cut.applied = Applied::Unknown;
    cut.reply = Reply::Ambiguous;
    let journal = JournalSnapshot {
        attempts: vec![cut],
        ..JournalSnapshot::default()
    };
    let resolved = resolve_unknown(&journal, &HashMap::new());
    assert_eq!(resolved.attempts[0].applied, Applied::Refused);
    let mut report = Report::default();
    check_acks(&mut report, &resolved, &HashMap::new());
    assert_eq!(report.commits.ambiguous_not_landed, 1);
    assert_eq!(report.commits.not_sent, 0);
    assert!(report.is_safe());
}

#[test]
fn a_mint_recorded_late_by_a_frozen_process_does_not_make_the_newer_holder_stale() {
    // Token a was claimed at 1..2 but recorded only at 20 (its process froze in between);
    // b was claimed at 10..11 and commits at 30: b is the newer holder, not a stale one.
    let mut late = mint("r", "a", 20);
    late.called_tick = 1;
    let journal = JournalSnapshot {
        mints: vec![late, mint("r", "b", 11)],
        attempts: vec![landed("r", "b", 30)],
        ..JournalSnapshot::default()
    };
    let mut report = Report::default();
    check_stale(&mut report, &journal);
    assert_eq!(report.stale_accepted, 0, "{:?}", report.problems);
    // Nor is a's own commit: a may have been minted after b. Recorded promptly (1..2), it
    // was not, and its commit after b was handed out is stale.
    let journal = JournalSnapshot {
        attempts: vec![landed("r", "a", 31)],
        ..journal
    };
    check_stale(&mut report, &journal);
    assert_eq!(report.stale_accepted, 0, "{:?}", report.problems);
    let journal = JournalSnapshot {
        mints: vec![mint("r", "a", 2), mint("r", "b", 11)],
        ..journal
    };
    check_stale(&mut report, &journal);
    assert_eq!(report.stale_accepted, 1, "{:?}", report.problems);
}
