//! # docket-conformance
//!
//! The conformance suite every Docket store runs: named cases, races, a model-based property
//! test. Implement [`Harness`] for your store and stamp out the suite.

pub mod harness;

pub use harness::{Capabilities, Harness};
