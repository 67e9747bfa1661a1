//! Run reads (`docs/storage-contract.md`, “Reading runs”; scenario 6 of `docs/scenarios.md`): exact
//! documents, projections, and newest-first run pages with filters and a keyset cursor.

use docket_core::model::{GraphHash, GraphId, RunCursor, RunQuery, MAX_PAGE_LIMIT};

use crate::cases::prelude::*;

fn ids(page: &docket_core::model::RunPage) -> Vec<String> {
    page.runs.iter().map(|r| r.id.to_string()).collect()
}

async fn list(env: &Env<'_>, query: &RunQuery) -> docket_core::model::RunPage {
    ok(
        env.store().list_runs(&Scope::System, query).await,
        "list_runs",
    )
}

/// Fetch returns exactly the last committed document (not an earlier one, not the proposal
/// of a rejected write).
pub async fn fetch_returns_the_last_committed_document(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let second = env
        .commit_to(&c.lease, &c.run, RunStatus::Running, t(20))
        .await;
    assert_eq!(env.fetch(&c.run.id).await, second);
    let inspected = env.inspect(&c.run.id).await;
    assert_eq!(inspected.run, second);
}

/// Fetch and inspect of an unknown run are not found.
pub async fn reads_of_an_unknown_run_are_not_found(env: &Env<'_>) {
    env.rejected(
        K::NotFound,
        env.store().fetch_run(&Scope::System, &rid("ghost")),
    )
    .await;
    env.rejected(
        K::NotFound,
        env.store().inspect_run(&Scope::System, &rid("ghost")),
    )
    .await;
}

/// Three runs, two started together: limit-1 pages go newest first, ties by id descending,
/// and the empty final page keeps the cursor.
pub async fn run_pages_are_newest_first_with_ties_by_id(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "old", t(1)).await;
    env.start(&graph, "r-a", t(2)).await;
    env.start(&graph, "r-b", t(2)).await;
    let mut before: Option<RunCursor> = None;
    let mut seen = Vec::new();
    for round in 0..3 {
        let p = list(
            env,
            &RunQuery {
                limit: 1,
                before: before.clone(),
                ..RunQuery::default()
            },
        )
        .await;
        assert_eq!(p.has_more, round < 2, "has_more on page {round}");
        seen.extend(ids(&p));
        before = p.next_before;
    }
    assert_eq!(seen, ["r-b", "r-a", "old"]);
    let empty = list(
        env,
        &RunQuery {
            limit: 1,
            before: before.clone(),
            ..RunQuery::default()
        },
    )
    .await;
    assert!(empty.runs.is_empty() && !empty.has_more);
    assert_eq!(empty.next_before, before);
}

/// Listing filters by graph id and by graph hash in the store.
pub async fn run_listing_filters_by_graph(env: &Env<'_>) {
    let g1 = env.publish_tiny(&OwnerScope::Tenantless).await;
    let g2 = tiny_graph_version(&OwnerScope::Tenantless, "g", 2);
    env.publish(&g2, t(0)).await;
    let h = tiny_graph_version(&OwnerScope::Tenantless, "h", 1);
    env.publish(&h, t(0)).await;
    env.start(&g1, "on-g1", t(1)).await;
    env.start(&g2, "on-g2", t(2)).await;
    env.start(&h, "on-h", t(3)).await;
    let by_id = list(
        env,
        &RunQuery {
            graph_id: Some(GraphId::new("g").expect("id")),
            ..run_query(10)
        },
    )
    .await;
    assert_eq!(ids(&by_id), ["on-g2", "on-g1"]);
    let by_hash = list(
        env,
        &RunQuery {
            graph_hash: Some(g1.graph_ref.graph_hash.clone()),
            ..run_query(10)
        },
    )
    .await;
    assert_eq!(ids(&by_hash), ["on-g1"]);
    let none = list(
        env,
        &RunQuery {
            graph_hash: Some(GraphHash::new("0".repeat(64)).expect("hash")),
            ..run_query(10)
        },
    )
    .await;
    assert!(none.runs.is_empty() && none.next_before.is_none());
}

