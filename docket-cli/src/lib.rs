//! # docket-cli
//!
//! The `docket` command (`cargo run --release -p docket-cli -- demo`) on top of the
//! [`docket`] library: the demo, a worker process, administration commands over any backend
//! URL, `docket conformance` and `docket bench`. The binary's modules are private; this
//! library exposes the benchmark ([`bench`](mod@bench)) so its tests and `cargo xtask bench` can drive it.
//!
//! ## Cargo features (backends)
//!
//! `sqlite` (default), `postgres` and `redis` each enable the backend in the library, its
//! isolating harness for `docket conformance`, and its driver for the bench's raw floors.
//!
//! ## Crate choices
//!
//! * `clap` (derive) for the command line: typed subcommands and `--help` for free.
//! * `indicatif` for the demo's progress bar (hidden when stderr is not a terminal), and
//!   `comfy-table` for its summary table: both small, widely used, and terminal-aware.
//! * `hdrhistogram` for latency percentiles: constant memory, exact enough quantiles,
//!   mergeable across workers.
//! * `tracing-subscriber` to print the engine's events (`RUST_LOG`).
//! * `plotters` (bitmap backend, text through pure-Rust `ab_glyph`) for the bench's PNG chart;
//!   the backend drivers (`rusqlite`, `sqlx`, `redis`) come with their backend features so the
//!   bench can measure each store beside a raw floor on the same server.
//! * `mimalloc` as the `docket` binary's global allocator: a worker's moments allocate many
//!   small short-lived values, and glibc's `malloc`/`free` took a fifth of the process's CPU
//!   where the client is the limit (Redis); see the note in `main.rs` for the figures. The
//!   library crates set no allocator.

pub mod bench;
