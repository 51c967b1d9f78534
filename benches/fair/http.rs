//! Over HTTP: each server in a child process behind `serve_listener` (the same edge, rmcp's
//! Streamable HTTP sessions) on 127.0.0.1, loaded by concurrent Rust clients with SSE or
//! plain-JSON `Accept` headers for a fixed time; the load generator's CPU share is reported.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pilotage::prelude::*;
use pilotage::transport::serve_listener;

use crate::hand::Hand;
use crate::sql::SqlWork;
use crate::steps::StepsWork;
use crate::{call, check, env_or, spread, Path, Side, Workload, SIDES};

/// The child: serve `side` of `path` on an ephemeral 127.0.0.1 port, print it, serve until
/// killed.
pub async fn serve_child(side: Side, path: Path) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    println!("{}", listener.local_addr().expect("addr").port());
    let never = std::future::pending::<()>();
    let options = HttpOptions::default();
    let served = match (side, path.workload) {
        (Side::Pilotage, _) => {
            let server = crate::pilotage_server(path);
            serve_listener(move || server.handler(), listener, options, never).await
        }
        (_, Workload::Sql) => {
            let careful = side == Side::Careful;
            serve_listener(move || Hand::new(SqlWork::default(), careful), listener, options, never).await
        }
        (_, Workload::Steps { .. }) => {
            let careful = side == Side::Careful;
            serve_listener(move || Hand::new(StepsWork::default(), careful), listener, options, never).await
        }
    };
    served.expect("serve");
}

struct Child {
    child: std::process::Child,
    url: String,
}

impl Child {
    fn start(side: Side, path: Path) -> Child {
        use std::io::BufRead;
        let mut child = std::process::Command::new(crate::own_exe())
            .env("FAIR_SERVE", side.name())
            .env("FAIR_PATH", path.label)
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
    async fn start(side: Side, path: Path, clients: usize, sse: bool, body: &str) -> Loaded {
        let child = Child::start(side, path);
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

/// Windows per side in one HTTP round: each side goes first once.
const WINDOWS: usize = 3;

/// One HTTP round: the three servers up with their sessions open, loaded in turn for `WINDOWS`
/// short windows each (rotating which goes first), so that a change in the machine's load
/// reaches all alike. Pilotage's throughput over the naive and over the careful server's (the
/// medians of the windows), and the load generator's share of the CPU.
pub async fn round(path: Path, clients: usize, sse: bool, seconds: f64) -> ([f64; 2], f64) {
    let body = Arc::new(call(1, path).to_string());
    let mut loaded = Vec::new();
    for side in SIDES {
        loaded.push(Loaded::start(side, path, clients, sse, &body).await);
    }
    let window = seconds / WINDOWS as f64;
    let (mut naive, mut careful, mut own, mut all) = (Vec::new(), Vec::new(), 0.0, 0.0);
    for w in 0..WINDOWS {
        let mut got = [(0.0, 0.0, 0.0); 3];
        for i in 0..3 {
            let side = (w + i) % 3;
            got[side] = loaded[side].load(&body, window).await;
        }
        // Throughput ratios: above 1 means pilotage serves more calls per second.
        naive.push(got[0].0 / got[1].0);
        careful.push(got[0].0 / got[2].0);
        for (_, generator, server) in got {
            own += generator;
            all += generator + server;
        }
    }
    ([spread(naive).0, spread(careful).0], own / all.max(1e-9))
}
