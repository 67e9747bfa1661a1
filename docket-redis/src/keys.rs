//! The key layout of one namespace (see the crate docs for the full table).
//!
//! Every key starts with the hash tag `{docket:<ns>}:`, so a namespace lives in one cluster
//! slot and one script may touch any of its keys. Free-form identifiers are only ever the *last*
//! component of a key, or are percent-encoded (`%`, `:`, `{`, `}`) when another component
//! follows, so two different addresses can never share a key. The Lua scripts derive the same
//! keys with the same rules (`lua/prelude.lua`); the integration tests exercise ids containing
//! every encoded character to keep both sides in step.

use docket_core::model::{GraphHash, GraphId, OwnerScope, RunId, Timestamp};
use docket_core::ops::{OperationId, SessionId};

/// Longest namespace accepted (the key prefix stays short).
pub const MAX_NAMESPACE_LEN: usize = 128;

/// Checks that `namespace` is non-empty, short and made of `[A-Za-z0-9._-]` only, so that it
/// needs no escaping in keys, channel names or `SCAN MATCH` patterns.
#[must_use]
pub fn namespace_is_valid(namespace: &str) -> bool {
    !namespace.is_empty()
        && namespace.len() <= MAX_NAMESPACE_LEN
        && namespace
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Percent-encodes the characters that would make a key component ambiguous (`:`), break the
/// hash tag (`{`, `}`) or collide with the escape itself (`%`). Mirrors `enc` in the prelude.
#[must_use]
pub fn enc(component: &str) -> String {
    let mut out = String::with_capacity(component.len());
    for c in component.chars() {
        match c {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            other => out.push(other),
        }
    }
    out
}

/// The key component of an owner: `_` for tenantless, `t.<enc(tenant)>` for a tenant.
/// Mirrors `owner_part` in the prelude (which receives the stored scope key).
#[must_use]
pub fn owner_part(owner: &OwnerScope) -> String {
    match owner {
        OwnerScope::Tenantless => "_".to_owned(),
        OwnerScope::Tenant(id) => format!("t.{}", enc(id.as_str())),
    }
}

/// A seq as a 19-digit zero-padded decimal: lexicographic order equals numeric order for every
/// seq up to `i64::MAX` (no float rounding, unlike a sorted-set score).
#[must_use]
pub fn seq_member(seq: u64) -> String {
    format!("{seq:019}")
}

/// A timestamp as a fixed-width string whose byte order equals time order, for lexicographic
/// sorted sets: `p` + 19 digits for `t ≥ 0`, `n` + the nines' complement of `|t|` for `t < 0`.
/// Mirrors `sortable_time` in the prelude.
#[must_use]
pub fn sortable_time(t: Timestamp) -> String {
    let micros = t.as_micros();
    if micros >= 0 {
        format!("p{micros:019}")
    } else {
        let magnitude = format!("{:019}", micros.unsigned_abs());
        let complement: String = magnitude
            .bytes()
            .map(|d| char::from(b'9' - (d - b'0')))
            .collect();
        format!("n{complement}")
    }
}

/// The keys of one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    namespace: String,
    prefix: String,
}

impl Keys {
    /// The keys of `namespace` (which the caller has validated).
    #[must_use]
    pub fn new(namespace: &str) -> Self {
        Keys {
            namespace: namespace.to_owned(),
            prefix: format!("{{docket:{namespace}}}:"),
        }
    }

    /// The namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `{docket:<ns>}:` — every key starts with it.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A `SCAN MATCH` pattern covering every key of the namespace.
    #[must_use]
    pub fn scan_pattern(&self) -> String {
        // `{`, `}` and the namespace alphabet are literal in glob patterns.
        format!("{}*", self.prefix)
    }

    /// The pub/sub channel of wake hints (not a key: channels have no slot).
    #[must_use]
    pub fn wake_channel(&self) -> String {
        format!("docket:{}:wake", self.namespace)
    }

    /// Hash of one run: document and operational fields.
    #[must_use]
    pub fn run(&self, id: &RunId) -> String {
        format!("{}run:{}", self.prefix, id.as_str())
    }

    /// Hash `seq19 → event JSON` of one run.
    #[must_use]
    pub fn events(&self, id: &RunId) -> String {
        format!("{}events:{}", self.prefix, id.as_str())
    }

    /// Lexicographic sorted set of the retained `seq19` of one run.
    #[must_use]
    pub fn event_seqs(&self, id: &RunId) -> String {
        format!("{}eseq:{}", self.prefix, id.as_str())
    }

