//! Event reads (`docs/storage-contract.md`, “Reading events”; scenarios 4 and 137 of
//! `docs/scenarios.md`): ascending pages after a cursor, legal gaps, retained bounds and the run's
//! `latest_seq`.

use docket_core::model::{EventQuery, MAX_PAGE_LIMIT};

use crate::cases::prelude::*;

/// Initializes `r1` with exactly the events at `seqs` (its `event_seq` is the largest).
async fn run_with_event_seqs(env: &Env<'_>, owner: &OwnerScope, seqs: &[u64]) -> Run {
    let graph = env.publish_tiny(owner).await;
    let mut moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    let template = moment.events[0].clone();
    moment.events = seqs
        .iter()
        .map(|&seq| {
            let mut event = template.clone();
            event.seq = seq;
            event.payload.insert("n".into(), json!(seq));
            event
        })
        .collect();
    moment.run.event_seq = seqs.iter().copied().max().unwrap_or(4);
    ok(
        env.store()
            .initialize(owner, init_proposal(&moment, t(0)), moment.events.clone())
            .await,
        "initialize",
    )
}

fn seqs(page: &docket_core::model::EventPage) -> Vec<u64> {
    page.events.iter().map(|e| e.seq).collect()
}

async fn page(
    env: &Env<'_>,
    id: &RunId,
    after_seq: u64,
    limit: u32,
) -> docket_core::model::EventPage {
    ok(
        env.store()
            .list_events(&Scope::System, id, &EventQuery { after_seq, limit })
            .await,
        "list_events",
    )
}

/// With events {1, 3, 4}: the first limit-1 page is `[1]` with the retained bounds 1..4,
/// `has_more`, and `latest_seq` 4.
pub async fn a_first_page_reports_bounds_and_has_more_across_gaps(env: &Env<'_>) {
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &[1, 3, 4]).await;
    let first = page(env, &run.id, 0, 1).await;
    assert_eq!(seqs(&first), [1]);
    assert_eq!(first.next_after_seq, 1);
    assert!(first.has_more);
    assert_eq!(
        (
            first.oldest_available_seq,
            first.latest_available_seq,
            first.latest_seq
        ),
        (Some(1), Some(4), 4)
    );
}

/// After seq 1, the page steps over the gap: `[3, 4]`, no more.
pub async fn a_page_steps_over_gaps(env: &Env<'_>) {
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &[1, 3, 4]).await;
    let next = page(env, &run.id, 1, 10).await;
    assert_eq!(seqs(&next), [3, 4]);
    assert_eq!(next.next_after_seq, 4);
    assert!(!next.has_more);
}

/// The latest event is the newest retained one, across gaps.
pub async fn the_latest_event_is_the_newest_retained(env: &Env<'_>) {
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &[1, 3, 4]).await;
    let latest = ok(
        env.store()
            .fetch_latest_event(&Scope::System, &run.id)
            .await,
        "fetch_latest_event",
    );
    assert_eq!(latest.map(|e| e.seq), Some(4));
    env.rejected(
        K::NotFound,
        env.store().fetch_event(&Scope::System, &run.id, 2),
    )
    .await;
}

/// A run whose `event_seq` is 4 but has no event rows: no latest event, an empty page with no
/// bounds, and `latest_seq` 4.
pub async fn a_run_without_event_rows_keeps_its_latest_seq(env: &Env<'_>) {
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &[]).await;
    assert_eq!(run.event_seq, 4);
    let latest = ok(
        env.store()
            .fetch_latest_event(&Scope::System, &run.id)
            .await,
        "fetch_latest_event",
    );
    assert_eq!(latest, None);
    let empty = page(env, &run.id, 0, 10).await;
    assert!(empty.events.is_empty() && !empty.has_more);
    assert_eq!(
        (
            empty.oldest_available_seq,
            empty.latest_available_seq,
            empty.latest_seq
        ),
        (None, None, 4)
    );
    assert_eq!(empty.next_after_seq, 0);
}

/// A page beyond the latest event is empty and echoes the cursor.
pub async fn a_page_beyond_the_latest_event_echoes_the_cursor(env: &Env<'_>) {
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &[1, 2]).await;
    let beyond = page(env, &run.id, 9, 10).await;
    assert!(beyond.events.is_empty() && !beyond.has_more);
    assert_eq!(beyond.next_after_seq, 9);
    assert_eq!(
        (beyond.oldest_available_seq, beyond.latest_available_seq),
        (Some(1), Some(2))
    );
}

