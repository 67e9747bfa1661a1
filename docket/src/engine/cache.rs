//! The graph cache (`docs/engine.md`, “The graph cache”): compiled runtime graphs and recorded
//! incompatibilities, keyed by owner scope and graph version.
//!
//! Graph versions are immutable and content-addressed, so a compiled entry never goes stale
//! within one process (the node registry is fixed for the engine's lifetime). Incompatibilities
//! are trusted only for a TTL, so a transient cause (a corrupt read) heals by itself. Losing the
//! cache costs latency only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use docket_core::graph::RuntimeGraph;
use docket_core::model::{GraphRef, OwnerScope};

use super::outcome::IncompatibleReason;

/// What a lookup found.
#[derive(Clone, Debug)]
pub enum CacheLookup {
    /// A compiled graph.
    Compiled(Arc<RuntimeGraph>),
    /// A recorded incompatibility, still within its TTL.
    Incompatible(IncompatibleReason),
    /// Nothing usable.
    Miss,
}

#[derive(Clone, Debug)]
enum Entry {
    Compiled(Arc<RuntimeGraph>),
    Incompatible {
        reason: IncompatibleReason,
        recorded_ms: u64,
    },
}

type Key = (OwnerScope, GraphRef);

/// A process-local cache shared by the vehicles of one engine.
#[derive(Debug, Default)]
pub struct GraphCache {
    entries: Mutex<HashMap<Key, Entry>>,
    incompatible_ttl_ms: u64,
}

impl GraphCache {
    /// An empty cache whose incompatibility entries expire after `incompatible_ttl_ms`.
    #[must_use]
    pub fn new(incompatible_ttl_ms: u64) -> Self {
        GraphCache {
            entries: Mutex::new(HashMap::new()),
            incompatible_ttl_ms,
        }
    }

    fn key(owner: &OwnerScope, graph_ref: &GraphRef) -> Key {
        (owner.clone(), graph_ref.clone())
    }

    /// Looks up `graph_ref` owned by `owner` at monotonic time `now_ms`; an expired
    /// incompatibility is evicted and reported as a miss.
    #[must_use]
    pub fn fetch(&self, owner: &OwnerScope, graph_ref: &GraphRef, now_ms: u64) -> CacheLookup {
        let Ok(mut entries) = self.entries.lock() else {
            return CacheLookup::Miss;
        };
        let key = Self::key(owner, graph_ref);
        match entries.get(&key) {
            Some(Entry::Compiled(rtg)) => CacheLookup::Compiled(Arc::clone(rtg)),
            Some(Entry::Incompatible {
                reason,
                recorded_ms,
            }) => {
                if now_ms.saturating_sub(*recorded_ms) < self.incompatible_ttl_ms {
                    CacheLookup::Incompatible(reason.clone())
                } else {
                    entries.remove(&key);
                    CacheLookup::Miss
                }
            }
            None => CacheLookup::Miss,
        }
    }

    /// Records a compiled graph.
    pub fn put_compiled(&self, owner: &OwnerScope, graph_ref: &GraphRef, rtg: Arc<RuntimeGraph>) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(Self::key(owner, graph_ref), Entry::Compiled(rtg));
        }
    }

    /// Records an incompatibility observed at monotonic time `now_ms`.
    pub fn put_incompatible(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        reason: IncompatibleReason,
        now_ms: u64,
    ) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                Self::key(owner, graph_ref),
                Entry::Incompatible {
                    reason,
                    recorded_ms: now_ms,
                },
            );
        }
    }

    /// How many entries are held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    /// Whether the cache is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::model::{GraphHash, GraphId, TenantId};

    fn graph_ref() -> GraphRef {
        GraphRef {
            graph_id: GraphId::new("g").expect("id"),
            graph_hash: GraphHash::new("h").expect("hash"),
        }
    }

    #[test]
    fn incompatibilities_expire_and_are_isolated_per_owner() {
        let cache = GraphCache::new(100);
        let a = OwnerScope::Tenant(TenantId::new("a").expect("tenant"));
        let reason = IncompatibleReason::CorruptGraph {
            detail: "bad".into(),
        };
        cache.put_incompatible(&a, &graph_ref(), reason.clone(), 1_000);
        assert!(matches!(
            cache.fetch(&a, &graph_ref(), 1_099),
            CacheLookup::Incompatible(r) if r == reason
        ));
        assert!(matches!(
            cache.fetch(&OwnerScope::Tenantless, &graph_ref(), 1_050),
            CacheLookup::Miss
        ));
        assert!(matches!(
            cache.fetch(&a, &graph_ref(), 1_100),
            CacheLookup::Miss
        ));
        assert!(cache.is_empty(), "the expired entry was evicted");
    }
}
