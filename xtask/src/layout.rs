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

/// The role files every store crate has, under the same names, so a reader who knows one
/// store finds the same thing in the same place in the others (store-specific files —
/// schema, migrations, scripts, key layout, pooler, tables — come on top).
const STORE_ROLES: &[(&str, &str)] = &[
    ("lib", "crate docs and re-exports"),
    (
        "store",
        "the store value: connect(url), open(options), shared helpers",
    ),
    (
        "traits",
        "the RunStore and GraphStore impls: validation, then one write or read",
    ),
    ("transitions", "initialize and the two commits"),
    ("claims", "claim_due, release, abandon, poison recovery"),
    ("reads", "runs, events and listings"),
    ("graphs", "graph versions"),
    ("prune", "retention passes"),
    ("ops", "the operation registry"),
    ("options", "settings and URL parsing"),
    ("codec", "strict decoding of stored bytes"),
    (
        "error",
        "driver (or the store's own) errors into StoreError",
    ),
    ("wakeups", "wake hints"),
    (
        "testing",
        "the conformance harness (behind the feature `testing` in the backends)",
    ),
];

/// The store crates checked by [`stores_share_one_skeleton`]: the three backends, and the
/// worked example of `docs/implementing-a-store.md`, which a store author reads beside them.
const STORES: &[&str] = &[
    "docket-sqlite",
    "docket-postgres",
    "docket-redis",
    "examples/custom-store",
];

/// Every store crate's `src/` has a file (`ROLE.rs`) or module folder (`ROLE/mod.rs`) for
/// every role of [`STORE_ROLES`].
pub fn stores_share_one_skeleton() -> Result {
    step("layout: every store crate (backends, examples/custom-store) has the same role files");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?
        .to_path_buf();
    let mut missing = Vec::new();
    for store in STORES {
        let src = root.join(store).join("src");
        for (role, what) in STORE_ROLES {
            let file = src.join(format!("{role}.rs"));
            let module = src.join(role).join("mod.rs");
            if !file.is_file() && !module.is_file() {
                missing.push(format!("{store}/src/{role}.rs ({what})"));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "store crates must share one skeleton; missing:\n  {}",
            missing.join("\n  ")
        ))
    }
}
