//! How a store reaches the server: the driver's connect options, the way statements are sent
//! and the route of the LISTEN connection — directly, or through a transaction pooler.
//!
//! Behind a transaction pooler (see [`crate::Pooler::Transaction`]) nothing may depend on the
//! server session, because consecutive transactions of one client may run on different server
//! connections:
//!
//! * statements are [inline](crate::statement) (one simple query each), never prepared;
//! * nothing but what poolers track is sent at startup (no `extra_float_digits`, no `options`);
//! * session settings — [`PostgresOptions`]' timeouts and the URL's `options[name]=value` —
//!   become `SET LOCAL` statements sent in front of every statement (the same simple query,
//!   so the same implicit transaction) and after every `BEGIN`; they cost no round trip;
//! * LISTEN goes to [`PostgresOptions::listen_url`], a direct route, or is not used at all
//!   ([`PostgresOptions::poll_only`]).

use std::str::FromStr;

use docket_core::store::StoreError;
use sqlx::postgres::PgConnectOptions;

use crate::options::PostgresOptions;
use crate::statement::Literal;

/// How statements are sent.
#[derive(Clone, Debug)]
pub(crate) enum Protocol {
    /// Extended protocol, prepared once per connection (direct connections).
    Prepared,
    /// One simple query per statement, parameters inline (behind a transaction pooler).
    Inline {
        /// `SET LOCAL …; ` for every session setting (empty when there are none).
        prefix: String,
        /// `<schema>.docket_prepare`, which keeps statements prepared per server connection.
        procedure: String,
    },
}

impl Protocol {
    /// The statement that opens a transaction: `BEGIN` followed by the session settings, or
    /// `None` for sqlx's plain `BEGIN`.
    pub(crate) fn begin_statement(&self) -> Option<String> {
        match self {
            Protocol::Inline { prefix, .. } if !prefix.is_empty() => {
                Some(format!("BEGIN; {prefix}"))
            }
            _ => None,
        }
    }
}

/// Everything a store needs to connect.
#[derive(Clone, Debug)]
pub(crate) struct Route {
    /// The statement connections' options.
    pub connect: PgConnectOptions,
    /// How statements are sent on them.
    pub protocol: Protocol,
    /// The LISTEN connection's options; `None` in poll-only mode.
    pub listen: Option<PgConnectOptions>,
}

/// The route for `url` (a driver URL, Docket's own parameters already split off) and
/// `options`.
///
/// # Errors
/// `InvalidArgument` for an unparsable URL or `listen_url`, a plain `options=` parameter
/// behind a transaction pooler, or a setting name that is not an identifier.
pub(crate) fn route(options: &PostgresOptions) -> Result<Route, StoreError> {
    options.validate()?;
    let url = options.url.as_str();
    let parse = |what: &str, url: &str| {
        PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::invalid_argument(format!("{what}: {e}")))
    };
    let (connect, protocol) = if options.transaction_pooled() {
        let (url, mut settings) = split_startup_settings(url)?;
        settings.extend(
            options
                .session_settings()
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value)),
        );
        let connect = parse("connection URL", &url)?
            // A named statement would outlive the transaction that prepared it.
            .statement_cache_capacity(0)
            // Poolers refuse startup parameters they do not track; Docket stores no SQL
            // floats, so it never needs this one.
            .extra_float_digits(None);
        // SET takes a bare literal, not an expression: no cast.
        let prefix = settings
            .iter()
            .map(|(name, value)| {
                let mut line = format!("SET LOCAL {name} = ");
                value.write(&mut line);
                line.push_str("; ");
                line
            })
            .collect();
        let procedure = format!("{}.docket_prepare", options.schema);
        (connect, Protocol::Inline { prefix, procedure })
    } else {
        let mut connect = parse("connection URL", url)?;
        let settings = options.session_settings();
        if !settings.is_empty() {
            connect = connect.options(settings);
        }
        (connect, Protocol::Prepared)
    };
    let listen = match (&options.listen_url, options.poll_only) {
        (_, true) => None,
        (Some(listen_url), false) => Some(parse("listen_url", listen_url)?),
        (None, false) => Some(connect.clone()),
    };
    Ok(Route {
        connect,
        protocol,
        listen,
    })
}

/// The driver options a store opened from the Docket URL `url` uses for its statement
/// connections, with the parsed options: behind a transaction pooler without startup
/// parameters or statement cache. For tools that open their own connections beside a store
/// (a benchmark's raw floor, a schema check); such a tool behind a transaction pooler must
/// also send each statement in one exchange (no bound parameters) and keep no session state.
///
/// # Errors
/// `InvalidArgument` as [`crate::parse_url`] and for an unparsable URL.
pub fn driver_options(url: &str) -> Result<(PgConnectOptions, PostgresOptions), StoreError> {
    let options = crate::options::parse_url(url)?;
    let route = route(&options)?;
    Ok((route.connect, options))
}

