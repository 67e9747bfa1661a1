use std::sync::Arc;
use std::time::Duration;

use super::*;

fn run(id: &str) -> RunId {
    RunId::new(id).expect("run id")
}

#[test]
fn a_token_digest_is_stable_short_and_never_the_token() {
    let token = ClaimToken::mint();
    let digest = token_digest(&token);
    assert_eq!(digest, token_digest(&token));
    assert_eq!(digest.len(), 16);
    assert!(!token.as_str().contains(&digest));
    assert_ne!(digest, token_digest(&ClaimToken::mint()));
}

#[test]
fn only_another_token_minted_later_supersedes() {
    let journal = Journal::new();
    let (a, b) = (ClaimToken::mint(), ClaimToken::mint());
    journal.record_mints([(&run("r"), &a)]);
    let since = journal.tick();
    assert!(!journal.superseded_since(&run("r"), &token_digest(&a), since));
    journal.record_mints([(&run("other"), &b)]);
    assert!(!journal.superseded_since(&run("r"), &token_digest(&a), since));
    journal.record_mints([(&run("r"), &a)]);
    assert!(!journal.superseded_since(&run("r"), &token_digest(&a), since));
    journal.record_mints([(&run("r"), &b)]);
    assert!(journal.superseded_since(&run("r"), &token_digest(&a), since));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_call_wakes_when_its_claim_is_taken_over() {
    let journal = Arc::new(Journal::new());
    let old = token_digest(&ClaimToken::mint());
    let since = journal.tick();
    let waiter = {
        let journal = Arc::clone(&journal);
        let old = old.clone();
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            journal.await_steal(&run("r"), &old, since, deadline).await
        })
    };
    journal.record_mints([(&run("r"), &ClaimToken::mint())]);
    let stolen = tokio::time::timeout(Duration::from_secs(30), waiter)
        .await
        .expect("the waiter woke before its deadline")
        .expect("the waiter did not panic");
    assert!(stolen);
}

#[tokio::test(flavor = "current_thread")]
async fn a_stalled_call_gives_up_at_its_deadline() {
    let journal = Journal::new();
    let since = journal.tick();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(10);
    assert!(
        !journal
            .await_steal(&run("r"), "0000000000000000", since, deadline)
            .await
    );
}

#[test]
fn a_persistent_journal_reads_back_whole_and_skips_a_torn_last_line() {
    let dir = std::env::temp_dir().join(format!("chaos-journal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("worker.jsonl");
    let _ = std::fs::remove_file(&path);
    let journal = Journal::persistent(&path).expect("open");
    let token = ClaimToken::mint();
    journal.record_mints([(&run("r"), &token)]);
    journal.record_ack(&run("r"), 1, Vec::new());
    journal.record_effect("task:1");
    journal.record_effect("task:1");
    let (a, b) = (journal.tick(), journal.tick());
    assert!(b > a, "ticks increase");
    assert!(
        a > 1_000_000_000_000_000_000,
        "ticks are wall-clock nanoseconds"
    );
    // A SIGKILL in the middle of a write leaves a torn last line.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"ack\":{\"run_"))
        .expect("tear");

    let mut read = JournalSnapshot::default();
    assert_eq!(read.read_file(&path).expect("read"), 1, "one torn line");
    let mine = journal.snapshot();
    assert_eq!(read.mints, mine.mints);
    assert_eq!(read.acks, mine.acks);
    assert_eq!(read.effects.executions.get("task:1"), Some(&2));
    assert!(!std::fs::read_to_string(&path)
        .expect("text")
        .contains(token.as_str()));
    let _ = std::fs::remove_dir_all(&dir);
}
