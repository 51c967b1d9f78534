//! The `sql/sqlite-3` Pilotage server: SQL text over a real SQLite database.
//!
//! ```text
//! cargo run --example sql                                  # MCP over stdio
//! cargo run --example sql -- --http 127.0.0.1:8788         # Streamable HTTP at /mcp
//! cargo run --example sql -- --db ./shop.sqlite            # another database file
//! cargo run --example sql -- --with-workflow               # also serve workflow/v1
//! ```
//!
//! Without `--db`, the demo database is created and seeded on first start at
//! `$XDG_DATA_HOME/pilotage-sql-demo/demo.sqlite` (or `target/pilotage-sql-demo/demo.sqlite`
//! in this repository when `XDG_DATA_HOME` is unset). The file is only read: each MCP session
//! works on its own private in-memory copy, made with SQLite's backup API when the session
//! starts, so sessions never see each other's writes and nothing a program does reaches the
//! file. Logs go to stderr (stdout is the MCP channel over stdio).

mod engine;

#[allow(dead_code)]
#[path = "../workflow/engine/mod.rs"]
mod workflow;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Parser;
use pilotage::transport::http::HttpOptions;
use pilotage::Server;

/// Serve the sql/sqlite-3 Pilotage Language over MCP.
#[derive(Parser, Debug)]
#[command(name = "sql", version, about)]
struct Cli {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The SQLite database file each session copies (created with the demo schema and rows
    /// when it does not exist).
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Also serve workflow/v1 on the same server (one manifest, shared access tools).
    #[arg(long)]
    with_workflow: bool,
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
    let path = cli.db.clone().unwrap_or_else(engine::default_database);
    if engine::seed_file(&path).map_err(anyhow::Error::msg)? {
        tracing::info!(path = %path.display(), "created the demo database");
    }
    // Fail now, not at the first session, when the file is not a usable database.
    if let Err(e) = engine::Sql::copy_of(&path) {
        bail!("{e}");
    }
    let mut builder = Server::builder().name("pilotage-sql", env!("CARGO_PKG_VERSION"));
    if cli.with_workflow {
        builder = builder.language(workflow::Workflow::new);
    }
    let server = builder
        .language(engine::Sql::factory(Some(path.clone())))
        .build()
        .context("building the Pilotage server")?;
    let languages = if cli.with_workflow { "workflow/v1 and sql/sqlite-3" } else { "sql/sqlite-3" };
    match cli.http {
        None => {
            tracing::info!(db = %path.display(), "serving {languages} over stdio");
            server.serve_stdio().await.context("serving stdio")?;
        }
        Some(addr) => {
            let options = HttpOptions {
                stateless: false,
                allowed_hosts: (!cli.allowed_hosts.is_empty()).then_some(cli.allowed_hosts),
            };
            tracing::info!(%addr, db = %path.display(), "serving {languages} over Streamable HTTP at /mcp");
            server.serve_http(addr, options).await.with_context(|| format!("serving HTTP on {addr}"))?;
        }
    }
    Ok(())
}
