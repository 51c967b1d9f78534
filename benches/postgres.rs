//! `sql/postgres` against the reference `@modelcontextprotocol/server-postgres` (npm), both over
//! stdio against one database this bench creates (`pilotage_bench_<pid>` on
//! `PILOTAGE_TEST_POSTGRES`'s server, dropped at the end), driven by the same minimal client:
//! one JSON-RPC line out, read lines until the answer.
//!
//! Per path, the two servers are called in blocks of 10 calls in a row (which goes first
//! alternates block by block; the first call of a block is not counted), 200 times each after 5
//! warm-up calls, and the line reports each side's median and the ratio sql/postgres /
//! reference: `validate_sql` and `run_sql` of `SELECT 1` against the reference's `query` of it,
//! and `run_sql` of 1,000 rows against `query` of the same rows. Never a timed assertion.
//!
//! ```text
//! bash examples/postgres/battery/install.sh      # the reference server, into target/reference
//! cargo bench --features postgres --bench postgres
//! ```
//!
//! The sql/postgres side is the example binary of this profile (built first, like the tests'
//! `example_binary`; `POSTGRES_BENCH_EXE` names another build, to compare two), serving as a role of its own (`--default-role`) that may read the table.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Calls per side and path, after [`WARMUP`].
const CALLS: usize = 200;
const WARMUP: usize = 5;
/// Calls in a row on one server (see the loop in `main`).
const BLOCK: usize = 10;

/// One MCP server over stdio.
struct McpChild {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next: u64,
}

impl McpChild {
    async fn start(program: &str, args: &[&str]) -> McpChild {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{program} does not start: {e}"));
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut s = McpChild { _child: child, stdin, lines, next: 0 };
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}});
        s.request("initialize", init).await;
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        s
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let answer = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = self.lines.next_line().await.expect("read") {
                let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if v["id"] == json!(id) {
                    return v;
                }
            }
            panic!("the server closed stdout")
        });
        answer.await.expect("an answer within 30 s")
    }

    /// Call `tool`; the time it took. Panics on an error answer: a ratio of failures is no
    /// measurement.
    async fn call(&mut self, tool: &str, arguments: &Value) -> Duration {
        let started = Instant::now();
        let got = self.request("tools/call", json!({"name": tool, "arguments": arguments})).await;
        let took = started.elapsed();
        assert!(got.get("error").is_none() && got["result"]["isError"] != true, "{tool}: {got}");
        if let Some(outcome) = got["result"]["structuredContent"]["outcome"].as_object() {
            assert_eq!(outcome["ok"], true, "{tool}: {got}");
        }
        if let Some(valid) = got["result"]["structuredContent"].get("valid") {
            assert_eq!(valid, true, "{tool}: {got}");
        }
        took
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn example_binary() -> PathBuf {
    if let Some(exe) = std::env::var_os("POSTGRES_BENCH_EXE") {
        return exe.into();
    }
    let exe = std::env::current_exe().expect("the bench's path");
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps");
    let mut build = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build
        .args(["build", "--example", "postgres", "--features", "postgres"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        build.arg("--release");
    }
    assert!(build.status().expect("cargo runs").success(), "the example builds");
    profile_dir.join("examples").join("postgres")
}

fn reference_server() -> String {
    let out = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/postgres/battery/install.sh"))
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "install.sh: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().last().expect("the entry point").to_owned()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let base = std::env::var("PILOTAGE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let name = format!("pilotage_bench_{}", std::process::id());
    let agent = format!("{name}_agent");
    let (admin, conn) =
        tokio_postgres::connect(&base, tokio_postgres::NoTls).await.expect("PostgreSQL answers");
    tokio::spawn(conn);
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("the bench database");
    let url = match base.rfind('/') {
        Some(i) => format!("{}/{name}", &base[..i]),
        None => panic!("not a database URL: {base}"),
    };
    let (db, conn) =
        tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("the bench database answers");
    tokio::spawn(conn);
    db.batch_execute(&format!(
        "CREATE TABLE big (id int PRIMARY KEY, name text NOT NULL, amount numeric(10, 2) NOT NULL);
         INSERT INTO big SELECT g, 'customer ' || g, g * 1.25 FROM generate_series(1, 1000) g;
         DROP ROLE IF EXISTS {agent}; CREATE ROLE {agent} NOLOGIN; GRANT SELECT ON big TO {agent};
         GRANT USAGE ON SCHEMA public TO {agent}; ANALYZE big;"
    ))
    .await
    .expect("the bench table");

    let ours_path = example_binary();
    let reference = reference_server();
    let mut ours = McpChild::start(
        ours_path.to_str().expect("a path"),
        &["--database-url", &url, "--default-role", &agent],
    )
    .await;
    let mut theirs = McpChild::start("node", &[&reference, &url]).await;

    let rows = "SELECT id, name, amount FROM big ORDER BY id";
    let paths: [(&str, &str, Value, Value); 3] = [
        ("validate_sql SELECT 1", "validate_sql", json!({"query": "SELECT 1"}), json!({"sql": "SELECT 1"})),
        ("run_sql SELECT 1", "run_sql", json!({"query": "SELECT 1"}), json!({"sql": "SELECT 1"})),
        ("run_sql 1,000 rows", "run_sql", json!({"query": rows}), json!({"sql": rows})),
    ];
    println!("sql/postgres against @modelcontextprotocol/server-postgres, stdio, median of {CALLS}");
    for (label, tool, our_args, their_args) in &paths {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..WARMUP {
            ours.call(tool, our_args).await;
            theirs.call("query", their_args).await;
        }
        // Blocks of BLOCK calls on one server, then on the other (which goes first alternates):
        // called one after the other, each server's work after its answer (the reference's
        // un-awaited ROLLBACK, sql/postgres's engine threads) ran inside the other's next call
        // on this 2-core machine. The first call of each block is not counted.
        for block in 0..CALLS / BLOCK {
            for side in [block % 2, 1 - block % 2] {
                for i in 0..=BLOCK {
                    let took = if side == 0 {
                        ours.call(tool, our_args).await
                    } else {
                        theirs.call("query", their_args).await
                    };
                    if i > 0 {
                        if side == 0 { &mut a } else { &mut b }.push(took);
                    }
                }
            }
        }
        let (a, b) = (median(a), median(b));
        println!(
            "{label:<24} sql/postgres {:>8.2} ms  reference {:>8.2} ms  ratio {:.2}",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
    drop(ours);
    drop(theirs);
    drop(db);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Two statements sent apart: DROP DATABASE refuses to run in the implicit transaction of a
    // multi-statement query (sent together, every run left its database and role behind).
    for sql in
        [format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), format!("DROP ROLE IF EXISTS {agent}")]
    {
        if let Err(e) = admin.batch_execute(&sql).await {
            eprintln!("postgres bench: `{sql}` failed: {e}");
        }
    }
}
