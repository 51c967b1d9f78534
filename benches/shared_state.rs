//! What a shared PostgreSQL store costs per execute against the embedded SQLite one.
//!
//! The same `automation/v1` server (the example engine, retention `PT1H`) is built twice, once
//! on a `SqliteState` file and once on a `PostgresState` (a schema of its own in the database
//! at `PILOTAGE_TEST_POSTGRES`, by default `postgres://postgres@127.0.0.1:5432/test`), and
//! driven the same way: newline-delimited JSON-RPC over an in-process pipe, one request at a
//! time. Three rows: an execute whose Run is stored (one run write), the same with an
//! `idempotency_key` (claim, run write, key record), and a trace fetch of a stored Run (one
//! read). Rounds are interleaved (SQLite, PostgreSQL, SQLite, ...) and reported as medians
//! and ranges of the ratio PostgreSQL / SQLite. Reported, never asserted:
//! `cargo bench --bench shared_state`.

#[allow(dead_code)]
#[path = "../examples/automation/engine/mod.rs"]
mod automation;

use std::sync::Arc;
use std::time::{Duration, Instant};

use pilotage::state::suite::TestSchema;
use pilotage::state::{PostgresState, SharedState, SqliteState};
use pilotage::Server;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const CALLS: usize = 300;
const ROUNDS: usize = 5;

/// One client on a pipe to `server`, initialized.
struct Client {
    writer: DuplexStream,
    reader: Lines<BufReader<DuplexStream>>,
    next: u64,
}

impl Client {
    async fn connect(server: &Server) -> Client {
        let (client_out, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_in) = tokio::io::duplex(1 << 16);
        let server = server.clone();
        tokio::spawn(async move {
            let _ = server.serve_lines(server_in, server_out).await;
        });
        let mut client = Client { writer: client_out, reader: BufReader::new(client_in).lines(), next: 0 };
        client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
            )
            .await;
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        client
    }

    async fn send(&mut self, message: Value) {
        self.writer.write_all(format!("{message}\n").as_bytes()).await.expect("write");
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})).await;
        let line = self.reader.next_line().await.expect("read").expect("a reply");
        serde_json::from_str(&line).expect("JSON")
    }

    /// A tools/call whose result must not be an error; its `structuredContent`.
    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments})).await;
        let result = &reply["result"];
        assert_eq!(result["isError"], false, "{reply}");
        result["structuredContent"].clone()
    }
}

fn program() -> Value {
    json!({"steps": [{"id": "count", "call": "counter_add", "with": {"by": 1}}],
           "output": {"counter": "$.steps.count.output.counter"}})
}

fn execute(key: Option<String>) -> Value {
    let mut arguments = json!({"automation": program(), "mode": "immediate", "context": {"timezone": "Europe/Paris"}, "store": true});
    if let Some(key) = key {
        arguments["idempotency_key"] = json!(key);
    }
    arguments
}

/// The time per call of each row on `state`; `round` keeps idempotency keys fresh.
async fn measure(state: Arc<dyn SharedState>, round: usize) -> [Duration; 3] {
    let server =
        Server::builder().language(automation::Automation::new).state(state).build().expect("server");
    let mut client = Client::connect(&server).await;
    let mut run_ids = Vec::with_capacity(CALLS);
    let start = Instant::now();
    for _ in 0..CALLS {
        let response = client.call("run_automation", execute(None)).await;
        run_ids.push(response["run_id"].clone());
    }
    let stored = start.elapsed() / CALLS as u32;
    let start = Instant::now();
    for i in 0..CALLS {
        client.call("run_automation", execute(Some(format!("bench-{round}-{i}")))).await;
    }
    let keyed = start.elapsed() / CALLS as u32;
    let start = Instant::now();
    for run_id in &run_ids {
        client.call("trace_automation", json!({"run_id": run_id})).await;
    }
    let fetched = start.elapsed() / CALLS as u32;
    [stored, keyed, fetched]
}

fn median(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("pilotage-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("bench directory");
        let sqlite: Arc<dyn SharedState> = Arc::new(SqliteState::open(dir.join("runs.sqlite")).expect("sqlite"));
        let schema = TestSchema::create("bench").await;
        let postgres: Arc<dyn SharedState> = Arc::new(PostgresState::connect(&schema.url).await.expect("postgres"));
        let rows = ["execute, Run stored", "execute + idempotency_key", "trace fetch of a stored Run"];
        let mut times: Vec<[Vec<f64>; 2]> = rows.iter().map(|_| [Vec::new(), Vec::new()]).collect();
        for round in 0..ROUNDS {
            let s = measure(sqlite.clone(), 2 * round).await;
            let p = measure(postgres.clone(), 2 * round + 1).await;
            for (row, t) in times.iter_mut().enumerate() {
                t[0].push(s[row].as_secs_f64() * 1e6);
                t[1].push(p[row].as_secs_f64() * 1e6);
            }
            println!("round {}: sqlite {:?} / postgres {:?}", round + 1, s, p);
        }
        println!("\n| path ({CALLS} calls × {ROUNDS} interleaved rounds) | SQLite µs/call | PostgreSQL µs/call | ratio PostgreSQL / SQLite (median, range) |");
        println!("| --- | --- | --- | --- |");
        for (row, [s, p]) in rows.iter().zip(times) {
            let ratios: Vec<f64> = s.iter().zip(&p).map(|(s, p)| p / s).collect();
            let (s, _, _) = median(s);
            let (p, _, _) = median(p);
            let (r, lo, hi) = median(ratios);
            println!("| {row} | {s:.0} | {p:.0} | {r:.2} ({lo:.2}-{hi:.2}) |");
        }
        schema.drop_all().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
