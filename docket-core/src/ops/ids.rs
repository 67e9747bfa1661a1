//! The identities of the registry: [`OperationId`] and [`SessionId`], both UUIDs.
//!
//! Both print and parse as the hyphenated lowercase UUID, which is also their serde form and
//! their stored form on every backend, so byte order of the stored text is UUID order.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::error::OpsError;

/// The prefix of the name that [`OperationId::for_detached_job_wait`] hashes. Changing it
/// would change every derived id, so it carries a version.
const DETACHED_JOB_WAIT_NAME: &str = "meerkat.detached_job_wait.v1";

/// The session that owns operations: every registry call is scoped to one.
///
/// The nil UUID is representable but never accepted by a registry (it is the "empty" id).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(Uuid);

/// The identity of one operation. Unique within its owner; the same id under another owner is
/// another operation.
///
/// The nil UUID is representable but never accepted by a registry (it is the "empty" id).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OperationId(Uuid);

macro_rules! uuid_id {
    ($name:ident, $what:literal) => {
        impl $name {
            /// Wraps a UUID.
            #[must_use]
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// Mints a fresh random id (UUID v4).
            #[must_use]
            pub fn random() -> Self {
                Self(Uuid::new_v4())
            }

            /// The UUID.
            #[must_use]
            pub const fn as_uuid(&self) -> &Uuid {
                &self.0
            }

            /// Whether this is the nil UUID, which no registry accepts.
            #[must_use]
            pub fn is_nil(&self) -> bool {
                self.0.is_nil()
            }
        }

        impl FromStr for $name {
            type Err = OpsError;

            /// Parses any UUID form the `uuid` crate accepts (hyphenated, simple, braced, URN).
            ///
            /// # Errors
            /// [`OpsError::InvalidArgument`] when the text is not a UUID.
            fn from_str(text: &str) -> Result<Self, OpsError> {
                Uuid::parse_str(text).map(Self).map_err(|e| {
                    OpsError::invalid_argument(format!(
                        concat!($what, " {:?} is not a UUID: {}"),
                        text, e
                    ))
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0.hyphenated())
            }
        }
    };
}

uuid_id!(SessionId, "session id");
uuid_id!(OperationId, "operation id");

impl OperationId {
    /// The id of the operation that waits, on behalf of `session`, for the detached job `job`
    /// of realm `realm`: a UUID v5 in the URL namespace over
    /// `meerkat.detached_job_wait.v1:{session}:{len(realm)}:{realm}:{len(job)}:{job}`,
    /// with lengths in bytes.
    ///
    /// Deterministic, so a session rebuilt after a restart derives the same id and its
    /// re-registration meets the record it made before (`AlreadyRegistered`), instead of
    /// waiting twice. The length prefixes make the name injective: `("a:b", "c")` and
    /// `("a", "b:c")` give different ids.
    #[must_use]
    pub fn for_detached_job_wait(session: &SessionId, realm: &str, job: &str) -> Self {
        let name = format!(
            "{DETACHED_JOB_WAIT_NAME}:{session}:{}:{realm}:{}:{job}",
            realm.len(),
            job.len()
        );
        Self(Uuid::new_v5(&Uuid::NAMESPACE_URL, name.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SessionId {
        "0190a5e2-0000-7000-8000-000000000001"
            .parse()
            .expect("a valid session id")
    }

    #[test]
    fn detached_job_wait_ids_match_the_published_vectors() {
        // Vectors computed independently with Python's `uuid.uuid5(uuid.NAMESPACE_URL, name)`.
        let ascii = OperationId::for_detached_job_wait(&session(), "realm-a", "job_123");
        assert_eq!(ascii.to_string(), "176dcb9a-c37d-594d-a000-941569f0dcf4");
        let accented = OperationId::for_detached_job_wait(&session(), "réalm", "job_123");
        assert_eq!(accented.to_string(), "1e1b4b06-1bbc-5e1f-b5f3-40bb9b8c80ac");
    }

    #[test]
    fn length_prefixes_keep_the_derivation_injective() {
        let left = OperationId::for_detached_job_wait(&session(), "a:b", "c");
        let right = OperationId::for_detached_job_wait(&session(), "a", "b:c");
        assert_ne!(left, right);
        let other_session = SessionId::from_uuid(Uuid::from_u128(2));
        assert_ne!(
            OperationId::for_detached_job_wait(&other_session, "a", "c"),
            OperationId::for_detached_job_wait(&session(), "a", "c")
        );
    }

    #[test]
    fn ids_print_parse_and_serialize_as_hyphenated_uuids() {
        let id: OperationId = "176DCB9A-C37D-594D-A000-941569F0DCF4"
            .parse()
            .expect("upper case parses");
        assert_eq!(id.to_string(), "176dcb9a-c37d-594d-a000-941569f0dcf4");
        assert_eq!(
            serde_json::to_string(&id).expect("encodes"),
            "\"176dcb9a-c37d-594d-a000-941569f0dcf4\""
        );
        let back: OperationId =
            serde_json::from_str("\"176dcb9a-c37d-594d-a000-941569f0dcf4\"").expect("decodes");
        assert_eq!(back, id);
        assert!(matches!(
            "not-a-uuid".parse::<SessionId>(),
            Err(OpsError::InvalidArgument { .. })
        ));
        assert!(SessionId::from_uuid(Uuid::nil()).is_nil());
    }
}
