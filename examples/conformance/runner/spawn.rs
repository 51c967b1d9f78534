//! An MCP client over the stdin/stdout of any command line (`--stdio 'COMMAND ARGS'`).
//!
//! `tests/support`'s `Conn::stdio` spawns only this crate's example binaries (it builds them
//! with cargo first) and keeps its line transport private, so the runner carries this small
//! newline-delimited JSON-RPC client for arbitrary commands. It does no result checks of its
//! own: the runner checks every Pilotage result on every transport.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long one response may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// A spawned server process and its pipes; killed on drop.
pub struct Spawned {
    _child: Child,
    stdin: ChildStdin,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<String>>,
    pub label: String,
}

/// Split a command line into words: whitespace separates, single and double quotes group,
/// a backslash escapes the next character.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (q, '\\') if q != Some('\'') => {
                let next = chars.next().ok_or("a trailing backslash")?;
                word.get_or_insert_with(String::new).push(next);
            }
            (None, c) if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err(format!("unbalanced quote in {line:?}"));
    }
    words.extend(word);
    if words.is_empty() {
        return Err("an empty command line".to_owned());
    }
    Ok(words)
}

impl Spawned {
    /// Spawn `words[0]` with the remaining words as arguments.
    pub fn spawn(words: &[String]) -> Spawned {
        let mut child = tokio::process::Command::new(&words[0])
            .args(&words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {words:?}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr_pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
        Spawned { _child: child, stdin, stdout, stderr, label: format!("stdio:{}", words.join(" ")) }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Write one line.
    pub async fn send(&mut self, text: &str) {
        assert!(!text.contains('\n'), "a newline-delimited message cannot contain a newline: {text}");
        let written = async {
            self.stdin.write_all(text.as_bytes()).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        if let Err(e) = written.await {
            panic!("{}: cannot write to the server: {e}\nserver stderr:\n{}", self.label, self.stderr());
        }
    }

    /// Read until the response with `id` (any response when `None`); other messages are
    /// skipped.
    pub async fn receive(&mut self, id: Option<&Value>) -> Value {
        loop {
            let line = match tokio::time::timeout(TIMEOUT, self.stdout.next_line()).await {
                Err(_) => panic!(
                    "{}: no response (awaited id {id:?}) within {TIMEOUT:?}\nserver stderr:\n{}",
                    self.label,
                    self.stderr()
                ),
                Ok(Err(e)) => panic!("{}: cannot read: {e}\nserver stderr:\n{}", self.label, self.stderr()),
                Ok(Ok(None)) => panic!(
                    "{}: the server closed its output while a response was awaited\nserver stderr:\n{}",
                    self.label,
                    self.stderr()
                ),
                Ok(Ok(Some(line))) => line,
            };
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("{}: the server wrote a line that is not JSON ({e}): {line}", self.label)
            });
            let is_response = message.get("method").is_none()
                && message.get("id").is_some()
                && (message.get("result").is_some() || message.get("error").is_some());
            if is_response && id.is_none_or(|id| &message["id"] == id) {
                return message;
            }
        }
    }
}
