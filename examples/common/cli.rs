//! What the example servers' command lines share: the transport flags, logging to stderr
//! (stdout is the MCP channel over stdio), and serving over stdio or Streamable HTTP.
//!
//! Each example's `main.rs` includes it with `#[path = "../common/cli.rs"] mod cli;`, flattens
//! [`Transport`] first into its own flags and runs `cli::run(serve(Cli::parse()))`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use pilotage::transport::http::HttpOptions;
use pilotage::Server;

/// Where the server listens.
#[derive(clap::Args, Debug)]
pub struct Transport {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Accepted Host header values for HTTP (default: loopback names only).
    // Listed after the example's own flags (display order 100).
    #[arg(long = "allowed-host", value_name = "HOST", display_order = 100)]
    pub allowed_hosts: Vec<String>,
}

/// Log to stderr, await `serve`, and report its error on stderr with a failure exit code.
pub async fn run(serve: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).init();
    match serve.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Serve `server` over stdio, or over Streamable HTTP when `transport.http` is given
/// (`stateless`: without MCP sessions). The log line names the Languages (`what`) and the
/// database file when there is one.
pub async fn serve(
    server: Server,
    transport: Transport,
    stateless: bool,
    what: &str,
    db: Option<&Path>,
) -> anyhow::Result<()> {
    let db = db.map(|p| tracing::field::display(p.display()));
    match transport.http {
        None => {
            tracing::info!(db, "serving {what} over stdio");
            server.serve_stdio().await.context("serving stdio")?;
        }
        Some(addr) => {
            let allowed_hosts = transport.allowed_hosts;
            let options = HttpOptions {
                stateless,
                allowed_hosts: (!allowed_hosts.is_empty()).then_some(allowed_hosts),
                ..HttpOptions::default()
            };
            tracing::info!(%addr, db, "serving {what} over Streamable HTTP at /mcp");
            server.serve_http(addr, options).await.with_context(|| format!("serving HTTP on {addr}"))?;
        }
    }
    Ok(())
}
