//! The shared compose cases on Redis (a fresh key namespace per case). They fail, never
//! skip, when the server named by `DOCKET_TEST_REDIS_URL` is unreachable.

#![cfg(feature = "redis")]

mod common;

all_compose_cases!(common::Kind::Redis);
