//! The Host's overhead per loop: `pilotage::host` running validate + execute of one program
//! against rmcp's own client sending the same two requests by hand.
//!
//! Both sides talk to the same `workflow/v1` server (the `workflow` example's engine):
//! - stdio: one child process each, the `workflow` example binary of this profile (built first,
//!   like `benches/postgres.rs`'s), the Host through [`Host::stdio`], rmcp's client through
//!   `ServiceExt::serve` on the child's stdout and stdin;
//! - Streamable HTTP: one in-process server on 127.0.0.1 (`Server::router` under axum), the Host
//!   through [`Host::http`] (sessionful), rmcp's client through its
//!   `StreamableHttpClientTransport`; each side has a session of its own.
//!
//! One loop on the Host side is [`Language::run`](pilotage::host::Language::run): validate,
//! the gate, execute with the validation's `catalog_version` and the Language's trace ceiling.
//! On the rmcp side it is `peer.call_tool` of `validate_workflow`, reading `structuredContent`
//! for `valid` and `catalog_version`, then `peer.call_tool` of `run_workflow` with the same
//! arguments the Host sends (`workflow`, `trace_level: "full"`, `expected_catalog_version`,
//! `input`) and reading the outcome. Both sides declare the Pilotage extension on `initialize`.
//!
//! Each round runs `HOSTBENCH_LOOPS` loops per side (default 60, after 10 warm-up loops),
//! alternating which side goes first loop by loop, so a change in the machine's load reaches
//! both sides alike; a round's figure is each side's median loop and their ratio Host / rmcp.
//! Each row reports the median over `HOSTBENCH_ROUNDS` rounds (default 5) with the ratio's range.
//! `HOSTBENCH_ONLY=stdio` (or `http`) measures one transport; `HOSTBENCH_NODELAY=0` serves HTTP
//! with Nagle's algorithm on (as `axum::serve` does unless told). Never a timed assertion.
//!
//! ```text
//! cargo bench --features host --bench host
//! ```

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use pilotage::host::{Attempt, ExecuteOptions, Execution, Host, RunStatus};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Map, Value};

#[path = "../examples/workflow/engine/mod.rs"]
mod workflow;

const WARMUP: usize = 10;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// A program of `steps` read-only calls, each reading the input's user.
fn program(steps: usize) -> Value {
    let steps: Vec<Value> = (0..steps)
        .map(|i| {
            json!({"id": format!("s{i}"), "kind": "call", "capability": "cap_read_user_profile",
                   "with": {"user_id": "$.input.userId"}})
        })
        .collect();
    json!({"inputs": {"userId": "string"}, "steps": steps, "output": {"result": "$.steps.s0.output"}})
}

fn input() -> Value {
    json!({"userId": "42"})
}

/// rmcp's client, as a Host writer would start with: the extension declared on `initialize`.
fn client_config() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    let mut extensions = std::collections::BTreeMap::new();
    extensions.insert(pilotage::model::manifest::EXTENSION_ID.to_owned(), Map::new());
    capabilities.extensions = Some(extensions);
    let mut config = ClientConfig::new(capabilities, Implementation::new("bench-raw", "0"));
    config.protocol_version = ProtocolVersion::V_2025_11_25;
    config
}

type Raw = RunningService<RoleClient, ClientConfig>;

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("an object"),
    }
}

/// One loop by hand over rmcp: validate, then execute with the validation's token.
async fn raw_loop(raw: &Raw, program: &Value, input: &Value) -> Duration {
    let started = Instant::now();
    let peer = raw.peer();
    let params = CallToolRequestParams::new("validate_workflow")
        .with_arguments(arguments(json!({"workflow": program.clone()})));
    let validated = peer.call_tool(params).await.expect("validate answers");
    let verdict = validated.structured_content.expect("structuredContent");
    assert!(validated.is_error != Some(true) && verdict["valid"] == true, "{verdict}");
    let version = verdict["catalog_version"].as_str().expect("a catalog_version").to_owned();
    let args = json!({"workflow": program.clone(), "trace_level": "full",
                      "expected_catalog_version": version, "input": input.clone()});
    let params = CallToolRequestParams::new("run_workflow").with_arguments(arguments(args));
    let ran = peer.call_tool(params).await.expect("execute answers");
    let took = started.elapsed();
    let outcome = ran.structured_content.expect("structuredContent");
    assert!(ran.is_error != Some(true) && outcome["outcome"]["ok"] == true, "{outcome}");
    took
}

