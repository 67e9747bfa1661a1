//! # docket-sqlite
//!
//! Embedded SQLite backend for Docket (rusqlite, WAL, single writer thread).
