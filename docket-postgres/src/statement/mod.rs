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

mod literal;
mod placeholders;
#[cfg(test)]
mod server_tests;

use sqlx::postgres::{PgArguments, PgQueryResult, PgRow};
use sqlx::query::Query;
use sqlx::{Encode, Executor, PgConnection, Postgres, Type};

pub(crate) use literal::{typed_literal, Literal};
use placeholders::substitute;

/// A statement rendered with literals and sent as one simple query.
pub(crate) struct Inline<'q> {
    sql: &'q str,
    /// `SET LOCAL …;` statements that run first, in the same implicit transaction.
    prefix: &'q str,
    literals: Vec<String>,
}

impl Inline<'_> {
    fn render(&self) -> Result<String, sqlx::Error> {
        let body =
            substitute(self.sql, &self.literals).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
        Ok(if self.prefix.is_empty() {
            body
        } else {
            format!("{}{body}", self.prefix)
        })
    }
}

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

    /// An inline statement run after `prefix` (`SET LOCAL …;` statements, or empty).
    pub(crate) fn inline(sql: &'q str, prefix: &'q str) -> Self {
        Statement::Inline(Inline {
            sql,
            prefix,
            literals: Vec::new(),
        })
    }

    /// Binds the next parameter (`$1`, `$2`, … in order).
    pub(crate) fn bind<T>(self, value: T) -> Self
    where
        T: 'q + Send + Encode<'q, Postgres> + Type<Postgres> + Literal,
    {
        match self {
            Statement::Prepared(query) => Statement::Prepared(query.bind(value)),
            Statement::Inline(mut inline) => {
                inline.literals.push(typed_literal(&value));
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
            Statement::Inline(inline) => {
                let sql = inline.render()?;
                conn.fetch_optional(sqlx::raw_sql(&sql)).await
            }
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
            Statement::Inline(inline) => {
                let sql = inline.render()?;
                conn.fetch_all(sqlx::raw_sql(&sql)).await
            }
        }
    }

    /// Runs the statement; the rows it affected.
    pub(crate) async fn execute(
        self,
        conn: &mut PgConnection,
    ) -> Result<PgQueryResult, sqlx::Error> {
        match self {
            Statement::Prepared(query) => conn.execute(query).await,
            Statement::Inline(inline) => {
                let sql = inline.render()?;
                conn.execute(sqlx::raw_sql(&sql)).await
            }
        }
    }
}