/// Following `next_after_seq` visits every event exactly once, in order.
pub async fn paging_by_next_after_seq_visits_every_event_once(env: &Env<'_>) {
    let all: Vec<u64> = (1..=11).collect();
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &all).await;
    let mut seen = Vec::new();
    let mut after = 0;
    loop {
        let p = page(env, &run.id, after, 3).await;
        seen.extend(seqs(&p));
        after = p.next_after_seq;
        if !p.has_more {
            break;
        }
    }
    assert_eq!(seen, all);
}

/// A page that ends exactly at the last event says there is no more.
pub async fn an_exactly_full_last_page_has_no_more(env: &Env<'_>) {
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &[1, 2, 3]).await;
    let p = page(env, &run.id, 0, 3).await;
    assert_eq!(seqs(&p), [1, 2, 3]);
    assert!(!p.has_more);
}

/// Event limits outside `1..=MAX_PAGE_LIMIT` are invalid arguments; the maximum is fine.
pub async fn event_limits_are_validated(env: &Env<'_>) {
    let run = run_with_event_seqs(env, &OwnerScope::Tenantless, &[1]).await;
    for limit in [0, MAX_PAGE_LIMIT + 1] {
        env.rejected(
            K::InvalidArgument,
            env.store()
                .list_events(&Scope::System, &run.id, &event_query(0, limit)),
        )
        .await;
    }
    assert_eq!(seqs(&page(env, &run.id, 0, MAX_PAGE_LIMIT).await), [1]);
}

/// Event reads of an unknown run are not found.
pub async fn events_of_an_unknown_run_are_not_found(env: &Env<'_>) {
    let ghost = rid("ghost");
    env.rejected(
        K::NotFound,
        env.store().fetch_event(&Scope::System, &ghost, 1),
    )
    .await;
    env.rejected(
        K::NotFound,
        env.store().fetch_latest_event(&Scope::System, &ghost),
    )
    .await;
    env.rejected(
        K::NotFound,
        env.store()
            .list_events(&Scope::System, &ghost, &event_query(0, 10)),
    )
    .await;
}

/// Events round-trip exactly: type, step, node/channel/task ids, timestamp, nested payload and
/// metadata.
pub async fn events_round_trip_exactly(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let mut moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    let event = &mut moment.events[0];
    event.node_id = Some("node-λ".into());
    event.channel_id = Some("state:result".into());
    event.task_id = Some("r1:0:node-λ".into());
    event.step = 7;
    event.timestamp = t(0).add_micros(123);
    event.payload = map(json!({
        "list": [1, "two", null, {"deep": [true, false]}],
        "float": 0.5,
        "neg": -3,
        "empty": {},
    }));
    event.metadata = map(json!({"k": "v", "n": [[], [[]]]}));
    ok(
        env.store()
            .initialize(
                &graph.owner,
                init_proposal(&moment, t(0)),
                moment.events.clone(),
            )
            .await,
        "initialize",
    );
    assert_eq!(env.all_events(&rid("r1")).await, moment.events);
    let first = ok(
        env.store().fetch_event(&Scope::System, &rid("r1"), 1).await,
        "fetch_event",
    );
    assert_eq!(first, moment.events[0]);
}

/// Events accumulate contiguously across commits, each commit's closing event last.
pub async fn events_accumulate_across_commits(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let mut expected = env.all_events(&c.run.id).await;
    let mut run = c.run.clone();
    for i in 0..3 {
        let moment = moment_to(&run, RunStatus::Running, t(20 + i));
        run = ok(
            env.store()
                .commit_claimed(
                    &Scope::System,
                    claimed_commit(&moment, &c.lease.claim_token, t(20 + i)),
                    moment.events.clone(),
                )
                .await,
            "commit_claimed",
        );
        expected.extend(moment.events);
    }
    let stored = env.all_events(&c.run.id).await;
    assert_eq!(stored, expected);
    let numbered: Vec<u64> = stored.iter().map(|e| e.seq).collect();
    assert_eq!(numbered, (1..=run.event_seq).collect::<Vec<_>>());
    let page = page(env, &c.run.id, 0, 1).await;
    assert_eq!(page.latest_seq, run.event_seq);
}
