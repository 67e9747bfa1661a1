//! The library as its users meet it: the `docket` examples run to completion, the
//! documentation builds without a warning, every library crate packages for crates.io, and the
//! workspace README's quick start is the doctested one.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cli::{run_with_deadline, target_dir};
use crate::{cargo, cargo_with_env, step, Result};

/// Every example of the `docket` crate (`docket/examples/NAME.rs`), run without arguments.
const EXAMPLES: &[&str] = &[
    "embedded_worker",
    "http_approval",
    "tenants",
    "switch_backend",
    "idempotent_side_effect",
];

/// The worked example of `meerkat-compose` (on its default, a temp SQLite file): a schedule
/// occurrence delivered twice, one job, its evidence and the awaiting session's outcome.
const COMPOSE_EXAMPLE: &str = "scheduled_job";

/// How long one example may take before it counts as hung (each takes a few seconds).
const EXAMPLE_DEADLINE: Duration = Duration::from_secs(120);

/// The servers `switch_backend` also runs against in `ci`: its own schema and namespace, so
/// it never touches another suite's data (it reads back only what it wrote, so reruns are
/// fine).
const SWITCH_BACKEND_URLS: &[&str] = &[
    "postgres://postgres@127.0.0.1:5432/test?schema=docket_example",
    "redis://127.0.0.1:6379?namespace=docket-example",
];

/// The crates published to crates.io, in dependency order.
pub const PUBLISHED: &[&str] = &[
    "docket-core",
    "docket-conformance",
    "docket-sqlite",
    "docket-postgres",
    "docket-redis",
    "docket",
    "meerkat-compose",
];

/// Builds the examples (every backend compiled in: the artifacts `cargo test --workspace
/// --all-features` already built) and runs each, then `switch_backend` on PostgreSQL and
/// Redis too, then `meerkat-compose`'s worked example. Each must exit 0 within
/// [`EXAMPLE_DEADLINE`].
pub fn examples() -> Result {
    // `--workspace`, not `--package docket`: the same feature unification as the test build,
    // so nothing is compiled again.
    cargo(&["build", "--workspace", "--all-features", "--examples"])?;
    let dir = target_dir()?.join("debug").join("examples");
    for name in EXAMPLES {
        run_example(&dir, name, &[])?;
    }
    for url in SWITCH_BACKEND_URLS {
        run_example(&dir, "switch_backend", &["--backend", url])?;
    }
    run_example(&dir, COMPOSE_EXAMPLE, &[])?;
    Ok(())
}

fn run_example(dir: &Path, name: &str, args: &[&str]) -> Result {
    step(&format!("example {name} {}", args.join(" ")));
    let started = Instant::now();
    let output = run_with_deadline(
        Command::new(dir.join(name)).args(args),
        EXAMPLE_DEADLINE,
        &format!("example {name}"),
    )?;
    eprint!("{}", String::from_utf8_lossy(&output.stdout));
    eprintln!("example {name}: exit 0 in {:.1?}", started.elapsed());
    Ok(())
}

/// `cargo doc --no-deps --workspace --all-features` with every rustdoc warning an error
/// (broken intra-doc links, bare URLs, unclosed HTML, ...).
pub fn docs() -> Result {
    cargo_with_env(
        &["doc", "--no-deps", "--workspace", "--all-features"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )
}

/// `cargo package` for every published crate at once, without compiling the packages again
/// (`--no-verify`: `cargo test` already built and tested these very sources). Packaging them
/// together lets cargo resolve each crate's dependencies on its unpublished siblings against
/// the packages it just made instead of crates.io. `--allow-dirty` so a local run with
/// uncommitted edits checks them too (CI runs on a clean clone).
pub fn package() -> Result {
    let mut args = vec!["package", "--no-verify", "--allow-dirty"];
    for name in PUBLISHED {
        args.extend(["--package", name]);
    }
    cargo(&args)
}

/// The workspace README shows the crate's quick start; the doctested copy is
/// `docket/README.md`. The first ```rust block of each must be the same text.
pub fn quick_start_matches() -> Result {
    step("docs: the README's quick start is the doctested one in docket/README.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?;
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).map_err(|e| format!("cannot read {path}: {e}"))
    };
    let workspace = read("README.md")?;
    let crate_readme = read("docket/README.md")?;
    match (
        first_rust_block(&workspace),
        first_rust_block(&crate_readme),
    ) {
        (Some(a), Some(b)) if a == b => Ok(()),
        (Some(_), Some(_)) => Err(
            "the quick start in README.md differs from docket/README.md (the doctested copy): \
             copy it over"
                .into(),
        ),
        _ => Err("README.md or docket/README.md has no ```rust block".into()),
    }
}

fn first_rust_block(text: &str) -> Option<&str> {
    let start = text.find("```rust\n")? + "```rust\n".len();
    let len = text[start..].find("\n```")?;
    Some(&text[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::first_rust_block;

    #[test]
    fn the_first_rust_block_is_found_and_others_are_not() {
        let text = "intro\n```toml\nx = 1\n```\n```rust\nfn main() {}\n```\n```rust\nsecond\n```\n";
        assert_eq!(first_rust_block(text), Some("fn main() {}"));
        assert_eq!(first_rust_block("```sh\nls\n```\n"), None);
    }
}
