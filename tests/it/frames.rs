//! Hostile frames over real transports: invalid requests and notifications with bad params
//! (JSON-RPC 2.0 §4.1, §5), and frames nested deeper than a JSON parser's recursion limit.
//!
//! Over a line transport, a frame that must draw no reply is followed by a `ping`: the next
//! line must be the ping's answer.

use crate::{support, workflow};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use support::scenario::{ARGUMENT, VALIDATE};
use support::{HttpServer, PROTOCOL, TIMEOUT};

fn server() -> pilotage::Server {
    pilotage::Server::builder().name("test", "0").language(workflow::Workflow::new).build().unwrap()
}

fn initialize_frame(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "frames", "version": "0"}}})
    .to_string()
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const PROBE: &str = r#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#;

/// A `serve_lines` server in this process, over two duplex pipes; aborted when dropped.
struct Wire {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Wire {
    /// A server past `initialize` and `notifications/initialized`.
    async fn ready() -> Wire {
        let (input, server_read) = tokio::io::duplex(1 << 20);
        let (server_write, output) = tokio::io::duplex(1 << 20);
        let server = server();
        let task = tokio::spawn(async move {
            let _ = server.serve_lines(server_read, server_write).await;
        });
        let mut wire = Wire { input, output: BufReader::new(output).lines(), task };
        wire.send(&initialize_frame(0)).await;
        let reply = wire.line().await;
        assert_eq!(reply["id"], 0, "{reply}");
        wire.send(INITIALIZED).await;
        wire
    }

    async fn send(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
        self.input.flush().await.unwrap();
    }

    async fn line(&mut self) -> Value {
        let line = tokio::time::timeout(TIMEOUT, self.output.next_line())
            .await
            .expect("a line within the timeout")
            .unwrap()
            .expect("the server is still writing");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends `frame`, then a `ping`; every line before the ping's answer, which must come.
    async fn replies(&mut self, frame: &str) -> Vec<Value> {
        self.send(frame).await;
        self.send(PROBE).await;
        let mut before = Vec::new();
        loop {
            let message = self.line().await;
            if message["id"] == "probe" && message.get("result").is_some() {
                return before;
            }
            before.push(message);
        }
    }
}

/// One POST's outcome: status, content type (no parameters) and the JSON-RPC message in the
/// body (the first SSE event carrying one, for an event stream).
#[derive(Debug)]
struct Posted {
    status: u16,
    content_type: Option<String>,
    message: Option<Value>,
}

/// A raw Streamable HTTP client with a session: plain JSON (`sse: false`) or SSE.
struct HttpWire {
    client: reqwest::Client,
    url: String,
    sse: bool,
    session: Option<String>,
}

impl HttpWire {
    async fn ready(http: &HttpServer, sse: bool) -> HttpWire {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut wire = HttpWire { client, url: http.url().to_owned(), sse, session: None };
        let init = wire.post(&initialize_frame(0)).await;
        assert_eq!(init.message.as_ref().map(|m| &m["id"]), Some(&json!(0)), "{init:?}");
        assert_eq!(wire.post(INITIALIZED).await.status, 202);
        wire
    }

    async fn post(&mut self, body: &str) -> Posted {
        let mut request =
            self.client.post(&self.url).header("content-type", "application/json").body(body.to_owned());
        if self.sse {
            request = request.header("accept", "application/json, text/event-stream");
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", PROTOCOL);
        }
        let response = tokio::time::timeout(TIMEOUT, request.send()).await.expect("a response").unwrap();
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().unwrap().to_owned());
        }
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().split(';').next().unwrap().trim().to_owned());
        let text = if content_type.as_deref() == Some("text/event-stream") {
            first_event(response).await
        } else {
            tokio::time::timeout(TIMEOUT, response.text()).await.expect("a body").unwrap()
        };
        let message = (!text.is_empty()).then(|| {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("HTTP {status}: not JSON ({e}): {text}"))
        });
        Posted { status, content_type, message }
    }
}

