//! The shared compose cases on PostgreSQL (a fresh schema per case). They fail, never skip,
//! when the server named by `DOCKET_TEST_POSTGRES_URL` is unreachable.

#![cfg(feature = "postgres")]

mod common;

all_compose_cases!(common::Kind::Postgres);
