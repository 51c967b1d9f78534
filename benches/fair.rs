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
//! In every round both servers are up side by side and are measured in turn, in short batches
//! (in process) or windows (HTTP) that alternate which side goes first, so a change in the
//! machine's load reaches both sides of a pair alike; a round's ratio is the median of its
//! pairs, and each row reports the median of the rounds' ratios pilotage / hand-written and
//! their range. `FAIR_ROUNDS` (default 3) and `FAIR_SECONDS` (each side's time under load
//! in one HTTP round, default 1.5) tune it; `FAIR_HTTP=0` measures in process only, `FAIR_ONLY=execute` only the paths
//! whose label contains `execute`, and `FAIR_INLINE=1` runs pilotage with
//! `Limits::isolate_validation = false`, `FAIR_CACHE=N` with `Limits::revalidation_cache = N`.
//! `FAIR_ALLOC=mimalloc` runs both sides (and the load generator) on mimalloc instead of the
//! system allocator, and `FAIR_THREADS=1` prints each HTTP window's server CPU per call by
//! thread group (async workers, pilotage's engine threads), with its context switches.
//! `FAIR_PROFILE=pilotage` (or `hand`) runs one side alone
//! in process for `FAIR_SECONDS` (default 5) per path, to run under a profiler. `cargo bench
//! --bench fair`; never a timed assertion.

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

/// The allocator both sides run on: the system's, or mimalloc with `FAIR_ALLOC=mimalloc`
/// (see [`chosen`]).
struct Chosen;

#[global_allocator]
static ALLOCATOR: Chosen = Chosen;

/// 0: not read yet, 1: the system's, 2: mimalloc.
static CHOSEN: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// The allocator chosen for the process, read from the environment at the first allocation
/// without allocating.
fn chosen() -> &'static dyn std::alloc::GlobalAlloc {
    let mut choice = CHOSEN.load(Ordering::Relaxed);
    if choice == 0 {
        // SAFETY: getenv with a NUL-terminated name; no thread of this program changes the
        // environment.
        let value = unsafe { libc::getenv(c"FAIR_ALLOC".as_ptr()) };
        let mimalloc = !value.is_null() && unsafe { std::ffi::CStr::from_ptr(value) } == c"mimalloc";
        choice = if mimalloc { 2 } else { 1 };
        CHOSEN.store(choice, Ordering::Relaxed);
    }
    if choice == 2 {
        &mimalloc::MiMalloc
    } else {
        &std::alloc::System
    }
}

// SAFETY: every call goes to the one allocator chosen once for the whole process.
unsafe impl std::alloc::GlobalAlloc for Chosen {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { chosen().alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { chosen().dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { chosen().alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        unsafe { chosen().realloc(ptr, layout, new_size) }
    }
}

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

/// The pilotage side with default settings, validating inline with `FAIR_INLINE=1`, keeping
/// `FAIR_CACHE` verdicts per session (so every execute after the first re-validates by a
/// look-up: the workload runs one program over and over).
fn pilotage_server() -> Server {
    let limits = Limits {
        isolate_validation: env_or("FAIR_INLINE", 0) == 0,
        revalidation_cache: env_or("FAIR_CACHE", 0),
        ..Limits::default()
    };
    Server::builder().language(|| Steps).limits(limits).build().expect("the bench server")
}

// ---- in process -----------------------------------------------------------------------------

/// One in-process client of one side's server, speaking through `serve_lines`.
struct Pipe {
    writer: tokio::io::DuplexStream,
    reader: tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    line: String,
}

impl Pipe {
    /// A fresh server of `side` behind `serve_lines`, initialized, whose calls are all `path`.
    async fn open(side: Side, path: Path) -> Pipe {
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
        Pipe::connect(client_out, client_in, path, side.name()).await
    }

    /// The hand-written server on rmcp's own stdio transport (its newline-delimited JSON
    /// codec), as a server written directly on rmcp ships.
    async fn shipped(path: Path) -> Pipe {
        use rmcp::ServiceExt;
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            if let Ok(running) = HandWritten::new().serve((server_in, server_out)).await {
                let _ = running.waiting().await;
            }
        });
        Pipe::connect(client_out, client_in, path, "hand on rmcp's transport").await
    }

    async fn connect(
        client_out: tokio::io::DuplexStream,
        client_in: tokio::io::DuplexStream,
        path: Path,
        name: &str,
    ) -> Pipe {
        let mut pipe = Pipe {
            writer: client_out,
            reader: BufReader::new(client_in).lines(),
            line: format!("{}\n", call(1, path)),
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                          "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        for m in [init, initialized] {
            pipe.writer.write_all(format!("{m}\n").as_bytes()).await.expect("write");
        }
        pipe.reader.next_line().await.expect("read").expect("initialize reply");
        if env_or("FAIR_DUMP", 0) == 1 {
            let reply = pipe.call().await;
            eprintln!("{name} {}: {} bytes: {}", path.label, reply.len(), &reply[..reply.len().min(700)]);
        }
        pipe
    }

