//! The `workflow/v1` Pilotage server: JSON workflow documents over an in-process support desk.
//!
//! ```text
//! cargo run --example workflow                       # MCP over stdio
//! cargo run --example workflow -- --http 127.0.0.1:8787   # Streamable HTTP at /mcp
//! ```
//!
//! Logs go to stderr (stdout is the MCP channel over stdio). Each MCP session gets its own
//! freshly seeded world.

mod engine;

// The engine's unit tests run here, once. Declared in `engine/mod.rs` they would run again in
// every crate that includes the engine by path (the `it` test binary, the `sql` and `combined`
// examples).
#[cfg(test)]
#[path = "engine/tests.rs"]
mod engine_tests;

#[path = "../common/cli.rs"]
mod cli;

use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Parser;
use pilotage::Server;

/// Serve the workflow/v1 Pilotage Language over MCP.
#[derive(Parser, Debug)]
#[command(name = "workflow", version, about)]
struct Cli {
    #[command(flatten)]
    transport: cli::Transport,
    /// Stateless HTTP (MCP 2026-07-28 style: no sessions). Refused: this Language keeps runs
    /// for the session (retention "session"), which a stateless deployment cannot honour.
    #[arg(long)]
    stateless: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let log = cli.transport.log.clone();
    cli::run(log, serve(cli)).await
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let builder = cli.transport.identity(Server::builder())?;
    let server = match builder
        .name("pilotage-workflow", env!("CARGO_PKG_VERSION"))
        .language(engine::Workflow::new)
        .stateless(cli.stateless)
        .build()
    {
        Ok(server) => server,
        Err(e) if cli.stateless => bail!(
            "--stateless cannot be served: workflow/v1 declares retention \"session\" (runs are \
             fetchable for the MCP session), and a stateless deployment has no session. Serve \
             HTTP with sessions (drop --stateless).\n{e}"
        ),
        Err(e) => return Err(e).context("building the Pilotage server"),
    };
    cli::serve(server, cli.transport, cli.stateless, "workflow/v1", None).await
}
