//! The `docket` command-line interface.

fn main() {
    eprintln!("docket: the CLI is not built yet");
    std::process::exit(2);
}