    async fn call(&mut self) -> String {
        self.writer.write_all(self.line.as_bytes()).await.expect("write");
        self.reader.next_line().await.expect("read").expect("reply")
    }

    /// Seconds per call over `calls` sequential calls.
    async fn time(&mut self, calls: u64) -> f64 {
        let start = Instant::now();
        for _ in 0..calls {
            check(&self.call().await);
        }
        start.elapsed().as_secs_f64() / calls as f64
    }
}

/// Medians of one in-process round: pilotage's time over the hand-written server's, and over
/// the hand-written server on rmcp's own transport; the times per call of all three.
struct Round {
    ratio: f64,
    shipped_ratio: f64,
    times: [f64; 3],
}

/// One round in process: the servers side by side, timed in `batches` short batches of
/// `calls` each that rotate which side goes first, so a change in the machine's load reaches
/// every side of a batch alike.
async fn in_process_round(path: Path, batches: usize, calls: u64) -> Round {
    let mut pipes = [
        Pipe::open(Side::Pilotage, path).await,
        Pipe::open(Side::HandWritten, path).await,
        Pipe::shipped(path).await,
    ];
    // Warm all up: allocator arenas, engine threads, caches.
    for pipe in &mut pipes {
        pipe.time(calls).await;
    }
    let (mut ratios, mut shipped, mut times) = (Vec::new(), Vec::new(), [vec![], vec![], vec![]]);
    for b in 0..batches {
        let mut t = [0.0; 3];
        for i in 0..3 {
            let side = (b + i) % 3;
            t[side] = pipes[side].time(calls).await;
        }
        ratios.push(t[0] / t[1]);
        shipped.push(t[0] / t[2]);
        for (all, one) in times.iter_mut().zip(t) {
            all.push(one);
        }
    }
    let [p, h, r] = times.map(|t| spread(t).0);
    Round { ratio: spread(ratios).0, shipped_ratio: spread(shipped).0, times: [p, h, r] }
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

/// One thread's (or one group of threads') CPU seconds and context switches.
#[derive(Clone, Copy, Default)]
struct ThreadUse {
    cpu: f64,
    voluntary: f64,
    involuntary: f64,
}

impl ThreadUse {
    /// What was used between `before` and `self`, added to `self` (for groups).
    fn add_since(&mut self, now: ThreadUse, before: ThreadUse) {
        self.cpu += now.cpu - before.cpu;
        self.voluntary += now.voluntary - before.voluntary;
        self.involuntary += now.involuntary - before.involuntary;
    }
}

/// Each thread of a process by id: its name and use so far.
type Threads = std::collections::HashMap<String, (String, ThreadUse)>;

/// The threads of process `pid` (Linux; none elsewhere).
fn thread_stats(pid: u32) -> Threads {
    let mut threads = Threads::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default().trim().to_owned();
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        let field = |key: &str| {
            let line = status.lines().find(|l| l.starts_with(key));
            line.and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok()).unwrap_or(0.0)
        };
        let used = ThreadUse {
            cpu: cpu_seconds(&path.join("stat").to_string_lossy()),
            voluntary: field("voluntary_ctxt_switches"),
            involuntary: field("nonvoluntary_ctxt_switches"),
        };
        threads.insert(entry.file_name().to_string_lossy().into_owned(), (name, used));
    }
    threads
}