    /// Sorted set `run_id NUL seq19` scored by `inserted_at` µs (event retention). NUL cannot
    /// occur in an id, so ties order by `(run_id, seq)` exactly like the reference store.
    #[must_use]
    pub fn events_by_time(&self) -> String {
        format!("{}events_by_time", self.prefix)
    }

    /// Sorted set of unclaimed, healthy running runs scored by `wake_at` µs.
    #[must_use]
    pub fn ready(&self) -> String {
        format!("{}ready", self.prefix)
    }

    /// Sorted set of claimed runs scored by `claimed_at` µs.
    #[must_use]
    pub fn claims(&self) -> String {
        format!("{}claims", self.prefix)
    }

    /// Sorted set of one owner's unclaimed, healthy running runs scored by `wake_at` µs: the
    /// per-owner twin of [`Keys::ready`], kept in step with it by every script (the prelude's
    /// `ready_add` / `ready_remove`), so a tenant-fair claim reads each owner's oldest due
    /// runs without walking another owner's backlog. Mirrors `ready_of` in the prelude.
    #[must_use]
    pub fn ready_of(&self, owner: &OwnerScope) -> String {
        format!("{}ready_of:{}", self.prefix, owner_part(owner))
    }

    /// Lexicographic sorted set of the owner keys (`OwnerScope::scope_key`, `""` for
    /// tenantless) that may have ready runs: every owner whose [`Keys::ready_of`] set is not
    /// empty, plus owners whose set emptied since a tenant-fair claim that selected something
    /// last visited them (that claim drops them). The owners a tenant-fair claim visits, in
    /// byte order.
    #[must_use]
    pub fn ready_owners(&self) -> String {
        format!("{}ready_owners", self.prefix)
    }

    /// Hash `tenant id → "<weight>:<cap>"` (cap empty = none) of the stored tenant shares.
    #[must_use]
    pub fn tenant_shares(&self) -> String {
        format!("{}tenant_shares", self.prefix)
    }

    /// Hash `owner scope key → number of the owner's runs in` [`Keys::claims`], kept by every
    /// script that adds or removes a claim (the prelude's `claim_add` / `claim_remove`): the
    /// usage a tenant-fair claim compares with a cap.
    #[must_use]
    pub fn claims_by_owner(&self) -> String {
        format!("{}claims_by_owner", self.prefix)
    }

    /// Hash of the tenant-fair cursor, `owner` (scope key) and `taken`, and of the share
    /// summary: `capped` and `weighted`, how many stored shares have a cap (or do not decode)
    /// and how many a weight above 1 without one (absent when none).
    #[must_use]
    pub fn fair_cursor(&self) -> String {
        format!("{}fair_cursor", self.prefix)
    }

    /// String holding the namespace's layout version once a store has migrated it (absent on
    /// an empty namespace and on one written before the per-owner ready index existed).
    #[must_use]
    pub fn layout(&self) -> String {
        format!("{}layout", self.prefix)
    }

    /// Set of poisoned run ids.
    #[must_use]
    pub fn poisoned(&self) -> String {
        format!("{}poisoned", self.prefix)
    }

    /// Sorted set of terminal runs scored by `updated_at` µs (run retention).
    #[must_use]
    pub fn terminal(&self) -> String {
        format!("{}terminal", self.prefix)
    }

    /// Lexicographic sorted set `sortable(started_at):run_id` of every run.
    #[must_use]
    pub fn runs_all(&self) -> String {
        format!("{}runs", self.prefix)
    }

    /// Lexicographic sorted set `sortable(started_at):run_id` of one owner's runs.
    #[must_use]
    pub fn runs_of(&self, owner: &OwnerScope) -> String {
        format!("{}runs_of:{}", self.prefix, owner_part(owner))
    }

    /// The member of a run in the run indexes.
    #[must_use]
    pub fn run_index_member(started_at: Timestamp, id: &RunId) -> String {
        format!("{}:{}", sortable_time(started_at), id.as_str())
    }

    /// `<owner_part>:<enc(graph_id)>`: the suffix of the graph keys.
    #[must_use]
    pub fn graph_member(owner: &OwnerScope, graph_id: &GraphId) -> String {
        format!("{}:{}", owner_part(owner), enc(graph_id.as_str()))
    }

