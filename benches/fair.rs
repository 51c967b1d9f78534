//! pilotage against a hand-written rmcp server doing the same work, through the same transports.
//!
//! Both sides serve one Language of numbered steps (`{"steps": [{"id", "op", "args"}]}`): the
//! validate tool checks every step's `op` and plans one step each, the execute tool runs every
//! step and returns the output with its full trace. The hand-written side is an rmcp
//! `ServerHandler` that does what pilotage does per call: it checks the arguments against its
//! advertised input schema (the same `jsonschema` check), validates with the same rules, builds
//! its results from typed serde structs and answers with `structuredContent` and a short text.
//!
//! Both are driven through pilotage's own transports, so the difference is the framework:
//! - in process: newline-delimited JSON-RPC over a duplex pipe through `serve_lines`, one call
//!   at a time;
//! - HTTP: each server in a child process behind `serve_listener` (the same edge, rmcp's
//!   Streamable HTTP sessions) on 127.0.0.1, loaded by 1, 8 and 64 concurrent Rust clients
//!   with SSE and with plain-JSON `Accept` headers, for a fixed time; the load generator's own
//!   CPU share and the server's are reported.
//!
//! Rounds alternate the two sides; each row reports the median ratio pilotage / hand-written
//! and its range. `FAIR_ROUNDS` (default 3) and `FAIR_SECONDS` (per HTTP measurement, default
//! 1.5) tune it; `FAIR_HTTP=0` measures in process only, `FAIR_ONLY=execute` only the paths
//! whose label contains `execute`, and `FAIR_INLINE=1` runs pilotage with
//! `Limits::isolate_validation = false`. `cargo bench --bench fair`; never a timed assertion.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pilotage::prelude::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Clone, Copy, pilotage::Codes)]
enum StepCode {
    UnknownOp,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum StepRisk {
    #[risk(read_only)]
    Safe,
}

/// The engine both sides run.
struct Steps;

fn steps(program: &Json) -> &[Json] {
    program["steps"].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn sum(step: &Json) -> f64 {
    step["args"].as_array().into_iter().flatten().filter_map(Json::as_f64).sum()
}

#[pilotage::language(
    name = "steps/v1", title = "Numbered steps", program = "steps", locator = "json-pointer",
    capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
    retention = "none", guides = "examples/calc/guides", codes = StepCode, risk = StepRisk,
)]
impl Steps {
    #[loop_tool(validate, name = "validate_steps")]
    fn validate(&self, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
        for (i, step) in steps(program).iter().enumerate() {
            let id = step["id"].as_str().unwrap_or("step");
            if !matches!(step["op"].as_str(), Some("add" | "mul")) {
                v.error(StepCode::UnknownOp, format!("/steps/{i}/op"), "only `add` and `mul` exist");
            }
            v.step(id, StepRisk::Safe);
        }
    }

    #[loop_tool(execute, name = "run_steps", no_input)]
    async fn run(&self, program: &Json, run: &mut Run) -> Finish {
        let all = steps(program);
        for step in all {
            let id = step["id"].as_str().unwrap_or("step");
            run.step(id).input(step["args"].clone()).output(json!(sum(step))).succeeded();
        }
        Finish::output(json!({ "count": all.len() }))
    }
}

// ---- the hand-written server ----------------------------------------------------------------

#[derive(Serialize)]
struct Hints {
    #[serde(rename = "readOnly")]
    read_only: bool,
    destructive: bool,
    #[serde(rename = "openWorld")]
    open_world: bool,
}

const SAFE: Hints = Hints { read_only: true, destructive: false, open_world: false };

#[derive(Serialize)]
struct Diagnostic {
    severity: &'static str,
    code: &'static str,
    path: String,
    message: &'static str,
}

#[derive(Serialize)]
struct PlanStep<'a> {
    id: &'a str,
    risk: &'static str,
    risk_hints: &'static Hints,
}

#[derive(Serialize)]
struct Plan<'a> {
    steps: Vec<PlanStep<'a>>,
    max_risk: &'static str,
    max_risk_hints: &'static Hints,
}

#[derive(Serialize)]
struct Validated<'a> {
    valid: bool,
    diagnostics: Vec<Diagnostic>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<Plan<'a>>,
}

/// An outcome as the specification writes it.
#[derive(Serialize)]
struct Outcome {
    ok: bool,
    status: &'static str,
    error: Option<String>,
}

const SUCCESS: Outcome = Outcome { ok: true, status: "success", error: None };

