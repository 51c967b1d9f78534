//! The HTTP edge's own tests, over 127.0.0.1: bodies by `Accept`, bounds, stateless mode, the SSE
//! parser, and which handlers are given lifted arguments.

use super::*;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::model::{ServerCapabilities, ServerConfig};

/// A server with the tools capability and no tools.
struct Trivial;

impl ServerHandler for Trivial {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// Starts a server with the endpoint nested at `/mcp`.
async fn start(options: HttpOptions) -> SocketAddr {
    let app = Router::new().nest("/mcp", mcp_service(|| Trivial, options));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// POSTs `body` to `/mcp` with `Content-Type: application/json`.
async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Response<Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(connection);
    let mut request = hyper::Request::post("/mcp")
        .header(header::HOST, addr.to_string())
        .header(header::CONTENT_TYPE, JSON_MIME);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
    sender.send_request(request).await.unwrap()
}

async fn json_body(response: Response<Incoming>) -> Value {
    assert!(has_essence(response.headers(), JSON_MIME), "{response:?}");
    let bytes = tokio::time::timeout(Duration::from_secs(5), response.into_body().collect())
        .await
        .expect("body within 5 s")
        .unwrap()
        .to_bytes();
    serde_json::from_slice(&bytes).expect("body is JSON")
}

/// Answers every tool call with its arguments as they reached the handler.
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        _: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let mut result = rmcp::model::CallToolResult::success(vec![]);
        result.structured_content = Some(Value::Object(request.arguments.unwrap_or_default()));
        Ok(result.into())
    }
}

#[tokio::test]
async fn only_pilotage_handlers_are_given_lifted_arguments() {
    assert!(!lifts_arguments(&|| Echo));
    assert!(!lifts_arguments(&|| Trivial));
    // Another handler reads its arguments in the frame, untouched.
    let app = Router::new()
        .nest("/mcp", mcp_service(|| Echo, HttpOptions { stateless: true, ..Default::default() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"e","arguments":{"program":{"steps":[1,"x"]}}}}"#;
    let reply = json_body(post(addr, &[("mcp-protocol-version", "2025-06-18")], call).await).await;
    assert_eq!(reply["result"]["structuredContent"], json!({"program": {"steps": [1, "x"]}}), "{reply}");
}

#[tokio::test]
async fn plain_json_client_gets_json_bodies_and_a_session() {
    let addr = start(HttpOptions::default()).await;

    let response = post(addr, &[], INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let reply = json_body(response).await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");

    let session_header = [("mcp-session-id", session.as_str())];
    let response = post(addr, &session_header, INITIALIZED).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);

    for accept in ["application/json", "*/*"] {
        let headers = [("mcp-session-id", session.as_str()), ("accept", accept)];
        let response = post(addr, &headers, TOOLS_LIST).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(json_body(response).await, json!({"jsonrpc":"2.0","id":2,"result":{"tools":[]}}));
    }
}

#[tokio::test]
async fn malformed_body_gets_parse_error() {
    let addr = start(HttpOptions::default()).await;
    let response = post(addr, &[], "{not json").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let reply = json_body(response).await;
    assert_eq!(reply["jsonrpc"], "2.0");
    assert_eq!(reply["id"], Value::Null);
    assert_eq!(reply["error"]["code"], -32700);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Parse error: "), "{message}");
}

#[tokio::test]
async fn oversized_body_gets_413() {
    let addr = start(HttpOptions::default()).await;
    let body = format!("\"{}\"", "x".repeat(MAX_BODY_BYTES));
    let response = post(addr, &[], &body).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json_body(response).await["error"]["code"], -32600);
}

#[tokio::test]
async fn sse_client_still_gets_sse() {
    let addr = start(HttpOptions::default()).await;
    let accept = [("accept", "application/json, text/event-stream")];
    let response = post(addr, &accept, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(has_essence(response.headers(), SSE_MIME), "{response:?}");
    assert!(response.headers().contains_key("mcp-session-id"));
    let mut body = response.into_body();
    let mut events = SseEvents::default();
    let reply = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let frame = body.frame().await.expect("stream open").unwrap();
            if let Some(data) = frame.data_ref().and_then(|data| events.push(data)) {
                break data;
            }
        }
    })
    .await
    .expect("a response event within 5 s");
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["id"], 1);
}

#[tokio::test]
async fn stateless_mode_answers_without_a_session() {
    let addr = start(HttpOptions { stateless: true, ..HttpOptions::default() }).await;
    let response = post(addr, &[], TOOLS_LIST).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!response.headers().contains_key("mcp-session-id"));
    assert_eq!(json_body(response).await, json!({"jsonrpc":"2.0","id":2,"result":{"tools":[]}}));
}

#[test]
fn accept_parsing() {
    let accepts = |value: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(value));
        accepts_event_stream(&headers)
    };
    assert!(accepts("application/json, text/event-stream"));
    assert!(accepts("Text/Event-Stream;q=0.5"));
    assert!(!accepts("text/event-stream;q=0"));
    assert!(!accepts("application/json"));
    assert!(!accepts("*/*"));
    assert!(!accepts_event_stream(&HeaderMap::new()));
}

#[test]
fn sse_parser_skips_priming_and_notifications() {
    let mut events = SseEvents::default();
    let stream = concat!(
        "id: 0\r\nretry: 3000\r\ndata:\r\n\r\n",
        ": keep-alive\n\n",
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
        "data: {\"jsonrpc\":\"2.0\",\n",
        "data: \"id\":7,\"result\":{}}\n\n",
    );
    let (head, tail) = stream.as_bytes().split_at(40);
    assert_eq!(events.push(head), None);
    let data = events.push(tail).expect("the response event");
    assert_eq!(serde_json::from_str::<Value>(&data).unwrap(), json!({"jsonrpc":"2.0","id":7,"result":{}}));
    // Byte by byte, CRLF endings, `data:` without its space, and text that is not UTF-8 (kept
    // as replacement characters, as before).
    let mut events = SseEvents::default();
    let mut stream = b"data:{\"jsonrpc\":\"2.0\",\"id\":8,\r\ndata: \"result\":{\"t\":\"".to_vec();
    stream.extend_from_slice(b"\xff\"}}\r\n\r\ndata: {}\n\n");
    let found: Vec<String> = stream.iter().filter_map(|b| events.push(std::slice::from_ref(b))).collect();
    assert_eq!(found, vec!["{\"jsonrpc\":\"2.0\",\"id\":8,\n\"result\":{\"t\":\"\u{fffd}\"}}".to_owned()]);
}
