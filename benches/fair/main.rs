//! pilotage against two hand-written rmcp servers doing the same work, through the same
//! transports.
//!
//! Paths (rows): the Language of numbered steps (`steps.rs`: a trivial validate, a 500-step
//! validate and a 500-step execute) and a realistic one, a `sql/sqlite-3` execute of three
//! statements whose last answers 20 rows (`sql.rs`, the `sql` example's engine against the same
//! SQL on rusqlite). Columns: pilotage with default settings against
//! - the naive hand-written server, whose work runs inline on the async worker, and
//! - the careful one, whose work runs on `tokio::task::spawn_blocking` under a time bound: the
//!   guarantee pilotage gives (`hand.rs`).
//!
//! All are driven through pilotage's own transports, so the difference is the framework:
//! - in process: newline-delimited JSON-RPC over a duplex pipe through `serve_lines`, one call
//!   at a time (`inproc.rs`);
//! - HTTP: each server in a child process behind `serve_listener` on 127.0.0.1, loaded by 1, 8
//!   and 64 concurrent Rust clients with SSE and with plain-JSON `Accept` headers (`http.rs`).
//!
//! In every round the three servers are up side by side and are measured in turn, in short
//! batches (in process) or windows (HTTP) that rotate which side goes first, so a change in the
//! machine's load reaches all alike; a round's ratio is the median of its batches, and each row
//! reports the median of the rounds' ratios and their range. Every table's header says the
//! machine's core count, the allocator and the load average.
//!
//! Settings: `FAIR_ROUNDS` (default 3), `FAIR_SECONDS` (each side's time under load in one HTTP
//! round, default 1.5), `FAIR_HTTP=0` (in process only), `FAIR_ONLY=execute` (only the paths
//! whose label contains `execute`), `FAIR_INLINE=1` (the steps engine whose validator is
//! declared `#[loop_tool(validate, inline)]`), `FAIR_CACHE=N` (`Limits::revalidation_cache =
//! N`), `FAIR_ALLOC=mimalloc` (every side and the load generator on mimalloc), `FAIR_THREADS=1`
//! (each HTTP window's server CPU per call by thread group), `FAIR_EXE` (the binary the HTTP
//! servers run as, by default this one), `FAIR_ACCEPT=SSE` or `JSON` and `FAIR_CLIENTS=1,64`
//! (only those HTTP rows). `FAIR_PROFILE=pilotage` (or `naive`, `careful`) runs one
//! side alone in process for `FAIR_SECONDS` (default 5) per path, or `FAIR_CALLS` calls, to run
//! under a profiler. `cargo bench --bench fair`; never a timed assertion.

mod alloc;
mod hand;
mod http;
mod inproc;
mod sql;
mod steps;

use std::time::Instant;

use pilotage::prelude::*;

#[global_allocator]
static ALLOCATOR: alloc::Chosen = alloc::Chosen;

/// One side of the comparison.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Side {
    Pilotage,
    Naive,
    Careful,
}

/// The sides in the order every round measures and reports them.
pub const SIDES: [Side; 3] = [Side::Pilotage, Side::Naive, Side::Careful];

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Pilotage => "pilotage",
            Side::Naive => "naive",
            Side::Careful => "careful",
        }
    }

    fn named(name: &str) -> Option<Side> {
        SIDES.into_iter().find(|s| s.name() == name)
    }
}

/// What a path's calls do.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Workload {
    /// The steps Language: `tool` on a program of `steps` steps.
    Steps { tool: &'static str, steps: usize },
    /// The `sql/sqlite-3` execute of [`sql::QUERY`].
    Sql,
}

/// One row of the tables.
#[derive(Clone, Copy, Debug)]
pub struct Path {
    pub label: &'static str,
    pub workload: Workload,
}

const PATHS: [Path; 4] = [
    Path { label: "trivial validate", workload: Workload::Steps { tool: "validate_steps", steps: 1 } },
    Path { label: "500-step validate", workload: Workload::Steps { tool: "validate_steps", steps: 500 } },
    Path { label: "500-step execute", workload: Workload::Steps { tool: "run_steps", steps: 500 } },
    Path { label: "sql execute (3 statements, 20 rows)", workload: Workload::Sql },
];

