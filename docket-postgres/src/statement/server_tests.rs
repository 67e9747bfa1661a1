//! Against the real test server: an inline literal is the very value a bound parameter is, for
//! every type the store binds, and inline results decode to the values that went in.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use sqlx::{Connection, PgConnection, Row};

use super::literal::typed_literal;
use super::Statement;

/// `DOCKET_TEST_POSTGRES_URL` (default the local server), through [`crate::driver_options`]
/// so that a pooler URL works too. A missing server fails the test.
async fn connect() -> PgConnection {
    let url = std::env::var("DOCKET_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (options, _) = crate::driver_options(&url).expect("test URL");
    PgConnection::connect_with(&options)
        .await
        .expect("the PostgreSQL test server must be reachable (DOCKET_TEST_POSTGRES_URL)")
}

#[derive(Clone, Debug)]
struct Values {
    text: String,
    int8: i64,
    int4: i32,
    flag: bool,
    bytes: Vec<u8>,
    maybe: Option<String>,
    texts: Vec<Option<String>>,
    ints: Vec<i64>,
    blobs: Vec<Vec<u8>>,
}

/// Text without NUL (the server refuses NUL in text however it arrives; tested apart),
/// weighted towards the characters quoting must get right.
fn text() -> impl Strategy<Value = String> {
    let tricky = prop::sample::select(vec![
        "'", "''", "\\", "\\'", "$1", "$$", "E'", "--", "/*", "\"", "\n", "é", "🦀", "\u{7f}",
    ]);
    prop::collection::vec(
        prop_oneof![
            tricky.prop_map(str::to_owned),
            any::<char>()
                .prop_filter("no NUL", |c| *c != '\0')
                .prop_map(String::from),
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

fn values() -> impl Strategy<Value = Values> {
    (
        text(),
        any::<i64>(),
        any::<i32>(),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..40),
        prop::option::of(text()),
        prop::collection::vec(prop::option::of(text()), 0..4),
        prop::collection::vec(any::<i64>(), 0..4),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..3),
    )
        .prop_map(
            |(text, int8, int4, flag, bytes, maybe, texts, ints, blobs)| Values {
                text,
                int8,
                int4,
                flag,
                bytes,
                maybe,
                texts,
                ints,
                blobs,
            },
        )
}

/// Every bound parameter compared, on the server, with its inline literal.
async fn literals_equal_bound_values(conn: &mut PgConnection, v: &Values) -> Vec<bool> {
    let sql = format!(
        "SELECT ARRAY[$1 IS NOT DISTINCT FROM {}, $2 IS NOT DISTINCT FROM {},
                      $3 IS NOT DISTINCT FROM {}, $4 IS NOT DISTINCT FROM {},
                      $5 IS NOT DISTINCT FROM {}, $6 IS NOT DISTINCT FROM {},
                      $7 IS NOT DISTINCT FROM {}, $8 IS NOT DISTINCT FROM {},
                      $9 IS NOT DISTINCT FROM {}]",
        typed_literal(&v.text),
        typed_literal(&v.int8),
        typed_literal(&v.int4),
        typed_literal(&v.flag),
        typed_literal(&v.bytes),
        typed_literal(&v.maybe),
        typed_literal(&v.texts),
        typed_literal(&v.ints),
        typed_literal(&v.blobs),
    );
    let row = Statement::prepared(&sql)
        .bind(&v.text)
        .bind(v.int8)
        .bind(v.int4)
        .bind(v.flag)
        .bind(&v.bytes)
        .bind(&v.maybe)
        .bind(&v.texts)
        .bind(&v.ints)
        .bind(&v.blobs)
        .fetch_one(conn)
        .await
        .expect("compare");
    row.try_get(0).expect("flags")
}

/// The scalar values sent inline and read back as text-format results.
async fn inline_round_trip(conn: &mut PgConnection, v: &Values) {
    let row = Statement::inline(
        "SELECT $1 AS text, $2 AS int8, $3 AS int4, $4 AS flag, $5 AS bytes, $6 AS maybe",
        "",
        None,
    )
    .bind(&v.text)
    .bind(v.int8)
    .bind(v.int4)
    .bind(v.flag)
    .bind(&v.bytes)
    .bind(&v.maybe)
    .fetch_one(conn)
    .await
    .expect("inline select");
    assert_eq!(row.try_get::<String, _>("text").expect("text"), v.text);
    assert_eq!(row.try_get::<i64, _>("int8").expect("int8"), v.int8);
    assert_eq!(row.try_get::<i32, _>("int4").expect("int4"), v.int4);
    assert_eq!(row.try_get::<bool, _>("flag").expect("flag"), v.flag);
    assert_eq!(row.try_get::<Vec<u8>, _>("bytes").expect("bytes"), v.bytes);
    assert_eq!(
        row.try_get::<Option<String>, _>("maybe").expect("maybe"),
        v.maybe
    );
}

#[test]
fn inline_literals_are_the_values_a_bound_parameter_carries() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let conn = RefCell::new(runtime.block_on(connect()));
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        ..Config::default()
    });
    let outcome = runner.run(&values(), |v| {
        let mut conn = conn.borrow_mut();
        let flags = runtime.block_on(literals_equal_bound_values(&mut conn, &v));
        prop_assert_eq!(&flags, &vec![true; 9], "{:?}", v);
        runtime.block_on(inline_round_trip(&mut conn, &v));
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

#[tokio::test]
async fn a_nul_in_text_is_refused_the_same_way_bound_or_inline() {
    let mut conn = connect().await;
    let code = |result: Result<sqlx::postgres::PgRow, sqlx::Error>| match result {
        Err(sqlx::Error::Database(db)) => db.code().map(|c| c.into_owned()),
        other => panic!("expected a database error, got {other:?}"),
    };
    let bound = Statement::prepared("SELECT $1 AS t")
        .bind("a\0b")
        .fetch_one(&mut conn)
        .await;
    let inline = Statement::inline("SELECT $1 AS t", "", None)
        .bind("a\0b")
        .fetch_one(&mut conn)
        .await;
    assert_eq!(code(bound).as_deref(), Some("22021"));
    assert_eq!(code(inline).as_deref(), Some("22021"));
}