/// One loop through the Host.
async fn host_loop(host: &Host, program: &Value, input: &Value) -> Duration {
    let started = Instant::now();
    let language = host.language("workflow/v1").expect("workflow/v1");
    let options = ExecuteOptions { input: Some(input.clone()), ..ExecuteOptions::default() };
    let attempt = language.run(program.clone(), &options).await.expect("the loop runs");
    let took = started.elapsed();
    match attempt {
        Attempt::Executed(Execution::Ran(ran)) if ran.status == RunStatus::Success => {}
        other => panic!("not a successful Run: {other:?}"),
    }
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Rounds of interleaved loops; prints one row.
async fn measure(label: &str, host: &Host, raw: &Raw, program: &Value) {
    let input = input();
    let (rounds, loops) = (env_usize("HOSTBENCH_ROUNDS", 5), env_usize("HOSTBENCH_LOOPS", 60));
    for i in 0..WARMUP {
        if i % 2 == 0 {
            host_loop(host, program, &input).await;
            raw_loop(raw, program, &input).await;
        } else {
            raw_loop(raw, program, &input).await;
            host_loop(host, program, &input).await;
        }
    }
    let (mut hosts, mut raws, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (mut h, mut r) = (Vec::with_capacity(loops), Vec::with_capacity(loops));
        for i in 0..loops {
            if i % 2 == 0 {
                h.push(host_loop(host, program, &input).await);
                r.push(raw_loop(raw, program, &input).await);
            } else {
                r.push(raw_loop(raw, program, &input).await);
                h.push(host_loop(host, program, &input).await);
            }
        }
        let (h, r) = (median(h), median(r));
        hosts.push(h);
        raws.push(r);
        ratios.push(h.as_secs_f64() / r.as_secs_f64());
    }
    let (low, high) = ratios.iter().fold((f64::MAX, f64::MIN), |(l, h), r| (l.min(*r), h.max(*r)));
    println!(
        "{label:<28} host {:>9.1} µs  rmcp {:>9.1} µs  ratio {:.3} ({low:.3}-{high:.3})",
        median(hosts).as_secs_f64() * 1e6,
        median(raws).as_secs_f64() * 1e6,
        median_f(ratios),
    );
}

/// The `workflow` example binary of this bench's profile, built first.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's path");
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps");
    let mut build = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    // The bench's own features, so that the example reuses the bench's build of the crates.
    build
        .args(["build", "--example", "workflow", "--features", "host"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        build.arg("--release");
    }
    assert!(build.status().expect("cargo runs").success(), "the example builds");
    profile_dir.join("examples").join("workflow")
}

async fn stdio(programs: &[(&str, Value)]) {
    let binary = example_binary();
    let binary = binary.to_str().expect("a UTF-8 path");
    let host = Host::stdio(binary).connect().await.expect("the Host connects over stdio");
    let mut child = tokio::process::Command::new(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the workflow example starts");
    let (stdout, stdin) = (child.stdout.take().expect("stdout"), child.stdin.take().expect("stdin"));
    let raw = client_config().serve((stdout, stdin)).await.expect("rmcp's client initializes");
    for (label, program) in programs {
        measure(&format!("stdio, {label}"), &host, &raw, program).await;
    }
    drop(raw);
    drop(child);
}

async fn http(programs: &[(&str, Value)]) {
    let server = pilotage::Server::builder().language(workflow::Workflow::new).build().expect("the server");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("an address");
    let app =
        axum::Router::new().nest_service("/mcp", server.router(pilotage::transport::HttpOptions::default()));
    // TCP_NODELAY as pilotage's own edge sets it (`transport::serve_listener`), unless
    // HOSTBENCH_NODELAY=0: a server that leaves Nagle on holds each answer's second write until
    // the client's delayed ACK (up to 40 ms on Linux) on a reused connection.
    let nodelay = std::env::var("HOSTBENCH_NODELAY").map_or(true, |v| v != "0");
    let listener = axum::serve::ListenerExt::tap_io(listener, move |tcp| {
        if nodelay {
            let _ = tcp.set_nodelay(true);
        }
    });
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://{addr}/mcp");
    let host = Host::http(&url).connect().await.expect("the Host connects over HTTP");
    let raw = client_config()
        .serve(StreamableHttpClientTransport::from_uri(url.as_str()))
        .await
        .expect("rmcp's client initializes");
    for (label, program) in programs {
        measure(&format!("HTTP, {label}"), &host, &raw, program).await;
    }
    drop(raw);
    drop(host);
    task.abort();
}

fn main() {
    let profile = if cfg!(debug_assertions) { "debug" } else { "optimized" };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("pilotage::host against rmcp's client, validate + execute of one workflow/v1 program");
    println!(
        "{cores} cores, {profile} build; medians of each round's median loop, ratio Host / rmcp (range)"
    );
    let programs = [("1-step program", program(1)), ("50-step program", program(50))];
    let only = std::env::var("HOSTBENCH_ONLY").unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        if only.is_empty() || only == "stdio" {
            stdio(&programs).await;
        }
        if only.is_empty() || only == "http" {
            http(&programs).await;
        }
    });
}
