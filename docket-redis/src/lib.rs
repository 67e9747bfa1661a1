//! # docket-redis
//!
//! Redis backend for Docket: one Lua script per operation.
