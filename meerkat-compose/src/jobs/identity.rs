//! Deterministic job identity: the run id of a submission and the fingerprint of its spec.

use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use docket_core::model::value::canonical_json;

use crate::ports::error::DetachedJobError;
use crate::ports::ids::JobId;
use crate::ports::job::JobSpec;

/// The prefix of the name hashed into a job's run id; versioned because changing it changes
/// every id.
const JOB_RUN_NAME: &str = "meerkat-compose.job.v1";

/// The prefix of every job id (and of its run id, which is the same text).
pub const JOB_ID_PREFIX: &str = "job_";

/// The job id of `(realm, submission_key)`: `job_` followed by a UUID v5 (URL namespace) over
/// `meerkat-compose.job.v1:{len(realm)}:{realm}:{len(key)}:{key}` (lengths in bytes, so the
/// encoding is injective). Every equivalent submission, in any process, names the same run.
#[must_use]
pub fn job_id_for(realm: &str, submission_key: &str) -> String {
    let name = format!(
        "{JOB_RUN_NAME}:{}:{realm}:{}:{submission_key}",
        realm.len(),
        submission_key.len()
    );
    format!(
        "{JOB_ID_PREFIX}{}",
        Uuid::new_v5(&Uuid::NAMESPACE_URL, name.as_bytes()).hyphenated()
    )
}

/// The job id of `spec`.
///
/// # Errors
/// `InvalidInput` only if the derived text were not a valid id (it always is).
pub fn job_id_of(spec: &JobSpec) -> Result<JobId, DetachedJobError> {
    JobId::new(job_id_for(&spec.realm_id, spec.submission_key.as_str()))
}

/// The submission fingerprint: `sha256:` and the hex SHA-256 of the canonical JSON (sorted
/// keys, no whitespace) of every spec field except the submission key. Two specs are
/// equivalent exactly when their fingerprints are equal.
///
/// # Errors
/// `InvalidInput` if the spec cannot be encoded (it always can).
pub fn fingerprint(spec: &JobSpec) -> Result<String, DetachedJobError> {
    let mut value = serde_json::to_value(spec)
        .map_err(|e| DetachedJobError::InvalidInput(format!("cannot encode the job spec: {e}")))?;
    if let Value::Object(map) = &mut value {
        map.remove("submission_key");
    }
    let digest = Sha256::digest(canonical_json(&value));
    Ok(format!("sha256:{}", hex::encode(digest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_deterministic_and_length_prefixed() {
        assert_eq!(job_id_for("r", "k"), job_id_for("r", "k"));
        assert!(job_id_for("r", "k").starts_with(JOB_ID_PREFIX));
        assert_ne!(job_id_for("a:b", "c"), job_id_for("a", "b:c"));
        assert_ne!(job_id_for("realm-a", "k"), job_id_for("realm-b", "k"));
        // Independent check of the derivation: the UUID v5 of the documented name.
        let expected = Uuid::new_v5(&Uuid::NAMESPACE_URL, b"meerkat-compose.job.v1:1:r:1:k");
        assert_eq!(job_id_for("r", "k"), format!("job_{expected}"));
    }
}
