//! Checks of the workspace's shape that no compiler enforces: the library crate `docket`
//! stays a library (no CLI, bench or test-only dependency in its normal dependency tree).

use std::env;
use std::process::Command;

use crate::{step, Result};

/// Crates that belong to the `docket` command or to tests, never to the library.
const NOT_IN_THE_LIBRARY: &[&str] = &["clap", "plotters", "indicatif", "proptest"];

/// `cargo tree -p docket -e normal` (every backend feature on) names none of
/// [`NOT_IN_THE_LIBRARY`].
pub fn library_is_only_a_library() -> Result {
    step("layout: the docket library's normal dependencies hold no CLI, bench or test crate");
    let output = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "tree",
            "--package",
            "docket",
            "--all-features",
            "--edges",
            "normal",
            "--prefix",
            "none",
        ])
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    let found: Vec<&str> = NOT_IN_THE_LIBRARY
        .iter()
        .copied()
        .filter(|name| {
            tree.lines()
                .any(|line| line.split_whitespace().next() == Some(*name))
        })
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the docket library depends on {found:?}; they belong to docket-cli or to tests"
        ))
    }
}
