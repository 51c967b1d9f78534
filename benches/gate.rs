//! What the `gate` example adds to a safe validate+execute over stdio: rmcp's client talks to
//! (a) the `workflow` example directly, (b) the gate in front of it (`gate -- workflow`), and
//! (c) a byte relay in front of it (this bench's own binary re-run as a process that copies
//! stdin to the server and the server's stdout back, reading nothing, on one thread that looks
//! for the next chunk for 1 ms before it sleeps, as the gate does), all child processes over
//! stdio, up side by side. The relay is the floor of any proxy: the two process hops a request
//! takes through it, with no work of its own.
//!
//! One operation is what a model does for a safe program: `validate_workflow` then
//! `run_workflow` of the same program (a one-step read of a user profile) with the validation's
//! `expected_catalog_version`, as the execute tool's description asks, on every side. Through
//! the gate, the execute is gated on the validation it saw (no second validation), found safe,
//! audited (to stderr, discarded here) and forwarded with the validation's catalog version: the
//! gate's fast path, which relays the four messages as bytes (`examples/gate/splice.rs`).
//!
//! Each round alternates batches of `GATE_BATCH` operations (default 20) on each side,
//! `GATE_PAIRS` pairs (default 7) with the first side swapped each pair, so a change in the
//! machine's load reaches both sides of a pair alike; a round's ratio is the median of its
//! pairs' ratios through / direct (and relay / direct), and the line reports the median of
//! `GATE_ROUNDS` rounds (default 5) with their range, and each side's median time per
//! operation. The examples are built first in the bench's own profile; `GATE_BENCH_GATE` names
//! another build of the gate, to compare two builds against the same server and relay.
//! `cargo bench --all-features --bench gate` (optimized, as in docs/performance.md); never a
//! timed assertion.

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

async fn side(name: &'static str, program: &PathBuf, args: &[String], env: Option<&str>) -> Side {
    let mut command = tokio::process::Command::new(program);
    if let Some(var) = env {
        command.env(var, "1");
    }
    let mut child = command
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
    // Every side's host passes the validation's catalog version, as the execute tool's
    // description asks (through the gate it is the same value the gate forwards with).
    let version = validated["catalog_version"].clone();
    let args = json!({"workflow": program, "input": {"userId": "42"}, "expected_catalog_version": version});
    let ran = side.service.call_tool(call("run_workflow", args));
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

/// The environment variable that makes this binary the relay of side (c), in front of the
/// server command in its arguments.
const RELAY: &str = "GATE_BENCH_RELAY";

/// Side (c): copy stdin to the server's stdin and the server's stdout to stdout, reading
/// nothing, on one thread as the gate does: both non-blocking, looked at for 1 ms after the last
/// chunk (yielding the core between looks) before sleeping in `poll`, as the gate's `--linger-us`
/// default does.
fn relay(server: &str) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let linger = Duration::from_micros(1000);
    let mut child = std::process::Command::new(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    let (mut cin, cout) = (child.stdin.take().expect("piped"), child.stdout.take().expect("piped"));
    let fds = [0, cout.as_raw_fd()];
    for fd in fds {
        unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
    }
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut last = Instant::now();
    'outer: loop {
        let mut got = false;
        for (k, fd) in fds.iter().enumerate() {
            let n = unsafe { libc::read(*fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n == 0 {
                break 'outer;
            }
            if n > 0 {
                got = true;
                let data = &buf[..n as usize];
                let ok = if k == 0 {
                    cin.write_all(data).and_then(|()| cin.flush())
                } else {
                    out.write_all(data).and_then(|()| out.flush())
                };
                if ok.is_err() {
                    break 'outer;
                }
            }
        }
        if got {
            last = Instant::now();
        } else if last.elapsed() < linger {
            std::thread::yield_now();
        } else {
            let mut p = fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
            unsafe { libc::poll(p.as_mut_ptr(), 2, -1) };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn main() {
    if std::env::var_os(RELAY).is_some() {
        let server = std::env::args().nth(1).expect("the server's path");
        return relay(&server);
    }
    tokio::runtime::Runtime::new().expect("a runtime").block_on(bench());
}

/// Runs `batch` on each side in the order `first` gives; each side's time per operation.
async fn three(sides: [&Side; 3], first: usize, per_batch: usize) -> [Duration; 3] {
    let mut times = [Duration::ZERO; 3];
    for k in 0..3 {
        let i = (first + k) % 3;
        times[i] = batch(sides[i], per_batch).await;
    }
    times
}

fn range(ratios: &[f64]) -> String {
    let (low, high) = ratios.iter().fold((f64::MAX, 0f64), |(l, h), r| (l.min(*r), h.max(*r)));
    format!("{:.3} ({low:.3}-{high:.3})", median(ratios.to_vec()))
}

async fn bench() {
    let (rounds, pairs, per_batch) = (env("GATE_ROUNDS", 5), env("GATE_PAIRS", 7), env("GATE_BATCH", 20));
    let workflow = example("workflow");
    // `GATE_BENCH_GATE` names another build of the gate, to compare two builds (A/B).
    let gate = std::env::var_os("GATE_BENCH_GATE").map_or_else(|| example("gate"), PathBuf::from);
    let direct = side("direct", &workflow, &[], None).await;
    let through = side("through the gate", &gate, &["--".into(), workflow.display().to_string()], None).await;
    let exe = std::env::current_exe().expect("the bench's path");
    let relay = side("through a byte relay", &exe, &[workflow.display().to_string()], Some(RELAY)).await;
    let sides = [&direct, &through, &relay];
    for s in sides {
        batch(s, per_batch).await;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("gate bench: {cores} cores, {rounds} rounds of {pairs} sets of {per_batch} validate+execute each side");
    let (mut gate_ratios, mut relay_ratios) = (Vec::new(), Vec::new());
    let mut times: [Vec<Duration>; 3] = Default::default();
    for round in 0..rounds {
        let (mut gate_set, mut relay_set) = (Vec::new(), Vec::new());
        for pair in 0..pairs {
            let t = three(sides, round + pair, per_batch).await;
            gate_set.push(t[1].as_secs_f64() / t[0].as_secs_f64());
            relay_set.push(t[2].as_secs_f64() / t[0].as_secs_f64());
            for (all, one) in times.iter_mut().zip(t) {
                all.push(one);
            }
        }
        let (g, r) = (median(gate_set), median(relay_set));
        println!("round {}: gate / direct {g:.3}, relay / direct {r:.3}", round + 1);
        gate_ratios.push(g);
        relay_ratios.push(r);
    }
    let [d, g, r] = times.map(|t| median(t).as_secs_f64() * 1e6);
    println!("| path | direct | through the gate | through a byte relay | gate / direct (range) | relay / direct (range) |");
    println!("| --- | --- | --- | --- | --- | --- |");
    println!(
        "| safe validate+execute, stdio | {d:.0} µs | {g:.0} µs | {r:.0} µs | {} | {} |",
        range(&gate_ratios),
        range(&relay_ratios),
    );
    for s in [direct, through, relay] {
        let _ = s.service.cancel().await;
    }
}
