//! The `gate` example in front of a server it spawns (the automation binary over stdio), where
//! its fast path relays what it can settle as bytes and hands the rest to its rmcp proxy. The
//! host here writes and reads raw JSON-RPC lines, so that it can choose its own request ids and
//! progress tokens: numbers that the gate's own requests to the server also use (its tool list,
//! its manifest call), and ids of the form the gate renames its own requests to
//! (`pilotage-gate:<n>`). Every answer must come back under the host's id, every progress
//! notification under the host's token, whichever path the call took.

use std::process::Stdio;
use std::time::Duration;

use pilotage::testkit::TempStore;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use crate::support::example_binary;

/// The longest any step waits for the gate.
const BOUND: Duration = Duration::from_secs(20);

/// A host speaking raw lines to the gate.
pub(crate) struct RawHost {
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<Value>,
    /// The progress notifications' params, as seen.
    progress: Vec<Value>,
    /// How the host answers the gate's elicitation requests.
    answer: &'static str,
    /// The questions asked.
    questions: usize,
    pub(crate) child: Child,
    audit: TempStore,
    _store: TempStore,
}

impl RawHost {
    /// The gate in front of the automation binary.
    async fn start(tag: &str, answer: &'static str) -> RawHost {
        let store = TempStore::new(&format!("gate-splice-{tag}"));
        let server = [example_binary("automation").into(), "--store".into(), store.path().into()];
        RawHost::spawn(tag, answer, &server, store).await
    }

    /// The gate in front of the server `command` (with its arguments), initialized; `store`
    /// is kept for as long as the host.
    pub(crate) async fn spawn(
        tag: &str,
        answer: &'static str,
        command: &[std::ffi::OsString],
        store: TempStore,
    ) -> RawHost {
        let audit = TempStore::new(&format!("gate-splice-audit-{tag}"));
        let mut child = tokio::process::Command::new(example_binary("gate"))
            .arg("--audit")
            .arg(audit.path())
            .arg("--")
            .args(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the gate starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let _ = tx.send(serde_json::from_str(&line).expect("the gate writes JSON lines"));
            }
        });
        let stdin = child.stdin.take();
        let mut host =
            RawHost { stdin, lines, progress: Vec::new(), answer, questions: 0, child, audit, _store: store };
        let capabilities = json!({"elicitation": {"form": {}}});
        let init = host
            .request(
                json!(0),
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "clientInfo": {"name": "raw-host", "version": "1"}}),
            )
            .await;
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        host
    }

    pub(crate) async fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("open");
        stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Write `text` as one line, as it is.
    pub(crate) async fn send_text(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("open");
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Send a request and wait for the answer under `id`, answering the gate's questions and
    /// keeping progress notifications meanwhile.
    pub(crate) async fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        self.answer_to(&id).await
    }

    pub(crate) async fn answer_to(&mut self, id: &Value) -> Value {
        let answer = self.until(|m| m["method"].is_null()).await;
        assert_eq!(&answer["id"], id, "an answer under another id: {answer}");
        answer
    }

    /// Read messages until one that `wanted` takes, answering the gate's questions and keeping
    /// progress notifications meanwhile.
    pub(crate) async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = tokio::time::timeout(BOUND, self.lines.recv())
                .await
                .unwrap_or_else(|_| panic!("the awaited message within {BOUND:?}"))
                .expect("the gate is running");
            if message["method"] == "notifications/progress" {
                self.progress.push(message["params"].clone());
            }
            if wanted(&message) {
                return message;
            }
            if message["method"] == "elicitation/create" {
                self.questions += 1;
                let result = json!({"action": self.answer});
                self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": result})).await;
            }
        }
    }

    /// The answers to `ids`, in any order; an answer under another id fails.
    pub(crate) async fn answers(&mut self, ids: &[Value]) -> Vec<Value> {
        let mut got: Vec<Option<Value>> = vec![None; ids.len()];
        while got.iter().any(Option::is_none) {
            let answer = self.until(|m| m["method"].is_null()).await;
            let k = ids.iter().position(|id| *id == answer["id"]);
            let k = k.unwrap_or_else(|| panic!("an answer under an id not asked: {answer}"));
            assert!(got[k].replace(answer).is_none(), "two answers under {}", ids[k]);
        }
        got.into_iter().flatten().collect()
    }

    pub(crate) async fn call(
        &mut self,
        id: Value,
        tool: &str,
        arguments: Value,
        token: Option<Value>,
    ) -> Value {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(token) = token {
            params["_meta"] = json!({"progressToken": token});
        }
        self.request(id, "tools/call", params).await
    }

    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.audit.path()).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

fn program(call: &str, with: Value) -> Value {
    json!({"steps": [{"id": "s", "call": call, "with": with}]})
}

fn validate(p: &Value) -> Value {
    json!({"automation": p, "context": crate::kit::ctx()})
}

fn execute(p: &Value) -> Value {
    json!({"automation": p, "context": crate::kit::ctx(), "mode": "immediate"})
}