#[derive(Serialize)]
struct TraceStep<'a> {
    id: &'a str,
    input: &'a Json,
    output: f64,
    outcome: &'static Outcome,
    t_ms: u64,
}

#[derive(Serialize)]
struct Trace<'a> {
    run_id: &'a str,
    level: &'static str,
    steps: Vec<TraceStep<'a>>,
}

#[derive(Serialize)]
struct Executed<'a> {
    run_id: &'a str,
    outcome: &'static Outcome,
    output: Json,
    trace: Trace<'a>,
}

/// The same two tools written directly on rmcp.
#[derive(Clone)]
struct HandWritten {
    schema: Arc<jsonschema::Validator>,
    runs: Arc<AtomicU64>,
}

impl HandWritten {
    fn new() -> Self {
        let schema =
            json!({"type": "object", "properties": {"steps": {"type": "object"}}, "required": ["steps"]});
        let schema = Arc::new(jsonschema::validator_for(&schema).expect("a valid schema"));
        HandWritten { schema, runs: Arc::default() }
    }

    fn validate(program: &Json) -> Validated<'_> {
        let mut diagnostics = Vec::new();
        let mut plan = Vec::new();
        for (i, step) in steps(program).iter().enumerate() {
            if !matches!(step["op"].as_str(), Some("add" | "mul")) {
                let path = format!("/steps/{i}/op");
                let message = "only `add` and `mul` exist";
                diagnostics.push(Diagnostic { severity: "error", code: "unknown_op", path, message });
            }
            let id = step["id"].as_str().unwrap_or("step");
            plan.push(PlanStep { id, risk: "safe", risk_hints: &SAFE });
        }
        let valid = diagnostics.is_empty();
        let plan = valid.then_some(Plan { steps: plan, max_risk: "safe", max_risk_hints: &SAFE });
        Validated { valid, diagnostics, plan }
    }

    fn execute(&self, program: &Json) -> Result<Json, Json> {
        let verdict = Self::validate(program);
        if !verdict.valid {
            return Err(serde_json::to_value(&verdict).unwrap_or_default());
        }
        let run_id = format!("run_{:016x}", self.runs.fetch_add(1, Ordering::Relaxed));
        let all = steps(program);
        let steps = all
            .iter()
            .map(|s| {
                let started = Instant::now();
                let output = sum(s);
                let t_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                TraceStep {
                    id: s["id"].as_str().unwrap_or("step"),
                    input: &s["args"],
                    output,
                    outcome: &SUCCESS,
                    t_ms,
                }
            })
            .collect();
        let executed = Executed {
            run_id: &run_id,
            outcome: &SUCCESS,
            output: json!({"count": all.len()}),
            trace: Trace { run_id: &run_id, level: "full", steps },
        };
        Ok(serde_json::to_value(&executed).unwrap_or_default())
    }
}

fn tool(name: &str, schema: &Json) -> Tool {
    let mut tool = Tool::default();
    tool.name = name.to_owned().into();
    tool.input_schema = Arc::new(schema.as_object().cloned().unwrap_or_default());
    tool
}

fn answer(structured: Json, text: &str, is_error: bool) -> CallToolResponse {
    let content = vec![ContentBlock::text(text)];
    let mut r = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    r.structured_content = Some(structured);
    r.into()
}

impl ServerHandler for HandWritten {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema =
            json!({"type": "object", "properties": {"steps": {"type": "object"}}, "required": ["steps"]});
        Ok(ListToolsResult::with_all_items(vec![tool("validate_steps", &schema), tool("run_steps", &schema)]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Json::Object(request.arguments.unwrap_or_default());
        if let Some(fault) = self.schema.iter_errors(&arguments).next() {
            return Err(ErrorData::invalid_params(format!("Invalid arguments: {fault}"), None));
        }
        let program = &arguments["steps"];
        match &*request.name {
            "validate_steps" => {
                let verdict = Self::validate(program);
                let text = if verdict.valid { "valid" } else { "invalid" };
                Ok(answer(serde_json::to_value(&verdict).unwrap_or_default(), text, false))
            }
            "run_steps" => match self.execute(program) {
                Ok(executed) => Ok(answer(executed, "success", false)),
                Err(refused) => Ok(answer(refused, "validation_error", false)),
            },
            other => Err(ErrorData::invalid_params(format!("Unknown tool: {other}"), None)),
        }
    }
}

// ---- the workload ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Pilotage,
    HandWritten,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Pilotage => "pilotage",
            Side::HandWritten => "hand",
        }
    }
}