/// The data of the first SSE event that is a JSON-RPC response (or `""` if the stream ends).
async fn first_event(mut response: reqwest::Response) -> String {
    let mut buffer = String::new();
    loop {
        let chunk = tokio::time::timeout(TIMEOUT, response.chunk()).await.expect("an SSE chunk").unwrap();
        let Some(chunk) = chunk else { return String::new() };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data: Vec<&str> =
                event.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.trim_start()).collect();
            let data = data.join("\n");
            if serde_json::from_str::<Value>(&data)
                .is_ok_and(|m| m.get("method").is_none() && m.get("id").is_some())
            {
                return data;
            }
        }
    }
}

/// A `[[[...]]]` program `depth` levels deep.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn deep_call(id: u64, depth: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{VALIDATE}","arguments":{{"{ARGUMENT}":{}}}}}}}"#,
        nested(depth)
    )
}

/// A JSON-RPC error reply with `id` and `code`; returns its message.
fn assert_error(reply: &Value, id: &Value, code: i64, frame: &str) -> String {
    assert_eq!(reply["jsonrpc"], "2.0", "{frame} => {reply}");
    assert_eq!(reply.get("id"), Some(id), "{frame} => {reply}");
    assert_eq!(reply["error"]["code"], code, "{frame} => {reply}");
    assert!(reply.get("result").is_none(), "{frame} => {reply}");
    reply["error"]["message"].as_str().unwrap_or_else(|| panic!("{frame} => {reply}")).to_owned()
}

/// Requests with a readable id that rmcp cannot read: frame, id, code, start of the message.
/// Before, rmcp answered each with `{"jsonrpc":"2.0","error":{"code":-32600,"message":
/// "Invalid request"}}`, no `id`.
const REFUSED: [(&str, &str, i64, &str); 13] = [
    (
        r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":5}"#,
        "5",
        -32602,
        "Invalid params: the params of ping must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":6,"method":"ping","params":"x"}"#,
        "6",
        -32602,
        "Invalid params: the params of ping must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":8,"method":"no/such/method","params":5}"#,
        "8",
        -32602,
        "Invalid params: the params of no/such/method must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":5}"#,
        "9",
        -32602,
        "Invalid params: the params of tools/call must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":[1]}"#,
        "13",
        -32602,
        "Invalid params: the params of tools/call must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":15,"method":"initialize","params":5}"#,
        "15",
        -32602,
        "Invalid params: the params of initialize must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":17,"method":"tools/list","params":5}"#,
        "17",
        -32602,
        "Invalid params: the params of tools/list must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        "null",
        -32600,
        "Invalid Request: a request id is a string or an integer (at most 2^63 - 1)",
    ),
    // An id that cannot come back exactly as sent is no id: the request is invalid, not its
    // params (before: -32602 "the params of ping do not fit it", the id echoed as a float).
    (
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        "null",
        -32600,
        "Invalid Request: a request id is a string or an integer (at most 2^63 - 1)",
    ),
    (
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#,
        "null",
        -32600,
        "Invalid Request: a request id is a string or an integer (at most 2^63 - 1)",
    ),
    (
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
        "null",
        -32600,
        "Invalid Request: a request id is a string or an integer (at most 2^63 - 1)",
    ),
    // Which of two ids is meant cannot be known.
    (
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
        "null",
        -32600,
        "Invalid Request: member `id` appears more than once",
    ),
    (
        r#"{"jsonrpc":"2.0","id":22,"error":5}"#,
        "22",
        -32600,
        "Invalid Request: unrecognized JSON-RPC message",
    ),
];

/// Notifications that must draw no reply (JSON-RPC 2.0 §4.1). Before, over lines, the first
/// four drew rmcp's id-less `-32600` and the next two our own `-32600` with `id: null`; over
/// HTTP all but the last two drew HTTP 400 with a `-32600` body.
const SILENT: [&str; 8] = [
    r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":5}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":5}"#,
    r#"{"jsonrpc":"2.0","method":"tools/call","params":5}"#,
    r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
    r#"{"method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/unknown","params":5}"#,
];

fn check_refused(frame: &str, id: &str, code: i64, start: &str, reply: &Value) {
    let message = assert_error(reply, &serde_json::from_str(id).unwrap(), code, frame);
    assert!(message.starts_with(start), "{frame} => {message}");
}