    /// Hash of one graph version: `bytes`, `published_at`, `refs` (runs referencing it).
    #[must_use]
    pub fn graph(&self, owner: &OwnerScope, graph_id: &GraphId, hash: &GraphHash) -> String {
        format!(
            "{}graph:{}:{}",
            self.prefix,
            Self::graph_member(owner, graph_id),
            hash.as_str()
        )
    }

    /// Lexicographic sorted set `sortable(published_at):hash` of one graph id's versions.
    #[must_use]
    pub fn graph_versions(&self, owner: &OwnerScope, graph_id: &GraphId) -> String {
        format!(
            "{}graph_versions:{}",
            self.prefix,
            Self::graph_member(owner, graph_id)
        )
    }

    /// Lexicographic sorted set of every graph version of the namespace, oldest first by
    /// `(published_at, owner, graph_id, graph_hash)` (the pruner's work list); see
    /// [`Keys::graph_time_member`].
    #[must_use]
    pub fn graphs_by_time(&self) -> String {
        format!("{}graphs_by_time", self.prefix)
    }

    /// The member of a version in [`Keys::graphs_by_time`]:
    /// `sortable(published_at) NUL owner NUL graph_id NUL graph_hash`, where owner is `0` for
    /// tenantless and `1<tenant>` for a tenant. NUL cannot occur in ids, so byte order is the
    /// tuple order (tenantless before tenants, as `OwnerScope` orders).
    #[must_use]
    pub fn graph_time_member(
        published_at: Timestamp,
        owner: &OwnerScope,
        graph_id: &GraphId,
        hash: &GraphHash,
    ) -> String {
        let owner = match owner {
            OwnerScope::Tenantless => "0".to_owned(),
            OwnerScope::Tenant(id) => format!("1{}", id.as_str()),
        };
        format!(
            "{}\0{owner}\0{}\0{}",
            sortable_time(published_at),
            graph_id.as_str(),
            hash.as_str()
        )
    }

    /// The member of a version in its graph's version set.
    #[must_use]
    pub fn graph_version_member(published_at: Timestamp, hash: &GraphHash) -> String {
        format!("{}:{}", sortable_time(published_at), hash.as_str())
    }

    /// The pub/sub channel of operation-registry completion hints (not a key). Separate
    /// from [`Keys::wake_channel`] so that ending an operation wakes no run worker.
    #[must_use]
    pub fn ops_channel(&self) -> String {
        format!("docket:{}:ops", self.namespace)
    }

    /// A `SCAN MATCH` pattern covering every operation-registry key of the namespace (and no
    /// run or graph key: none of those starts with `ops:`).
    #[must_use]
    pub fn ops_scan_pattern(&self) -> String {
        format!("{}ops:*", self.prefix)
    }

    /// Hash of one registry owner: `retired` (`1` once retired) and `seq` (the last
    /// completion sequence minted). Absent for an owner that never ended or retired anything.
    #[must_use]
    pub fn ops_owner(&self, owner: &SessionId) -> String {
        format!("{}ops:{owner}", self.prefix)
    }

    /// Lexicographic sorted set of the ids of one owner's live (non-terminal) operations:
    /// its cardinality is the owner's active count, its order the ascending id order.
    #[must_use]
    pub fn ops_live(&self, owner: &SessionId) -> String {
        format!("{}ops:{owner}:live", self.prefix)
    }

    /// Sorted set of the ids of one owner's retained terminal operations, scored by
    /// completion sequence (collection order, retention eviction).
    #[must_use]
    pub fn ops_done(&self, owner: &SessionId) -> String {
        format!("{}ops:{owner}:done", self.prefix)
    }

    /// Lexicographic sorted set `display_name NUL id` of one owner's retained operations:
    /// the listing order (names cannot hold NUL, so a shorter name sorts first).
    #[must_use]
    pub fn ops_names(&self, owner: &SessionId) -> String {
        format!("{}ops:{owner}:names", self.prefix)
    }

    /// The key of one operation's hash without the id (the scripts derive record keys from
    /// it); ids are hyphenated UUIDs, so they need no encoding.
    #[must_use]
    pub fn ops_record_prefix(&self, owner: &SessionId) -> String {
        format!("{}ops:{owner}:op:", self.prefix)
    }

    /// Hash of one operation: `kind`, `name`, `label`, `source` (JSON, absent = none),
    /// `status`, `progress`, `outcome` (JSON), `seq`, `created_at`, `started_at`,
    /// `completed_at` (instants in µs; absent field = none).
    #[must_use]
    pub fn ops_record(&self, owner: &SessionId, id: &OperationId) -> String {
        format!("{}{id}", self.ops_record_prefix(owner))
    }

