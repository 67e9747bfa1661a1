//! The process-level harness behind `cargo xtask chaos`: worker *processes* running the real
//! engine, killed with SIGKILL, frozen with SIGSTOP past the orphan TTL, a private server
//! crash-restarted, connections cut by a proxy between a request and its reply; then the
//! same [`oracle`](crate::oracle) reads the store and every worker's journal file.
//!
//! * [`options`] — the command line and the command that reproduces a run;
//! * [`servers`] — private PostgreSQL and Redis instances;
//! * [`proxy`] — the reply-dropping TCP proxy;
//! * [`fleet`] — the worker processes;
//! * [`plan`] — the seeded fault schedule;
//! * [`sqlite_lock`] — who holds a SQLite file's write lock (to kill a writer mid-transaction);
//! * [`inject`] — fires the plan as runs settle;
//! * `steal_watch` — spots a thief's claim of a frozen worker's run, to thaw it then;
//! * [`orchestrate`] — one run, start to verdict;
//! * [`report`] — the headline, table and JSON.

pub mod fleet;
pub mod inject;
pub mod options;
pub mod orchestrate;
pub mod plan;
pub mod proxy;
pub mod report;
pub mod servers;
pub mod sqlite_lock;
pub(crate) mod steal_watch;
