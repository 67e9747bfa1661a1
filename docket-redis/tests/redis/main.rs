//! Integration tests of the Redis store against a real server (`DOCKET_TEST_REDIS_URL`,
//! default `redis://127.0.0.1:6379`). Each test uses its own namespace; an unreachable server
//! fails the tests.

mod admin;
mod batch_cut;
mod claims;
mod common;
mod corruption;
mod fail_points;
mod fair;
mod ops;
mod proxy;
mod prune;
mod rejections;
mod server;
