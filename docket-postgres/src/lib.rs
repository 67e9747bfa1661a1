//! # docket-postgres
//!
//! PostgreSQL backend for Docket (sqlx): one-statement claims and fenced commits.
