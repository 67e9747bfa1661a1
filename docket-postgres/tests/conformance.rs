//! The whole conformance suite against PostgreSQL (one fresh schema per case).

docket_conformance::suite!(postgres, docket_postgres::testing::PostgresHarness::new());
