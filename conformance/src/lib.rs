#![doc = include_str!("../README.md")]

pub mod cases;
mod catalogue;
pub mod env;
pub mod fixtures;
pub mod harness;
mod macros;
pub mod memory;
pub mod report;
pub mod runner;
mod table;

pub use env::Env;
pub use harness::{Capabilities, Harness, Requirement};
pub use report::{
    cases, run_all, run_matching, run_observed, CaseFailure, CaseOutcome, FamilyReport, Report,
};
pub use runner::{CaseFn, CaseInfo};

/// Support for the macros; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::catalogue::{infos, shims};
    pub use crate::runner::run_test;
    pub use futures::future::BoxFuture;
    pub use pastey;
}