/// Per call between two [`thread_stats`]: CPU and context switches of each group of threads
/// named alike (digits dropped), with the group's size.
fn thread_groups(before: &Threads, after: &Threads, calls: f64) -> String {
    let mut groups: std::collections::BTreeMap<String, (ThreadUse, usize)> = Default::default();
    for (tid, (name, now)) in after {
        let then = before.get(tid).map_or_else(ThreadUse::default, |t| t.1);
        let group = groups.entry(name.chars().filter(|c| !c.is_ascii_digit()).collect()).or_default();
        group.0.add_since(*now, then);
        group.1 += 1;
    }
    let per = |x: f64| x / calls.max(1.0);
    let shown = groups.iter().filter(|(_, (used, _))| used.cpu > 0.0 || used.voluntary > 0.0);
    let parts: Vec<String> = shown
        .map(|(name, (u, n))| {
            let (cpu, voluntary, involuntary) = (per(u.cpu) * 1e6, per(u.voluntary), per(u.involuntary));
            format!("{name} x{n}: {cpu:.0} µs, {voluntary:.2} + {involuntary:.2} switches")
        })
        .collect();
    parts.join(" | ")
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

/// One side's server in its child process, with `clients` sessions open on it.
struct Loaded {
    child: Child,
    sessions: Vec<Arc<Session>>,
}

impl Loaded {
    async fn start(side: Side, clients: usize, sse: bool, body: &str) -> Loaded {
        let child = Child::start(side);
        let mut sessions = Vec::new();
        for _ in 0..clients {
            let session = Session::open(&child.url, sse).await;
            // Warm up every session once.
            check(&session.post(body).await);
            sessions.push(Arc::new(session));
        }
        Loaded { child, sessions }
    }

    /// Calls per second of every session calling for `seconds`, and the CPU seconds the load
    /// generator and the server spent meanwhile.
    async fn load(&self, body: &Arc<String>, seconds: f64) -> (f64, f64, f64) {
        let (stop, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (own0, server0) = (cpu_seconds("/proc/self/stat"), self.child.cpu_seconds());
        let threads0 = (env_or("FAIR_THREADS", 0) == 1).then(|| thread_stats(self.child.child.id()));
        let start = Instant::now();
        let tasks: Vec<_> = self
            .sessions
            .iter()
            .map(|s| {
                let (s, stop, done, body) = (s.clone(), stop.clone(), done.clone(), body.clone());
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
        let (own, server) = (cpu_seconds("/proc/self/stat") - own0, self.child.cpu_seconds() - server0);
        let calls = done.load(Ordering::Relaxed) as f64;
        if let Some(threads0) = threads0 {
            let groups = thread_groups(&threads0, &thread_stats(self.child.child.id()), calls);
            eprintln!(
                "server {}: {:.0} calls/s, {:.0} µs CPU per call | {groups}",
                self.child.child.id(),
                calls / elapsed,
                server * 1e6 / calls
            );
        }
        (calls / elapsed, own, server)
    }
}

/// Windows per side in one HTTP round.
const WINDOWS: usize = 4;

/// One HTTP round: both servers up with their sessions open, loaded in turn for `WINDOWS` short
/// windows each (alternating which goes first), so that a change in the machine's load reaches
/// both alike. Pilotage's throughput over the hand-written server's, and the load generator's
/// share of the CPU.
async fn http_round(path: Path, clients: usize, sse: bool, seconds: f64) -> (f64, f64) {
    let body = Arc::new(call(1, path).to_string());
    let ours = Loaded::start(Side::Pilotage, clients, sse, &body).await;
    let theirs = Loaded::start(Side::HandWritten, clients, sse, &body).await;
    let window = seconds / WINDOWS as f64;
    let (mut ratios, mut own, mut all) = (Vec::new(), 0.0, 0.0);
    for w in 0..WINDOWS {
        let (p, h) = if w % 2 == 0 {
            let h = theirs.load(&body, window).await;
            (ours.load(&body, window).await, h)
        } else {
            let p = ours.load(&body, window).await;
            (p, theirs.load(&body, window).await)
        };
        // Throughput ratio: above 1 means pilotage serves more calls per second.
        ratios.push(p.0 / h.0);
        own += p.1 + h.1;
        all += p.1 + h.1 + p.2 + h.2;
    }
    (spread(ratios).0, own / all.max(1e-9))
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
        // Batches of about 10 ms of the hand-written server's time, in every round.
        let (batches, calls) = if path.steps == 1 { (20, 100) } else { (20, 4) };
        let mut measured: Vec<Round> = Vec::new();
        for _ in 0..rounds {
            measured.push(in_process_round(path, batches, calls).await);
        }
        let (median, low, high) = spread(measured.iter().map(|r| r.ratio).collect());
        let (shipped, s_low, s_high) = spread(measured.iter().map(|r| r.shipped_ratio).collect());
        let [ours, theirs, rmcp] =
            [0, 1, 2].map(|i| spread(measured.iter().map(|r| r.times[i] * 1e6).collect()).0);
        println!(
            "| {} | in process, time per call ({ours:.0} µs / {theirs:.0} µs) | {median:.2} | {low:.2}-{high:.2} | - |",
            path.label
        );
        println!(
            "| {} | in process, against the hand-written server on rmcp's own transport ({rmcp:.0} µs) | {shipped:.2} | {s_low:.2}-{s_high:.2} | - |",
            path.label
        );
        if !http {
            continue;
        }
        for (sse, accept) in [(true, "SSE"), (false, "plain JSON")] {
            for clients in [1, 8, 64] {
                let (mut ratios, mut shares) = (Vec::new(), Vec::new());
                for _ in 0..rounds {
                    let (ratio, share) = http_round(path, clients, sse, seconds).await;
                    ratios.push(ratio);
                    shares.push(share);
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

/// One side alone, in process, on the paths `FAIR_ONLY` picks, for `FAIR_SECONDS` each (or
/// `FAIR_CALLS` calls): a workload to run under a profiler.
async fn profile(side: Side) {
    let seconds: f64 = env_or("FAIR_SECONDS", 5.0);
    let only: String = env_or("FAIR_ONLY", String::new());
    for path in PATHS.into_iter().filter(|p| p.label.contains(only.as_str())) {
        let mut pipe = Pipe::open(side, path).await;
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
    match std::env::var("FAIR_SERVE").as_deref() {
        Ok("pilotage") => runtime.block_on(serve_child(Side::Pilotage)),
        Ok("hand") => runtime.block_on(serve_child(Side::HandWritten)),
        _ => match std::env::var("FAIR_PROFILE").as_deref() {
            Ok("pilotage") => runtime.block_on(profile(Side::Pilotage)),
            Ok("hand") => runtime.block_on(profile(Side::HandWritten)),
            _ => runtime.block_on(bench()),
        },
    }
}
