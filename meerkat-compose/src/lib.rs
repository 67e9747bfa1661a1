//! # meerkat-compose
//!
//! Detached jobs, evidence and per-session wait bindings composed over Docket runs.
