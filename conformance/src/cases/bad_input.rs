//! Bad input (`docs/reliability.md`, “Bad input”): typed rejection of bad identifiers at
//! construction, exact round-trips of awkward values, sequence overflow refused without wrapping,
//! and corrupt records reported as corrupt — never a panic, never "absent", never contagious.

use docket_core::model::{GraphId, IdError, TenantId, MAX_ID_BYTES, MAX_SEQ};
use docket_core::store::InitProposal;
use serde_json::Value;

use crate::cases::prelude::*;

/// The characters no identifier may contain.
const CONTROL: [&str; 6] = ["\0", "\t", "\n", "\r", "\u{7f}", "\u{85}"];

/// Identifiers with NUL or other control characters are refused at construction with a typed
/// error, for every identifier type and through deserialization too.
pub async fn ids_with_control_characters_are_refused_when_built(env: &Env<'_>) {
    for bad in CONTROL {
        let id = format!("run{bad}1");
        assert!(matches!(
            RunId::new(id.as_str()),
            Err(IdError::ControlCharacter { .. })
        ));
        assert!(matches!(
            GraphId::new(id.as_str()),
            Err(IdError::ControlCharacter { .. })
        ));
        assert!(matches!(
            TenantId::new(id.as_str()),
            Err(IdError::ControlCharacter { .. })
        ));
        assert!(matches!(
            ClaimToken::new(id.as_str()),
            Err(IdError::ControlCharacter { .. })
        ));
        let decoded: Result<RunId, _> = serde_json::from_value(Value::String(id));
        assert!(decoded.is_err(), "deserialization applies the same rules");
    }
    // The same id without the control character is storable.
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "run1", t(0)).await;
}

/// Empty identifiers are refused at construction with a typed error.
pub async fn empty_ids_are_refused_when_built(env: &Env<'_>) {
    assert!(matches!(RunId::new(""), Err(IdError::Empty { .. })));
    assert!(matches!(GraphId::new(""), Err(IdError::Empty { .. })));
    assert!(matches!(TenantId::new(""), Err(IdError::Empty { .. })));
    assert!(matches!(ClaimToken::new(""), Err(IdError::Empty { .. })));
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    assert_eq!(
        graph.owner,
        OwnerScope::Tenantless,
        "the empty tenant is `Tenantless`"
    );
}

/// Identifiers over 255 bytes are refused typed; a 255-byte run id and tenant id are stored,
/// read, listed and claimed intact.
pub async fn ids_of_255_bytes_round_trip_and_longer_ones_are_refused(env: &Env<'_>) {
    let long = "x".repeat(MAX_ID_BYTES + 1);
    assert!(
        matches!(RunId::new(long.as_str()), Err(IdError::TooLong { len, .. }) if len == MAX_ID_BYTES + 1)
    );
    assert!(matches!(
        TenantId::new(long.as_str()),
        Err(IdError::TooLong { .. })
    ));
    // Multi-byte characters count in bytes.
    assert!(matches!(
        RunId::new("é".repeat(128)),
        Err(IdError::TooLong { len: 256, .. })
    ));
    let longest = "r".repeat(MAX_ID_BYTES);
    let owner = tenant(&"t".repeat(MAX_ID_BYTES));
    let graph = env.publish_tiny(&owner).await;
    let run = env.start(&graph, &longest, t(0)).await;
    assert_eq!(run.id.as_str(), longest);
    assert_eq!(env.fetch(&run.id).await, run);
    let lease = env.claim(t(1)).await;
    assert_eq!(
        (lease.run_id.as_str(), &lease.owner),
        (longest.as_str(), &owner)
    );
    let page = ok(
        env.store()
            .list_runs(&Scope::from(&owner), &run_query(10))
            .await,
        "list_runs",
    );
    assert_eq!(page.runs[0].id, run.id);
}

/// Initializes `r1` with `metadata` (host data, unconstrained by the graph) and returns the
/// stored run, asserting it reads back exactly.
async fn round_trip_metadata(env: &Env<'_>, metadata: ValueMap) -> Run {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let mut moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    moment.run.metadata = metadata.clone();
    moment.events[0].payload = metadata.clone();
    moment.events[0].metadata = metadata;
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
    let stored = env.fetch(&rid("r1")).await;
    assert_eq!(stored, moment.run, "the document reads back exactly");
    assert_eq!(
        env.all_events(&rid("r1")).await,
        moment.events,
        "events read back exactly"
    );
    stored
}

