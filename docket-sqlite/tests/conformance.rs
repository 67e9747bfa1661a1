//! The whole conformance suite against SQLite (one fresh database file per case).

docket_conformance::suite!(sqlite, docket_sqlite::testing::SqliteHarness::default());
