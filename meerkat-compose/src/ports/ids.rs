//! Validated string identifiers of jobs and work items, and the realm-qualified references
//! that every boundary between domains uses.
//!
//! Every id is trimmed on construction and refused when it is then empty or holds a control
//! character; serde is transparent and re-validates on decoding, so a value of these types is
//! always well formed.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::error::{DetachedJobError, EvidenceError};

/// Trims `value` and checks it: non-empty and free of control characters.
fn normalized(kind: &'static str, value: String) -> Result<String, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(format!("{kind} must not be empty"));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(format!("{kind} must not contain control characters"));
    }
    Ok(if trimmed.len() == value.len() {
        value
    } else {
        trimmed.to_owned()
    })
}

/// Checks a scope component (a realm): non-empty, already trimmed, no control characters.
/// Unlike ids, a realm is never trimmed for the caller: `" r"` and `"r"` would otherwise be
/// two spellings of one scope.
///
/// # Errors
/// The reason, as text, when the component is not canonical.
pub fn check_scope_component(label: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || value.trim() != value || value.chars().any(char::is_control) {
        return Err(format!(
            "{label} must be non-empty, canonical, and contain no control characters"
        ));
    }
    Ok(())
}

macro_rules! job_string_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Trims and validates `value`.
            ///
            /// # Errors
            /// [`DetachedJobError::InvalidInput`] when the trimmed value is empty or holds a
            /// control character.
            pub fn new(value: impl Into<String>) -> Result<Self, DetachedJobError> {
                normalized($kind, value.into())
                    .map(Self)
                    .map_err(DetachedJobError::InvalidInput)
            }

            /// The id as text.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Wraps a literal known to be valid (crate-internal constants only).
            #[allow(dead_code)]
            pub(crate) fn from_static(value: &'static str) -> Self {
                debug_assert!(normalized($kind, value.to_owned()).is_ok());
                Self(value.to_owned())
            }
        }

        impl TryFrom<String> for $name {
            type Error = DetachedJobError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
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

job_string_id!(
    /// The identity of one detached job within its realm.
    JobId,
    "job id"
);
job_string_id!(
    /// The caller's idempotency key: one job per `(realm, key)`.
    JobSubmissionKey,
    "submission key"
);
job_string_id!(
    /// A hash of the job's canonical arguments (opaque to this crate).
    CanonicalArgumentsHash,
    "canonical arguments hash"
);
job_string_id!(
    /// A reference to the runner's specification.
    RunnerSpecificationRef,
    "runner specification reference"
);
job_string_id!(
    /// A reference to a job's result or failure detail, stored elsewhere.
    JobResultRef,
    "job result reference"
);
job_string_id!(
    /// A typed failure code of a job (`scan_failed`, `credentials_blocked`, ...).
    JobFailureCode,
    "job failure code"
);
job_string_id!(
    /// The member of the origin session that submitted the job.
    OriginMemberId,
    "origin member id"
);
job_string_id!(
    /// The execution intent the job carries out.
    ExecutionIntentId,
    "execution intent id"
);
job_string_id!(
    /// The interaction lineage the job belongs to.
    InteractionLineageId,
    "interaction lineage id"
);

/// A name and a version (both validated ids), e.g. of a tool or a runner.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NamedVersion {
    /// The name.
    pub name: String,
    /// The version.
    pub version: String,
}

impl NamedVersion {
    fn new(kind: &'static str, name: String, version: String) -> Result<Self, DetachedJobError> {
        Ok(NamedVersion {
            name: normalized(kind, name).map_err(DetachedJobError::InvalidInput)?,
            version: normalized(kind, version).map_err(DetachedJobError::InvalidInput)?,
        })
    }
}

/// The tool a job runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolIdentity(pub NamedVersion);

impl ToolIdentity {
    /// Validates both components.
    ///
    /// # Errors
    /// [`DetachedJobError::InvalidInput`] for an empty component or a control character.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
    ) -> Result<Self, DetachedJobError> {
        NamedVersion::new("tool identity", name.into(), version.into()).map(ToolIdentity)
    }
}

/// The runner that executes a job.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunnerIdentity(pub NamedVersion);

impl RunnerIdentity {
    /// Validates both components.
    ///
    /// # Errors
    /// [`DetachedJobError::InvalidInput`] for an empty component or a control character.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
    ) -> Result<Self, DetachedJobError> {
        NamedVersion::new("runner identity", name.into(), version.into()).map(RunnerIdentity)
    }
}

/// A realm-qualified job reference: a bare [`JobId`] is never enough at the schedule,
/// evidence or await boundaries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobReference {
    realm_id: String,
    job_id: JobId,
}

impl JobReference {
    /// A reference to `job_id` in `realm_id`.
    ///
    /// # Errors
    /// [`DetachedJobError::InvalidInput`] for a realm that is empty, not trimmed or holds a
    /// control character.
    pub fn new(realm_id: impl Into<String>, job_id: JobId) -> Result<Self, DetachedJobError> {
        let realm_id = realm_id.into();
        check_scope_component("job realm", &realm_id).map_err(DetachedJobError::InvalidInput)?;
        Ok(JobReference { realm_id, job_id })
    }

    /// The realm.
    #[must_use]
    pub fn realm_id(&self) -> &str {
        &self.realm_id
    }

    /// The job within the realm.
    #[must_use]
    pub fn job_id(&self) -> &JobId {
        &self.job_id
    }
}

macro_rules! work_string_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Trims and validates `value`.
            ///
            /// # Errors
            /// [`EvidenceError::InvalidInput`] when the trimmed value is empty or holds a
            /// control character.
            pub fn new(value: impl Into<String>) -> Result<Self, EvidenceError> {
                normalized($kind, value.into())
                    .map(Self)
                    .map_err(EvidenceError::InvalidInput)
            }

            /// The id as text.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = EvidenceError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
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

work_string_id!(
    /// A work item's id within its realm and namespace.
    WorkItemId,
    "work item id"
);
work_string_id!(
    /// A namespace of work items within a realm.
    WorkNamespace,
    "work namespace"
);

/// Where a work item lives: realm, namespace, id. Fields are public and unvalidated beyond
/// their types, as the evidence port checks the realm where it matters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WorkItemRef {
    /// The realm.
    pub realm_id: String,
    /// The namespace within the realm.
    pub namespace: WorkNamespace,
    /// The item.
    pub item_id: WorkItemId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_trimmed_and_refuse_empty_or_control_text() {
        assert_eq!(
            JobId::new("  job_1 ").map(|j| j.to_string()).ok(),
            Some("job_1".into())
        );
        assert!(matches!(
            JobId::new("   "),
            Err(DetachedJobError::InvalidInput(_))
        ));
        assert!(matches!(
            JobId::new("a\u{7}b"),
            Err(DetachedJobError::InvalidInput(_))
        ));
        assert!(matches!(
            WorkItemId::new(""),
            Err(EvidenceError::InvalidInput(_))
        ));
        let decoded: Result<JobId, _> = serde_json::from_str("\"\\u0000\"");
        assert!(decoded.is_err());
    }

    #[test]
    fn realms_must_be_canonical() {
        let job = JobId::new("j").expect("valid");
        for bad in ["", " realm-a", "realm-a ", "re\nalm"] {
            assert!(
                matches!(
                    JobReference::new(bad, job.clone()),
                    Err(DetachedJobError::InvalidInput(_))
                ),
                "{bad:?}"
            );
        }
        assert!(JobReference::new("realm-a", job).is_ok());
    }
}