#[derive(Clone, Copy)]
struct Path {
    label: &'static str,
    tool: &'static str,
    steps: usize,
}

const PATHS: [Path; 3] = [
    Path { label: "trivial validate", tool: "validate_steps", steps: 1 },
    Path { label: "500-step validate", tool: "validate_steps", steps: 500 },
    Path { label: "500-step execute", tool: "run_steps", steps: 500 },
];

fn arguments(path: Path) -> Json {
    let steps: Vec<Json> =
        (0..path.steps).map(|i| json!({"id": format!("s{i}"), "op": "add", "args": [i, 2]})).collect();
    json!({"steps": {"steps": steps}})
}

fn call(id: u64, path: Path) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": path.tool, "arguments": arguments(path)}})
}

/// The pilotage side with default settings, or validating inline with `FAIR_INLINE=1`.
fn pilotage_server() -> Server {
    let limits = Limits { isolate_validation: env_or("FAIR_INLINE", 0) == 0, ..Limits::default() };
    Server::builder().language(|| Steps).limits(limits).build().expect("the bench server")
}

// ---- in process -----------------------------------------------------------------------------

/// Seconds per call for `calls` sequential calls of `path` through `serve_lines`.
async fn in_process(side: Side, path: Path, calls: u64) -> f64 {
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    match side {
        Side::Pilotage => {
            let handler = pilotage_server().handler();
            tokio::spawn(pilotage::transport::serve_lines(handler, server_in, server_out));
        }
        Side::HandWritten => {
            tokio::spawn(pilotage::transport::serve_lines(HandWritten::new(), server_in, server_out));
        }
    }
    let mut writer = client_out;
    let mut reader = BufReader::new(client_in).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                      "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    for m in [init, initialized] {
        writer.write_all(format!("{m}\n").as_bytes()).await.expect("write");
    }
    reader.next_line().await.expect("read").expect("initialize reply");
    let line = format!("{}\n", call(1, path));
    if env_or("FAIR_DUMP", 0) == 1 {
        writer.write_all(line.as_bytes()).await.expect("write");
        let reply = reader.next_line().await.expect("read").expect("reply");
        eprintln!(
            "{} {}: {} bytes: {}",
            side.name(),
            path.label,
            reply.len(),
            &reply[..reply.len().min(700)]
        );
    }
    let start = Instant::now();
    for _ in 0..calls {
        writer.write_all(line.as_bytes()).await.expect("write");
        let reply = reader.next_line().await.expect("read").expect("reply");
        check(&reply);
    }
    start.elapsed().as_secs_f64() / calls as f64
}

fn check(reply: &str) {
    assert!(
        reply.contains("\"structuredContent\"") && !reply.contains("\"isError\":true"),
        "unexpected reply: {}",
        &reply[..reply.len().min(400)]
    );
}

// ---- HTTP -----------------------------------------------------------------------------------

/// The child: serve `side` on an ephemeral 127.0.0.1 port, print it, serve until killed.
async fn serve_child(side: Side) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    println!("{}", listener.local_addr().expect("addr").port());
    let never = std::future::pending::<()>();
    let served = match side {
        Side::Pilotage => {
            let server = pilotage_server();
            pilotage::transport::serve_listener(
                move || server.handler(),
                listener,
                HttpOptions::default(),
                never,
            )
            .await
        }
        Side::HandWritten => {
            pilotage::transport::serve_listener(HandWritten::new, listener, HttpOptions::default(), never)
                .await
        }
    };
    served.expect("serve");
}

struct Child {
    child: std::process::Child,
    url: String,
}

impl Child {
    fn start(side: Side) -> Child {
        use std::io::BufRead;
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .env("FAIR_SERVE", side.name())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the server");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufReader::new(stdout).read_line(&mut line).expect("the port");
        Child { child, url: format!("http://127.0.0.1:{}/mcp", line.trim()) }
    }

