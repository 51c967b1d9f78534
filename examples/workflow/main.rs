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

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Parser;
use pilotage::transport::http::HttpOptions;
use pilotage::Server;

/// Serve the workflow/v1 Pilotage Language over MCP.
#[derive(Parser, Debug)]
#[command(name = "workflow", version, about)]
struct Cli {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Stateless HTTP (MCP 2026-07-28 style: no sessions). Refused: this Language keeps runs
    /// for the session (retention "session"), which a stateless deployment cannot honour.
    #[arg(long)]
    stateless: bool,
    /// Accepted Host header values for HTTP (default: loopback names only).
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).init();
    match serve(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let server = match Server::builder()
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
    match cli.http {
        None => {
            tracing::info!("serving workflow/v1 over stdio");
            server.serve_stdio().await.context("serving stdio")?;
        }
        Some(addr) => {
            let options = HttpOptions {
                stateless: cli.stateless,
                allowed_hosts: (!cli.allowed_hosts.is_empty()).then_some(cli.allowed_hosts),
            };
            tracing::info!(%addr, "serving workflow/v1 over Streamable HTTP at /mcp");
            server.serve_http(addr, options).await.with_context(|| format!("serving HTTP on {addr}"))?;
        }
    }
    Ok(())
}
