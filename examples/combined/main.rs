//! One Pilotage server hosting two Languages: `workflow/v1` (JSON workflow documents) and
//! `sql/sqlite-3` (SQL text over SQLite).
//!
//! ```text
//! cargo run --example combined                          # MCP over stdio
//! cargo run --example combined -- --http 127.0.0.1:8789 # Streamable HTTP at /mcp
//! cargo run --example combined -- --db ./shop.sqlite    # the database sql/sqlite-3 copies
//! ```
//!
//! One manifest lists both Languages; `pilotage_get_guide` and `pilotage_catalog` route by
//! their `language` argument; each Language keeps its own loop tools (`validate_workflow`,
//! `run_workflow`, `trace_run`; `validate_sql`, `run_sql`, `trace_sql`) and plain tools.
//!
//! Capabilities are declared once at server level (`guides`, `catalog` with `search` and
//! `changed_since`, `validate`, `plan`, `execute`, `trace_fetch`) and overridden per Language
//! where the Language declares otherwise: `sql/sqlite-3` declares `catalog: {search}`, so its
//! effective catalog has no `changed_since`. Every manifest entry carries its effective map.
//!
//! Each MCP session gets its own seeded workflow world and its own private copy of the
//! database (see `examples/sql`).

#[allow(dead_code)]
#[path = "../workflow/engine/mod.rs"]
mod workflow;

#[allow(dead_code)]
#[path = "../sql/engine/mod.rs"]
mod sql;

#[path = "../common/cli.rs"]
mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use pilotage::model::capabilities::{Capability, CapabilityDeclaration, SubFeature};
use pilotage::Server;

/// Serve workflow/v1 and sql/sqlite-3 on one Pilotage server.
#[derive(Parser, Debug)]
#[command(name = "combined", version, about)]
struct Cli {
    #[command(flatten)]
    transport: cli::Transport,
    /// The SQLite database file each session copies (created with the demo schema and rows
    /// when it does not exist; default as for the `sql` example).
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

/// The server-level capability defaults.
pub fn defaults() -> CapabilityDeclaration {
    CapabilityDeclaration::new()
        .with(Capability::Guides)
        .with(Capability::Validate)
        .with(Capability::Plan)
        .with(Capability::Execute)
        .with(Capability::TraceFetch)
        .with_sub(SubFeature::Search)
        .with_sub(SubFeature::ChangedSince)
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let log = cli.transport.log.clone();
    cli::run(log, serve(cli)).await
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let path = sql::source_database(cli.db).map_err(anyhow::Error::msg)?;
    let server = cli
        .transport
        .identity(Server::builder())?
        .name("pilotage-combined", env!("CARGO_PKG_VERSION"))
        .default_capabilities(defaults())
        .language(workflow::Workflow::new)
        .language(sql::Sql::factory(Some(path.clone())))
        .limits(sql::limits())
        .build()
        .context("building the Pilotage server")?;
    cli::serve(server, cli.transport, false, "workflow/v1 and sql/sqlite-3", Some(&path)).await
}