/// Listing filters by one or several statuses.
pub async fn run_listing_filters_by_status(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let running = env.start(&graph, "running", t(1)).await;
    let done = env.start(&graph, "done", t(2)).await;
    let waiting = env.start(&graph, "waiting", t(3)).await;
    for (run, status) in [(&done, RunStatus::Done), (&waiting, RunStatus::Waiting)] {
        let moment = moment_to(run, status, t(10));
        ok(
            env.store()
                .commit_unclaimed(
                    &Scope::System,
                    run.checkpoint_seq,
                    unclaimed_commit(&moment, t(10)),
                    moment.events.clone(),
                )
                .await,
            "commit_unclaimed",
        );
    }
    let only = |statuses: Vec<RunStatus>| RunQuery {
        statuses: Some(statuses),
        ..run_query(10)
    };
    assert_eq!(
        ids(&list(env, &only(vec![RunStatus::Done])).await),
        ["done"]
    );
    assert_eq!(
        ids(&list(env, &only(vec![RunStatus::Running, RunStatus::Waiting])).await),
        ["waiting", running.id.as_str()]
    );
    assert!(list(env, &only(vec![RunStatus::Failed]))
        .await
        .runs
        .is_empty());
}

/// Summaries carry the stored columns, including the latest seq, step and times.
pub async fn run_summaries_match_their_documents(env: &Env<'_>) {
    let c = env.claimed_for(&tenant("a"), "r1").await;
    let done = env
        .commit_to(&c.lease, &c.run, RunStatus::Done, t(20))
        .await;
    let p = list(env, &run_query(10)).await;
    let summary = &p.runs[0];
    assert_eq!(summary.id, done.id);
    assert_eq!(summary.owner, tenant("a"));
    assert_eq!(summary.graph_id, done.graph_id);
    assert_eq!(summary.graph_hash, done.graph_hash);
    assert_eq!(summary.status, RunStatus::Done);
    assert_eq!(summary.step, done.step);
    assert_eq!(summary.checkpoint_seq, done.checkpoint_seq);
    assert_eq!(Some(summary.started_at), done.started_at);
    assert_eq!(Some(summary.updated_at), done.updated_at);
    assert_eq!(summary.finished_at, done.finished_at);
}

/// Run limits outside `1..=MAX_PAGE_LIMIT` are invalid arguments.
pub async fn run_limits_are_validated(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    for limit in [0, MAX_PAGE_LIMIT + 1] {
        env.rejected(
            K::InvalidArgument,
            env.store().list_runs(&Scope::System, &run_query(limit)),
        )
        .await;
    }
    let p = env
        .unchanged(
            env.store()
                .list_runs(&Scope::System, &run_query(MAX_PAGE_LIMIT)),
        )
        .await;
    assert!(p.runs.is_empty());
}

/// An empty status filter, or one naming `created`, is an invalid argument.
pub async fn run_status_filters_are_validated(env: &Env<'_>) {
    for statuses in [vec![], vec![RunStatus::Created]] {
        env.rejected(
            K::InvalidArgument,
            env.store().list_runs(
                &Scope::System,
                &RunQuery {
                    statuses: Some(statuses),
                    ..run_query(10)
                },
            ),
        )
        .await;
    }
}

/// The projection tracks each operational change while the document stays put.
pub async fn inspect_tracks_operational_state(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start_waking(&graph, "r1", t(0), t(5)).await;
    let info = env.inspect(&run.id).await;
    assert_eq!(
        (info.wake_at, info.claimed_at, info.claim_attempts),
        (Some(t(5)), None, 0)
    );
    assert!(!info.is_claimed() && !info.is_poisoned());
    let lease = env.claim(t(6)).await;
    let info = env.inspect(&run.id).await;
    assert_eq!(
        (info.wake_at, info.claimed_at, info.claim_attempts),
        (None, Some(t(6)), 1)
    );
    assert!(info.is_claimed());
    ok(
        env.store()
            .release_claim(&run.id, &lease.claim_token, t(7))
            .await,
        "release_claim",
    );
    let info = env.inspect(&run.id).await;
    assert_eq!(
        (info.wake_at, info.claimed_at, info.claim_attempts),
        (Some(t(7)), None, 1)
    );
    assert_eq!(info.run, run);
}

/// Drains every page of `query` (limit as given), asserting each page on its own with `each`,
/// and returns the ids in page order. Bounded: a page that neither returns a run nor ends the
/// listing fails the case.
async fn every_page(
    env: &Env<'_>,
    mut query: RunQuery,
    each: impl Fn(&docket_core::model::RunSummary) -> bool,
) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let page = list(env, &query).await;
        for run in &page.runs {
            assert!(
                each(run),
                "page after {:?} holds {} which the filter excludes",
                query.before,
                run.id
            );
        }
        seen.extend(ids(&page));
        if !page.has_more {
            return seen;
        }
        assert!(
            !page.runs.is_empty(),
            "a page with has_more returned no run"
        );
        query.before = page.next_before;
    }
}