/// Splits the URL's `options[name]=value` parameters (session settings the driver would send
/// as the `options` startup parameter) off `url`.
fn split_startup_settings(url: &str) -> Result<(String, Vec<(String, String)>), StoreError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut settings = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?;
        if key == "options" {
            return Err(StoreError::invalid_argument(
                "behind a transaction pooler the `options` startup parameter is refused: give \
                 each session setting as options[name]=value (applied with SET LOCAL in every \
                 transaction)",
            ));
        }
        match key
            .strip_prefix("options[")
            .and_then(|k| k.strip_suffix(']'))
        {
            Some(name) => {
                if !is_setting_name(name) {
                    return Err(StoreError::invalid_argument(format!(
                        "setting name {name:?} in options[…] is not a plain identifier"
                    )));
                }
                settings.push((name.to_owned(), decode(value)?));
            }
            None => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, settings))
}

/// A query component decoded the way the driver decodes it (`+` is a space).
fn decode(component: &str) -> Result<String, StoreError> {
    percent_encoding::percent_decode_str(&component.replace('+', " "))
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| StoreError::invalid_argument("a URL parameter is not UTF-8"))
}

/// Whether `name` can follow `SET LOCAL` unquoted (a parameter, or a dotted custom one).
fn is_setting_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Pooler;

    /// The route of `options` aimed at `url`.
    fn route_to(url: &str, options: &PostgresOptions) -> Result<Route, StoreError> {
        route(&options.clone().with_url(url))
    }

    fn pooled() -> PostgresOptions {
        PostgresOptions {
            pooler: Pooler::Transaction,
            listen_url: Some("postgres://u@direct:5432/db".into()),
            ..PostgresOptions::default()
        }
    }

    #[test]
    fn session_settings_become_set_local_behind_a_transaction_pooler() {
        let options = PostgresOptions {
            lock_timeout_ms: Some(250),
            ..pooled()
        };
        let route = route_to(
            "postgres://u@pooler:6432/db?options[synchronous_commit]=off&sslmode=disable",
            &options,
        )
        .expect("route");
        let Protocol::Inline { prefix, .. } = &route.protocol else {
            panic!("inline statements behind a transaction pooler");
        };
        assert_eq!(
            prefix,
            "SET LOCAL synchronous_commit = E'off'; SET LOCAL jit = E'off'; \
             SET LOCAL lock_timeout = E'250'; SET LOCAL statement_timeout = E'30000'; "
        );
        assert_eq!(route.connect.get_options(), None, "no startup options");
        assert_eq!(route.connect.get_host(), "pooler");
        assert_eq!(
            route.listen.as_ref().map(PgConnectOptions::get_host),
            Some("direct")
        );
        assert_eq!(
            route.protocol.begin_statement().as_deref(),
            Some(format!("BEGIN; {prefix}").as_str())
        );
    }

    #[test]
    fn direct_connections_prepare_and_listen_on_the_same_url() {
        let options = PostgresOptions {
            lock_timeout_ms: Some(250),
            ..PostgresOptions::default()
        };
        let route = route_to("postgres://u@h/db", &options).expect("route");
        assert!(matches!(route.protocol, Protocol::Prepared));
        // The default statement timeout is a session setting like any other.
        assert_eq!(
            route.connect.get_options(),
            Some("-c jit=off -c lock_timeout=250 -c statement_timeout=30000")
        );
        assert_eq!(route.protocol.begin_statement(), None);
        assert_eq!(
            route.listen.as_ref().map(PgConnectOptions::get_host),
            Some("h")
        );
        let polling = PostgresOptions {
            poll_only: true,
            ..PostgresOptions::default()
        };
        let polled = route_to("postgres://u@h/db", &polling).expect("route");
        assert!(polled.listen.is_none());
        assert!(matches!(polled.protocol, Protocol::Inline { .. }));
    }

    #[test]
    fn startup_options_behind_a_pooler_must_be_named_settings() {
        let error = route_to("postgres://u@h/db?options=-c%20a%3Db", &pooled())
            .expect_err("plain options")
            .to_string();
        assert!(error.contains("options[name]=value"), "{error}");
        let error = route_to("postgres://u@h/db?options[a;drop]=b", &pooled())
            .expect_err("not an identifier")
            .to_string();
        assert!(error.contains("identifier"), "{error}");
        let route = route_to(
            "postgres://u@h/db?options%5Bapplication.tag%5D=it%27s+here",
            &pooled(),
        )
        .expect("encoded");
        let Protocol::Inline { prefix, .. } = route.protocol else {
            panic!("inline");
        };
        assert_eq!(
            prefix,
            "SET LOCAL application.tag = E'it''s here'; SET LOCAL jit = E'off'; \
             SET LOCAL statement_timeout = E'30000'; "
        );
    }
}