/// NUL and other control characters inside values round-trip exactly (documents, events).
pub async fn control_characters_inside_values_round_trip_exactly(env: &Env<'_>) {
    round_trip_metadata(
        env,
        map(json!({
            "nul": "a\u{0}b",
            "controls": "\u{1}\u{8}\u{b}\u{c}\u{1b}\u{1f}\u{7f}\u{85}",
            "lines": "one\r\ntwo\nthree\t",
            "only_nul": "\u{0}",
            "key\u{0}with nul": 1,
        })),
    )
    .await;
}

/// Unicode beyond ASCII (accents, CJK, emoji, RTL, BOM, combining marks) round-trips exactly.
pub async fn unicode_values_round_trip_exactly(env: &Env<'_>) {
    round_trip_metadata(
        env,
        map(json!({
            "accents": "déjà vu",
            "cjk": "漢字かなカナ",
            "emoji": "🦀🚀👩‍👩‍👧",
            "rtl": "שלום مرحبا",
            "bom": "\u{feff}start",
            "combining": "e\u{301}",
            "keys": {"ключ": "значение"},
        })),
    )
    .await;
}

/// A value over one MiB round-trips exactly, in the document and in an event.
pub async fn a_one_mib_value_round_trips_exactly(env: &Env<'_>) {
    let big: String = (0..(1 << 20) + 17)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let stored = round_trip_metadata(env, map(json!({ "big": big }))).await;
    assert_eq!(
        stored
            .metadata
            .get("big")
            .and_then(Value::as_str)
            .map(str::len),
        Some((1 << 20) + 17)
    );
}

/// Empty strings, empty lists and empty maps round-trip exactly (never as null or absent).
pub async fn empty_values_round_trip_exactly(env: &Env<'_>) {
    round_trip_metadata(
        env,
        map(json!({
            "": "empty key",
            "empty_string": "",
            "empty_list": [],
            "empty_map": {},
            "null": null,
            "nested": [[], {}, [{}], ""],
        })),
    )
    .await;
}

/// Numbers round-trip exactly: large and negative integers, -0.0, subnormal and extreme
/// floats.
pub async fn numbers_round_trip_exactly(env: &Env<'_>) {
    round_trip_metadata(
        env,
        map(json!({
            "i64_max": i64::MAX,
            "i64_min": i64::MIN,
            "u64_max": u64::MAX,
            "big_float": 1e20,
            "neg_zero": -0.0,
            "tenth": 0.1,
            "subnormal": 5e-324,
            "max_float": f64::MAX,
            "third": 1.0 / 3.0,
        })),
    )
    .await;
}

/// A value nested deeper than the portable limit is refused as an invalid transition.
pub async fn values_nested_too_deep_are_refused(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let mut deep = json!("leaf");
    for _ in 0..80 {
        deep = json!([deep]);
    }
    let mut moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    moment.run.metadata = map(json!({ "deep": deep }));
    env.rejected(
        K::InvalidTransition,
        env.store().initialize(
            &graph.owner,
            init_proposal(&moment, t(0)),
            moment.events.clone(),
        ),
    )
    .await;
}

/// An expected seq at the largest storable seq leaves no room for a next one: claimed and
/// unclaimed commits are invalid and nothing wraps.
pub async fn an_expected_seq_at_the_maximum_is_invalid_and_never_wraps(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    for expected in [MAX_SEQ, MAX_SEQ + 1, u64::MAX - 1, u64::MAX] {
        let mut claimed = claimed_commit(&moment, &c.lease.claim_token, t(20));
        claimed.expected_seq = expected;
        claimed.run.checkpoint_seq = expected.wrapping_add(1);
        env.rejected(
            K::InvalidTransition,
            env.store()
                .commit_claimed(&Scope::System, claimed, moment.events.clone()),
        )
        .await;
        let mut signal = unclaimed_commit(&moment, t(20));
        signal.run.checkpoint_seq = expected.wrapping_add(1);
        env.rejected(
            K::InvalidTransition,
            env.store()
                .commit_unclaimed(&Scope::System, expected, signal, moment.events.clone()),
        )
        .await;
    }
    assert_eq!(env.fetch(&c.run.id).await, c.run);
}

