//! A small agent host on `pilotage::host`: connects to any Pilotage server, prints its
//! Languages and guides, validates and executes one program, and asks the person at the
//! terminal before any Run the risk gate holds (the plan, the risk hints and the statement
//! that they are the server's unverified claims are shown before the question).
//!
//! ```text
//! cargo build --example workflow
//! cargo run --example host --features host -- --stdio target/debug/examples/workflow \
//!     --program '{"steps": [{"id": "one", "kind": "call", "capability": "cap_delete_user", "with": {"user_id": "$.input.userId"}}], "inputs": {"userId": "string"}}' \
//!     --input '{"userId": "42"}'
//! cargo run --example host --features host -- --endpoint http://127.0.0.1:8787/mcp --program -  # program on stdin
//! ```
//!
//! A program that reads as JSON is sent as that JSON value; any other text is sent as a JSON
//! string (the form of a text Language such as `sql/sqlite-3`).

use std::io::{BufRead, Read, Write};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Parser;
use pilotage::host::{
    Approval, Approver, Attempt, ExecuteOptions, Execution, GateRequest, Host, Language, Runnable,
};
use serde_json::Value;

/// Drive a Pilotage server from the terminal.
#[derive(Parser, Debug)]
#[command(name = "host", about)]
struct Cli {
    /// Spawn this command (program and arguments, split on whitespace) and speak MCP over its stdio.
    #[arg(long, conflicts_with = "endpoint", required_unless_present = "endpoint")]
    stdio: Option<String>,
    /// A Streamable HTTP endpoint.
    #[arg(long)]
    endpoint: Option<String>,
    /// A bearer token for the endpoint.
    #[arg(long, requires = "endpoint")]
    bearer: Option<String>,
    /// Speak the stateless MCP revision (2026-07-28) to the endpoint.
    #[arg(long, requires = "endpoint")]
    stateless: bool,
    /// The Language (default: the manifest's first).
    #[arg(long)]
    language: Option<String>,
    /// The program to validate and execute (`-`: read it from stdin).
    #[arg(long)]
    program: Option<String>,
    /// The Run's input, as JSON.
    #[arg(long)]
    input: Option<String>,
    /// The validation and execution context, as JSON.
    #[arg(long)]
    context: Option<String>,
}

/// Asks the person at the terminal (`/dev/tty`, so a program read from stdin does not answer).
struct AskOnTerminal;

#[pilotage::host::async_trait]
impl Approver for AskOnTerminal {
    async fn approve(&self, request: &GateRequest) -> Approval {
        let shown = describe(request);
        let answer = tokio::task::spawn_blocking(move || ask(&shown)).await;
        match answer {
            Ok(Ok(yes)) if yes => Approval::Granted,
            Ok(Ok(_)) => Approval::Denied("the person at the terminal said no".into()),
            Ok(Err(e)) => Approval::Denied(format!("no terminal to ask ({e})")),
            Err(e) => Approval::Denied(format!("the question failed ({e})")),
        }
    }
}

/// What the person is shown before the question.
fn describe(request: &GateRequest) -> String {
    let mut out = format!("\nThe Run on {} needs your approval: {:?}\n", request.language, request.reasons);
    match &request.runnable {
        Runnable::Program(_) if request.program_text().is_some() => {
            out += &format!("program:\n{}\n", request.program_text().unwrap_or_default())
        }
        Runnable::Program(program) => out += &format!("program: {program}\n"),
        Runnable::Promoted(reference) => out += &format!("promoted program: {reference}\n"),
    }
    if let Some(plan) = &request.plan {
        out += "plan:\n";
        for step in &plan.steps {
            let calls = step.calls.as_deref().unwrap_or("-");
            out += &format!("  {} calls {calls}: risk {} {:?}\n", step.id, step.risk, step.risk_hints);
        }
        out += &format!("  highest risk: {} {:?}\n", plan.max_risk, plan.max_risk_hints);
    }
    for entry in &request.entries {
        out += &format!("entry {}: risk {} {:?}\n", entry.id, entry.risk, entry.risk_hints);
    }
    if request.plan.is_none() && request.entries.is_empty() {
        out += "no risk information: the server gave no plan and no references\n";
    }
    out + &format!("{}\n", request.unverified_claims)
}

fn ask(shown: &str) -> std::io::Result<bool> {
    let mut tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    write!(tty, "{shown}Approve this Run? [y/N] ")?;
    tty.flush()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

fn json_arg(text: Option<&str>, what: &str) -> anyhow::Result<Option<Value>> {
    text.map(|t| serde_json::from_str(t).with_context(|| format!("--{what} is not JSON"))).transpose()
}

#[tokio::main]
async fn main() -> ExitCode {
    match drive(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn drive(cli: Cli) -> anyhow::Result<()> {
    let connect = match (&cli.stdio, &cli.endpoint) {
        (Some(command), _) => Host::stdio(command),
        (None, Some(url)) => {
            let mut connect = Host::http(url);
            if let Some(token) = &cli.bearer {
                connect = connect.bearer(token);
            }
            if cli.stateless {
                connect = connect.stateless();
            }
            connect
        }
        (None, None) => bail!("give --stdio COMMAND or --endpoint URL"),
    };
    let host = connect.approver(AskOnTerminal).connect().await?;
    let names = host.languages();
    println!("Languages: {}", names.join(", "));
    let name =
        cli.language.clone().or_else(|| names.first().cloned()).context("the server declares no Language")?;
    let language = host.language(&name)?;
    for guide in language.guides().await? {
        println!("  guide {} ({:?}): {} [{} bytes]", guide.id, guide.level, guide.title, guide.size_bytes);
    }
    let Some(program) = &cli.program else { return Ok(()) };
    let text = if program == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        program.clone()
    };
    let program = serde_json::from_str(&text).unwrap_or(Value::String(text));
    let options = ExecuteOptions {
        input: json_arg(cli.input.as_deref(), "input")?,
        context: json_arg(cli.context.as_deref(), "context")?,
        ..ExecuteOptions::default()
    };
    report(&language, program, &options).await
}

async fn report(language: &Language<'_>, program: Value, options: &ExecuteOptions) -> anyhow::Result<()> {
    match language.run(program, options).await? {
        Attempt::Invalid(verdict) => {
            println!("invalid:");
            for d in verdict.diagnostics() {
                println!("  {:?} {} at {:?}: {}", d.severity, d.code, d.path, d.message);
            }
        }
        Attempt::Executed(Execution::Denied(denial)) => println!("not executed: {}", denial.reason),
        Attempt::Executed(Execution::Ran(ran)) => {
            println!("run {}: {:?} ({})", ran.response.run_id, ran.status, ran.response.outcome.status());
            if let Some(output) = &ran.response.output {
                println!("output: {output}");
            }
            if let Some(trace) = &ran.response.trace {
                for step in &trace.steps {
                    println!("  step {}: {}", step.id, step.outcome.status());
                }
            }
        }
    }
    Ok(())
}
