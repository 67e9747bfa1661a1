//! # docket-conformance
//!
//! The conformance suite every Docket store runs: named cases, races, a model-based property test.
