//! One statement with its parameters, sent the way the store's connection needs.
//!
//! * **Prepared** (no pooler): the extended protocol with sqlx's per-connection statement
//!   cache. The first use of a statement on a connection prepares it (Parse/Describe, one round
//!   trip); every later use is one round trip (Bind/Execute/Sync) with binary parameters.
//! * **Inline** (behind a transaction pooler): sqlx sends an unprepared statement in two
//!   exchanges, each closed by its own Sync — Parse/Describe, then Bind/Execute — and a
//!   transaction pooler may give the server connection to another client between the two, so
//!   one client's Bind meets another client's statement. An inline statement is instead one
//!   simple-protocol query whose parameters are typed literals: one exchange, one round trip,
//!   nothing left on the server connection afterwards.
//!
//! The literals are safe by construction and typed like bound parameters ([`literal`]);
//! placeholders are found by a small lexer that skips string literals, quoted identifiers,
//! comments and dollar-quoted bodies ([`placeholders`]).

mod inline;
mod literal;
mod placeholders;
#[cfg(test)]
mod server_tests;

use sqlx::postgres::{PgArguments, PgQueryResult, PgRow};
use sqlx::query::Query;
use sqlx::{Encode, Executor, PgConnection, Postgres, Type};

use inline::{Inline, Output, Want};
pub(crate) use literal::Literal;

/// One statement and its parameters (see the module docs).
pub(crate) enum Statement<'q> {
    /// Extended protocol, prepared once per connection.
    Prepared(Query<'q, Postgres, PgArguments>),
    /// Simple protocol with inline literals.
    Inline(Inline<'q>),
}

impl<'q> Statement<'q> {
    /// A prepared (cached) statement.
    pub(crate) fn prepared(sql: &'q str) -> Self {
        Statement::Prepared(sqlx::query(sql))
    }

    /// An inline statement run after `prefix` (`SET LOCAL …;` statements, or empty), kept
    /// prepared on the server connection through `procedure` (`<schema>.docket_prepare`)
    /// when one is given.
    pub(crate) fn inline(sql: &'q str, prefix: &'q str, procedure: Option<&'q str>) -> Self {
        Statement::Inline(Inline::new(sql, prefix, procedure))
    }

    /// Binds the next parameter (`$1`, `$2`, … in order).
    pub(crate) fn bind<T>(self, value: T) -> Self
    where
        T: 'q + Send + Encode<'q, Postgres> + Type<Postgres> + Literal,
    {
        match self {
            Statement::Prepared(query) => Statement::Prepared(query.bind(value)),
            Statement::Inline(mut inline) => {
                inline.push(&value);
                Statement::Inline(inline)
            }
        }
    }

    // The executor's own methods (boxed futures with plain lifetimes) rather than sqlx's
    // generic helpers keep the futures `Send` for every caller. Note that sqlx's
    // `RawSql::fetch_optional` fails on zero rows, so it is not used.

    /// Runs the statement; the first row, if any.
    pub(crate) async fn fetch_optional(
        self,
        conn: &mut PgConnection,
    ) -> Result<Option<PgRow>, sqlx::Error> {
        match self {
            Statement::Prepared(query) => conn.fetch_optional(query).await,
            Statement::Inline(_) => Ok(self.fetch_all(conn).await?.into_iter().next()),
        }
    }

    /// Runs the statement; its one row (`RowNotFound` otherwise).
    pub(crate) async fn fetch_one(self, conn: &mut PgConnection) -> Result<PgRow, sqlx::Error> {
        self.fetch_optional(conn)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    /// Runs the statement; every row.
    pub(crate) async fn fetch_all(
        self,
        conn: &mut PgConnection,
    ) -> Result<Vec<PgRow>, sqlx::Error> {
        match self {
            Statement::Prepared(query) => conn.fetch_all(query).await,
            Statement::Inline(inline) => match inline.run(conn, Want::Rows).await? {
                Output::Rows(rows) => Ok(rows),
                Output::Affected(_) => Ok(Vec::new()),
            },
        }
    }

    /// Runs the statement; the rows it affected.
    pub(crate) async fn execute(
        self,
        conn: &mut PgConnection,
    ) -> Result<PgQueryResult, sqlx::Error> {
        match self {
            Statement::Prepared(query) => conn.execute(query).await,
            Statement::Inline(inline) => match inline.run(conn, Want::Affected).await? {
                Output::Affected(done) => Ok(done),
                Output::Rows(_) => Ok(PgQueryResult::default()),
            },
        }
    }
}
