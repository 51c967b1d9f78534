//! `gate`: the Host risk gate (Part II §7.3) for any MCP host, as a proxy.
//!
//! A host launches the gate instead of the Pilotage server; the gate launches (or connects to)
//! the real server and passes everything through unchanged, except an execute call whose
//! program is risky: that one is held until the person approves it through the host (MCP
//! elicitation) or the policy file pre-approves it, and is never transmitted otherwise.
//!
//! ```text
//! cargo run --example gate --features host -- -- target/debug/examples/automation
//! cargo run --example gate --features host -- --endpoint http://127.0.0.1:8788/mcp --bearer-file token.txt
//! cargo run --example gate --features host -- --policy gate-policy.json --audit gate-audit.jsonl -- CMD ARGS...
//! ```
//!
//! See `docs/gate.md` for the host configuration line, the policy file and the refusal shape.

mod ask;
mod decide;
mod evidence;
mod execute;
mod policy;
mod proxy;
#[path = "../common/recent.rs"]
mod recent;
mod rounds;
mod surface;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use rmcp::ServiceExt;

/// Put a Pilotage server behind the Host risk gate: risky executes wait for the person's
/// approval, asked through the host (MCP elicitation), or for the policy file's.
#[derive(Parser, Debug)]
#[command(name = "gate", version, about)]
struct Cli {
    /// The server's Streamable HTTP endpoint (instead of a command after `--`).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    endpoint: Option<String>,
    /// A file holding the bearer token sent to `--endpoint` (trailing whitespace ignored).
    #[arg(long, value_name = "PATH", requires = "endpoint")]
    bearer_file: Option<PathBuf>,
    /// The policy file: per server and Language, the risk hints pre-approved (see docs/gate.md).
    #[arg(long, value_name = "PATH")]
    policy: Option<PathBuf>,
    /// Append the audit lines (one JSON object per gated execute) to this file instead of stderr.
    #[arg(long, value_name = "PATH")]
    audit: Option<PathBuf>,
    /// How long the person has to answer an approval question, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    ask_timeout: u64,
    /// The server's command and its arguments (after `--`), spawned with stdio.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

// One thread: the gate only relays and decides, so every message stays on the thread that read
// it instead of waking another (each wake-up between threads is latency added to every call).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let upstream = match (cli.endpoint, cli.command.is_empty()) {
        (Some(url), _) => {
            let bearer = match &cli.bearer_file {
                Some(path) => Some(
                    std::fs::read_to_string(path)
                        .with_context(|| format!("reading the bearer token file {}", path.display()))?
                        .trim_end()
                        .to_owned(),
                ),
                None => None,
            };
            proxy::Upstream::Http { url, bearer }
        }
        (None, false) => proxy::Upstream::Command(cli.command),
        (None, true) => anyhow::bail!("name the server: a command after `--`, or --endpoint URL"),
    };
    let policy = match &cli.policy {
        Some(path) => policy::Policy::load(path)?,
        None => policy::Policy::default(),
    };
    let audit = policy::Audit::open(cli.audit.as_deref())?;
    let gate = proxy::Gate::new(upstream, policy, audit, Duration::from_secs(cli.ask_timeout));
    let served = gate
        .serve(pilotage::transport::stdio::process_stdio())
        .await
        .context("the host did not initialize")?;
    served.waiting().await.context("serving the host")?;
    Ok(())
}
