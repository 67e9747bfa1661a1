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
