//! Hostile traffic against the example engines, through real transports: every answer is a
//! bounded outcome or error, never an abort, a frozen server or a core burning after the answer.
//!
//! Programs that could make a server allocate gigabytes run against the example binary as a
//! child process under an address-space cap (`prlimit --as=2GiB`), so a regression fails the
//! test, not the machine. The others run in process with small `Limits`, to stay fast.

use crate::{sql, support, workflow};

use std::process::Stdio;
use std::time::{Duration, Instant};

use pilotage::engine::Limits;
use serde_json::{json, Value};
use support::Conn;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The address-space cap of the child servers.
const CAP: &str = "--as=2147483648";

/// A example binary under [`CAP`], spoken to over newline-delimited JSON-RPC on stdio.
struct Capped {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl Capped {
    async fn start(example: &str, args: &[&str]) -> Capped {
        let binary = support::example_binary(example);
        let mut child = tokio::process::Command::new("prlimit")
            .arg(CAP)
            .arg("--")
            .arg(&binary)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("prlimit runs the example binary");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut c = Capped { child, stdin, stdout, next_id: 0 };
        let init = c
            .request(
                "initialize",
                json!({"protocolVersion": support::PROTOCOL, "capabilities": {"extensions": {support::EXT: {}}},
                       "clientInfo": {"name": "engine-bounds", "version": "0"}}),
            )
            .await;
        assert!(init.0.get("result").is_some(), "{}", init.0);
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        c
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("the server is running")
    }

    async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("the server reads its stdin");
        self.stdin.flush().await.unwrap();
    }