#[tokio::test]
async fn refused_requests_over_lines_keep_their_id() {
    let mut wire = Wire::ready().await;
    for (frame, id, code, start) in REFUSED {
        let replies = wire.replies(frame).await;
        assert_eq!(replies.len(), 1, "{frame} => {replies:?}");
        check_refused(frame, id, code, start, &replies[0]);
    }
}

#[tokio::test]
async fn refused_requests_over_http_keep_their_id() {
    let http = HttpServer::start(&server()).await;
    for sse in [false, true] {
        let mut wire = HttpWire::ready(&http, sse).await;
        for (frame, id, code, start) in REFUSED {
            let posted = wire.post(frame).await;
            assert_eq!(
                (posted.status, posted.content_type.as_deref()),
                (400, Some("application/json")),
                "sse {sse}: {frame} => {posted:?}"
            );
            check_refused(frame, id, code, start, posted.message.as_ref().unwrap());
        }
    }
}

#[tokio::test]
async fn notifications_over_lines_draw_no_reply() {
    let mut wire = Wire::ready().await;
    for frame in SILENT {
        assert_eq!(wire.replies(frame).await, Vec::<Value>::new(), "{frame}");
    }
    // Not JSON, or JSON that is not an object: still answered, with a null id (§5).
    for (frame, code) in
        [("{\"method\":", -32700), ("[]", -32600), (r#"{"jsonrpc":"2.0","method":5}"#, -32600)]
    {
        let replies = wire.replies(frame).await;
        assert_eq!(replies.len(), 1, "{frame} => {replies:?}");
        assert_error(&replies[0], &Value::Null, code, frame);
    }
}

#[tokio::test]
async fn notifications_over_http_are_accepted_without_a_body() {
    let http = HttpServer::start(&server()).await;
    for sse in [false, true] {
        let mut wire = HttpWire::ready(&http, sse).await;
        for frame in SILENT {
            let posted = wire.post(frame).await;
            assert_eq!((posted.status, &posted.message), (202, &None), "sse {sse}: {frame} => {posted:?}");
        }
    }
}

/// The example binary over its real stdin/stdout: a notification with bad params draws
/// nothing (the next line is the ping's answer), a request with bad params its id.
#[tokio::test]
async fn stdio_child_answers_bad_params_by_id_and_notifications_not_at_all() {
    let mut conn = support::Conn::stdio("workflow", &[]);
    conn.initialize(true).await;
    conn.notify("notifications/cancelled", json!(5)).await;
    conn.notify("notifications/initialized", json!("x")).await;
    let pong = conn.raw(PROBE).await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "probe", "result": {}}));
    assert_eq!(conn.unsolicited(), &[] as &[Value]);
    let (frame, id, code, start) = REFUSED[3];
    check_refused(frame, id, code, start, &conn.raw(frame).await);
}

/// The `bounds_exceeded` envelope for a program `depth` deep: the same result members on
/// both paths, one text block repeating the message.
fn check_bounds(reply: &Value, id: u64, depth: usize) {
    assert_eq!(reply["id"], id, "{reply}");
    let result = &reply["result"];
    let keys: Vec<&String> = result.as_object().unwrap_or_else(|| panic!("{reply}")).keys().collect();
    assert_eq!(keys, ["content", "structuredContent", "isError"], "{reply}");
    assert_eq!(result["isError"], true, "{reply}");
    let error = &result["structuredContent"]["error"];
    assert_eq!(result["structuredContent"].as_object().unwrap().len(), 1, "{reply}");
    assert_eq!(error["kind"], "bounds_exceeded", "{reply}");
    let message = error["message"].as_str().unwrap();
    assert!(message.ends_with(&format!(" nests {depth} levels deep; the bound is 64")), "{message}");
    assert_eq!(result["content"], json!([{"type": "text", "text": message}]), "{reply}");
}

/// 70 and 124 levels reach the runtime (the frame is 127 deep); 125 and 130 are judged by
/// the transport. Before, 125 and deeper drew `-32700` with `id: null`.
const DEPTHS: [usize; 4] = [70, 124, 125, 130];