/// The `tools/call` request of `path`.
pub fn call(id: u64, path: Path) -> Json {
    let (tool, arguments) = match path.workload {
        Workload::Steps { tool, steps } => {
            let steps: Vec<Json> =
                (0..steps).map(|i| json!({"id": format!("s{i}"), "op": "add", "args": [i, 2]})).collect();
            (tool, json!({"steps": {"steps": steps}}))
        }
        Workload::Sql => ("run_sql", json!({"query": sql::QUERY})),
    };
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// The pilotage server of `path`: for the steps paths, default settings, or the engine whose
/// validator is declared inline with `FAIR_INLINE=1`, keeping `FAIR_CACHE` verdicts per
/// session (so every execute after the first re-validates by a look-up: the workload runs one
/// program over and over).
pub fn pilotage_server(path: Path) -> Server {
    if path.workload == Workload::Sql {
        return sql::pilotage_server();
    }
    let limits = Limits { revalidation_cache: env_or("FAIR_CACHE", 0), ..Limits::default() };
    let builder = if inline() {
        Server::builder().language(|| steps::StepsInline)
    } else {
        Server::builder().language(|| steps::Steps)
    };
    builder.limits(limits).build().expect("the bench server")
}

fn inline() -> bool {
    env_or("FAIR_INLINE", 0) == 1
}

/// Serve `side` of `path` over `serve_lines` on the given pipe ends, in a task of its own.
pub fn spawn_lines(side: Side, path: Path, input: tokio::io::DuplexStream, output: tokio::io::DuplexStream) {
    use hand::Hand;
    use pilotage::transport::serve_lines;
    let careful = side == Side::Careful;
    match (side, path.workload) {
        (Side::Pilotage, _) => {
            tokio::spawn(serve_lines(pilotage_server(path).handler(), input, output));
        }
        (_, Workload::Sql) => {
            tokio::spawn(serve_lines(Hand::new(sql::SqlWork::default(), careful), input, output));
        }
        (_, Workload::Steps { .. }) => {
            tokio::spawn(serve_lines(Hand::new(steps::StepsWork::default(), careful), input, output));
        }
    }
}

/// The binary the HTTP servers run as: `FAIR_EXE`, else this one.
pub fn own_exe() -> std::path::PathBuf {
    match std::env::var_os("FAIR_EXE") {
        Some(exe) => exe.into(),
        None => std::env::current_exe().expect("the bench's own path"),
    }
}

/// A reply is a result with `structuredContent`, not an error.
pub fn check(reply: &str) {
    assert!(
        reply.contains("\"structuredContent\"") && !reply.contains("\"isError\":true"),
        "unexpected reply: {}",
        &reply[..reply.len().min(400)]
    );
}

/// Median (of an even count, the mean of the middle two) and range of `values`.
pub fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    ((values[(n - 1) / 2] + values[n / 2]) / 2.0, values[0], values[n - 1])
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The one-minute, five-minute and fifteen-minute load averages (Linux; "?" elsewhere).
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let parts: Vec<&str> = text.split_whitespace().take(3).collect();
    if parts.len() == 3 {
        parts.join(" ")
    } else {
        "?".to_owned()
    }
}

/// Before any timing: every side answers the sql path with the same output (the last
/// statement's columns and rows), 20 rows of it.
async fn same_sql_results() {
    let path = PATHS[3];
    let mut outputs = Vec::new();
    for side in SIDES {
        let mut pipe = inproc::Pipe::open(side, path).await;
        let reply: Json = serde_json::from_str(&pipe.call().await).expect("a JSON reply");
        let output = reply["result"]["structuredContent"]["output"].clone();
        assert_eq!(output["rows"].as_array().map(Vec::len), Some(20), "{} answered {reply}", side.name());
        outputs.push(output);
    }
    assert!(outputs.iter().all(|o| *o == outputs[0]), "the sides answer different rows: {outputs:?}");
}

/// A cell of the table: the median of the rounds and their range.
fn cell(ratios: &[f64]) -> String {
    let (median, low, high) = spread(ratios.to_vec());
    format!("{median:.2} ({low:.2}-{high:.2})")
}

