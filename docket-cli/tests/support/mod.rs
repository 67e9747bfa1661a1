//! Shared helpers of the CLI tests.
#![allow(dead_code)]

pub mod caps;
pub mod cli;
pub mod ops;