#[tokio::test]
async fn over_deep_programs_over_lines_are_bounds_exceeded() {
    let mut wire = Wire::ready().await;
    for (id, depth) in (1..).zip(DEPTHS) {
        wire.send(&deep_call(id, depth)).await;
        check_bounds(&wire.line().await, id, depth);
    }
    let mut conn = support::Conn::stdio("workflow", &[]);
    conn.initialize(true).await;
    check_bounds(&conn.raw(&deep_call(9, 130)).await, 9, 130);
}

#[tokio::test]
async fn over_deep_programs_over_http_are_bounds_exceeded() {
    let http = HttpServer::start(&server()).await;
    for sse in [false, true] {
        let mut wire = HttpWire::ready(&http, sse).await;
        for (id, depth) in (1..).zip(DEPTHS) {
            let posted = wire.post(&deep_call(id, depth)).await;
            assert_eq!(posted.status, 200, "sse {sse}, depth {depth}: {posted:?}");
            check_bounds(posted.message.as_ref().unwrap(), id, depth);
        }
    }
}

/// Over-deep frames that are not a `tools/call` with a deep argument: `-32600` with the id, no
/// reply to a notification, `-32700` when the deep frame is not JSON.
#[tokio::test]
async fn other_over_deep_frames() {
    let deep = nested(200);
    let ping = format!(r#"{{"jsonrpc":"2.0","id":"d1","method":"ping","params":{{"x":{deep}}}}}"#);
    let notification =
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"x":{deep}}}}}"#);
    let broken = format!(
        r#"{{"jsonrpc":"2.0","id":"d2","method":"tools/call","params":{{"name":"{VALIDATE}","arguments":{{"{ARGUMENT}":{}}}}}"#,
        "[".repeat(200)
    );
    let mut wire = Wire::ready().await;
    let replies = wire.replies(&ping).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    let message = assert_error(&replies[0], &json!("d1"), -32600, "deep ping");
    assert!(message.contains("nests 202 levels deep"), "{message}");
    assert_eq!(wire.replies(&notification).await, Vec::<Value>::new());
    let replies = wire.replies(&broken).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_error(&replies[0], &Value::Null, -32700, "unterminated deep frame");

    let http = HttpServer::start(&server()).await;
    let mut wire = HttpWire::ready(&http, false).await;
    let posted = wire.post(&ping).await;
    assert_eq!(posted.status, 400, "{posted:?}");
    assert_error(posted.message.as_ref().unwrap(), &json!("d1"), -32600, "deep ping");
    assert_eq!(wire.post(&notification).await.status, 202);
    let posted = wire.post(&broken).await;
    assert_eq!(posted.status, 400, "{posted:?}");
    assert_error(posted.message.as_ref().unwrap(), &Value::Null, -32700, "unterminated deep frame");
}

/// The largest id rmcp reads comes back exactly as sent; an unknown method of a megabyte is
/// echoed cut short in its `-32601` (before: whole).
#[tokio::test]
async fn ids_come_back_exactly_and_unknown_methods_cut_short() {
    let http = HttpServer::start(&server()).await;
    let mut wire = HttpWire::ready(&http, false).await;
    let posted = wire.post(r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}"#).await;
    let reply = posted.message.unwrap();
    assert_eq!(serde_json::to_string(&reply["id"]).unwrap(), "9223372036854775807", "{reply}");
    assert_eq!(reply["result"], json!({}), "{reply}");
    let method = "m".repeat(1 << 20);
    let frame = json!({"jsonrpc": "2.0", "id": 3, "method": method}).to_string();
    let posted = wire.post(&frame).await;
    let reply = posted.message.unwrap();
    let message = assert_error(&reply, &json!(3), -32601, "a 1 MB method");
    assert_eq!(message, format!("{}...", "m".repeat(100)));
    let mut lines = Wire::ready().await;
    lines.send(&frame).await;
    let reply = lines.line().await;
    assert_eq!(assert_error(&reply, &json!(3), -32601, "a 1 MB method"), message);
}
