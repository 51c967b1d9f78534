//! The Pilotage conformance runner: the 54 official vectors, bound to a Language, driven
//! through any Pilotage server's real MCP endpoint.
//!
//! ```text
//! cargo run --example conformance -- --endpoint http://127.0.0.1:8787/mcp --language workflow/v1
//! cargo run --example conformance -- --stdio 'target/debug/examples/calc' --language calc/v1
//! cargo run --example conformance -- --endpoint http://127.0.0.1:8787/mcp --only PIL-EXECUTE-DRIFT-B
//! cargo run --example conformance -- --endpoint http://127.0.0.1:8787/mcp --stateless
//! ```
//!
//! Every vector reaches the server through `pilotage::host` (see `runner/client.rs`).
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

use clap::Parser;
use futures::FutureExt;
use pilotage::host::Host;

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
    /// Over HTTP, speak the stateless revision (MCP 2026-07-28): no session, the client
    /// capabilities in every request.
    #[arg(long)]
    stateless: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let connector = match (&cli.endpoint, &cli.stdio) {
        (Some(url), _) => {
            let (host_url, raw_url, stateless) = (url.clone(), url.clone(), cli.stateless);
            let connector = Connector::new(
                format!("{url} ({})", if stateless { "stateless" } else { "sessionful" }),
                move |grant| {
                    let connect = Host::http(host_url.clone()).approver(grant);
                    let connect = if stateless { connect.stateless() } else { connect };
                    connect.connect().boxed()
                },
                move || Client::from(Conn::http(&raw_url, HttpStyle::Full)),
            );
            if stateless {
                connector.stateless()
            } else {
                connector
            }
        }
        (None, Some(line)) => match split_command(line) {
            Ok(words) => {
                let raw = words.clone();
                Connector::new(
                    format!("stdio `{line}`"),
                    move |grant| {
                        Host::command(words[0].clone(), words[1..].to_vec()).approver(grant).connect().boxed()
                    },
                    move || Client::spawn(&raw),
                )
            }
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
            let names = match connector.host().await {
                Ok(host) => host.languages(),
                Err(e) => {
                    eprintln!("error: connecting through the Host: {e}");
                    return ExitCode::from(2);
                }
            };
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
    let transport = connector.label.clone();
    let report = runner::run(&connector, &binding, &transport, cli.only.as_deref()).await;
    print!("{}", report.table());
    if report.failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