/// Sequences beyond the storable maximum are refused at initialize: a checkpoint seq, an
/// event seq, an event counter.
pub async fn sequences_beyond_the_maximum_are_refused(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    type Damage = fn(&mut InitProposal, &mut Vec<Event>);
    let cases: [(&str, Damage); 3] = [
        ("checkpoint_seq", |p, _| p.run.checkpoint_seq = MAX_SEQ + 1),
        ("event_seq", |p, _| p.run.event_seq = u64::MAX),
        ("event", |_, events| events[0].seq = MAX_SEQ + 1),
    ];
    for (what, change) in cases {
        let mut proposal = init_proposal(&moment, t(0));
        let mut events = moment.events.clone();
        change(&mut proposal, &mut events);
        let error = env
            .rejected(
                K::InvalidTransition,
                env.store().initialize(&graph.owner, proposal, events),
            )
            .await;
        assert!(!error.to_string().is_empty(), "{what}");
    }
}

/// A duplicate create is a conflict from every owner, and changes nothing.
pub async fn a_duplicate_create_is_a_conflict_from_every_owner(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let original = env.start(&graph, "r1", t(0)).await;
    for owner in [OwnerScope::Tenantless, tenant("a")] {
        let graph = env.publish_tiny(&owner).await;
        let moment = init_moment(&graph, &rid("r1"), map(json!({"amount": 2})), t(9));
        env.rejected(
            K::Conflict,
            env.store()
                .initialize(&owner, init_proposal(&moment, t(9)), moment.events.clone()),
        )
        .await;
    }
    assert_eq!(env.fetch(&original.id).await, original);
}

/// Tokens of the wrong shape (not a UUID) are harmless: a commit with one loses the fence,
/// release does nothing, abandon is stale.
pub async fn tokens_that_are_not_uuids_are_harmless(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let odd = ClaimToken::new("not-a-uuid").expect("shape-only token");
    env.assert_fenced_out(&c.run.id, &odd, t(20)).await;
    env.unchanged(env.store().release_claim(&c.run.id, &odd, t(20)))
        .await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(30), 3);
    let outcome = env
        .unchanged(env.store().abandon_claim(&c.run.id, &odd, &policy))
        .await;
    assert_eq!(outcome, AbandonOutcome::Stale);
}

/// Graph documents with control characters and a large payload round-trip exactly.
pub async fn awkward_graph_documents_round_trip_exactly(env: &Env<'_>) {
    let mut graph = tiny_graph(&OwnerScope::Tenantless);
    graph.doc.description = Some("nul\u{0} tab\t emoji 🦀".into());
    graph
        .doc
        .metadata
        .insert("blob".into(), json!("z".repeat(300_000)));
    graph.graph_ref = crate::fixtures::graph_ref_of(&graph.doc);
    env.publish(&graph, t(0)).await;
    let doc = ok(
        env.store()
            .fetch_graph(&graph.owner, &graph.graph_ref)
            .await,
        "fetch_graph",
    );
    assert_eq!(doc, graph.doc);
}

/// A run with a corrupt stored document is `Corrupt` on fetch and inspect — never not found,
/// never a panic — while other runs stay readable, listable and claimable.
pub async fn a_corrupt_run_is_corrupt_on_every_read_and_not_contagious(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let bad = env.start_waking(&graph, "bad", t(0), t(100)).await;
    let good = env.start(&graph, "good", t(0)).await;
    env.corrupt_run(&bad.id).await;
    for scope in [Scope::System, Scope::Tenantless] {
        env.rejected(K::Corrupt, env.store().fetch_run(&scope, &bad.id))
            .await;
        env.rejected(K::Corrupt, env.store().inspect_run(&scope, &bad.id))
            .await;
    }
    assert_eq!(env.fetch(&good.id).await, good);
    let page = ok(
        env.store().list_runs(&Scope::System, &run_query(10)).await,
        "list_runs",
    );
    assert!(page.runs.iter().any(|r| r.id == good.id));
    let lease = env.claim(t(1)).await;
    assert_eq!(lease.run_id, good.id);
    env.commit_to(&lease, &good, RunStatus::Done, t(2)).await;
}

