//! The bounds of the gate's fast path (`examples/gate/splice.rs`), each from both sides, in
//! front of a plain stdio server whose answers the test steers (`tests/clients/held_server.py`:
//! it reports the id each call reached it under, holds calls until told, and writes as much as
//! it is asked to). To the gate its one tool is a plain tool, relayed by the fast path.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pilotage::testkit::TempStore;
use serde_json::{json, Value};

use crate::gate_splice::RawHost;
use crate::long_run_clients::root;
use crate::support::example_binary;

/// The fast path's bounds, as `examples/gate/splice.rs` sets them.
const MAX_FAST: usize = 1024;
const MAX_LINE: usize = 16 << 20;
const QUEUE_CAP: usize = 8 << 20;

fn held_server() -> Vec<OsString> {
    vec!["python3".into(), root().join("tests/clients/held_server.py").into()]
}

async fn held(tag: &str) -> RawHost {
    let mut host =
        RawHost::spawn(tag, "decline", &held_server(), TempStore::new(&format!("gate-bounds-{tag}"))).await;
    // The first call goes through the rmcp path, which learns the server's tools; from the
    // next one the fast path relays calls under the host's own ids.
    let first = host.call(json!(1), "echo", json!({}), None).await;
    let seen = first["result"]["structuredContent"]["seen_id"].as_str().unwrap_or_default().to_owned();
    assert!(seen.starts_with("pilotage-gate:"), "{first}");
    host
}

/// The id a call reached the server under.
fn seen(answer: &Value) -> &Value {
    &answer["result"]["structuredContent"]["seen_id"]
}

fn call_line(id: &Value, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": arguments}})
}

#[tokio::test]
async fn the_fast_path_holds_1024_calls_in_flight_and_the_next_take_the_rmcp_path() {
    let mut host = held("in-flight").await;
    let fast = host.call(json!(2), "echo", json!({}), None).await;
    assert_eq!(seen(&fast), &json!(2), "{fast}");
    // 1,024 calls the server holds: each reaches it under the host's id.
    let within: Vec<Value> = (0..MAX_FAST).map(|n| json!(100 + n)).collect();
    for id in &within {
        host.send(call_line(id, &json!({"hold": true}))).await;
    }
    // The 1,025th and after take the rmcp path: the server sees them under the gate's names.
    let beyond: Vec<Value> = (0..5).map(|n| json!(5000 + n)).collect();
    for id in &beyond {
        host.send(call_line(id, &json!({"hold": true}))).await;
    }
    host.send(call_line(&json!(9000), &json!({"release": true}))).await;
    let mut asked = within.clone();
    asked.extend(beyond.iter().cloned());
    asked.push(json!(9000));
    // Every answer comes back under the host's id (`answers` fails on any other).
    let answers = host.answers(&asked).await;
    for (id, answer) in within.iter().zip(&answers) {
        assert_eq!(seen(answer), id, "within the bound: {answer}");
    }
    for answer in &answers[MAX_FAST..] {
        let name = seen(answer).as_str().unwrap_or_default();
        assert!(name.starts_with("pilotage-gate:"), "beyond the bound: {answer}");
    }
    // Answered, they leave room: the fast path takes calls again.
    let after = host.call(json!(9001), "echo", json!({}), None).await;
    assert_eq!(seen(&after), &json!(9001), "{after}");
}

/// A line of exactly `len` bytes: a call of `echo` under `id`, padded.
fn padded_call(id: u64, len: usize) -> String {
    let bare = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"pad":""}}}}}}"#
    );
    let (head, tail) = bare.split_at(bare.len() - 4);
    format!("{head}{}{tail}", "x".repeat(len - bare.len()))
}

#[tokio::test]
async fn a_host_line_of_16_mib_is_relayed_and_one_byte_more_is_discarded_with_a_parse_error() {
    let mut host = held("long-host").await;
    let line = padded_call(2, MAX_LINE);
    assert_eq!(line.len(), MAX_LINE);
    host.send_text(&line).await;
    let relayed = host.answer_to(&json!(2)).await;
    assert_eq!(seen(&relayed), &json!(2), "{relayed}");

    host.send_text(&padded_call(3, MAX_LINE + 1)).await;
    let refused = host.until(|m| m["method"].is_null()).await;
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(refused["error"]["code"], -32700, "{refused}");
    // The server never saw it: the next call's answer is the next one the host reads (the
    // server answers in order, and the gate relays in order).
    let next = host.call(json!(4), "echo", json!({}), None).await;
    assert_eq!(seen(&next), &json!(4), "{next}");
}

