//! A bounded hostile-traffic probe for any Pilotage (or MCP) server over Streamable HTTP on
//! loopback: each row of the hostile-traffic table is tried once, bounded in time and count, and
//! its figure printed.
//!
//! ```text
//! cargo run --example workflow -- --http 127.0.0.1:8787 &
//! cargo run --release --example soak -- --endpoint http://127.0.0.1:8787/mcp
//! ```
//!
//! Rows: live sessions (how many `initialize`s are accepted before a refusal), idle
//! connections (a new client's latency with that many open), slow headers (how long the server
//! holds a client sending one byte a second), a foreign `Origin`, a fuzz burst of `tools/call`s
//! (every reply classified: result, request error, JSON-RPC error with its id, invalid), and
//! `ping` latency while validations flood the server. It talks only to loopback addresses.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Probe one Streamable HTTP endpoint on loopback.
#[derive(Parser, Debug)]
#[command(name = "soak", about)]
struct Cli {
    /// The endpoint, e.g. `http://127.0.0.1:8787/mcp` (loopback only).
    #[arg(long)]
    endpoint: String,
    /// Sessions to open at most.
    #[arg(long, default_value_t = 2_000)]
    sessions: usize,
    /// Idle TCP connections to hold open.
    #[arg(long, default_value_t = 1_100)]
    idle: usize,
    /// Fuzzed `tools/call`s to send.
    #[arg(long, default_value_t = 2_000)]
    calls: usize,
    /// The longest any one row may take.
    #[arg(long, default_value_t = 30)]
    row_seconds: u64,
}

/// One MCP client session over plain-JSON HTTP.
struct Session {
    http: reqwest::Client,
    url: String,
    id: Option<String>,
    next: u64,
}

impl Session {
    async fn open(http: &reqwest::Client, url: &str) -> anyhow::Result<(Session, reqwest::StatusCode)> {
        let mut s = Session { http: http.clone(), url: url.to_owned(), id: None, next: 1 };
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}});
        let (status, headers, _) =
            s.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})).await?;
        s.id = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        if status.is_success() {
            s.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        }
        Ok((s, status))
    }

    async fn post(
        &mut self,
        body: &Value,
    ) -> anyhow::Result<(reqwest::StatusCode, reqwest::header::HeaderMap, Value)> {
        let mut req = self.http.post(&self.url).header("content-type", "application/json").json(body);
        if let Some(id) = &self.id {
            req = req.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
        }
        let resp = req.send().await?;
        let (status, headers) = (resp.status(), resp.headers().clone());
        let text = resp.text().await?;
        Ok((status, headers, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next += 1;
        let (_, _, v) = self
            .post(&json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}))
            .await?;
        Ok(v)
    }

    async fn close(&self) {
        if let Some(id) = &self.id {
            let _ = self.http.delete(&self.url).header("mcp-session-id", id).send().await;
        }
    }
}

/// A small deterministic generator for fuzzed arguments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn value(&mut self, depth: usize) -> Value {
        match self.below(if depth > 3 { 5 } else { 8 }) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 => json!(self.next() as i64),
            3 => json!("x".repeat(self.below(64) as usize)),
            4 => json!(-0.5),
            5 => Value::Array((0..self.below(4)).map(|_| self.value(depth + 1)).collect()),
            6 => nested(1 + self.below(140) as usize),
            _ => {
                Value::Object((0..self.below(4)).map(|i| (format!("k{i}"), self.value(depth + 1))).collect())
            }
        }
    }
}

fn cut(text: &str) -> String {
    text.chars().take(300).collect()
}

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |v, _| json!([v]))
}

fn loopback(endpoint: &str) -> anyhow::Result<SocketAddr> {
    let url = reqwest::Url::parse(endpoint).context("--endpoint is a URL")?;
    let addr = url.socket_addrs(|| Some(80))?.into_iter().next().context("the endpoint resolves")?;
    if !addr.ip().is_loopback() {
        bail!("soak talks only to loopback addresses; {addr} is not one");
    }
    Ok(addr)
}

async fn sessions_row(cli: &Cli, http: &reqwest::Client) -> String {
    let deadline = Instant::now() + Duration::from_secs(cli.row_seconds);
    let mut open = Vec::new();
    let mut refusal = None;
    while open.len() < cli.sessions && Instant::now() < deadline {
        match Session::open(http, &cli.endpoint).await {
            Ok((s, status)) if status.is_success() => open.push(s),
            Ok((_, status)) => {
                refusal = Some(status);
                break;
            }
            Err(e) => {
                refusal = Some(reqwest::StatusCode::INTERNAL_SERVER_ERROR);
                eprintln!("session {}: {e}", open.len());
                break;
            }
        }
    }
    let n = open.len();
    for s in &open {
        s.close().await;
    }
    match refusal {
        Some(status) => format!("{n} accepted, then refused with HTTP {status}"),
        None => format!("{n} accepted, no refusal within the row's bound"),
    }
}

