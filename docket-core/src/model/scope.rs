//! Typed scopes.
//!
//! [`OwnerScope`] is what owns a graph version or a run; [`Scope`] is what a read or a signal is
//! allowed to see. `System` exists only in [`Scope`], so a graph can never be owned by "the
//! system", and claim operations take no scope at all (they are always system work): the
//! combinations that could only be refused at run time do not compile here
//! (`docs/design-decisions.md`, “Typed scopes”).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ids::TenantId;

/// Who owns a graph version or a run. Fixed when the row is created.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerScope {
    /// Owned by no tenant.
    Tenantless,
    /// Owned by one tenant.
    Tenant(TenantId),
}

impl OwnerScope {
    /// The tenant id, if any (the nullable `tenant_id` column of SQL backends).
    #[must_use]
    pub fn tenant_id(&self) -> Option<&TenantId> {
        match self {
            OwnerScope::Tenantless => None,
            OwnerScope::Tenant(id) => Some(id),
        }
    }

    /// The non-null key used by storage: `""` for tenantless, else the tenant id.
    #[must_use]
    pub fn scope_key(&self) -> &str {
        match self {
            OwnerScope::Tenantless => "",
            OwnerScope::Tenant(id) => id.as_str(),
        }
    }

    /// Rebuilds an owner scope from its storage key (`""` means tenantless).
    ///
    /// # Errors
    /// [`super::ids::IdError`] when the key is not a valid tenant id.
    pub fn from_scope_key(key: &str) -> Result<Self, super::ids::IdError> {
        if key.is_empty() {
            Ok(OwnerScope::Tenantless)
        } else {
            Ok(OwnerScope::Tenant(TenantId::new(key)?))
        }
    }
}

impl fmt::Debug for OwnerScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OwnerScope::Tenantless => f.write_str("Tenantless"),
            OwnerScope::Tenant(id) => write!(f, "Tenant({})", id.as_str()),
        }
    }
}

/// What a read or a signal may see.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Trusted runtime work: sees every row regardless of owner.
    System,
    /// Sees only tenantless rows (not an unscoped read).
    Tenantless,
    /// Sees only this tenant's rows.
    Tenant(TenantId),
}

impl Scope {
    /// Whether a row owned by `owner` is visible in this scope.
    #[must_use]
    pub fn admits(&self, owner: &OwnerScope) -> bool {
        match (self, owner) {
            (Scope::System, _) => true,
            (Scope::Tenantless, OwnerScope::Tenantless) => true,
            (Scope::Tenant(a), OwnerScope::Tenant(b)) => a == b,
            _ => false,
        }
    }

    /// The owner scope this scope is restricted to, or `None` for `System`.
    #[must_use]
    pub fn as_owner(&self) -> Option<OwnerScope> {
        match self {
            Scope::System => None,
            Scope::Tenantless => Some(OwnerScope::Tenantless),
            Scope::Tenant(id) => Some(OwnerScope::Tenant(id.clone())),
        }
    }
}

impl From<OwnerScope> for Scope {
    fn from(owner: OwnerScope) -> Self {
        match owner {
            OwnerScope::Tenantless => Scope::Tenantless,
            OwnerScope::Tenant(id) => Scope::Tenant(id),
        }
    }
}

impl From<&OwnerScope> for Scope {
    fn from(owner: &OwnerScope) -> Self {
        owner.clone().into()
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::System => f.write_str("System"),
            Scope::Tenantless => f.write_str("Tenantless"),
            Scope::Tenant(id) => write!(f, "Tenant({})", id.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(id: &str) -> TenantId {
        TenantId::new(id).expect("tenant id")
    }

    #[test]
    fn visibility_matrix() {
        let a = OwnerScope::Tenant(tenant("a"));
        let b = OwnerScope::Tenant(tenant("b"));
        let none = OwnerScope::Tenantless;
        assert!(Scope::System.admits(&a) && Scope::System.admits(&none));
        assert!(Scope::Tenantless.admits(&none) && !Scope::Tenantless.admits(&a));
        assert!(Scope::from(&a).admits(&a) && !Scope::from(&a).admits(&b));
        assert!(!Scope::from(&a).admits(&none));
    }

    #[test]
    fn scope_keys_round_trip() {
        for owner in [OwnerScope::Tenantless, OwnerScope::Tenant(tenant("t1"))] {
            let key = owner.scope_key().to_owned();
            assert_eq!(OwnerScope::from_scope_key(&key).expect("key"), owner);
        }
    }
}
