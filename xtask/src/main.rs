//! `cargo xtask`: the project's automation, in Rust, with only the standard library.
//!
//! - `cargo xtask test`: installs and starts what the tests need (a PostgreSQL server at
//!   `PILOTAGE_TEST_POSTGRES`, the official MCP client SDKs under `target/clients`), idempotently,
//!   then runs every check CI runs, with `PILOTAGE_REQUIRE_SERVICES=1` so that no test skips.
//!   `.ci/run` calls exactly this command.
//! - `cargo xtask services`: only the first half; a PostgreSQL it starts keeps running.
//! - `cargo xtask fresh`: the fresh-machine check `test` begins with: the SDKs removed, the URL
//!   pointed at a port where nothing answers, then the tests that need both, which must pass.

mod postgres;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The variable the tests read to fail, not skip, when a service is missing (the runtime's
/// `pilotage::state::suite::REQUIRE_SERVICES`).
const REQUIRE_SERVICES: &str = "PILOTAGE_REQUIRE_SERVICES";
/// The tests' PostgreSQL (`pilotage::state::suite::test_postgres_url`'s default).
const DEFAULT_POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

type Result<T = ()> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("services") => services().map(|started| {
            if let Some(cluster) = started {
                eprintln!("xtask: PostgreSQL keeps running; stop it with `{}`", cluster.stop_command());
                std::mem::forget(cluster);
            }
        }),
        Some("fresh") => fresh(),
        _ => Err("usage: cargo xtask test | services | fresh".to_owned()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (this crate's parent folder).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn postgres_url() -> String {
    std::env::var("PILOTAGE_TEST_POSTGRES").unwrap_or_else(|_| DEFAULT_POSTGRES.to_owned())
}

/// Everything CI checks, on a machine with only the toolchains (Rust, Node, Python).
fn test() -> Result {
    fresh()?;
    let cluster = services()?;
    std::env::set_var(REQUIRE_SERVICES, "1");
    std::env::set_var("PILOTAGE_TEST_POSTGRES", postgres_url());
    let _ = cargo(&["fmt", "--all", "--", "--check"])
        .map_err(|_| eprintln!("xtask: note: cargo fmt reports unformatted code"));
    cargo(&["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"])?;
    // Without features (a stdio engine's build): the runtime compiles, lints clean and passes its
    // own tests with the built-in schema check, memory state and no HTTP edge.
    cargo(&[
        "clippy",
        "-p",
        "pilotage-runtime",
        "--all-targets",
        "--no-default-features",
        "--",
        "-D",
        "warnings",
    ])?;
    cargo(&["test", "-p", "pilotage-runtime", "--no-default-features", "--lib"])?;
    run(Command::new(cargo_bin())
        .args(["doc", "--workspace", "--all-features", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    cargo(&["test", "--workspace", "--all-features"])?;
    // The README's "Use it in your crate", followed to the letter in a fresh crate: alone, after
    // the suite, since its build would starve the suite's timing-bound tests.
    cargo(&["test", "--all-features", "--test", "it", "--", "--ignored", "readme::"])?;
    drop(cluster);
    Ok(())
}

/// Makes sure a PostgreSQL server answers at the URL and the client SDKs are installed. Answers
/// the cluster it started, if it started one (stopped when dropped).
fn services() -> Result<Option<postgres::Cluster>> {
    let cluster = postgres::ensure(&postgres_url(), &root())?;
    run(Command::new("bash").arg(root().join("tests/clients/install.sh")))?;
    Ok(cluster)
}

/// What a fresh machine goes through: no SDKs, no server at the configured URL. `services` must
/// provide both, and the tests that need them must then pass with nothing skipped.
fn fresh() -> Result {
    let clients = root().join("target/clients");
    if clients.exists() {
        std::fs::remove_dir_all(&clients).map_err(|e| format!("cannot remove {}: {e}", clients.display()))?;
    }
    let port = postgres::free_port()?;
    let url = format!("postgres://postgres@127.0.0.1:{port}/pilotage_fresh");
    if postgres::answers(&url)? {
        return Err(format!("the fresh check wanted a port where nothing answers; {port} answers"));
    }
    eprintln!("xtask: fresh-machine check: no SDKs under target/clients, PILOTAGE_TEST_POSTGRES={url}");
    std::env::set_var("PILOTAGE_TEST_POSTGRES", &url);
    let cluster = services();
    std::env::remove_var("PILOTAGE_TEST_POSTGRES");
    let cluster = cluster?.ok_or("the fresh check found a server it did not start")?;
    let tests = Command::new(cargo_bin())
        .args(["test", "--all-features", "--test", "it", "--", "long_run_clients::", "postgres_loop::"])
        .env(REQUIRE_SERVICES, "1")
        .env("PILOTAGE_TEST_POSTGRES", &url)
        .status();
    cluster.discard();
    check("the fresh-machine tests", tests)
}

fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn cargo(args: &[&str]) -> Result {
    run(Command::new(cargo_bin()).args(args))
}

/// Runs `command` in the workspace root, its output passed through; a failure names it.
fn run(command: &mut Command) -> Result {
    let shown = format!("{command:?}");
    eprintln!("xtask: {shown}");
    check(&shown, command.current_dir(root()).status())
}

fn check(what: &str, status: std::io::Result<std::process::ExitStatus>) -> Result {
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{what} failed ({s})")),
        Err(e) => Err(format!("{what} did not start: {e}")),
    }
}
