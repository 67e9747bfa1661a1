//! Who may do what: bearer tokens for the API, a cookie session for the pages, roles, tenant
//! binding and CSRF tokens (`docs/console.md`, “Security model”).
//!
//! * A [`Grant`] is a secret token with a [`Role`] (read or admin) and, optionally, a tenant it
//!   is bound to. A tenant-bound grant reads and acts through `Docket::tenant`, so another
//!   owner's run is "not found" exactly as the store answers; an unbound grant is tenantless.
//! * Tokens are compared in constant time over their SHA-256 digests (so neither the content
//!   nor the length of a guess shortens the comparison), and every grant is compared, with no
//!   early exit.
//! * The API authenticates only by `Authorization: Bearer`; it never reads the session cookie,
//!   so a cross-site request cannot act with a browser's session and API calls need no CSRF
//!   token. The pages authenticate only by the session cookie (`HttpOnly`, `SameSite=Strict`),
//!   and every form they serve carries the session's CSRF token, checked on each POST.
//! * A token is never stored in a session, page, log line or response: a session keeps the
//!   index of its grant.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::RngCore;
use sha2::{Digest, Sha256};

use docket::core::model::TenantId;
use docket::Docket;

/// What a grant may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read everything in scope; no action.
    Read,
    /// Read and act (start, cancel, retry, resolve).
    Admin,
}

impl Role {
    /// Whether this role may act.
    #[must_use]
    pub fn may_act(self) -> bool {
        self == Role::Admin
    }

    /// `read` or `admin`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Admin => "admin",
        }
    }
}

/// One accepted token. Its `Debug` never shows the secret.
#[derive(Clone)]
pub struct Grant {
    digest: [u8; 32],
    role: Role,
    tenant: Option<TenantId>,
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grant")
            .field("token", &"<redacted>")
            .field("role", &self.role)
            .field("tenant", &self.tenant)
            .finish()
    }
}

impl Grant {
    /// A grant for `token` (kept only as its digest).
    ///
    /// # Errors
    /// A message when the token is shorter than 16 bytes (too easy to guess).
    pub fn new(token: &str, role: Role, tenant: Option<TenantId>) -> Result<Grant, String> {
        if token.len() < MIN_TOKEN_BYTES {
            return Err(format!(
                "a console token must be at least {MIN_TOKEN_BYTES} bytes long"
            ));
        }
        Ok(Grant {
            digest: digest(token),
            role,
            tenant,
        })
    }

    /// The role.
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// The tenant the grant is bound to, if any.
    #[must_use]
    pub fn tenant(&self) -> Option<&TenantId> {
        self.tenant.as_ref()
    }

    /// The facade scoped to what this grant may see.
    #[must_use]
    pub fn scope(&self, docket: &Docket) -> Docket {
        match &self.tenant {
            Some(tenant) => docket.tenant(tenant.clone()),
            None => docket.tenantless(),
        }
    }
}

/// Shortest accepted token.
pub const MIN_TOKEN_BYTES: usize = 16;

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Equality of two digests in time independent of where they differ.
fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The grant whose token is `presented`, comparing against every grant.
#[must_use]
pub fn find_grant(grants: &[Grant], presented: &str) -> Option<usize> {
    let wanted = digest(presented);
    let mut found = None;
    for (i, grant) in grants.iter().enumerate() {
        // No early exit: every grant costs the same whether or not one matched.
        if same_digest(&grant.digest, &wanted) && found.is_none() {
            found = Some(i);
        }
    }
    found
}

/// Equality of two CSRF (or other random) tokens in constant time.
#[must_use]
pub fn same_secret(a: &str, b: &str) -> bool {
    same_digest(&digest(a), &digest(b))
}

/// 32 random bytes from the operating system, hex-encoded.
#[must_use]
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// A logged-in browser.
#[derive(Clone, Debug)]
pub struct Session {
    /// Index of the grant in the console's grant list.
    pub grant: usize,
    /// The CSRF token every form of this session carries.
    pub csrf: String,
    created: Instant,
}

/// How long a session lives.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// Most sessions kept at once: logins past it evict the oldest.
const MAX_SESSIONS: usize = 10_000;

/// Live sessions by session id (the cookie's value).
#[derive(Debug, Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Opens a session for `grant`; returns the session id.
    pub fn open(&self, grant: usize) -> String {
        let id = random_token();
        let session = Session {
            grant,
            csrf: random_token(),
            created: Instant::now(),
        };
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, s| s.created.elapsed() < SESSION_TTL);
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(id.clone(), session);
        id
    }

    /// The live session `id`, if any. The lookup is by hash-map key: session ids are 256
    /// random bits, so timing reveals nothing useful about other ids.
    #[must_use]
    pub fn get(&self, id: &str) -> Option<Session> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(id)
            .filter(|s| s.created.elapsed() < SESSION_TTL)
            .cloned()
    }

    /// Ends session `id`.
    pub fn close(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_themselves_and_short_ones_are_refused() {
        let grants = vec![
            Grant::new("read-token-0123456789", Role::Read, None).expect("long enough"),
            Grant::new("admin-token-0123456789", Role::Admin, None).expect("long enough"),
        ];
        assert_eq!(find_grant(&grants, "admin-token-0123456789"), Some(1));
        assert_eq!(find_grant(&grants, "read-token-0123456789"), Some(0));
        assert_eq!(find_grant(&grants, "admin-token-012345678"), None);
        assert_eq!(find_grant(&grants, ""), None);
        assert!(Grant::new("short", Role::Admin, None).is_err());
        assert!(!format!("{:?}", grants[1]).contains("admin-token"));
    }

    #[test]
    fn sessions_carry_distinct_csrf_tokens_and_close() {
        let sessions = Sessions::default();
        let a = sessions.open(0);
        let b = sessions.open(1);
        let (sa, sb) = (sessions.get(&a).expect("a"), sessions.get(&b).expect("b"));
        assert_ne!(sa.csrf, sb.csrf);
        assert_eq!(sa.csrf.len(), 64);
        assert!(same_secret(&sa.csrf, &sa.csrf.clone()));
        assert!(!same_secret(&sa.csrf, &sb.csrf));
        sessions.close(&a);
        assert!(sessions.get(&a).is_none());
    }
}
