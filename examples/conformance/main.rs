//! The Pilotage conformance runner: the 54 official vectors, bound to a Language, driven
//! through any Pilotage server's real MCP endpoint.
//!
//! ```text
//! cargo run --example conformance -- --endpoint http://127.0.0.1:8787/mcp --language workflow/v1
//! cargo run --example conformance -- --stdio 'target/debug/examples/calc' --language calc/v1
//! cargo run --example conformance -- --endpoint http://127.0.0.1:8787/mcp --only PIL-EXECUTE-DRIFT-B
//! ```
//!
//! Prints `PASS|FAIL|SKIP <ID> <reason>` per vector and per binding case, then
//! `N passed, N failed, N skipped`; exits non-zero on any FAIL. Bindings live in
//! `examples/conformance/bindings/`; a server in another language needs only a binding for
//! its Language.

#[path = "../../tests/support/mod.rs"]
mod support;

#[allow(dead_code)]
mod bindings;
#[allow(dead_code)]
mod runner;

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use serde_json::json;

use runner::client::{Client, Connector};
use runner::spawn::split_command;
use support::{Conn, HttpStyle};

/// Run the Pilotage 1.1 conformance vectors against a live server.
#[derive(Parser, Debug)]
#[command(name = "conformance", about)]
struct Cli {
    /// A Streamable HTTP endpoint, e.g. http://127.0.0.1:8787/mcp.
    #[arg(long, value_name = "URL", conflicts_with = "stdio", required_unless_present = "stdio")]
    endpoint: Option<String>,
    /// A command line to spawn and talk MCP to over its stdin/stdout (one process per vector).
    #[arg(long, value_name = "COMMAND")]
    stdio: Option<String>,
    /// The Language to test (default: the manifest's only Language).
    #[arg(long, value_name = "NAME")]
    language: Option<String>,
    /// Run only this vector (or binding case, e.g. "CASE code:unknown_capability").
    #[arg(long, value_name = "ID")]
    only: Option<String>,
    /// Over HTTP, accept only application/json responses (no SSE).
    #[arg(long)]
    plain_json: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let (connector, transport): (Connector, String) = match (&cli.endpoint, &cli.stdio) {
        (Some(url), _) => {
            let url = url.clone();
            let style = if cli.plain_json { HttpStyle::Plain } else { HttpStyle::Full };
            (
                Arc::new(move || Client::from(Conn::http(&url, style))),
                format!("{} ({style:?})", cli.endpoint.as_deref().unwrap_or_default()),
            )
        }
        (None, Some(line)) => match split_command(line) {
            Ok(words) => (Arc::new(move || Client::spawn(&words)), format!("stdio `{line}`")),
            Err(e) => {
                eprintln!("error: --stdio: {e}");
                return ExitCode::from(2);
            }
        },
        (None, None) => unreachable!("clap requires --endpoint or --stdio"),
    };
    let language = match cli.language {
        Some(l) => l,
        None => {
            let mut client = connector();
            client.initialize(true).await;
            let response =
                client.request("tools/call", json!({"name": "pilotage_manifest", "arguments": {}})).await;
            let names: Vec<String> = response["result"]["structuredContent"]["languages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|l| l["name"].as_str().map(str::to_owned))
                .collect();
            match names.as_slice() {
                [one] => one.clone(),
                _ => {
                    eprintln!("error: the server hosts {names:?}; choose one with --language");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let Some(binding) = bindings::for_language(&language) else {
        let known: Vec<&str> = bindings::all().iter().map(|b| b.language).collect();
        eprintln!(
            "error: no binding for {language} (bindings: {}); add one in examples/conformance/bindings/",
            known.join(", ")
        );
        return ExitCode::from(2);
    };
    let report = runner::run(&connector, &binding, &transport, cli.only.as_deref()).await;
    print!("{}", report.table());
    if report.failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