#[tokio::test]
async fn answers_and_progress_come_back_under_the_hosts_ids_and_tokens_on_both_paths() {
    let mut host = RawHost::start("ids", "decline").await;
    let tools = host.request(json!(1), "tools/list", json!({})).await;
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"run_automation") && names.contains(&"validate_automation"), "{names:?}");

    // Four steps of 50 ms: progress is reported while it runs, before its answer.
    let safe = crate::long_runs::slow_loop(4, 50);
    // The first call: the gate learns the server's surface with requests of its own (numbered
    // from 0, like the host's).
    let first = host.call(json!(2), "validate_automation", validate(&safe), None).await;
    assert_eq!(first["result"]["structuredContent"]["valid"], true, "{first}");
    // The fast path from here: the same validation, then its execute with a progress token the
    // gate's own requests could also carry.
    let again = host.call(json!(3), "validate_automation", validate(&safe), None).await;
    let version = again["result"]["structuredContent"]["catalog_version"].clone();
    assert_eq!(first["result"]["structuredContent"], again["result"]["structuredContent"]);
    let ran = host.call(json!(4), "run_automation", execute(&safe), Some(json!(0))).await;
    assert_eq!(ran["result"]["structuredContent"]["outcome"]["status"], "success", "{ran}");
    // An id and a token of the form the gate gives its own requests: the rmcp path, answered
    // under them all the same.
    let reserved = json!("pilotage-gate:1");
    let ran =
        host.call(reserved.clone(), "run_automation", execute(&safe), Some(json!("pilotage-gate:p1"))).await;
    assert_eq!(ran["result"]["structuredContent"]["outcome"]["status"], "success", "{ran}");
    let tokens: Vec<&Value> = host.progress.iter().map(|p| &p["progressToken"]).collect();
    assert!(!tokens.is_empty(), "progress reached the host");
    assert!(tokens.iter().all(|t| **t == json!(0) || **t == json!("pilotage-gate:p1")), "{tokens:?}");
    assert!(tokens.contains(&&json!(0)) && tokens.contains(&&json!("pilotage-gate:p1")), "{tokens:?}");

    // Fast calls in flight under small numbers while the gate's own client sends the server a
    // request of the host's (`tools/list` takes the rmcp path): its request ids count from 0
    // too, so only their renaming keeps the answers apart.
    let slow = crate::long_runs::slow_loop(5, 100);
    host.call(json!(5), "validate_automation", validate(&slow), None).await;
    let ids: Vec<Value> = (6..12).map(|n| json!(n)).collect();
    for id in &ids {
        let params = json!({"name": "run_automation", "arguments": execute(&slow)});
        host.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})).await;
    }
    host.send(json!({"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": {}})).await;
    let mut asked = ids.clone();
    asked.push(json!(12));
    let answers = host.answers(&asked).await;
    for ran in &answers[..6] {
        assert_eq!(ran["result"]["structuredContent"]["outcome"]["status"], "success", "{ran}");
    }
    assert_eq!(answers[6]["result"]["tools"], tools["result"]["tools"]);

    // A destructive program validated on the fast path: its validation is kept there (the gate
    // does not validate it again), and the execute that needs the person goes through the rmcp
    // path, which asks; declined, it never runs.
    let destructive = program("outbox_clear", json!({}));
    let checked = host.call(json!(13), "validate_automation", validate(&destructive), None).await;
    assert_eq!(checked["result"]["structuredContent"]["valid"], true, "{checked}");
    let refused = host.call(json!(14), "run_automation", execute(&destructive), None).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(refused["result"]["structuredContent"]["error"]["kind"], "unsupported", "{refused}");
    assert_eq!(host.questions, 1);

    let audit = host.audit();
    let decisions: Vec<(&str, bool)> = audit
        .iter()
        .map(|a| (a["gate"].as_str().unwrap(), a["validated_by_gate"].as_bool().unwrap()))
        .collect();
    let mut expected = vec![("safe", false); 8];
    expected.push(("declined", false));
    assert_eq!(decisions, expected, "{audit:?}");
    assert_eq!(audit[0]["catalog_version"], version);
}

#[tokio::test]
async fn a_fast_calls_cancellation_reaches_the_server_and_the_gate_ends_with_the_host() {
    let mut host = RawHost::start("cancel", "decline").await;
    let quick = program("wait", json!({"ms": 0}));
    let slow = crate::long_runs::slow_loop(40, 100);
    host.call(json!(1), "validate_automation", validate(&quick), None).await;
    host.call(json!(2), "validate_automation", validate(&slow), None).await;
    // The slow run on the fast path: its first progress notification (under the host's token)
    // names the Run; the host cancels the request, and the server stops the Run.
    let params =
        json!({"name": "run_automation", "arguments": execute(&slow), "_meta": {"progressToken": 7}});
    host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})).await;
    let first = host.until(|m| m["method"] == "notifications/progress").await;
    assert_eq!(first["params"]["progressToken"], 7, "{first}");
    let run_id =
        first["params"]["_meta"]["io.github.jafarsa0/pilotage"]["run_id"].as_str().unwrap().to_owned();
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 3, "reason": "the person stopped it"}}))
        .await;
    let mut fetched = Value::Null;
    for n in 10.. {
        let trace = host.call(json!(n), "trace_automation", json!({"run_id": run_id}), None).await;
        if trace["result"]["isError"] != true {
            fetched = trace["result"]["structuredContent"].clone();
            break;
        }
        assert!(n < 200, "the cancelled run is retained: {trace}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(fetched["outcome"]["status"], "partial", "{fetched}");
    let error = fetched["outcome"]["error"].as_str().unwrap();
    assert!(error.starts_with("the client cancelled the run after "), "{error}");
    assert!(fetched["trace"]["steps"].as_array().unwrap().len() < 41, "{fetched}");
    let ran = host.call(json!(4), "run_automation", execute(&quick), None).await;
    assert_eq!(ran["result"]["structuredContent"]["outcome"]["status"], "success", "{ran}");
    // The host closes its end: the gate ends (and its server with it).
    host.stdin = None;
    let status = tokio::time::timeout(BOUND, host.child.wait()).await.expect("the gate ends").unwrap();
    assert!(status.success(), "{status}");
}
