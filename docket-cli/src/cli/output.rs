//! Printing that never panics.
//!
//! `println!` and `eprintln!` panic when their stream cannot be written — stderr on a full
//! disk, stdout into a closed pipe — and a panic on a worker's task leaves the process alive
//! holding claims it no longer drains. Here a failed status line on stderr is dropped (the
//! work matters more than its narration), and a failed line on stdout — a command's result —
//! makes the process exit non-zero once the command is done ([`stdout_failed`]).

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes one line of a command's result to stdout; a failure is remembered for the exit
/// status.
pub fn stdout_line(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{args}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        STDOUT_FAILED.store(true, Ordering::Relaxed);
    }
}

/// Writes text (no newline added) to stdout; a failure is remembered for the exit status.
pub fn stdout_text(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if write!(stdout, "{args}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        STDOUT_FAILED.store(true, Ordering::Relaxed);
    }
}

/// Writes one status line to stderr; a failure is ignored.
pub fn stderr_line(args: fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// Whether some result line could not be written to stdout.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// `println!` that never panics (see the module docs).
macro_rules! out {
    () => {
        $crate::cli::output::stdout_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::stdout_line(format_args!($($arg)*))
    };
}

/// `print!` that never panics (see the module docs).
macro_rules! out_text {
    ($($arg:tt)*) => {
        $crate::cli::output::stdout_text(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics and ignores failures (see the module docs).
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::cli::output::stderr_line(format_args!($($arg)*))
    };
}