async fn bench() {
    let rounds: usize = env_or("FAIR_ROUNDS", 3);
    let seconds: f64 = env_or("FAIR_SECONDS", 1.5);
    let http = env_or("FAIR_HTTP", 1) != 0;
    let only: String = env_or("FAIR_ONLY", String::new());
    let accepts: String = env_or("FAIR_ACCEPT", String::new());
    let counts: Vec<usize> =
        env_or("FAIR_CLIENTS", String::new()).split(',').filter_map(|c| c.trim().parse().ok()).collect();
    let started = Instant::now();
    if PATHS[3].label.contains(only.as_str()) {
        same_sql_results().await;
    }
    println!(
        "{} cores, allocator {}, load average {} at the start, {rounds} rounds, {seconds} s per side and HTTP round, validation {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        alloc::name(),
        load_average(),
        if inline() { "declared inline (steps)" } else { "isolated (default)" },
    );
    println!();
    println!("| path | transport | pilotage / naive | pilotage / careful | detail |");
    println!("| --- | --- | --- | --- | --- |");
    for path in PATHS.into_iter().filter(|p| p.label.contains(only.as_str())) {
        // Batches of about 10 ms of the naive server's time, in every round.
        let (batches, calls) = match path.workload {
            Workload::Steps { steps: 1, .. } => (20, 100),
            Workload::Steps { .. } => (20, 4),
            Workload::Sql => (20, 20),
        };
        let mut measured = Vec::new();
        for _ in 0..rounds {
            measured.push(inproc::round(path, batches, calls).await);
        }
        let [naive, careful] = [0, 1].map(|i| measured.iter().map(|r| r.ratios[i]).collect::<Vec<_>>());
        let [ours, theirs, careful_t] =
            [0, 1, 2].map(|i| spread(measured.iter().map(|r| r.times[i] * 1e6).collect()).0);
        println!(
            "| {} | in process, time per call | {} | {} | {ours:.0} µs / {theirs:.0} µs / {careful_t:.0} µs |",
            path.label,
            cell(&naive),
            cell(&careful),
        );
        if !http {
            continue;
        }
        for (sse, accept) in
            [(true, "SSE"), (false, "plain JSON")].into_iter().filter(|(_, a)| a.contains(&accepts))
        {
            for clients in [1, 8, 64].into_iter().filter(|c| counts.is_empty() || counts.contains(c)) {
                let (mut naive, mut careful, mut shares) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..rounds {
                    let ([n, c], share) = http::round(path, clients, sse, seconds).await;
                    naive.push(n);
                    careful.push(c);
                    shares.push(share);
                }
                println!(
                    "| {} | HTTP {accept}, {clients} client(s), throughput | {} | {} | load generator {:.0}% of the CPU |",
                    path.label,
                    cell(&naive),
                    cell(&careful),
                    spread(shares).0 * 100.0
                );
            }
        }
    }
    println!();
    println!("In process: time per call, pilotage over the hand-written server (lower is better; detail: pilotage / naive / careful).");
    println!("HTTP: throughput, pilotage over the hand-written server (higher is better). Medians of the rounds (range).");
    println!("{:.0} s in all, load average {} at the end.", started.elapsed().as_secs_f64(), load_average());
}

/// One side alone, in process, on the paths `FAIR_ONLY` picks, for `FAIR_SECONDS` each (or
/// `FAIR_CALLS` calls): a workload to run under a profiler.
async fn profile(side: Side) {
    let seconds: f64 = env_or("FAIR_SECONDS", 5.0);
    let only: String = env_or("FAIR_ONLY", String::new());
    for path in PATHS.into_iter().filter(|p| p.label.contains(only.as_str())) {
        let mut pipe = inproc::Pipe::open(side, path).await;
        let (start, mut calls) = (Instant::now(), 0u64);
        // `FAIR_CALLS` makes the count fixed, for an instruction-counting profiler.
        let fixed: u64 = env_or("FAIR_CALLS", 0);
        while (fixed == 0 && start.elapsed().as_secs_f64() < seconds) || calls < fixed {
            pipe.time(10).await;
            calls += 10;
        }
        let seconds = start.elapsed().as_secs_f64();
        println!("{} {}: {:.0} µs per call", side.name(), path.label, seconds * 1e6 / calls as f64);
    }
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let side = |var: &str| std::env::var(var).ok().and_then(|v| Side::named(&v));
    if let Some(side) = side("FAIR_SERVE") {
        let label = std::env::var("FAIR_PATH").unwrap_or_default();
        let path = PATHS.into_iter().find(|p| p.label == label).expect("FAIR_PATH names a path");
        runtime.block_on(http::serve_child(side, path));
    } else if let Some(side) = side("FAIR_PROFILE") {
        runtime.block_on(profile(side));
    } else {
        runtime.block_on(bench());
    }
}