    /// The member of an operation in [`Keys::ops_names`].
    #[must_use]
    pub fn ops_name_member(display_name: &str, id: &OperationId) -> String {
        format!("{display_name}\0{id}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::model::TenantId;

    #[test]
    fn sortable_time_orders_like_time_across_the_whole_range() {
        let samples = [
            i64::MIN,
            i64::MIN + 1,
            -1_000_000,
            -10,
            -9,
            -1,
            0,
            1,
            9,
            10,
            1_700_000_000_000_000,
            i64::MAX,
        ];
        let encoded: Vec<String> = samples
            .iter()
            .map(|&t| sortable_time(Timestamp::from_micros(t)))
            .collect();
        let mut sorted = encoded.clone();
        sorted.sort();
        assert_eq!(encoded, sorted);
        assert!(encoded.iter().all(|e| e.len() == 20));
    }

    #[test]
    fn seq_members_order_numerically() {
        let mut members: Vec<String> = [u64::try_from(i64::MAX).unwrap_or(0), 10, 9, 1]
            .into_iter()
            .map(seq_member)
            .collect();
        members.sort();
        assert_eq!(
            members,
            vec![
                "0000000000000000001",
                "0000000000000000009",
                "0000000000000000010",
                "9223372036854775807"
            ]
        );
    }

    #[test]
    fn encoded_components_cannot_collide() {
        let a = Keys::graph_member(
            &OwnerScope::Tenant(TenantId::new("a:g").expect("tenant")),
            &GraphId::new("x").expect("graph"),
        );
        let b = Keys::graph_member(
            &OwnerScope::Tenant(TenantId::new("a").expect("tenant")),
            &GraphId::new("g:x").expect("graph"),
        );
        assert_ne!(a, b);
        assert_eq!(enc("%:{}"), "%25%3A%7B%7D");
        assert_eq!(owner_part(&OwnerScope::Tenantless), "_");
    }

    #[test]
    fn registry_keys_live_under_ops_and_name_members_sort_like_the_listing() {
        let keys = Keys::new("ns");
        let owner = SessionId::from_uuid(uuid::Uuid::from_u128(7));
        let id = OperationId::from_uuid(uuid::Uuid::from_u128(9));
        let registry = format!("{}ops:", keys.prefix());
        for key in [
            keys.ops_owner(&owner),
            keys.ops_live(&owner),
            keys.ops_done(&owner),
            keys.ops_names(&owner),
            keys.ops_record(&owner, &id),
        ] {
            assert!(key.starts_with(&registry), "{key}");
        }
        for run_key in [
            keys.run(&RunId::new("ops:x").expect("run id")),
            keys.ready(),
            keys.terminal(),
            keys.runs_all(),
            keys.graphs_by_time(),
        ] {
            assert!(!run_key.starts_with(&registry), "{run_key}");
        }
        assert_eq!(
            keys.ops_record(&owner, &id),
            format!("{}{id}", keys.ops_record_prefix(&owner))
        );
        // Listing order is (name bytes, id): a name that is a prefix of another sorts first.
        let ids: Vec<OperationId> = (1..=3)
            .map(|n| OperationId::from_uuid(uuid::Uuid::from_u128(n)))
            .collect();
        let entries = [
            ("ab", ids[0]),
            ("a b", ids[1]),
            ("a", ids[2]),
            ("a", ids[0]),
            ("b", ids[1]),
        ];
        let mut by_member: Vec<String> = entries
            .iter()
            .map(|(name, id)| Keys::ops_name_member(name, id))
            .collect();
        by_member.sort();
        let mut by_rule = entries.to_vec();
        by_rule.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()).then(a.1.cmp(&b.1)));
        let expected: Vec<String> = by_rule
            .iter()
            .map(|(name, id)| Keys::ops_name_member(name, id))
            .collect();
        assert_eq!(by_member, expected);
    }

    #[test]
    fn namespaces_are_restricted_to_a_safe_alphabet() {
        assert!(namespace_is_valid("docket-test-0f.a_b"));
        assert!(!namespace_is_valid(""));
        assert!(!namespace_is_valid("a*b"));
        assert!(!namespace_is_valid("a}b"));
        assert!(!namespace_is_valid(&"x".repeat(MAX_NAMESPACE_LEN + 1)));
    }
}
