//! Scopes and tenant concealment (`docs/runs-and-moments.md`, “Scopes and tenancy”; scenarios 2 and
//! 7 of `docs/scenarios.md`): another tenant's row looks exactly like a missing one, everywhere but
//! `initialize` (run ids are global).

use crate::cases::prelude::*;

/// Asserts every run read of `id` in `scope` is `NotFound` and changes nothing.
async fn assert_concealed(env: &Env<'_>, scope: &Scope, id: &RunId) {
    let store = env.store();
    env.rejected(K::NotFound, store.fetch_run(scope, id)).await;
    env.rejected(K::NotFound, store.inspect_run(scope, id))
        .await;
    env.rejected(K::NotFound, store.fetch_event(scope, id, 1))
        .await;
    env.rejected(K::NotFound, store.fetch_latest_event(scope, id))
        .await;
    env.rejected(
        K::NotFound,
        store.list_events(scope, id, &event_query(0, 10)),
    )
    .await;
}

/// Asserts every run read of `id` in `scope` succeeds.
async fn assert_visible(env: &Env<'_>, scope: &Scope, id: &RunId) {
    let store = env.store();
    ok(store.fetch_run(scope, id).await, "fetch_run");
    ok(store.inspect_run(scope, id).await, "inspect_run");
    ok(store.fetch_event(scope, id, 1).await, "fetch_event");
    ok(
        store.fetch_latest_event(scope, id).await,
        "fetch_latest_event",
    );
    ok(
        store.list_events(scope, id, &event_query(0, 10)).await,
        "list_events",
    );
}

/// A tenant's run is visible to that tenant and to the system, and to nobody else.
pub async fn a_tenants_run_is_visible_to_its_owner_and_the_system_only(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let run = env.start(&graph, "r1", t(0)).await;
    assert_visible(env, &tenant_scope("a"), &run.id).await;
    assert_visible(env, &Scope::System, &run.id).await;
    assert_concealed(env, &tenant_scope("b"), &run.id).await;
    assert_concealed(env, &Scope::Tenantless, &run.id).await;
}

/// A tenantless run is visible to the tenantless scope and the system, not to tenants.
pub async fn a_tenantless_run_is_invisible_to_tenants(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    assert_visible(env, &Scope::Tenantless, &run.id).await;
    assert_visible(env, &Scope::System, &run.id).await;
    assert_concealed(env, &tenant_scope("a"), &run.id).await;
}

/// An unknown run and another tenant's run are indistinguishable.
pub async fn an_unknown_run_and_a_concealed_run_look_the_same(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    env.start(&graph, "r1", t(0)).await;
    assert_concealed(env, &tenant_scope("b"), &rid("r1")).await;
    assert_concealed(env, &tenant_scope("b"), &rid("ghost")).await;
    assert_concealed(env, &Scope::System, &rid("ghost")).await;
}

/// Tenant ids are exact: `a` and `A` are different tenants.
pub async fn tenant_ids_are_compared_exactly(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let run = env.start(&graph, "r1", t(0)).await;
    assert_concealed(env, &tenant_scope("A"), &run.id).await;
    assert_concealed(env, &tenant_scope("a "), &run.id).await;
}

/// Run ids are global: a run id taken by one owner is a conflict for every other owner.
pub async fn a_run_id_taken_by_one_tenant_conflicts_for_every_other_owner(env: &Env<'_>) {
    let graph_a = env.publish_tiny(&tenant("a")).await;
    env.start(&graph_a, "r1", t(0)).await;
    for owner in [tenant("b"), OwnerScope::Tenantless] {
        let graph = env.publish_tiny(&owner).await;
        let moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(5));
        env.rejected(
            K::Conflict,
            env.store()
                .initialize(&owner, init_proposal(&moment, t(5)), moment.events.clone()),
        )
        .await;
    }
    assert_eq!(env.inspect(&rid("r1")).await.owner, tenant("a"));
}

