//! What an operation is ([`OperationKind`]) and what it stands for ([`OperationSource`]).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::OpsError;
use super::ids::SessionId;

/// Longest custom kind name, in bytes.
pub const MAX_CUSTOM_KIND_BYTES: usize = 64;

/// The prefix of a custom kind's stored name, so custom names can never be mistaken for a
/// built-in kind (present or future).
const CUSTOM_PREFIX: &str = "custom:";

/// The kind of an operation. Stored and printed as a stable name (see
/// [`OperationKind::name`]); a name that is none of them is refused as unknown.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum OperationKind {
    /// A session waiting for a detached job to reach its terminal state (`detached_job_wait`).
    DetachedJobWait,
    /// A tool call running in the background of a session (`background_tool_op`).
    BackgroundToolOp,
    /// An application-defined kind (`custom:<name>`). The name is 1 to
    /// [`MAX_CUSTOM_KIND_BYTES`] bytes of `a-z`, `0-9`, `_`, `.` and `-`, starting with a letter
    /// or digit; registries refuse any other name with `InvalidArgument`.
    Custom(String),
}

impl OperationKind {
    /// A custom kind, checked.
    ///
    /// # Errors
    /// [`OpsError::InvalidArgument`] when `name` breaks the custom name rules.
    pub fn custom(name: impl Into<String>) -> Result<Self, OpsError> {
        let name = name.into();
        check_custom_name(&name)?;
        Ok(OperationKind::Custom(name))
    }

    /// The stable name: `detached_job_wait`, `background_tool_op` or `custom:<name>`.
    #[must_use]
    pub fn name(&self) -> Cow<'static, str> {
        match self {
            OperationKind::DetachedJobWait => Cow::Borrowed("detached_job_wait"),
            OperationKind::BackgroundToolOp => Cow::Borrowed("background_tool_op"),
            OperationKind::Custom(name) => Cow::Owned(format!("{CUSTOM_PREFIX}{name}")),
        }
    }

    /// Parses a stable name.
    ///
    /// # Errors
    /// [`OpsError::InvalidArgument`] for an unknown kind or a malformed custom name.
    pub fn parse(name: &str) -> Result<Self, OpsError> {
        match name {
            "detached_job_wait" => Ok(OperationKind::DetachedJobWait),
            "background_tool_op" => Ok(OperationKind::BackgroundToolOp),
            other => match other.strip_prefix(CUSTOM_PREFIX) {
                Some(custom) => OperationKind::custom(custom),
                None => Err(OpsError::invalid_argument(format!(
                    "unknown operation kind {other:?}"
                ))),
            },
        }
    }

    /// Checks the kind (only a custom name can be wrong).
    ///
    /// # Errors
    /// [`OpsError::InvalidArgument`] for a malformed custom name.
    pub fn validate(&self) -> Result<(), OpsError> {
        match self {
            OperationKind::Custom(name) => check_custom_name(name),
            OperationKind::DetachedJobWait | OperationKind::BackgroundToolOp => Ok(()),
        }
    }
}

fn check_custom_name(name: &str) -> Result<(), OpsError> {
    let bad = |why: &str| {
        Err(OpsError::invalid_argument(format!(
            "custom operation kind {name:?} {why}"
        )))
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > MAX_CUSTOM_KIND_BYTES {
        return bad(&format!("is longer than {MAX_CUSTOM_KIND_BYTES} bytes"));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c);
    if !name.chars().all(allowed) {
        return bad("may only contain a-z, 0-9, '_', '.' and '-'");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return bad("must start with a letter or a digit");
    }
    Ok(())
}

impl FromStr for OperationKind {
    type Err = OpsError;

    fn from_str(name: &str) -> Result<Self, OpsError> {
        OperationKind::parse(name)
    }
}

impl TryFrom<String> for OperationKind {
    type Error = OpsError;

    fn try_from(name: String) -> Result<Self, OpsError> {
        OperationKind::parse(&name)
    }
}

impl From<OperationKind> for String {
    fn from(kind: OperationKind) -> String {
        kind.name().into_owned()
    }
}

impl fmt::Display for OperationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl fmt::Debug for OperationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OperationKind({})", self.name())
    }
}

/// What an operation stands for outside the registry. Serialized with a `kind` tag
/// (`session_child`, `detached_job`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum OperationSource {
    /// A child session the operation drives.
    SessionChild {
        /// The child session.
        session_id: SessionId,
    },
    /// A detached job the operation waits for.
    DetachedJob {
        /// The job's realm (an identifier: 1 to 255 bytes, no control characters).
        realm_id: String,
        /// The job (an identifier: 1 to 255 bytes, no control characters).
        job_id: String,
    },
}

impl OperationSource {
    /// A child-session source.
    #[must_use]
    pub fn session_child(session_id: SessionId) -> Self {
        OperationSource::SessionChild { session_id }
    }

    /// A detached-job source.
    #[must_use]
    pub fn detached_job(realm_id: impl Into<String>, job_id: impl Into<String>) -> Self {
        OperationSource::DetachedJob {
            realm_id: realm_id.into(),
            job_id: job_id.into(),
        }
    }

    /// The child session, for a [`OperationSource::SessionChild`].
    #[must_use]
    pub fn child_session_id(&self) -> Option<SessionId> {
        match self {
            OperationSource::SessionChild { session_id } => Some(*session_id),
            OperationSource::DetachedJob { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_stable_names_that_parse_back() {
        for kind in [
            OperationKind::DetachedJobWait,
            OperationKind::BackgroundToolOp,
            OperationKind::custom("mob.member-child_2").expect("a valid name"),
        ] {
            assert_eq!(OperationKind::parse(&kind.name()).expect("parses"), kind);
            let json = serde_json::to_string(&kind).expect("encodes");
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
        assert_eq!(OperationKind::DetachedJobWait.name(), "detached_job_wait");
        assert_eq!(
            OperationKind::custom("x").expect("valid").name(),
            "custom:x"
        );
    }

    #[test]
    fn unknown_kinds_and_bad_custom_names_are_invalid_arguments() {
        for name in [
            "",
            "frobnicate",
            "Detached_job_wait",
            "custom:",
            "custom:UPPER",
            "custom:-leading",
            "custom:with space",
            &format!("custom:{}", "a".repeat(MAX_CUSTOM_KIND_BYTES + 1)),
        ] {
            assert!(
                matches!(
                    OperationKind::parse(name),
                    Err(OpsError::InvalidArgument { .. })
                ),
                "{name:?} parsed"
            );
        }
        assert!(OperationKind::Custom(String::new()).validate().is_err());
        assert!(OperationKind::custom("a".repeat(MAX_CUSTOM_KIND_BYTES)).is_ok());
        let decoded: Result<OperationKind, _> = serde_json::from_str("\"nope\"");
        assert!(decoded.is_err());
    }

    #[test]
    fn sources_serialize_with_a_kind_tag() {
        let source = OperationSource::detached_job("realm-a", "job_123");
        let json = serde_json::to_value(&source).expect("encodes");
        assert_eq!(
            json,
            serde_json::json!({"kind": "detached_job", "realm_id": "realm-a", "job_id": "job_123"})
        );
        let back: OperationSource = serde_json::from_value(json).expect("decodes");
        assert_eq!(back, source);
        let child = SessionId::from_uuid(uuid::Uuid::from_u128(7));
        assert_eq!(
            OperationSource::session_child(child).child_session_id(),
            Some(child)
        );
        assert_eq!(source.child_session_id(), None);
    }
}