/// Both graph filters apply together: the graph id and the hash of one of its versions select
/// that version's runs only, and a hash of another graph id selects nothing.
pub async fn run_listing_by_graph_id_and_hash_applies_both(env: &Env<'_>) {
    let v1 = env.publish_tiny(&OwnerScope::Tenantless).await;
    let v2 = tiny_graph_version(&OwnerScope::Tenantless, "g", 2);
    env.publish(&v2, t(0)).await;
    let h = tiny_graph_version(&OwnerScope::Tenantless, "h", 1);
    env.publish(&h, t(0)).await;
    env.start(&v1, "on-v1", t(1)).await;
    env.start(&v2, "on-v2", t(2)).await;
    env.start(&h, "on-h", t(3)).await;
    let both = |graph_id: &str, hash: &Published| RunQuery {
        graph_id: Some(GraphId::new(graph_id).expect("id")),
        graph_hash: Some(hash.graph_ref.graph_hash.clone()),
        ..run_query(10)
    };
    assert_eq!(ids(&list(env, &both("g", &v1)).await), ["on-v1"]);
    assert_eq!(ids(&list(env, &both("g", &v2)).await), ["on-v2"]);
    assert!(list(env, &both("h", &v1)).await.runs.is_empty());
}

/// Filters hold on every page, not only the first: paging one run at a time through runs of
/// two graphs and three statuses returns exactly the matching runs, newest first.
pub async fn run_filters_hold_on_every_page(env: &Env<'_>) {
    let g = env.publish_tiny(&OwnerScope::Tenantless).await;
    let h = tiny_graph_version(&OwnerScope::Tenantless, "h", 1);
    env.publish(&h, t(0)).await;
    // Interleaved so every filter's matches are spread over the whole listing.
    let mut expected_g = Vec::new();
    let mut expected_done = Vec::new();
    for i in 0..6i64 {
        let (graph, id) = if i % 2 == 0 {
            (&g, format!("g-{i}"))
        } else {
            (&h, format!("h-{i}"))
        };
        let run = env.start(graph, &id, t(10 + i)).await;
        if i % 3 == 0 {
            let moment = moment_to(&run, RunStatus::Done, t(100));
            ok(
                env.store()
                    .commit_unclaimed(
                        &Scope::System,
                        run.checkpoint_seq,
                        unclaimed_commit(&moment, t(100)),
                        moment.events.clone(),
                    )
                    .await,
                "commit_unclaimed",
            );
            expected_done.push(id.clone());
        }
        if i % 2 == 0 {
            expected_g.push(id);
        }
    }
    expected_g.reverse();
    expected_done.reverse();
    let by_id = RunQuery {
        graph_id: Some(GraphId::new("g").expect("id")),
        ..run_query(1)
    };
    let g_id = g.graph_ref.graph_id.clone();
    assert_eq!(
        every_page(env, by_id, |r| r.graph_id == g_id).await,
        expected_g
    );
    let by_hash = RunQuery {
        graph_hash: Some(g.graph_ref.graph_hash.clone()),
        ..run_query(1)
    };
    let g_hash = g.graph_ref.graph_hash.clone();
    assert_eq!(
        every_page(env, by_hash, |r| r.graph_hash == g_hash).await,
        expected_g
    );
    let by_status = RunQuery {
        statuses: Some(vec![RunStatus::Done]),
        ..run_query(1)
    };
    assert_eq!(
        every_page(env, by_status, |r| r.status == RunStatus::Done).await,
        expected_done
    );
}

/// The graph id filter is an exact match: `g` selects neither `g2` nor `gg`.
pub async fn run_listing_by_graph_id_is_an_exact_match(env: &Env<'_>) {
    let mut graphs = Vec::new();
    for id in ["g", "g2", "gg"] {
        let graph = tiny_graph_version(&OwnerScope::Tenantless, id, 1);
        env.publish(&graph, t(0)).await;
        graphs.push(graph);
    }
    for (i, graph) in graphs.iter().enumerate() {
        env.start(
            graph,
            &format!("on-{}", graph.graph_ref.graph_id),
            t(i as i64),
        )
        .await;
    }
    for graph in &graphs {
        let id = graph.graph_ref.graph_id.clone();
        let page = list(
            env,
            &RunQuery {
                graph_id: Some(id.clone()),
                ..run_query(10)
            },
        )
        .await;
        assert_eq!(ids(&page), [format!("on-{id}")], "filter {id}");
    }
}