/// Run listing is scoped: each owner sees its own runs, the system sees all.
pub async fn run_listing_is_scoped_and_the_system_sees_everything(env: &Env<'_>) {
    for (owner, id) in [
        (tenant("a"), "a1"),
        (tenant("a"), "a2"),
        (tenant("b"), "b1"),
        (OwnerScope::Tenantless, "n1"),
    ] {
        let graph = tiny_graph(&owner);
        env.publish(&graph, t(0)).await;
        env.start(&graph, id, t(0)).await;
    }
    let ids = |scope: Scope| async move {
        let page = ok(
            env.store().list_runs(&scope, &run_query(100)).await,
            "list_runs",
        );
        let mut ids: Vec<String> = page.runs.iter().map(|r| r.id.to_string()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(tenant_scope("a")).await, ["a1", "a2"]);
    assert_eq!(ids(tenant_scope("b")).await, ["b1"]);
    assert_eq!(ids(tenant_scope("c")).await, Vec::<String>::new());
    assert_eq!(ids(Scope::Tenantless).await, ["n1"]);
    assert_eq!(ids(Scope::System).await, ["a1", "a2", "b1", "n1"]);
}

/// Graphs are owner-scoped: the tenantless copy and tenant `a`'s copy are fetchable by their
/// owners; tenant `b` sees neither until it saves its own.
pub async fn graphs_are_owner_scoped(env: &Env<'_>) {
    let mine = env.publish_tiny(&tenant("a")).await;
    let open = env.publish_tiny(&OwnerScope::Tenantless).await;
    assert_eq!(mine.graph_ref, open.graph_ref, "same content, same address");
    for owner in [tenant("a"), OwnerScope::Tenantless] {
        let doc = ok(
            env.store().fetch_graph(&owner, &mine.graph_ref).await,
            "fetch_graph",
        );
        assert_eq!(doc, mine.doc);
    }
    let b = tenant("b");
    env.rejected(K::NotFound, env.store().fetch_graph(&b, &mine.graph_ref))
        .await;
    env.rejected(
        K::NotFound,
        env.store()
            .fetch_latest_graph_ref(&b, &mine.graph_ref.graph_id),
    )
    .await;
    let page = env
        .unchanged(env.store().list_graph_versions(
            &b,
            &mine.graph_ref.graph_id,
            &version_query(10),
        ))
        .await;
    assert!(page.versions.is_empty());
    env.publish(&tiny_graph(&b), t(5)).await;
    let doc = ok(
        env.store().fetch_graph(&b, &mine.graph_ref).await,
        "fetch_graph",
    );
    assert_eq!(doc, mine.doc);
}

/// Each owner's copy of a graph keeps its own publication time.
pub async fn each_owner_keeps_its_own_publication_time(env: &Env<'_>) {
    env.publish(&tiny_graph(&tenant("a")), t(1)).await;
    env.publish(&tiny_graph(&tenant("b")), t(2)).await;
    for (owner, at) in [(tenant("a"), t(1)), (tenant("b"), t(2))] {
        let page = ok(
            env.store()
                .list_graph_versions(
                    &owner,
                    &tiny_graph(&owner).graph_ref.graph_id,
                    &version_query(10),
                )
                .await,
            "list_graph_versions",
        );
        assert_eq!(page.versions.len(), 1);
        assert_eq!(page.versions[0].published_at, at);
    }
}

/// A run's owner scope may read, signal and recover it; the system may too.
pub async fn the_owner_scope_may_signal_its_run(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let moment = moment_to(&run, RunStatus::Cancelled, t(5));
    let stored = ok(
        env.store()
            .commit_unclaimed(
                &tenant_scope("a"),
                run.checkpoint_seq,
                unclaimed_commit(&moment, t(5)),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    assert_eq!(stored.status, RunStatus::Cancelled);
    assert_eq!(
        ok(
            env.store().fetch_run(&Scope::System, &run.id).await,
            "fetch_run"
        )
        .status,
        RunStatus::Cancelled
    );
}

/// Claim work is system work: a tenant's run is claimed like any other, with its owner.
pub async fn claims_see_every_owner(env: &Env<'_>) {
    for (owner, id, wake) in [
        (tenant("a"), "a1", 1),
        (tenant("b"), "b1", 2),
        (OwnerScope::Tenantless, "n1", 3),
    ] {
        let graph = tiny_graph(&owner);
        env.publish(&graph, t(0)).await;
        env.start_waking(&graph, id, t(0), t(wake)).await;
    }
    let batch = env.claim_all(&claim_policy(t(10), 10)).await;
    let owners: Vec<(String, OwnerScope)> = batch
        .leases
        .iter()
        .map(|l| (l.run_id.to_string(), l.owner.clone()))
        .collect();
    assert_eq!(
        owners,
        [
            ("a1".to_owned(), tenant("a")),
            ("b1".to_owned(), tenant("b")),
            ("n1".to_owned(), OwnerScope::Tenantless)
        ]
    );
}

/// Ids that look like SQL, patterns or key syntax stay exact and isolated: a tenant named `%`
/// sees nothing of tenant `a`, a run `r_1` is not `r11`, and prefixes never collide.
pub async fn ids_with_query_and_key_syntax_stay_exact_and_isolated(env: &Env<'_>) {
    let tenants = [
        "a",
        "%",
        "_",
        "a:b",
        "a'; DROP TABLE runs; --",
        "{docket:x}",
        "🦀",
    ];
    for (i, name) in tenants.iter().enumerate() {
        let owner = tenant(name);
        let graph = tiny_graph(&owner);
        env.publish(&graph, t(0)).await;
        for id in ["r_1", "r%", "r1:events", "r*"] {
            env.start(&graph, &format!("{id}#{i}"), t(i as i64)).await;
        }
    }
    for (i, name) in tenants.iter().enumerate() {
        let scope = tenant_scope(name);
        let page = ok(
            env.store().list_runs(&scope, &run_query(100)).await,
            "list_runs",
        );
        let mut ids: Vec<String> = page.runs.iter().map(|r| r.id.to_string()).collect();
        ids.sort();
        let mut expected: Vec<String> = ["r_1", "r%", "r1:events", "r*"]
            .iter()
            .map(|id| format!("{id}#{i}"))
            .collect();
        expected.sort();
        assert_eq!(ids, expected, "tenant {name:?} sees exactly its own runs");
        for other in 0..tenants.len() {
            if other != i {
                env.rejected(
                    K::NotFound,
                    env.store().fetch_run(&scope, &rid(&format!("r_1#{other}"))),
                )
                .await;
            }
        }
    }
    env.rejected(
        K::NotFound,
        env.store().fetch_run(&Scope::System, &rid("r11#0")),
    )
    .await;
    let system = ok(
        env.store()
            .list_runs(&Scope::System, &run_query(1_000))
            .await,
        "list_runs",
    );
    assert_eq!(system.runs.len(), tenants.len() * 4);
}
