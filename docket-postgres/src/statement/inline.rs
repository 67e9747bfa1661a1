//! Sending a statement with its parameters inline, one simple query per exchange, while
//! keeping the server's plan cache.
//!
//! Parsing and planning a statement on every execution is what an unprepared statement costs
//! (measured on a direct connection: about 0.5 ms more for a fenced commit and 0.6 ms more for
//! a claim than their prepared forms). So a store's autocommit statement is sent as
//!
//! ```text
//! CALL <schema>.docket_prepare('docket_<hash>', 'PREPARE docket_<hash>(types) AS <text>', 256);
//! EXECUTE docket_<hash>(literals…)
//! ```
//!
//! in one simple query: the procedure (schema version 2) prepares the statement on whichever
//! server connection the pooler picked unless that connection already has it, so the plan is
//! made once per server connection and statement, as on a direct connection. The name is a
//! hash of the statement's text and parameter types, so a statement of that name is the same
//! statement whoever prepared it, and nothing a client relies on lives in the session: a
//! pooler that resets its server connections (`DISCARD ALL`) only costs the next exchange a
//! `PREPARE`. At most [`MAX_CACHED`] Docket statements are kept per server connection.
//!
//! Inside an explicit transaction, and for statements `PREPARE` refuses (`EXPLAIN`), the
//! literals are substituted into the text instead (parsed and planned each time; no hot path
//! runs in an explicit transaction).

use sha2::{Digest, Sha256};
use sqlx::postgres::{PgQueryResult, PgRow};
use sqlx::{Connection, Executor, PgConnection};

use super::literal::{typed_literal, Literal};
use super::placeholders::substitute;

/// Prepared statements of Docket kept per server connection at most.
pub(crate) const MAX_CACHED: usize = 256;

/// The prefix of every name (the procedure bounds statements with this prefix only).
const NAME_PREFIX: &str = "docket_";

/// SQLSTATE `invalid_sql_statement_name`: the prepared statement does not exist.
const MISSING: &str = "26000";
/// SQLSTATE `feature_not_supported`, as in "cached plan must not change result type": the
/// tables changed shape under a statement prepared before (a schema dropped and recreated by
/// another version). Nothing ran; the statement is prepared again.
const RESHAPED: &str = "0A000";

/// A statement with its parameters as typed literals.
pub(crate) struct Inline<'q> {
    sql: &'q str,
    /// `SET LOCAL …;` statements that run first, in the same implicit transaction.
    prefix: &'q str,
    /// The schema-qualified `docket_prepare` procedure, when the statement may be cached.
    procedure: Option<&'q str>,
    literals: Vec<String>,
    types: Vec<&'static str>,
}

/// What a caller wants back.
#[derive(Clone, Copy)]
pub(crate) enum Want {
    Rows,
    Affected,
}

/// What came back.
pub(crate) enum Output {
    Rows(Vec<PgRow>),
    Affected(PgQueryResult),
}

impl<'q> Inline<'q> {
    pub(crate) fn new(sql: &'q str, prefix: &'q str, procedure: Option<&'q str>) -> Self {
        Inline {
            sql,
            prefix,
            procedure,
            literals: Vec::new(),
            types: Vec::new(),
        }
    }

    pub(crate) fn push<T: Literal + ?Sized>(&mut self, value: &T) {
        self.literals.push(typed_literal(value));
        self.types.push(T::TYPE);
    }

