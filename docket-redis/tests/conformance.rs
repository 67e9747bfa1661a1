//! The whole conformance suite against Redis (one fresh key prefix per case, on the server
//! named by `DOCKET_TEST_REDIS_URL`, default `redis://127.0.0.1:6379`).

docket_conformance::suite!(redis, docket_redis::testing::RedisHarness::from_env());
