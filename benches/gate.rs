//! What the `gate` example adds to a safe validate+execute over stdio: rmcp's client talks to
//! (a) the `workflow` example directly and (b) the gate in front of it (`gate -- workflow`),
//! both child processes over stdio, up side by side.
//!
//! One operation is what a model does for a safe program: `validate_workflow` then
//! `run_workflow` of the same program (a one-step read of a user profile). Through the gate, the
//! execute is gated on the validation it saw (no second validation), found safe, audited (to
//! stderr, discarded here) and forwarded with the validation's `expected_catalog_version`.
//!
//! Each round alternates batches of `GATE_BATCH` operations (default 20) on each side,
//! `GATE_PAIRS` pairs (default 7) with the first side swapped each pair, so a change in the
//! machine's load reaches both sides of a pair alike; a round's ratio is the median of its
//! pairs' ratios through / direct, and the line reports the median of `GATE_ROUNDS` rounds
//! (default 5) with their range, and each side's median time per operation. The examples are
//! built first in the bench's own profile. `cargo bench --all-features --bench gate` (add
//! `--profile dev` for the debug build the figures in docs/performance.md use); never a timed
//! assertion.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Map, Value};

/// rmcp's client, declaring the Pilotage extension on the handshake revision.
#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.extensions =
            Some([("io.github.jafarsa0/pilotage".to_owned(), Map::new())].into_iter().collect());
        let mut config = ClientConfig::new(capabilities, Implementation::new("gate-bench", "1"));
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }
}

/// One side: a child process and the client session on its stdio.
struct Side {
    name: &'static str,
    service: RunningService<RoleClient, Client>,
    _child: tokio::process::Child,
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// Build `name` in this bench's profile, with the features the bench was built with (so the
/// build reuses its libraries); its path.
fn example(name: &str) -> PathBuf {
    let features: Vec<&str> = [
        ("postgres", cfg!(feature = "postgres")),
        ("jwt", cfg!(feature = "jwt")),
        ("http", cfg!(feature = "http")),
        ("sqlite", cfg!(feature = "sqlite")),
        ("jsonschema", cfg!(feature = "jsonschema")),
        ("host", true),
    ]
    .into_iter()
    .filter_map(|(feature, on)| on.then_some(feature))
    .collect();
    let exe = std::env::current_exe().expect("the bench's path");
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps");
    let mut build = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build.args(["build", "--example", name]).current_dir(env!("CARGO_MANIFEST_DIR"));
    if !features.is_empty() {
        build.args(["--features", &features.join(",")]);
    }
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        build.arg("--release");
    }
    assert!(build.status().expect("cargo runs").success(), "the example {name} builds");
    profile_dir.join("examples").join(name)
}

async fn side(name: &'static str, program: &PathBuf, args: &[String]) -> Side {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let (stdout, stdin) = (child.stdout.take().expect("piped"), child.stdin.take().expect("piped"));
    let service = Client.serve((stdout, stdin)).await.expect("the handshake");
    Side { name, service, _child: child }
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    serde_json::from_value(json!({"name": name, "arguments": arguments})).expect("a call")
}

/// One validate+execute of the safe program; panics on anything but a success (a bench that
/// measured refusals would measure nothing).
async fn operation(side: &Side) {
    let program = json!({
        "inputs": {"userId": "string"},
        "steps": [{"id": "profile", "kind": "call", "capability": "cap_read_user_profile",
                   "with": {"user_id": "$.input.userId"}}],
        "output": {"name": "$.steps.profile.output.name"}
    });
    let validated = side.service.call_tool(call("validate_workflow", json!({"workflow": program}))).await;
    let validated = validated.expect("validate answers").structured_content.expect("structured");
    assert_eq!(validated["valid"], true, "{}: {validated}", side.name);
    let ran =
        side.service.call_tool(call("run_workflow", json!({"workflow": program, "input": {"userId": "42"}})));
    let ran = ran.await.expect("execute answers").structured_content.expect("structured");
    assert_eq!(ran["outcome"]["ok"], true, "{}: {ran}", side.name);
}

async fn batch(side: &Side, n: usize) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        operation(side).await;
    }
    start.elapsed() / n as u32
}

fn median<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let (rounds, pairs, per_batch) = (env("GATE_ROUNDS", 5), env("GATE_PAIRS", 7), env("GATE_BATCH", 20));
    let workflow = example("workflow");
    let gate = example("gate");
    let direct = side("direct", &workflow, &[]).await;
    let through = side("through the gate", &gate, &["--".into(), workflow.display().to_string()]).await;
    for s in [&direct, &through] {
        batch(s, per_batch).await;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("gate bench: {cores} cores, {rounds} rounds of {pairs} pairs of {per_batch} validate+execute each side");
    let (mut ratios, mut direct_times, mut through_times) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut pair_ratios = Vec::new();
        for pair in 0..pairs {
            let (d, t) = if (round + pair) % 2 == 0 {
                let d = batch(&direct, per_batch).await;
                (d, batch(&through, per_batch).await)
            } else {
                let t = batch(&through, per_batch).await;
                (batch(&direct, per_batch).await, t)
            };
            pair_ratios.push(t.as_secs_f64() / d.as_secs_f64());
            direct_times.push(d);
            through_times.push(t);
        }
        let ratio = median(pair_ratios);
        println!("round {}: through / direct {ratio:.3}", round + 1);
        ratios.push(ratio);
    }
    let (low, high) = ratios.iter().fold((f64::MAX, 0f64), |(l, h), r| (l.min(*r), h.max(*r)));
    println!("| path | direct | through the gate | through / direct (range) |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| safe validate+execute, stdio | {:.0} µs | {:.0} µs | {:.3} ({low:.3}-{high:.3}) |",
        median(direct_times).as_secs_f64() * 1e6,
        median(through_times).as_secs_f64() * 1e6,
        median(ratios),
    );
    for s in [direct, through] {
        let _ = s.service.cancel().await;
    }
}