    /// Runs the statement on `conn` (see the module docs).
    pub(crate) async fn run(
        self,
        conn: &mut PgConnection,
        want: Want,
    ) -> Result<Output, sqlx::Error> {
        let procedure = match self.procedure {
            Some(procedure) if !conn.is_in_transaction() && preparable(self.sql) => procedure,
            _ => {
                let body = substitute(self.sql, &self.literals)
                    .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
                return send(conn, &format!("{}{body}", self.prefix), want).await;
            }
        };
        let name = self.name();
        let mut definition = String::new();
        format!("PREPARE {name}{} AS {}", list(&self.types), self.sql).write(&mut definition);
        let execute = format!("{}EXECUTE {name}{}", self.prefix, list(&self.literals));
        let call = |verify: bool| {
            format!("CALL {procedure}('{name}', {definition}, {MAX_CACHED}, {verify});\n{execute}")
        };
        match send(conn, &call(false), want).await {
            // The session's memory of its statements was wrong (a DEALLOCATE ALL without a
            // RESET ALL); nothing ran.
            Err(e) if missing(&e, &name) => send(conn, &call(true), want).await,
            // The tables changed shape under the prepared statement; nothing ran. It is
            // dropped (where this exchange lands, if it is there) and prepared again.
            Err(e) if reshaped(&e) => {
                let again = format!(
                    "DO $docket_drop$ BEGIN EXECUTE 'DEALLOCATE {name}';
EXCEPTION WHEN invalid_sql_statement_name THEN NULL; END $docket_drop$;\n{}",
                    call(true)
                );
                send(conn, &again, want).await
            }
            outcome => outcome,
        }
    }

    /// `docket_` and 128 bits of the SHA-256 of the parameter types and the text.
    fn name(&self) -> String {
        let mut hash = Sha256::new();
        for ty in &self.types {
            hash.update(ty.as_bytes());
            hash.update(b",");
        }
        hash.update(b"\n");
        hash.update(self.sql.as_bytes());
        format!("{NAME_PREFIX}{}", hex::encode(&hash.finalize()[..16]))
    }
}

/// `()` or `(a, b, …)`.
fn list<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let joined: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("({})", joined.join(", "))
}

/// Whether `PREPARE … AS sql` accepts the statement.
fn preparable(sql: &str) -> bool {
    let first: String = sql
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_uppercase();
    matches!(
        first.as_str(),
        "SELECT" | "WITH" | "INSERT" | "UPDATE" | "DELETE" | "VALUES"
    )
}

/// Whether `error` says that the prepared statement `name` does not exist.
fn missing(error: &sqlx::Error, name: &str) -> bool {
    matches!(error, sqlx::Error::Database(db)
        if db.code().as_deref() == Some(MISSING) && db.message().contains(name))
}

/// Whether `error` says a prepared statement's tables changed shape since it was prepared.
fn reshaped(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db)
        if db.code().as_deref() == Some(RESHAPED)
            && db.message().contains("cached plan must not change result type"))
}

async fn send(conn: &mut PgConnection, sql: &str, want: Want) -> Result<Output, sqlx::Error> {
    // The executor's own methods (boxed futures with plain lifetimes) keep the futures `Send`.
    match want {
        Want::Rows => conn.fetch_all(sqlx::raw_sql(sql)).await.map(Output::Rows),
        Want::Affected => conn.execute(sqlx::raw_sql(sql)).await.map(Output::Affected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_text_and_the_parameter_types() {
        let named = |sql: &str, values: &[i64]| {
            let mut inline = Inline::new(sql, "", None);
            for v in values {
                inline.push(v);
            }
            inline.name()
        };
        let a = named("SELECT $1", &[1]);
        assert_eq!(a, named("SELECT $1", &[2]), "values do not matter");
        assert_ne!(a, named("SELECT $1 ", &[1]));
        let mut text = Inline::new("SELECT $1", "", None);
        text.push("1");
        assert_ne!(a, text.name(), "types do");
        assert!(a.starts_with("docket_") && a.len() == 7 + 32 && a.len() <= 63);
    }

    #[test]
    fn only_preparable_statements_are_prepared() {
        for sql in [
            "SELECT 1",
            "  with x AS (SELECT 1) SELECT 1",
            "UPDATE t SET a = 1",
        ] {
            assert!(preparable(sql), "{sql}");
        }
        for sql in ["EXPLAIN SELECT 1", "SET LOCAL a = 1", "DROP SCHEMA x"] {
            assert!(!preparable(sql), "{sql}");
        }
    }
}