/// Transitions compare the stored columns (identity, status, fences), never the stored
/// document: a commit whose fences match replaces a corrupt document, and the run reads again.
pub async fn a_fenced_commit_replaces_a_corrupt_document(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.corrupt_run(&c.run.id).await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let committed = ok(
        env.store()
            .commit_claimed(
                &Scope::System,
                claimed_commit(&moment, &c.lease.claim_token, t(20)),
                moment.events.clone(),
            )
            .await,
        "a fenced commit over a corrupt document",
    );
    assert_eq!(env.fetch(&c.run.id).await, committed);
}

/// A stale commit onto a corrupt run is still only a stale fence, and changes nothing.
pub async fn a_stale_commit_onto_a_corrupt_run_is_stale_and_changes_nothing(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.corrupt_run(&c.run.id).await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    env.rejected(
        K::StaleCheckpoint,
        env.store().commit_claimed(
            &Scope::System,
            claimed_commit(&moment, &ClaimToken::mint(), t(20)),
            moment.events.clone(),
        ),
    )
    .await;
}

/// Poison recovery of a corrupt run is `Corrupt`, never not found.
pub async fn recovering_a_corrupt_run_is_corrupt(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    env.corrupt_run(&run.id).await;
    env.rejected(
        K::Corrupt,
        env.store()
            .retry_poisoned_run(&Scope::System, &run.id, t(5)),
    )
    .await;
}

/// A corrupt event is `Corrupt` on fetch, on latest (never skipped for an older one) and in a
/// page that covers it; pages before it still read.
pub async fn a_corrupt_event_is_corrupt_wherever_it_is_read(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let other = env.start(&graph, "r2", t(0)).await;
    let last = run.event_seq;
    env.corrupt_event(&run.id, last).await;
    env.rejected(
        K::Corrupt,
        env.store().fetch_event(&Scope::System, &run.id, last),
    )
    .await;
    env.rejected(
        K::Corrupt,
        env.store().fetch_latest_event(&Scope::System, &run.id),
    )
    .await;
    env.rejected(
        K::Corrupt,
        env.store()
            .list_events(&Scope::System, &run.id, &event_query(0, 100)),
    )
    .await;
    let before = ok(
        env.store()
            .list_events(&Scope::System, &run.id, &event_query(0, (last - 1) as u32))
            .await,
        "a page that stops before the corrupt event",
    );
    assert_eq!(before.events.len() as u64, last - 1);
    assert_eq!(
        env.all_events(&other.id).await.len() as u64,
        other.event_seq
    );
}

/// A commit that must compare against a corrupt stored event is an `EventConflict` (the
/// proposal cannot be the fact stored there) and changes nothing.
pub async fn a_commit_that_must_compare_with_a_corrupt_event_is_an_event_conflict(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.corrupt_event(&c.run.id, 1).await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let mut replay = moment.events[0].clone();
    replay.seq = 1;
    let mut events = vec![replay];
    events.extend(moment.events.iter().cloned());
    env.rejected(
        K::EventConflict,
        env.store().commit_claimed(
            &Scope::System,
            claimed_commit(&moment, &c.lease.claim_token, t(20)),
            events,
        ),
    )
    .await;
}

/// A corrupt graph version is `CorruptGraph` on fetch — never not found — while other
/// versions still fetch.
pub async fn a_corrupt_graph_is_corrupt_never_absent(env: &Env<'_>) {
    let v1 = env.publish_tiny(&OwnerScope::Tenantless).await;
    let v2 = tiny_graph_version(&OwnerScope::Tenantless, "g", 2);
    env.publish(&v2, t(1)).await;
    env.corrupt_graph(&v1.owner, &v1.graph_ref).await;
    env.rejected(
        K::CorruptGraph,
        env.store().fetch_graph(&v1.owner, &v1.graph_ref),
    )
    .await;
    let doc = ok(
        env.store().fetch_graph(&v2.owner, &v2.graph_ref).await,
        "fetch_graph",
    );
    assert_eq!(doc, v2.doc);
}

