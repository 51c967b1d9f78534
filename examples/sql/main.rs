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

// The engine's unit tests run here, once. Declared in `engine/mod.rs` they would run again in
// every crate that includes the engine by path (the `it` test binary, the `combined` example).
#[cfg(test)]
#[path = "engine/tests.rs"]
mod engine_tests;

#[allow(dead_code)]
#[path = "../workflow/engine/mod.rs"]
mod workflow;

#[path = "../common/cli.rs"]
mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use pilotage::Server;

/// Serve the sql/sqlite-3 Pilotage Language over MCP.
#[derive(Parser, Debug)]
#[command(name = "sql", version, about)]
struct Cli {
    #[command(flatten)]
    transport: cli::Transport,
    /// The SQLite database file each session copies (created with the demo schema and rows
    /// when it does not exist).
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Also serve workflow/v1 on the same server (one manifest, shared access tools).
    #[arg(long)]
    with_workflow: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let log = cli.transport.log.clone();
    cli::run(log, serve(cli)).await
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let path = engine::source_database(cli.db).map_err(anyhow::Error::msg)?;
    let mut builder =
        cli.transport.identity(Server::builder())?.name("pilotage-sql", env!("CARGO_PKG_VERSION"));
    if cli.with_workflow {
        builder = builder.language(workflow::Workflow::new);
    }
    let server = builder
        .language(engine::Sql::factory(Some(path.clone())))
        .limits(engine::limits())
        .build()
        .context("building the Pilotage server")?;
    let languages = if cli.with_workflow { "workflow/v1 and sql/sqlite-3" } else { "sql/sqlite-3" };
    cli::serve(server, cli.transport, false, languages, Some(&path)).await
}
