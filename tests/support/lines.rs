//! Newline-delimited JSON-RPC: the server in-process over `tokio::io::duplex`, or an example
//! binary as a child process over its stdin/stdout.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::TIMEOUT;

type Reader = tokio::io::Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>;

/// Aborts a spawned task when dropped.
pub(crate) struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What keeps the other end alive: a server task or a child process (killed on drop).
enum Peer {
    Task(AbortOnDrop),
    Child { _child: tokio::process::Child, stderr: Arc<Mutex<String>> },
}

/// One newline-delimited JSON-RPC connection.
pub(crate) struct Lines {
    write: Box<dyn AsyncWrite + Unpin + Send>,
    read: Reader,
    peer: Peer,
    /// Server-to-client messages that were not the awaited response (notifications, requests).
    pub others: Vec<Value>,
}

impl Lines {
    /// Serve `server` in-process with `serve_lines` over a pair of duplex pipes.
    pub fn duplex(server: &pilotage::Server) -> Lines {
        Lines::duplex_handler(server.handler())
    }

    /// Serve `handler` (a server's own, or one wrapping it) in-process with `serve_lines` over
    /// a pair of duplex pipes.
    pub fn duplex_handler(handler: impl rmcp::ServerHandler) -> Lines {
        let (client_write, server_read) = tokio::io::duplex(1 << 20);
        let (server_write, client_read) = tokio::io::duplex(1 << 20);
        let task = tokio::spawn(async move {
            if let Err(e) = pilotage::transport::serve_lines(handler, server_read, server_write).await {
                eprintln!("serve_lines ended with an error: {e}");
            }
        });
        Lines {
            write: Box::new(client_write),
            read: BufReader::new(Box::new(client_read) as Box<dyn AsyncRead + Unpin + Send>).lines(),
            peer: Peer::Task(AbortOnDrop(task)),
            others: Vec::new(),
        }
    }

    /// Spawn the example binary `name` with `args`, talking over its stdin/stdout; each
    /// `(variable, value)` of `env` is set, or removed when the value is `None`.
    pub fn stdio(name: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Lines {
        let path = example_binary(name);
        let mut command = tokio::process::Command::new(&path);
        for (variable, value) in env {
            match value {
                Some(v) => command.env(variable, v),
                None => command.env_remove(variable),
            };
        }
        let mut child = command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", path.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr_pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Lines {
            write: Box::new(stdin),
            read: BufReader::new(Box::new(stdout) as Box<dyn AsyncRead + Unpin + Send>).lines(),
            peer: Peer::Child { _child: child, stderr },
            others: Vec::new(),
        }
    }

    /// What the child process wrote to stderr so far (empty in-process).
    pub fn stderr(&self) -> String {
        match &self.peer {
            Peer::Child { stderr, .. } => stderr.lock().unwrap().clone(),
            Peer::Task(_) => String::new(),
        }
    }

    /// Write `text` and a newline.
    pub async fn send(&mut self, text: &str) {
        assert!(!text.contains('\n'), "a newline-delimited message cannot contain a newline: {text}");
        let written = async {
            self.write.write_all(text.as_bytes()).await?;
            self.write.write_all(b"\n").await?;
            self.write.flush().await
        };
        if let Err(e) = written.await {
            panic!("cannot write to the server: {e}\nserver stderr:\n{}", self.stderr());
        }
    }

    /// Read messages until one satisfies `wanted`, which is returned (the others are kept in
    /// `others`, and so is the one returned).
    pub async fn receive_where(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = match tokio::time::timeout(TIMEOUT, self.read.next_line()).await {
                Ok(Ok(Some(line))) => line,
                other => panic!(
                    "no awaited message within {TIMEOUT:?} ({other:?})\nserver stderr:\n{}",
                    self.stderr()
                ),
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line}"));
            self.others.push(message.clone());
            if wanted(&message) {
                return message;
            }
        }
    }

    /// Read messages until a response (a message with `id` and `result` or `error`, no
    /// `method`) whose id is `id` (any id when `None`); other messages are kept in `others`.
    pub async fn receive(&mut self, id: Option<&Value>) -> Value {
        loop {
            let line = match tokio::time::timeout(TIMEOUT, self.read.next_line()).await {
                Err(_) => panic!(
                    "no response (awaited id {id:?}) within {TIMEOUT:?}\nserver stderr:\n{}",
                    self.stderr()
                ),
                Ok(Err(e)) => panic!("cannot read from the server: {e}\nserver stderr:\n{}", self.stderr()),
                Ok(Ok(None)) => panic!(
                    "the server closed its output while a response (id {id:?}) was awaited\nserver stderr:\n{}",
                    self.stderr()
                ),
                Ok(Ok(Some(line))) => line,
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line}"));
            let is_response = message.get("method").is_none()
                && message.get("id").is_some()
                && (message.get("result").is_some() || message.get("error").is_some());
            if is_response && id.is_none_or(|id| &message["id"] == id) {
                return message;
            }
            self.others.push(message);
        }
    }
}

/// The example binary `name` of this build (`target/<profile>/examples/<name>`), built once
/// per test process with `cargo build --example <name>` so it is never stale (`cargo test
/// --test it` alone does not build examples).
pub fn example_binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    let exe = std::env::current_exe().expect("the test binary's path");
    // .../target/<profile>/deps/<test> → .../target/<profile>/examples/<name>
    let profile_dir =
        exe.parent().and_then(|deps| deps.parent()).expect("the test binary lives in target/<profile>/deps");
    let path = profile_dir.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let built = BUILT.get_or_init(Default::default);
    // A failed build panics while holding the lock: the next test tries again and reports its
    // own cause instead of a poisoned lock.
    let mut built = built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|b| b == name) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut command = std::process::Command::new(cargo);
        command.args(["build", "--example", name]).current_dir(env!("CARGO_MANIFEST_DIR"));
        // The features this test binary was built with, so the build reuses the libraries the
        // test build compiled instead of compiling (and storing) every crate a second time.
        let features: Vec<&str> = [
            ("postgres", cfg!(feature = "postgres")),
            ("jwt", cfg!(feature = "jwt")),
            ("host", cfg!(feature = "host")),
        ]
        .into_iter()
        .filter_map(|(feature, on)| on.then_some(feature))
        .collect();
        if !features.is_empty() {
            command.args(["--features", &features.join(",")]);
        }
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            command.arg("--release");
        }
        let output = command.output().expect("cannot run cargo to build the example");
        assert!(
            output.status.success(),
            "`cargo build --example {name}` failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        built.push(name.to_owned());
    }
    assert!(path.exists(), "example binary {} does not exist", path.display());
    path
}
