//! # meerkat-compose
//!
//! Detached jobs as durable Docket runs, their terminal results as evidence on work items,
//! and per-session wait bindings in the operation registry of `docket-core`.
//!
//! * **A schedule occurrence submits exactly one job.** [`ScheduledDurableJobRunnable`]
//!   derives the job's submission key from the occurrence id; [`DocketJobAuthority`] derives
//!   the run id from realm and key, so every redelivery, in any process, meets the same run.
//!   An equivalent spec is deduplicated; a changed one is `SubmissionConflict`.
//! * **The job runs as a Docket run** of a graph the host publishes, driven by the ordinary
//!   worker; its realm is the run's tenant. The run's status maps to a
//!   [`JobTerminalResult`] by a total, deterministic table (see [`jobs::terminal`]).
//! * **Its terminal result lands once**: [`DeliveryPump`] projects it onto every linked work
//!   item through [`JobTerminalEvidenceProjector`] (exactly one evidence entry however many
//!   projectors race) and hands it to a [`JobAwaitDeliverySink`], which closes the origin
//!   session's wait binding.
//! * **A session that awaits the job sees the outcome**: [`JobAwaitCoordinator`] keeps the
//!   binding in the backend's `OpsLifecycleRegistry` under a deterministic operation id, and
//!   closes the race between a result committed and the binding being made.
//!
//! ## The ports
//!
//! Composition is written against four narrow ports ([`ports`]): [`JobAuthority`],
//! [`EvidenceGraph`], [`HostRunnable`] and [`JobDeliverySink`], plus the
//! [`DeliveryLedger`] that holds the delivery cursor. Every rule of composition lives in
//! [`compose`]; the stores only encode conditions.
//!
//! ## Cargo features (backends)
//!
//! | feature | default | evidence graph and ledger | URL |
//! | --- | --- | --- | --- |
//! | `sqlite` | yes | tables `meerkat_compose_*` in the SQLite file | `sqlite://PATH` |
//! | `postgres` | no | tables `meerkat_compose_*` in the run store's schema | `postgres://…?schema=S` |
//! | `redis` | no | keys `{namespace}:mc:*` next to the run store's | `redis://…?namespace=N` |
//! | — | always | in memory | `memory://` |
//!
//! [`connect_compose_store`] opens the store named by a URL, as `docket::Docket::connect`
//! opens the run store; each creates its own tables or keys and never touches the other's.
//!
//! ## The delivery cursor on each backend
//!
//! A job is *pending* from its submission (recorded before its run is started) until its
//! terminal result has been projected and delivered; [`DeliveryPump`] acknowledges it only
//! after both. The pending set is the durable cursor:
//!
//! * **memory**: a map from `(realm, job)` to a delivered flag (lost at exit);
//! * **SQLite**: table `meerkat_compose_job_deliveries (realm, job_id, delivered)`, indexed
//!   by `(realm, delivered, job_id)`; links in `meerkat_compose_job_links`;
//! * **PostgreSQL**: the same two tables in the run store's schema, one statement per write;
//! * **Redis**: hash `{ns}:mc:jobs:{realm}` (job → `0`/`1`) and sorted set
//!   `{ns}:mc:pending:{realm}` of pending jobs, updated together by one script; links in set
//!   `{ns}:mc:links:{realm}:{job}`.
//!
//! A process killed between a run's terminal commit and the acknowledgement finds the job
//! pending after it restarts, and delivers it: the evidence and the wait outcome then exist
//! exactly once, because both steps are idempotent.

pub mod backend_ops;
pub mod compose;
pub mod jobs;
pub mod ports;
pub mod pump;
pub mod store;

pub use backend_ops::BackendOps;
pub use compose::accepts::wait_outcome_accepts_job_terminal;
pub use compose::await_sink::JobAwaitDeliverySink;
pub use compose::coordinator::{JobAwaitActivity, JobAwaitCoordinator, JobAwaitReceipt};
pub use compose::error::JobCompositionError;
pub use compose::evidence::{
    terminal_evidence, EvidenceRetry, JobTerminalEvidenceKind, JobTerminalEvidenceProjection,
    JobTerminalEvidenceProjector, JobWorkGraphLink,
};
pub use compose::schedule::{ScheduledDurableJobRunnable, ScheduledJobTemplate};
pub use jobs::authority::DocketJobAuthority;
pub use ports::authority::JobAuthority;
pub use ports::delivery::{
    JobDeliveryApplication, JobDeliveryContent, JobDeliveryKind, JobDeliverySink, JobNotification,
    JobSubscription,
};
pub use ports::error::{DetachedJobError, EvidenceError};
pub use ports::evidence::{EvidenceGraph, EvidenceItem, WorkEvidenceKind, WorkEvidenceRef};
pub use ports::ids::{
    CanonicalArgumentsHash, ExecutionIntentId, InteractionLineageId, JobFailureCode, JobId,
    JobReference, JobResultRef, JobSubmissionKey, OriginMemberId, RunnerIdentity,
    RunnerSpecificationRef, ToolIdentity, WorkItemId, WorkItemRef, WorkNamespace,
};
pub use ports::job::{
    JobReceipt, JobSpec, JobTerminalResult, JobView, RestartClass, ToolCredentialContextRef,
};
pub use ports::ledger::DeliveryLedger;
pub use ports::schedule::{
    HostRunnable, HostRunnableError, HostRunnableInvocation, HostRunnableOutcome,
};
pub use pump::{DeliveryPump, PumpReport};
pub use store::{connect_compose_store, ComposeStore, MemoryComposeStore};