async fn idle_row(cli: &Cli, addr: SocketAddr, http: &reqwest::Client) -> String {
    let mut idle = Vec::new();
    for _ in 0..cli.idle {
        match TcpStream::connect(addr).await {
            Ok(s) => idle.push(s),
            Err(_) => break,
        }
    }
    let started = Instant::now();
    let served = match tokio::time::timeout(Duration::from_secs(cli.row_seconds), async {
        let (mut s, status) = Session::open(http, &cli.endpoint).await?;
        let tools = s.request("tools/list", json!({})).await?;
        s.close().await;
        anyhow::Ok((status, tools["result"]["tools"].as_array().map_or(0, Vec::len)))
    })
    .await
    {
        Ok(Ok((status, tools))) => format!("HTTP {status}, {tools} tools in {:?}", started.elapsed()),
        Ok(Err(e)) => format!("failed after {:?}: {e}", started.elapsed()),
        Err(_) => format!("not served within {} s", cli.row_seconds),
    };
    format!("{} idle connections open; a new client: {served}", idle.len())
}

async fn slow_headers_row(cli: &Cli, addr: SocketAddr) -> String {
    let Ok(mut s) = TcpStream::connect(addr).await else { return "cannot connect".into() };
    let started = Instant::now();
    let line = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    for b in line.iter().chain(std::iter::repeat(&b'a')) {
        if started.elapsed() > Duration::from_secs(cli.row_seconds) {
            return format!("still held after {} s", cli.row_seconds);
        }
        if s.write_all(&[*b]).await.is_err() || s.flush().await.is_err() {
            return format!("dropped after {:?}", started.elapsed());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    unreachable!("the header never ends")
}

async fn origin_row(cli: &Cli, http: &reqwest::Client) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}}});
    match http.post(&cli.endpoint).header("origin", "http://evil.example").json(&body).send().await {
        Ok(r) => format!("Origin: http://evil.example answered HTTP {}", r.status()),
        Err(e) => format!("failed: {e}"),
    }
}

/// Classify one `tools/call` reply.
fn classify(reply: &Value, id: u64) -> &'static str {
    match (reply.get("result"), reply.get("error"), reply.get("id")) {
        (Some(r), None, Some(i)) if *i == json!(id) && r["isError"] == true => "request error",
        (Some(_), None, Some(i)) if *i == json!(id) => "result",
        (None, Some(e), Some(i)) if *i == json!(id) && e["code"].is_i64() => "JSON-RPC error with its id",
        _ => "invalid reply",
    }
}

async fn fuzz_row(cli: &Cli, http: &reqwest::Client) -> String {
    let Ok((mut s, _)) = Session::open(http, &cli.endpoint).await else {
        return "cannot open a session".into();
    };
    let tools: Vec<String> = match s.request("tools/list", json!({})).await {
        Ok(v) => v["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect(),
        Err(e) => return format!("tools/list failed: {e}"),
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let deadline = Instant::now() + Duration::from_secs(cli.row_seconds);
    for _ in 0..cli.calls {
        if Instant::now() > deadline {
            break;
        }
        let name = tools
            .get(rng.below(tools.len() as u64 + 1) as usize)
            .cloned()
            .unwrap_or_else(|| "no_such_tool".into());
        let args: serde_json::Map<String, Value> =
            (0..rng.below(5)).map(|i| (format!("a{i}"), rng.value(0))).collect();
        let id = s.next + 1;
        let kind = match s.request("tools/call", json!({"name": name, "arguments": args})).await {
            Ok(reply) => {
                let kind = classify(&reply, id);
                if kind == "invalid reply" && counts.get(kind).copied().unwrap_or(0) < 3 {
                    eprintln!("invalid reply to a call of {name}: {}", cut(&reply.to_string()));
                }
                kind
            }
            Err(_) => "transport error",
        };
        *counts.entry(kind).or_default() += 1;
    }
    s.close().await;
    format!("{counts:?}")
}

async fn ping_row(cli: &Cli, http: &reqwest::Client) -> String {
    let flood: Vec<_> = (0..8)
        .map(|_| {
            let (http, url) = (http.clone(), cli.endpoint.clone());
            tokio::spawn(async move {
                let Ok((mut s, _)) = Session::open(&http, &url).await else { return };
                for _ in 0..50 {
                    let _ =
                        s.request("tools/call", json!({"name": "pilotage_manifest", "arguments": {}})).await;
                }
                s.close().await;
            })
        })
        .collect();
    let Ok((mut s, _)) = Session::open(http, &cli.endpoint).await else {
        return "cannot open a session".into();
    };
    let mut took = Vec::new();
    for _ in 0..100 {
        let t = Instant::now();
        if s.request("ping", json!({})).await.is_err() {
            break;
        }
        took.push(t.elapsed());
    }
    s.close().await;
    for f in flood {
        let _ = f.await;
    }
    took.sort();
    let at = |q: f64| took.get(((took.len() as f64 - 1.0) * q) as usize).copied().unwrap_or_default();
    format!("{} pings under load: p50 {:?}, p99 {:?}", took.len(), at(0.5), at(0.99))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let addr = loopback(&cli.endpoint)?;
    // This client holds `--idle` connections open itself.
    let _ = pilotage::transport::raise_nofile_limit();
    let http = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(cli.row_seconds)).build()?;
    println!("| row | figure |\n| --- | --- |");
    println!("| live sessions | {} |", sessions_row(&cli, &http).await);
    println!("| idle connections | {} |", idle_row(&cli, addr, &http).await);
    println!("| headers at 1 byte/s | {} |", slow_headers_row(&cli, addr).await);
    println!("| foreign Origin | {} |", origin_row(&cli, &http).await);
    println!("| fuzzed tools/call | {} |", fuzz_row(&cli, &http).await);
    println!("| ping under load | {} |", ping_row(&cli, &http).await);
    Ok(())
}
