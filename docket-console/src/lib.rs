//! The operator console behind `docket serve`: a JSON API under `/api/v1/`, server-rendered
//! pages under `/ui/` and Prometheus metrics at `/metrics`, over a [`Docket`] on any backend
//! (`docs/console.md`).
//!
//! The HTTP stack is axum on hyper and tokio: maintained, widely used, and already the stack
//! the workspace's HTTP example uses, so no request parsing, header handling or chunking is
//! written here. Pages are plain HTML rendered on the server with one escaping function
//! ([`html::escape`]) for every string that comes from a run, a graph or a request; the only
//! script is a small file served from the crate (live status over server-sent events), so the
//! pages carry a `Content-Security-Policy` of `default-src 'self'` with no inline script.
//!
//! ```no_run
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! use docket_console::{Console, ConsoleConfig, Grant, Role};
//!
//! let docket = docket::Docket::connect("sqlite://docket.db").await?;
//! let config = ConsoleConfig::new(vec![
//!     Grant::new("a-long-random-read-token", Role::Read, None)?,
//!     Grant::new("a-long-random-admin-token", Role::Admin, None)?,
//! ]);
//! let app = docket_console::router(&Console::new(docket, config)?);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```

pub mod api;
pub mod auth;
pub mod error;
pub mod extract;
pub mod facts;
pub mod html;
pub mod metrics;
pub mod paths;
pub mod state;
pub mod tokens;
pub mod ui;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderValue, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use docket::engine::WorkerStats;
use docket::Docket;

pub use auth::{Grant, Role};
pub use error::ApiError;

/// Largest request body accepted (forms and JSON): larger ones are refused with 413.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// The console's settings.
#[derive(Clone, Debug)]
pub struct ConsoleConfig {
    /// Accepted tokens (at least one for the full console).
    pub grants: Vec<Grant>,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// Most runs the engine facts and the poisoned page inspect (each costs one read).
    pub inspect_cap: usize,
    /// Counters shown at `/metrics` besides the store counts (a worker's, when the console
    /// runs beside one; empty otherwise).
    pub stats: Vec<Arc<WorkerStats>>,
}

impl ConsoleConfig {
    /// Settings with these grants and the defaults.
    #[must_use]
    pub fn new(grants: Vec<Grant>) -> Self {
        ConsoleConfig {
            grants,
            body_limit: DEFAULT_BODY_LIMIT,
            inspect_cap: 1000,
            stats: Vec::new(),
        }
    }
}

/// A console that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The full console needs at least one token.
    #[error("the console needs at least one token (--token-file, --read-token or --admin-token)")]
    NoToken,
}

/// The console: the facade, the grants and the live sessions.
#[derive(Debug)]
pub struct Console {
    docket: Docket,
    config: ConsoleConfig,
    sessions: auth::Sessions,
    facts: facts::FactsCache,
}

/// The shared state of every handler.
pub type Shared = Arc<Console>;

impl Console {
    /// A console over `docket`.
    ///
    /// # Errors
    /// [`ConsoleError::NoToken`] without a grant.
    pub fn new(docket: Docket, config: ConsoleConfig) -> Result<Shared, ConsoleError> {
        if config.grants.is_empty() {
            return Err(ConsoleError::NoToken);
        }
        Ok(Arc::new(Console {
            docket,
            config,
            sessions: auth::Sessions::default(),
            facts: facts::FactsCache::default(),
        }))
    }

    /// The facade (tenantless; handlers scope it per grant).
    #[must_use]
    pub fn docket(&self) -> &Docket {
        &self.docket
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &ConsoleConfig {
        &self.config
    }

    /// The live sessions.
    #[must_use]
    pub fn sessions(&self) -> &auth::Sessions {
        &self.sessions
    }

    /// The cache of engine facts.
    #[must_use]
    pub fn facts(&self) -> &facts::FactsCache {
        &self.facts
    }
}

/// Every route of `console`: API, pages, assets and metrics, with the security headers and
/// the body limit.
pub fn router(console: &Shared) -> Router {
    let routes = Router::new()
        .route("/", get(ui::home))
        .route("/metrics", get(metrics::handler))
        .merge(api::routes())
        .merge(ui::routes())
        .fallback(api::route_not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .with_state(console.clone());
    harden(routes, console.config.body_limit)
}

/// Only `/metrics`, for `--metrics-only`: the counters of `stats` and, when `docket` is given,
/// the store counts. Unauthenticated unless `grants` is non-empty.
pub fn metrics_router(source: metrics::MetricsSource) -> Router {
    let routes = Router::new()
        .route("/metrics", get(metrics::standalone))
        .fallback(api::route_not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .with_state(Arc::new(source));
    harden(routes, DEFAULT_BODY_LIMIT)
}

fn harden(router: Router, body_limit: usize) -> Router {
    router
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn(security_headers))
}

/// Headers on every response: no inline script or foreign origin, no framing, no sniffing,
/// no caching of operator data.
async fn security_headers(request: Request<axum::body::Body>, next: Next) -> Response {
    let mut response = next.run(request).await.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Serves `router` on `listener` until `shutdown` completes (then lets open requests finish).
///
/// # Errors
/// The listener's IO errors.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
