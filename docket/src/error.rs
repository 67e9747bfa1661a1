//! The facade's error type: the runtime's error vocabulary (`docs/runs-and-moments.md`,
//! “Runtime errors”) and the store's, typed.

use docket_core::graph::Diagnostic;
use docket_core::lifecycle::{LifecycleError, SignalError};
use docket_core::model::{GraphRef, JsonError, RunId, RunInfo};
use docket_core::ops::{OpsError, OpsErrorKind};
use docket_core::runtime::RuntimeError;
use docket_core::store::StoreError;

use crate::engine::{ConfigError, DrainStopped, DrainSummary};

/// Why a facade operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocketError {
    /// The graph does not compile (or cannot be read); nothing was stored.
    #[error("invalid graph: {}", summarize(.diagnostics))]
    InvalidGraph {
        /// Every diagnostic found.
        diagnostics: Vec<Diagnostic>,
    },
    /// The graph, run, event or interrupt is absent in this scope.
    #[error("not found")]
    NotFound,
    /// The stored graph compiled to another address than the reference.
    #[error("graph mismatch: {expected:?} compiled to {got:?}")]
    GraphMismatch {
        /// The reference asked for.
        expected: GraphRef,
        /// What it compiled to.
        got: GraphRef,
    },
    /// The runtime refused (invalid input, inactive run, already resolved, ...).
    #[error("{0}")]
    Runtime(RuntimeError),
    /// The store refused or failed.
    #[error("store: {0}")]
    Store(StoreError),
    /// The run is poisoned: an operator must `retry_poisoned_run` it.
    #[error("run {} is poisoned ({})", .0.run.id, .0.poison.map_or("", |p| p.reason.as_str()))]
    Poisoned(Box<RunInfo>),
    /// `await_run` reached its deadline.
    #[error("timed out waiting for run {run_id}")]
    Timeout {
        /// The run.
        run_id: RunId,
    },
    /// An argument or option is invalid.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// JSON text (run input, an interrupt value) was refused: not JSON, or an object naming a
    /// key twice.
    #[error("invalid {what}: {error}")]
    InvalidJson {
        /// What the text was for, e.g. `"run input"`.
        what: &'static str,
        /// Why, with the key and path of a duplicate.
        error: JsonError,
    },
    /// `drain_runs` needs a facade built in a testing mode.
    #[error("drain_runs needs a testing mode (manual or inline)")]
    TestingModeRequired,
    /// An inline drain used up its iterations while the run was still due.
    #[error("inline drain limit reached after {} drained runs", .0.drained)]
    InlineDrainLimitReached(DrainSummary),
    /// A bounded drain stopped early.
    #[error(transparent)]
    Drain(Box<DrainStopped>),
    /// The worker configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The operation registry refused or failed (see [`OpsError`]; a missing operation is
    /// [`DocketError::NotFound`] instead).
    #[error("operation registry: {0}")]
    Ops(OpsError),
    /// The store behind this facade offers no operation registry.
    #[error("this store offers no operation registry")]
    OpsRegistryUnavailable,
    /// The URL names no backend this build knows.
    #[error("unsupported backend URL {url:?}: {reason}")]
    UnsupportedBackend {
        /// The URL as given, redacted (no password) and cut if long.
        url: String,
        /// Why.
        reason: String,
    },
    /// The URL's backend is compiled out.
    #[error("the {scheme}:// backend is not compiled in: enable the cargo feature `{feature}` (of the `docket` crate in an application; for the command, `cargo run -p docket-cli --features {feature} -- ...`)")]
    BackendFeatureDisabled {
        /// The URL scheme.
        scheme: String,
        /// The cargo feature to enable.
        feature: &'static str,
    },
}

fn summarize(diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(ToString::to_string)
        .collect();
    if errors.is_empty() {
        "no diagnostics".into()
    } else {
        errors.join("; ")
    }
}

impl DocketError {
    /// A stable machine-readable label (the runtime's error kind names where one exists, see
    /// `docs/runs-and-moments.md`, “Runtime errors”).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            DocketError::InvalidGraph { .. } => "invalid_graph",
            DocketError::NotFound => "not_found",
            DocketError::GraphMismatch { .. } => "graph_mismatch",
            DocketError::Runtime(e) => e.kind.as_str(),
            DocketError::Store(_) => "storage",
            DocketError::Poisoned(_) => "poisoned",
            DocketError::Timeout { .. } => "timeout",
            DocketError::InvalidOptions(_) => "invalid_options",
            DocketError::InvalidJson { .. } => "invalid_json",
            DocketError::TestingModeRequired => "testing_mode_required",
            DocketError::InlineDrainLimitReached(_) => "inline_drain_limit_reached",
            DocketError::Drain(_) => "drain_stopped",
            DocketError::Config(_) => "invalid_options",
            DocketError::Ops(e) => ops_kind(e.kind()),
            DocketError::OpsRegistryUnavailable => "ops_registry_unavailable",
            DocketError::UnsupportedBackend { .. } => "invalid_backend",
            DocketError::BackendFeatureDisabled { .. } => "invalid_backend",
        }
    }
}

impl From<StoreError> for DocketError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => DocketError::NotFound,
            other => DocketError::Store(other),
        }
    }
}

fn ops_kind(kind: OpsErrorKind) -> &'static str {
    match kind {
        OpsErrorKind::AlreadyRegistered => "already_registered",
        OpsErrorKind::NotFound => "not_found",
        OpsErrorKind::InvalidTransition => "invalid_transition",
        OpsErrorKind::MaxConcurrentExceeded => "max_concurrent_exceeded",
        OpsErrorKind::OwnerRetired => "owner_retired",
        OpsErrorKind::InvalidArgument => "invalid_argument",
        OpsErrorKind::Corrupt | OpsErrorKind::Unavailable | OpsErrorKind::Ambiguous => "storage",
    }
}

impl From<OpsError> for DocketError {
    fn from(error: OpsError) -> Self {
        DocketError::Ops(error)
    }
}

impl From<DrainStopped> for DocketError {
    fn from(error: DrainStopped) -> Self {
        DocketError::Drain(Box::new(error))
    }
}

impl From<RuntimeError> for DocketError {
    fn from(error: RuntimeError) -> Self {
        DocketError::Runtime(error)
    }
}

impl From<LifecycleError> for DocketError {
    fn from(error: LifecycleError) -> Self {
        match error {
            LifecycleError::Store(e) | LifecycleError::Ambiguous { source: e, .. } => e.into(),
            other => DocketError::InvalidOptions(other.to_string()),
        }
    }
}

impl From<SignalError<RuntimeError>> for DocketError {
    fn from(error: SignalError<RuntimeError>) -> Self {
        match error {
            SignalError::Store(e) => e.into(),
            SignalError::Mutation(e) => DocketError::Runtime(e),
            SignalError::InvalidMutation { reason } => DocketError::InvalidOptions(reason),
            other => DocketError::InvalidOptions(other.to_string()),
        }
    }
}
