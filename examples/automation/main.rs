//! The `automation/v1` Pilotage server: automation programs and rules over an in-process smart
//! building.
//!
//! ```text
//! cargo run --example automation                              # MCP over stdio
//! cargo run --example automation -- --http 127.0.0.1:8788     # Streamable HTTP at /mcp
//! cargo run --example automation -- --store /tmp/runs.sqlite  # choose the run store file
//! cargo run --example automation -- --http 127.0.0.1:8788 --stateless \
//!     --jwt-secret-file secret.txt --jwt-issuer https://issuer.example   # verified callers
//! cargo run --example automation -- --http 127.0.0.1:8788 --stateless \
//!     --postgres postgres://pilotage@db/pilotage --jwt-secret-file secret.txt  # one replica of several
//! ```
//!
//! Runs are retained for one hour (retention "PT1H") in an SQLite run store that survives
//! restarts: by default `$PILOTAGE_DATA_DIR/automation-runs.sqlite`, else
//! `$XDG_DATA_HOME/pilotage/automation-runs.sqlite`, else
//! `$HOME/.local/share/pilotage/automation-runs.sqlite`. With `--postgres URL` the runs,
//! idempotency keys, promotions and served catalogs live in that PostgreSQL database instead
//! (migrated at start), so several replicas behind one URL serve the same callers. Logs go to stderr (stdout is the MCP
//! channel over stdio). Each MCP session gets its own freshly seeded building.
//!
//! Over HTTP, `--jwt-secret-file PATH` (HS256/384/512) or `--jwks PATH` (RS256, ES256, keys by
//! `kid`), with `--jwt-issuer` and `--jwt-audience`, verify every request's bearer token: the
//! caller is the token's `sub`, a request without a valid token gets HTTP 401 with a
//! `WWW-Authenticate: Bearer` challenge, and the Protected Resource Metadata is served at
//! `/.well-known/oauth-protected-resource/mcp`. `--stateless` needs either verified callers or
//! `--anonymous-sessionless` (every sessionless request is one shared anonymous caller who sees
//! every other's runs); without either, the server refuses to start.

mod engine;

// The engine's unit tests run here, once. Declared in `engine/mod.rs` they would run again in
// every crate that includes the engine by path (the `it` test binary).
#[cfg(test)]
#[path = "engine/tests.rs"]
mod engine_tests;

#[path = "../common/cli.rs"]
mod cli;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use clap::Parser;
use pilotage::state::{PostgresState, SharedState, SqliteState};
use pilotage::Server;

/// Serve the automation/v1 Pilotage Language over MCP.
#[derive(Parser, Debug)]
#[command(name = "automation", version, about)]
struct Cli {
    #[command(flatten)]
    transport: cli::Transport,
    /// Stateless HTTP (no MCP sessions; MCP 2026-07-28 style). Needs a way to tell callers
    /// apart: `--jwt-secret-file`/`--jwks` (each request's caller is its verified token's
    /// `sub`, so runs stay fetchable by the same caller, across restarts too) or
    /// `--anonymous-sessionless` (every request is one shared anonymous caller).
    #[arg(long, requires = "http")]
    stateless: bool,
    /// The SQLite run store file (created when missing).
    #[arg(long, value_name = "PATH", display_order = 101)] // after --allowed-host
    store: Option<PathBuf>,
    /// Keep runs, idempotency keys, promotions and served catalogs in this PostgreSQL database
    /// (a `postgres://` URL; tables are created or migrated at start), shared by every replica
    /// started with the same URL. Replaces `--store`.
    #[arg(long, value_name = "URL", conflicts_with = "store", display_order = 102)]
    postgres: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let log = cli.transport.log.clone();
    cli::run(log, serve(cli)).await
}

/// The default run store file, under a data directory.
fn default_store() -> anyhow::Result<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = var("PILOTAGE_DATA_DIR")
        .or_else(|| var("XDG_DATA_HOME").map(|d| d.join("pilotage")))
        .or_else(|| var("HOME").map(|h| h.join(".local/share/pilotage")))
        .ok_or_else(|| anyhow!("no data directory: set PILOTAGE_DATA_DIR, or pass --store PATH"))?;
    Ok(dir.join("automation-runs.sqlite"))
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let state = match &cli.postgres {
        Some(url) => postgres_state(url).await?,
        None => sqlite_state(cli.store.clone())?,
    };
    let server = cli
        .transport
        .identity(Server::builder())?
        .name("pilotage-automation", env!("CARGO_PKG_VERSION"))
        .language(engine::Automation::new)
        .state(state)
        .stateless(cli.stateless)
        .build()
        .context("building the Pilotage server")?;
    cli::serve(server, cli.transport, cli.stateless, "automation/v1", None).await
}

/// The PostgreSQL state of a replica, migrated.
async fn postgres_state(url: &str) -> anyhow::Result<Arc<dyn SharedState>> {
    let state = PostgresState::connect(url)
        .await
        .map_err(|e| anyhow!(e))
        .context("connecting to the PostgreSQL state store (--postgres)")?;
    tracing::info!(
        schema_version = state.schema_version().await.unwrap_or(-1),
        "PostgreSQL state store ready"
    );
    Ok(Arc::new(state))
}

/// The SQLite run store at `path` (or the default file), with expired runs purged.
fn sqlite_state(path: Option<PathBuf>) -> anyhow::Result<Arc<dyn SharedState>> {
    let path = match path {
        Some(p) => p,
        None => default_store()?,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let store = SqliteState::open(&path)
        .map_err(|e| anyhow!(e))
        .with_context(|| format!("opening the run store {}", path.display()))?;
    let purged = store.purge_now();
    tracing::info!(store = %path.display(), purged, "run store open");
    Ok(Arc::new(store))
}
