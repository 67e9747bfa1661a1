//! Identifier newtypes.
//!
//! Every identifier that crosses a storage boundary is a validated string: non-empty, at most
//! [`MAX_ID_BYTES`] bytes, and free of NUL and control characters. Validation happens once, at
//! construction (including deserialization), so a value of these types is always storable on
//! every backend (PostgreSQL `text` rejects NUL; Redis keys embed ids).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest identifier, in bytes, that any backend accepts.
pub const MAX_ID_BYTES: usize = 255;

/// Why a string is not a valid identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The string is empty.
    #[error("{kind} must not be empty")]
    Empty {
        /// Which identifier was being built.
        kind: &'static str,
    },
    /// The string is longer than [`MAX_ID_BYTES`].
    #[error("{kind} is {len} bytes long; the maximum is {MAX_ID_BYTES}")]
    TooLong {
        /// Which identifier was being built.
        kind: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// The string contains NUL or another control character.
    #[error("{kind} contains a control character")]
    ControlCharacter {
        /// Which identifier was being built.
        kind: &'static str,
    },
}

/// Checks the shared identifier rules for `value`, naming it `kind` in errors.
///
/// # Errors
/// [`IdError`] when the string is empty, too long or contains control characters.
pub fn check_id(kind: &'static str, value: &str) -> Result<(), IdError> {
    if value.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if value.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong {
            kind,
            len: value.len(),
        });
    }
    if value.chars().any(char::is_control) {
        return Err(IdError::ControlCharacter { kind });
    }
    Ok(())
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Builds the identifier after checking the shared identifier rules.
            ///
            /// # Errors
            /// [`IdError`] when the string is empty, longer than [`MAX_ID_BYTES`] or contains
            /// control characters.
            pub fn new(value: impl Into<String>) -> Result<Self, IdError> {
                let value = value.into();
                check_id($kind, &value)?;
                Ok(Self(value))
            }

            /// Wraps a string the caller has already proven valid (e.g. a hex digest).
            #[allow(dead_code)]
            pub(crate) fn from_trusted(value: String) -> Self {
                debug_assert!(check_id($kind, &value).is_ok());
                Self(value)
            }

            /// The identifier as a string slice.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Consumes the identifier, returning the owned string.
            #[must_use]
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = IdError;
            fn try_from(value: &str) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }
    };
}

string_id!(
    /// Globally unique identifier of a run (unique across tenants).
    RunId,
    "run id"
);
string_id!(
    /// Public identifier of a graph; together with a [`GraphHash`] it addresses one version.
    GraphId,
    "graph id"
);
string_id!(
    /// Content address of one effective graph version (lowercase hex SHA-256).
    GraphHash,
    "graph hash"
);
string_id!(
    /// Identifier of a tenant that owns graphs and runs.
    TenantId,
    "tenant id"
);

/// The commit authority handed out with a claim: a UUID v4 in its hyphenated string form.
///
/// Tokens are secrets of the worker that holds the claim; they are never logged, never part of
/// [`crate::model::RunInfo`] and never used as metric labels. `Debug` is redacted.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ClaimToken(String);

impl ClaimToken {
    /// Mints a fresh random token (UUID v4).
    #[must_use]
    pub fn mint() -> Self {
        Self(uuid::Uuid::new_v4().hyphenated().to_string())
    }

    /// Wraps an existing token string.
    ///
    /// Any non-empty identifier-shaped string is accepted so that a stale or foreign token can
    /// still be presented to a store, which then answers "not current".
    ///
    /// # Errors
    /// [`IdError`] when the string breaks the shared identifier rules.
    pub fn new(value: impl Into<String>) -> Result<Self, IdError> {
        let value = value.into();
        check_id("claim token", &value)?;
        Ok(Self(value))
    }

    /// The token as a string slice (for storage only; never log it).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the token is a UUID, the only shape any backend mints.
    #[must_use]
    pub fn is_uuid(&self) -> bool {
        uuid::Uuid::parse_str(&self.0).is_ok()
    }
}

impl TryFrom<String> for ClaimToken {
    type Error = IdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<ClaimToken> for String {
    fn from(value: ClaimToken) -> String {
        value.0
    }
}

impl fmt::Debug for ClaimToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClaimToken(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_reject_empty_long_and_control_characters() {
        assert_eq!(RunId::new(""), Err(IdError::Empty { kind: "run id" }));
        assert!(matches!(
            GraphId::new("x".repeat(MAX_ID_BYTES + 1)),
            Err(IdError::TooLong { len, .. }) if len == MAX_ID_BYTES + 1
        ));
        assert!(matches!(
            TenantId::new("a\0b"),
            Err(IdError::ControlCharacter { .. })
        ));
        assert!(RunId::new("x".repeat(MAX_ID_BYTES)).is_ok());
    }

    #[test]
    fn ids_validate_when_deserialized() {
        let bad: Result<RunId, _> = serde_json::from_str("\"\"");
        assert!(bad.is_err());
        let good: RunId = serde_json::from_str("\"run_1\"").expect("valid id");
        assert_eq!(good.as_str(), "run_1");
    }

    #[test]
    fn minted_tokens_are_distinct_uuids_and_debug_is_redacted() {
        let a = ClaimToken::mint();
        let b = ClaimToken::mint();
        assert_ne!(a, b);
        assert!(a.is_uuid());
        assert!(!format!("{a:?}").contains(a.as_str()));
        assert!(!ClaimToken::new("not-a-uuid").expect("token").is_uuid());
    }
}
