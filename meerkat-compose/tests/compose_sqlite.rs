//! The shared compose cases on SQLite (a temp dir per case).

#![cfg(feature = "sqlite")]

mod common;

all_compose_cases!(common::Kind::Sqlite);
