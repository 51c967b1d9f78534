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
//! In front of a spawned server one thread relays as bytes what the gate settles itself (the fast
//! path, `splice.rs`) and hands the rest to the rmcp proxy (`proxy.rs`). See `docs/gate.md` for
//! the host configuration line, how it relays, the policy file and the refusal shape.

mod ask;
mod decide;
mod evidence;
mod execute;
mod lines;
mod names;
mod policy;
mod proxy;
#[path = "../common/recent.rs"]
mod recent;
mod rounds;
mod splice;
mod surface;

use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::Mutex;
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
    /// How long, in microseconds, the gate looks for the next message after one before it
    /// sleeps (yielding the core meanwhile): a sleeping process's wake-up costs each message
    /// more than the gate's own work. 0 sleeps at once.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 1000)]
    linger_us: u64,
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
    let policy = match &cli.policy {
        Some(path) => policy::Policy::load(path)?,
        None => policy::Policy::default(),
    };
    let audit = policy::Audit::open(cli.audit.as_deref())?;
    let ask_timeout = Duration::from_secs(cli.ask_timeout);
    if let Some(url) = cli.endpoint {
        let bearer = match &cli.bearer_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("reading the bearer token file {}", path.display()))?
                    .trim_end()
                    .to_owned(),
            ),
            None => None,
        };
        let gate = proxy::Gate::new(proxy::Upstream::Http { url, bearer }, policy, audit, ask_timeout);
        let served = gate
            .serve(pilotage::transport::stdio::process_stdio())
            .await
            .context("the host did not initialize")?;
        served.waiting().await.context("serving the host")?;
        return Ok(());
    }
    // A server the gate spawns: the splice owns both stdio pairs and hands the rmcp gate what
    // it does not settle itself, over two socket pairs.
    let (program, args) =
        cli.command.split_first().context("name the server: a command after `--`, or --endpoint URL")?;
    let child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting the server `{program}`"))?;
    let (to_host, host_side) = UnixStream::pair()?;
    let (to_server, server_side) = UnixStream::pair()?;
    let upstream = proxy::Upstream::Spliced(Mutex::new(Some(to_server)));
    let gate = proxy::Gate::new(upstream, policy, audit, ask_timeout);
    let splice = splice::Splice::new(
        gate.0.clone(),
        child,
        host_side,
        server_side,
        Duration::from_micros(cli.linger_us),
    )?;
    let relay = std::thread::Builder::new().name("gate-splice".into()).spawn(move || splice.run())?;
    to_host.set_nonblocking(true)?;
    let (read, write) = tokio::net::UnixStream::from_std(to_host)?.into_split();
    let served = gate.serve((read, write)).await.context("the host did not initialize");
    let waited = match served {
        Ok(served) => served.waiting().await.map(drop).context("serving the host"),
        Err(e) => Err(e),
    };
    let _ = relay.join();
    waited
}