/// The length of the held server's answer to `id` with a pad of `pad` bytes.
fn answer_len(id: u64, pad: usize) -> usize {
    let bare = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"seen"}}],"structuredContent":{{"seen_id":{id},"pad":""}}}}}}"#
    );
    bare.len() + pad
}

#[tokio::test]
async fn a_server_answer_of_16_mib_is_relayed_and_one_byte_more_becomes_an_error_under_the_hosts_id() {
    let mut host = held("long-server").await;
    let pad = MAX_LINE - answer_len(2, 0);
    assert_eq!(answer_len(2, pad), MAX_LINE);
    let relayed = host.call(json!(2), "echo", json!({"answer_size": pad}), None).await;
    assert_eq!(seen(&relayed), &json!(2));
    assert_eq!(relayed["result"]["structuredContent"]["pad"].as_str().map(str::len), Some(pad));

    let pad = MAX_LINE + 1 - answer_len(3, 0);
    let refused = host.call(json!(3), "echo", json!({"answer_size": pad}), None).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("longer than 16 MiB"), "{message}");
    let next = host.call(json!(4), "echo", json!({}), None).await;
    assert_eq!(seen(&next), &json!(4), "{next}");
}

/// The resident memory of process `pid`, in bytes.
fn resident(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next());
    kib.and_then(|k| k.parse::<usize>().ok()).unwrap_or(0) * 1024
}

/// A host that does not read: while 48 MiB of progress are on their way to it, the gate holds
/// at most its queue's bound (the server waits on a full pipe); read, every message arrives, in
/// order.
#[test]
fn a_host_that_does_not_read_holds_the_gate_at_its_queue_bound_and_loses_nothing() {
    let audit = TempStore::new("gate-bounds-audit-slow");
    let server = held_server();
    let mut gate = Command::new(example_binary("gate"))
        .arg("--audit")
        .arg(audit.path())
        .arg("--")
        .args(&server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the gate starts");
    let mut stdin = gate.stdin.take().unwrap();
    let mut stdout = BufReader::new(gate.stdout.take().unwrap());
    let mut send = |message: Value| writeln!(stdin, "{message}").and_then(|()| stdin.flush()).unwrap();
    let read = |stdout: &mut BufReader<std::process::ChildStdout>| {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the gate is running");
        serde_json::from_str::<Value>(&line).unwrap()
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "slow-host", "version": "1"}}}),
    );
    assert!(read(&mut stdout)["result"]["serverInfo"].is_object());
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(call_line(&json!(1), &json!({})));
    assert_eq!(read(&mut stdout)["id"], 1);

    const MESSAGES: usize = 48;
    const SIZE: usize = 1 << 20;
    let before = resident(gate.id());
    let mut params = json!({"name": "echo", "arguments": {"flood": MESSAGES, "size": SIZE}});
    params["_meta"] = json!({"progressToken": 5});
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}));
    // Not reading for 3 s: the gate's resident memory, sampled.
    let mut peak = before;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        peak = peak.max(resident(gate.id()));
        std::thread::sleep(Duration::from_millis(20));
    }
    let grown = peak.saturating_sub(before);
    // The queue's bound, plus the line being read and a read's chunk: far below the 48 MiB sent.
    assert!(grown < QUEUE_CAP + 4 * SIZE, "the gate grew by {grown} bytes while its host did not read");
    assert!(grown > SIZE, "the gate took what the server wrote ({grown} bytes)");

    for k in 1..=MESSAGES {
        let progress = read(&mut stdout);
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(progress["params"]["progressToken"], 5);
        assert_eq!(progress["params"]["progress"], k);
        assert_eq!(progress["params"]["message"].as_str().map(str::len), Some(SIZE));
    }
    let answer = read(&mut stdout);
    assert_eq!((answer["id"].clone(), seen(&answer).clone()), (json!(2), json!(2)), "{answer}");
    drop(stdin);
    let status = gate.wait().unwrap();
    assert!(status.success(), "{status}");
}