/// Reads at extreme sequence numbers are plain misses: `fetch_event` at 0, the maximum and
/// `u64::MAX` is not found, and a page after them is empty and echoes the cursor.
pub async fn reads_at_extreme_seqs_are_misses_not_errors(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    for seq in [0, MAX_SEQ, MAX_SEQ + 1, u64::MAX] {
        env.rejected(
            K::NotFound,
            env.store().fetch_event(&Scope::System, &run.id, seq),
        )
        .await;
    }
    for after in [MAX_SEQ, MAX_SEQ + 1, u64::MAX] {
        let page = env
            .unchanged(
                env.store()
                    .list_events(&Scope::System, &run.id, &event_query(after, 10)),
            )
            .await;
        assert!(page.events.is_empty() && !page.has_more, "after {after}");
        assert_eq!(page.next_after_seq, after);
        assert_eq!(page.latest_available_seq, Some(run.event_seq));
    }
}

/// Abandons with an extreme expected seq are stale, never an overflow.
pub async fn abandons_with_extreme_expected_seqs_are_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    for expected in [MAX_SEQ, MAX_SEQ + 1, u64::MAX] {
        let policy = abandon_policy(expected, t(20), t(30), 3);
        let outcome = env
            .unchanged(
                env.store()
                    .abandon_claim(&c.run.id, &c.lease.claim_token, &policy),
            )
            .await;
        assert_eq!(outcome, AbandonOutcome::Stale, "expected seq {expected}");
    }
}

/// Extreme durations and instants saturate instead of overflowing: a TTL of `u64::MAX` never
/// expires a claim, a retention of `u64::MAX` deletes nothing, and wakes at the ends of time
/// are stored exactly.
pub async fn extreme_durations_and_instants_saturate(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let end_of_time = Timestamp::from_micros(i64::MAX);
    let late = env.start_waking(&graph, "late", t(0), end_of_time).await;
    assert_eq!(env.inspect(&late.id).await.wake_at, Some(end_of_time));
    let early_wake = Timestamp::from_micros(i64::MIN + 1);
    let early = env.start_waking(&graph, "early", t(0), early_wake).await;
    assert_eq!(env.inspect(&early.id).await.wake_at, Some(early_wake));
    let lease = env.claim(t(1)).await;
    assert_eq!(lease.run_id, early.id);
    let mut policy = claim_policy(end_of_time, 10);
    policy.orphan_ttl_ms = u64::MAX;
    let batch = env.claim_all(&policy).await;
    let ids: Vec<&RunId> = batch.leases.iter().map(|l| &l.run_id).collect();
    assert_eq!(
        ids,
        [&late.id],
        "the claim held under an endless TTL is never stolen"
    );
    let report = env
        .unchanged(env.store().prune(&docket_core::store::PrunePolicy {
            now: end_of_time,
            event_retention_ms: u64::MAX,
            run_retention_ms: u64::MAX,
            batch_size: nz(100),
        }))
        .await;
    assert_eq!(report, docket_core::store::PruneReport::default());
}

/// A tenant's corrupt run is `Corrupt` in its own scope and for the system, and concealed
/// (`NotFound`) from another tenant: corruption never turns into "absent" for those allowed
/// to see the run, and never leaks the run's existence to others.
pub async fn a_corrupt_tenant_run_is_corrupt_in_scope_and_concealed_outside(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let run = env.start(&graph, "bad", t(0)).await;
    env.corrupt_run(&run.id).await;
    for scope in [Scope::System, tenant_scope("a")] {
        env.rejected(K::Corrupt, env.store().fetch_run(&scope, &run.id))
            .await;
        env.rejected(K::Corrupt, env.store().inspect_run(&scope, &run.id))
            .await;
    }
    for scope in [tenant_scope("b"), Scope::Tenantless] {
        env.rejected(K::NotFound, env.store().fetch_run(&scope, &run.id))
            .await;
        env.rejected(K::NotFound, env.store().inspect_run(&scope, &run.id))
            .await;
    }
}