    fn cpu_seconds(&self) -> f64 {
        cpu_seconds(&format!("/proc/{}/stat", self.child.id()))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User plus system CPU seconds from a `/proc/.../stat` file (Linux; 0 elsewhere).
fn cpu_seconds(stat: &str) -> f64 {
    let text = std::fs::read_to_string(stat).unwrap_or_default();
    let fields: Vec<&str> = text.rsplit(')').next().unwrap_or_default().split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // After the command: state is field 0, utime 11, stime 12 (clock ticks of 1/100 s).
    (ticks(11) + ticks(12)) / 100.0
}

/// One MCP session over HTTP.
struct Session {
    http: reqwest::Client,
    url: String,
    session: String,
    sse: bool,
}

impl Session {
    async fn open(url: &str, sse: bool) -> Session {
        let http = reqwest::Client::builder().tcp_nodelay(true).build().expect("client");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                          "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let response = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init.to_string())
            .send()
            .await
            .expect("initialize");
        let session = response.headers()["mcp-session-id"].to_str().expect("session id").to_owned();
        let _ = response.bytes().await;
        let s = Session { http, url: url.to_owned(), session, sse };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        s.post(&initialized.to_string()).await;
        s
    }

    async fn post(&self, body: &str) -> String {
        let accept = if self.sse { "application/json, text/event-stream" } else { "application/json" };
        let response = self
            .http
            .post(&self.url)
            .header("accept", accept)
            .header("content-type", "application/json")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_owned())
            .send()
            .await
            .expect("post");
        response.text().await.expect("body")
    }
}

/// Calls per second of `clients` concurrent sessions calling `path` for `seconds`, and the
/// CPU seconds the load generator and the server spent meanwhile.
async fn http_load(side: Side, path: Path, clients: usize, sse: bool, seconds: f64) -> (f64, f64, f64) {
    let child = Child::start(side);
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(Session::open(&child.url, sse).await);
    }
    let body = Arc::new(call(1, path).to_string());
    // Warm up every session once.
    for s in &sessions {
        check(&s.post(&body).await);
    }
    let (stop, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let (own0, server0) = (cpu_seconds("/proc/self/stat"), child.cpu_seconds());
    let start = Instant::now();
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|s| {
            let (stop, done, body) = (stop.clone(), done.clone(), body.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    check(&s.post(&body).await);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (own, server) = (cpu_seconds("/proc/self/stat") - own0, child.cpu_seconds() - server0);
    (done.load(Ordering::Relaxed) as f64 / elapsed, own, server)
}

// ---- reporting ------------------------------------------------------------------------------

/// Median and range of `values`.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn bench() {
    let rounds: usize = env_or("FAIR_ROUNDS", 3);
    let seconds: f64 = env_or("FAIR_SECONDS", 1.5);
    let http = env_or("FAIR_HTTP", 1) != 0;
    println!("| path | transport | pilotage / hand-written | range | load generator CPU share |");
    println!("| --- | --- | --- | --- | --- |");
    let only: String = env_or("FAIR_ONLY", String::new());
    for path in PATHS.into_iter().filter(|p| p.label.contains(only.as_str())) {
        let calls = if path.steps == 1 { 2_000 } else { 200 };
        let (mut ratios, mut times) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let theirs = in_process(Side::HandWritten, path, calls).await;
            let ours = in_process(Side::Pilotage, path, calls).await;
            ratios.push(ours / theirs);
            times.push((ours, theirs));
        }
        let (median, low, high) = spread(ratios);
        let (ours, _, _) = spread(times.iter().map(|t| t.0 * 1e6).collect());
        let (theirs, _, _) = spread(times.iter().map(|t| t.1 * 1e6).collect());
        println!(
            "| {} | in process, time per call ({ours:.0} µs / {theirs:.0} µs) | {median:.2} | {low:.2}-{high:.2} | - |",
            path.label
        );
        if !http {
            continue;
        }
        for (sse, accept) in [(true, "SSE"), (false, "plain JSON")] {
            for clients in [1, 8, 64] {
                let (mut ratios, mut shares) = (Vec::new(), Vec::new());
                for _ in 0..rounds {
                    let (theirs, own_h, server_h) =
                        http_load(Side::HandWritten, path, clients, sse, seconds).await;
                    let (ours, own_p, server_p) =
                        http_load(Side::Pilotage, path, clients, sse, seconds).await;
                    // Throughput ratio: above 1 means pilotage serves more calls per second.
                    ratios.push(ours / theirs);
                    shares.push((own_h + own_p) / (own_h + own_p + server_h + server_p).max(1e-9));
                }
                let (median, low, high) = spread(ratios);
                let (share, _, _) = spread(shares);
                println!(
                    "| {} | HTTP {accept}, {clients} client(s), throughput | {median:.2} | {low:.2}-{high:.2} | {:.0}% |",
                    path.label,
                    share * 100.0
                );
            }
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    match std::env::var("FAIR_SERVE").as_deref() {
        Ok("pilotage") => runtime.block_on(serve_child(Side::Pilotage)),
        Ok("hand") => runtime.block_on(serve_child(Side::HandWritten)),
        _ => runtime.block_on(bench()),
    }
}
