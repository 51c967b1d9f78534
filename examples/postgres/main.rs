//! The `sql/postgres` Pilotage server: agent-safe SQL over one shared PostgreSQL database.
//!
//! ```text
//! cargo run --features postgres --example postgres -- --database-url postgres://app@db/shop
//! cargo run --features postgres --example postgres -- --database-url URL --http 127.0.0.1:8789 \
//!     --jwt-secret-file secret.key                   # verified callers: claim `pg_role` → role
//! ```
//!
//! Every session and every replica shares the database; each caller acts as a database role
//! (`--role-claim`, `--default-role`), so what it sees and may do is what PostgreSQL grants
//! that role. Logs go to stderr (stdout is the MCP channel over stdio).

mod engine;

// The engine's unit tests run here, once (not again in the `it` binary that includes the
// engine by path).
#[cfg(test)]
#[path = "engine/tests.rs"]
mod engine_tests;

#[path = "../common/cli.rs"]
mod cli;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use pilotage::Server;

/// mimalloc, not the system allocator: a run's rows are thousands of small JSON values made
/// and freed per call, where glibc's allocator took 28% of the server's CPU on a 1,000-row
/// `run_sql` (`docs/postgres.md` §7).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve the sql/postgres Pilotage Language over MCP.
#[derive(Parser, Debug)]
#[command(name = "postgres", version, about)]
struct Cli {
    #[command(flatten)]
    transport: cli::Transport,
    /// The database every session shares (`postgres://user@host:port/db`); the login role
    /// should be able to SET ROLE to the callers' roles (be a member of them).
    #[arg(long, value_name = "URL")]
    database_url: String,
    /// The schema programs work in (their search_path); its tables, views and functions are
    /// the catalog.
    #[arg(long, value_name = "NAME", default_value = "public")]
    schema: String,
    /// The claim of a verified caller that names its database role.
    #[arg(long, value_name = "CLAIM", default_value = engine::db::DEFAULT_ROLE_CLAIM)]
    role_claim: String,
    /// The role of callers without that claim. Without it, a verified caller without the
    /// claim is refused, and an ambient caller (stdio) acts as the login role.
    #[arg(long, value_name = "ROLE")]
    default_role: Option<String>,
    /// Serve callers as a superuser or BYPASSRLS role (refused otherwise: such a role ignores
    /// the grants and row policies the catalog stands for).
    #[arg(long)]
    allow_superuser: bool,
    /// The most validations and runs served at once, each holding one connection; catalog
    /// reads have a few connections of their own on top (a quarter of N, at least 2), so long
    /// runs never starve them. Calls past it queue (their wait is not their time).
    #[arg(long, value_name = "N", default_value_t = 16)]
    max_connections: usize,
    /// The most of those one caller holds at once (default: all of them over stdio, where
    /// there is one caller; half of them over HTTP, so no caller takes every connection).
    #[arg(long, value_name = "N")]
    max_connections_per_caller: Option<usize>,
    /// Serve the harness tools `pg_world_fingerprint` and `pg_schema_apply` (as the login
    /// role); without it they are absent from tools/list. Never for agents.
    #[arg(long)]
    admin_tools: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let log = cli.transport.log.clone();
    cli::run(log, serve(cli)).await
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let roles = engine::Roles {
        claim: cli.role_claim,
        default: cli.default_role,
        allow_superuser: cli.allow_superuser,
    };
    let (url, schema, max) = (cli.database_url.clone(), cli.schema.clone(), cli.max_connections);
    // Connecting blocks on the engine's own runtime: not on this one's workers.
    let db = tokio::task::spawn_blocking(move || engine::Db::connect(&url, &schema, roles, max))
        .await
        .context("connecting")?
        .map_err(anyhow::Error::msg)?;
    let share = cli.max_connections_per_caller.unwrap_or(match cli.transport.http {
        None => max,
        Some(_) => max.div_ceil(2),
    });
    // A program validated moments before (or already run) against the same catalog version is
    // admitted by a look-up: the run prepares every statement in PostgreSQL as the role anyway.
    let limits = pilotage::engine::Limits { revalidation_cache: 256, ..pilotage::engine::Limits::default() };
    let server = cli
        .transport
        .identity(Server::builder())?
        .name("pilotage-postgres", env!("CARGO_PKG_VERSION"))
        .engine(engine::Pg::factory(Arc::new(db), cli.admin_tools))
        .limits(limits)
        .max_engine_calls(max)
        .max_engine_calls_per_caller(share)
        .build()
        .context("building the Pilotage server")?;
    cli::serve(server, cli.transport, false, "sql/postgres", None).await
}