    /// The response to one request, with the byte size of its line.
    async fn request(&mut self, method: &str, params: Value) -> (Value, usize) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let line = tokio::time::timeout(support::TIMEOUT, self.stdout.next_line())
                .await
                .unwrap_or_else(|_| panic!("no answer to {method} within {:?}", support::TIMEOUT))
                .expect("the server's stdout")
                .unwrap_or_else(|| panic!("the server ended while {method} was awaited: {:?}", self.exit()));
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["id"] == json!(id) {
                return (message, line.len());
            }
        }
    }

    fn exit(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// `tools/call` `name`: the result's `structuredContent` and the line's byte size.
    async fn call(&mut self, name: &str, arguments: Value) -> (Value, usize) {
        let (response, bytes) =
            self.request("tools/call", json!({"name": name, "arguments": arguments})).await;
        let structured = response["result"]["structuredContent"].clone();
        assert!(!structured.is_null(), "{name}: no structured result: {response}");
        (structured, bytes)
    }

    /// The server still answers: `tools/list` lists tools.
    async fn assert_alive(&mut self) {
        let (list, _) = self.request("tools/list", json!({})).await;
        assert!(list["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{list}");
        assert!(self.exit().is_none(), "the server exited");
    }
}

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pilotage-engine-bounds-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Row 1: three `set` steps, each copying the previous output `copies` times (a 20 KB string,
/// then 4 MB, then 800 MB were it built).
fn copying(copies: usize) -> Value {
    json!({"steps": [
        {"id": "a", "kind": "set", "value": "x".repeat(20_000)},
        {"id": "b", "kind": "set", "value": vec!["$.steps.a.output"; copies]},
        {"id": "c", "kind": "set", "value": vec!["$.steps.b.output"; copies]}
    ]})
}

fn memory_bound(limit: usize) -> Value {
    json!({"ok": false, "status": "partial", "error": format!("execution exceeded its memory bound of {limit} bytes")})
}

#[tokio::test]
async fn copied_references_end_the_run_at_its_memory_bound_in_process() {
    let limits = Limits { max_run_bytes: 1 << 20, ..Limits::default() };
    let server = pilotage::Server::builder()
        .name("bounds", "0")
        .language(workflow::Workflow::new)
        .limits(limits)
        .build();
    let mut conn = Conn::duplex(&server.unwrap());
    conn.initialize(true).await;
    let program = copying(200);
    assert!(program.to_string().len() < 30_000);
    let run = conn.call_ok("run_workflow", json!({"workflow": program})).await;
    assert_eq!(run["outcome"], memory_bound(1 << 20), "{run}");
    assert!(!conn.tools_list().await.is_empty());
    // Accepted: the same program, copying little.
    let ok = conn.call_ok("run_workflow", json!({"workflow": copying(2)})).await;
    assert_eq!(ok["outcome"]["status"], "success", "{ok}");
}

#[tokio::test]
async fn copied_references_end_the_run_at_its_memory_bound_under_the_cap() {
    let mut server = Capped::start("workflow", &[]).await;
    let (run, bytes) = server.call("run_workflow", json!({"workflow": copying(200)})).await;
    assert_eq!(run["outcome"], memory_bound(16 << 20), "{run}");
    // The answer carries the trace so far (b's 4 MB output, twice: structured and text), which
    // the run's 16 MiB budget bounds.
    assert!(bytes < 2 * (16 << 20) + (1 << 20), "the answer is {bytes} bytes");
    eprintln!("the capped run's answer is {bytes} bytes");
    server.assert_alive().await;
}

/// Row 2: a 44-byte statement asking SQLite for a 900 MB string.
#[tokio::test]
async fn a_printf_bomb_is_a_sql_error() {
    let dir = temp_dir("printf");
    let db = dir.join("demo.sqlite");
    let mut server = Capped::start("sql", &["--db", db.to_str().unwrap()]).await;
    let query = "SELECT printf('%.*c', 900000000, 'x')";
    assert_eq!(query.len(), 37);
    let (run, bytes) = server.call("run_sql", json!({"query": query})).await;
    // SQLite's printf() answers NULL once its result would pass SQLITE_LIMIT_LENGTH (1 MiB).
    assert_eq!(run["outcome"]["status"], "success", "{run}");
    assert_eq!(run["output"]["rows"], json!([[null]]), "{run}");
    assert!(bytes < 4096, "{bytes}");
    // A value over the limit that SQLite cannot answer NULL for is a SQL error.
    let query = "SELECT replace(printf('%.*c', 1000000, 'x'), 'x', 'xx')";
    let (run, _) = server.call("run_sql", json!({"query": query})).await;
    assert_eq!(
        run["outcome"],
        json!({"ok": false, "status": "error",
               "error": "stmt-1 failed: string or blob too big; the transaction was rolled back: no change persists"})
    );
    server.assert_alive().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Row 2: 1,000 rows of 1 MB strings: the rows are charged to the run's budget, so the answer
/// stays small (the run ends at its memory bound; no row reaches the answer).
#[tokio::test]
async fn a_thousand_megabyte_rows_end_the_run_at_its_memory_bound() {
    let dir = temp_dir("rows");
    let db = dir.join("demo.sqlite");
    let mut server = Capped::start("sql", &["--db", db.to_str().unwrap()]).await;
    let query = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
                 SELECT i, printf('%.*c', 1000000, 'x') AS big FROM n";
    let (run, bytes) = server.call("run_sql", json!({"query": query})).await;
    assert_eq!(run["outcome"], memory_bound(16 << 20), "{run}");
    assert!(bytes < 64 * 1024, "the answer is {bytes} bytes");
    server.assert_alive().await;
    // Accepted: a few such rows fit the budget.
    let few = query.replace("i < 1000", "i < 3");
    let (ok, bytes) = server.call("run_sql", json!({"query": few})).await;
    assert_eq!(ok["outcome"]["status"], "success", "{}", ok["outcome"]);
    assert!(bytes > 3_000_000, "{bytes}");
    let _ = std::fs::remove_dir_all(dir);
}

const ENDLESS: &str =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";

fn sql_server(limits: Limits) -> pilotage::Server {
    pilotage::Server::builder().name("bounds", "0").language(sql::Sql::demo).limits(limits).build().unwrap()
}

/// Row 3: an endless statement in a run and in an admin tool stops within the call's time
/// bound, and the session's database is free again right after the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_statements_stop_at_the_time_bound() {
    let limits = Limits {
        execute_time: Duration::from_secs(2),
        tool_time: Duration::from_secs(1),
        ..Limits::default()
    };
    let mut conn = Conn::duplex(&sql_server(limits));
    conn.initialize(true).await;
    let started = Instant::now();
    let run = conn.call_ok("run_sql", json!({"query": ENDLESS})).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert_timed_out(&run["outcome"]);
    assert_free(&mut conn).await;

    let ddl = format!("CREATE TABLE t AS {ENDLESS}");
    let started = Instant::now();
    let applied = conn.call("sql_schema_apply", json!({"ddl": ddl})).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    assert!(applied.is_error, "{}", applied.raw);
    assert_free(&mut conn).await;
}

/// The outcome of a run stopped at its time bound: the runtime's `partial` when its timer
/// answered first, else the engine's own answer for the interrupted statement.
fn assert_timed_out(outcome: &Value) {
    let engine = json!({"ok": false, "status": "error",
        "error": "stmt-1 failed: interrupted at the run's time bound; the transaction was rolled back: no change persists"});
    let runtime = |s: &str| json!({"ok": false, "status": "partial", "error": format!("execution exceeded its time bound of {s}")});
    assert!(*outcome == engine || *outcome == runtime("2s") || *outcome == runtime("4s"), "{outcome}");
}

/// The server answers a ping, and the session's database (held by a runaway statement until
/// it stops) answers a plain tool within half a second.
async fn assert_free(conn: &mut Conn) {
    let ping = conn.request("ping", Value::Null).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    let started = Instant::now();
    let fingerprint = conn.call("sql_world_fingerprint", json!({})).await;
    assert!(!fingerprint.is_error, "{}", fingerprint.raw);
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
}

/// Row 4: ~900 KB of steps referencing unknown steps: a bounded answer, and the server's CPU
/// time stops growing within a second of it.
#[tokio::test]
async fn a_large_invalid_program_stops_validating_at_the_answer() {
    let mut server = Capped::start("workflow", &[]).await;
    let steps: Vec<Value> = (0..15_500)
        .map(|i| json!({"id": format!("s{i}"), "kind": "set", "value": format!("$.steps.q{i}.output")}))
        .collect();
    let program = json!({"steps": steps});
    let size = program.to_string().len();
    assert!((800_000..1 << 20).contains(&size), "{size}");
    let started = Instant::now();
    let (answer, _) = server
        .request("tools/call", json!({"name": "validate_workflow", "arguments": {"workflow": program}}))
        .await;
    let took = started.elapsed();
    let result = &answer["result"];
    let structured = &result["structuredContent"];
    let bounded = structured["error"]["kind"] == "bounds_exceeded" || structured["valid"] == false;
    assert!(bounded, "{}", serde_json::to_string(result).unwrap().chars().take(500).collect::<String>());
    let before = cpu_ticks(server.pid());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = cpu_ticks(server.pid());
    eprintln!("validate answered in {took:?}; CPU ticks in the second after: {}", after - before);
    assert!(after - before <= 10, "the server kept working after its answer: {} ticks", after - before);
    server.assert_alive().await;
}

/// utime + stime of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Row 5: two endless statements on two sessions hold engine threads; a third session's pings
/// still answer fast (p99 over 50 pings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_answer_while_engine_calls_run() {
    let limits = Limits { execute_time: Duration::from_secs(4), ..Limits::default() };
    let server = sql_server(limits);
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut conn = Conn::duplex(&server);
        conn.initialize(true).await;
        slow.push(tokio::spawn(async move { conn.call_ok("run_sql", json!({"query": ENDLESS})).await }));
    }
    let mut conn = Conn::duplex(&server);
    conn.initialize(true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut times = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let ping = conn.request("ping", Value::Null).await;
        times.push(started.elapsed());
        assert_eq!(ping["result"], json!({}));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(slow.iter().all(|t| !t.is_finished()), "the slow calls were still running");
    times.sort();
    let p99 = times[times.len() * 99 / 100 - 1];
    eprintln!("ping p50 {:?}, p99 {p99:?}, max {:?}", times[times.len() / 2], times[times.len() - 1]);
    assert!(p99 < Duration::from_millis(50), "p99 {p99:?}");
    for t in slow {
        assert_timed_out(&t.await.unwrap()["outcome"]);
    }
}

/// The issue-28 worst case, ~23 KB: a list of 4 000 zeros (8 KB of text, 320 KB in memory),
/// copied by reference 400 times, and that list copied 400 times again (51 GB were it built).
/// Charged as text, a run held ~550 MB before its 16 MiB budget refused.
fn small_items_copied() -> Value {
    json!({"steps": [
        {"id": "a", "kind": "set", "value": vec![0; 4_000]},
        {"id": "b", "kind": "set", "value": vec!["$.steps.a.output"; 400]},
        {"id": "c", "kind": "set", "value": vec!["$.steps.b.output"; 400]}
    ]})
}

/// `VmHWM` (peak) and `VmRSS` (now) of process `pid`, in bytes.
fn resident(pid: u32) -> (usize, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {status}"));
        line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Row 1 at full concurrency: as many worst-case runs as the server has engine slots (its
/// default cap), each from its own session over HTTP, against the example binary under an
/// address-space cap of 64 MiB a slot, at least 2 GiB (4 GiB for the 64 slots of 16 cores, the
/// cap under which 8 such runs used to abort the process), twice. Every run ends `partial` at its 16 MiB memory bound, the process
/// survives, its peak resident memory stays within the sizing rule of `docs/limits.md`
/// (slots × 2 × `max_run_bytes` above its resting size), and what stays resident after the runs
/// does not grow from one round to the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_slots_times_the_run_bound_holds_in_resident_memory() {
    let slots = std::thread::available_parallelism().map_or(4, |n| n.get() * 4).max(4);
    let cap = (slots << 26).max(1 << 31);
    let port = support::free_port();
    let mut child = tokio::process::Command::new("prlimit")
        .arg(format!("--as={cap}"))
        .arg("--")
        .arg(support::example_binary("workflow"))
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("prlimit runs the example binary");
    let pid = child.id().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(
            Instant::now() < deadline && child.try_wait().unwrap().is_none(),
            "the server did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let program = small_items_copied();
    let size = program.to_string().len();
    assert!((20_000..30_000).contains(&size), "{size}");
    let mut conns = Vec::new();
    for _ in 0..slots {
        let mut conn = Conn::http(&url, support::HttpStyle::Plain);
        conn.initialize(true).await;
        conns.push(conn);
    }
    let (_, resting) = resident(pid);
    let bound = 16usize << 20;
    let mut after = Vec::new();
    for round in 0..2 {
        let runs = conns.drain(..).map(|mut conn| {
            let program = program.clone();
            tokio::spawn(async move {
                let run = conn.call_ok("run_workflow", json!({"workflow": program})).await;
                (conn, run)
            })
        });
        for run in futures::future::join_all(runs.collect::<Vec<_>>()).await {
            let (conn, run) = run.expect("the run's task");
            assert_eq!(run["outcome"], memory_bound(bound), "round {round}");
            conns.push(conn);
        }
        assert!(child.try_wait().unwrap().is_none(), "the server exited");
        let (peak, now) = resident(pid);
        eprintln!(
            "round {round}: {slots} runs; resting {} MiB, peak {} MiB, after {} MiB",
            resting >> 20,
            peak >> 20,
            now >> 20
        );
        assert!(peak - resting <= slots * 2 * bound, "peak {peak} from {resting}");
        after.push(now);
    }
    // Nothing a run held is kept: the second round leaves no more resident than the first.
    assert!(after[1] <= after[0] + bound, "{after:?}");
    assert!(after[1] - resting <= slots * bound, "resting {resting}, after {after:?}");
    let listed = conns[0].tools_list().await;
    assert!(!listed.is_empty());
}

/// The runs a session keeps (`"session"` retention, `Limits::max_retained_bytes`, 16 MiB) are
/// bounded in resident memory: 150 runs each keeping about 250 KB of text (a thousand small
/// objects as a step's output and as the run's output), which a record holds as that text, leave
/// the server at most the bound and a margin above its size after the first run, and the oldest
/// evicted (about 65 fit).
#[tokio::test]
async fn the_runs_a_session_keeps_are_bounded_in_resident_memory() {
    let mut server = Capped::start("workflow", &[]).await;
    let rows: Vec<Value> =
        (0..1_000).map(|i| json!({"id": i, "name": format!("customer {i:0>100}")})).collect();
    let program = json!({"steps": [{"id": "rows", "kind": "set", "value": rows}],
                         "output": {"rows": "$.steps.rows.output"}});
    let (mut first, mut ids) = (0, Vec::new());
    for run in 0..150 {
        let (ran, _) = server.call("run_workflow", json!({"workflow": program})).await;
        assert_eq!(ran["outcome"]["status"], "success", "{}", ran["outcome"]);
        ids.push(ran["run_id"].clone());
        if run == 0 {
            first = resident(server.pid()).1;
        }
    }
    // The oldest runs were evicted; the latest is kept whole.
    let (oldest, _) = server.call("trace_run", json!({"run_id": ids[0]})).await;
    assert_eq!(oldest["error"]["kind"], "not_found", "the oldest run is still kept");
    let (latest, _) = server.call("trace_run", json!({"run_id": ids[149]})).await;
    assert_eq!(latest["output"]["rows"].as_array().map(Vec::len), Some(1_000));
    let (peak, now) = resident(server.pid());
    let bound = 16usize << 20;
    eprintln!("after one run {} MiB; after 150: {} MiB, peak {} MiB", first >> 20, now >> 20, peak >> 20);
    // The margin: the allocator's free but unreturned memory, and a call's transient copies.
    assert!(now <= first + bound + (24 << 20), "after one run {first}, after 150 {now}");
    server.assert_alive().await;
}
