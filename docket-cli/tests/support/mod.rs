//! Shared helpers of the CLI tests.
#![allow(dead_code)]

pub mod cli;
pub mod ops;
