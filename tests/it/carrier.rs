//! Error routing (Part III §7) and graceful degradation (§1.3), over real transports:
//! carrier faults are JSON-RPC errors, request errors are `isError: true` results with a
//! closed `kind`, and a foreign session's run is indistinguishable from an unknown one.

use crate::{support, workflow};

use serde_json::{json, Value};
use support::scenario::{self, profile_program, ARGUMENT, EXECUTE, LANGUAGE, TRACE, VALIDATE};
use support::{Conn, HttpServer, HttpStyle, EXT};

const INVALID_PARAMS: i64 = -32602;
const PARSE_ERROR: i64 = -32700;

fn server() -> pilotage::Server {
    pilotage::Server::builder().name("test", "0").language(workflow::Workflow::new).build().unwrap()
}

async fn ready(mut conn: Conn) -> Conn {
    conn.initialize(true).await;
    conn
}

async fn duplex() -> Conn {
    ready(Conn::duplex(&server())).await
}

fn error_code(error: &Value) -> i64 {
    error["code"].as_i64().unwrap_or_else(|| panic!("JSON-RPC error without an integer code: {error}"))
}

/// `{ not json` draws a `-32700` error with a null id, and the connection keeps working.
async fn assert_parse_error(conn: &mut Conn) {
    let reply = conn.raw("{ not json").await;
    assert_eq!(reply["jsonrpc"], "2.0", "{}: {reply}", conn.label);
    assert_eq!(reply["id"], Value::Null, "{}: {reply}", conn.label);
    assert_eq!(error_code(&reply["error"]), PARSE_ERROR, "{}: {reply}", conn.label);
    assert!(reply.get("result").is_none(), "{}: {reply}", conn.label);
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(
        manifest["languages"][0]["name"], LANGUAGE,
        "{}: still serving after the parse error",
        conn.label
    );
}

#[tokio::test]
async fn unknown_tool_is_invalid_params() {
    let mut conn = duplex().await;
    let error = conn.call_carrier_error("validate_workflw", json!({})).await;
    assert_eq!(error_code(&error), INVALID_PARAMS, "{error}");
    assert!(error["message"].as_str().unwrap().contains("validate_workflw"), "{error}");

    let http = HttpServer::start(&server()).await;
    let mut conn = ready(http.connect(HttpStyle::Plain)).await;
    let error = conn.call_carrier_error("validate_workflw", json!({})).await;
    assert_eq!(error_code(&error), INVALID_PARAMS, "{error}");
}

#[tokio::test]
async fn malformed_json_line_over_duplex_is_a_parse_error() {
    let mut conn = duplex().await;
    assert_parse_error(&mut conn).await;
}

#[tokio::test]
async fn malformed_json_line_over_stdio_is_a_parse_error() {
    let mut conn = ready(Conn::stdio("workflow", &[])).await;
    assert_parse_error(&mut conn).await;
}

#[tokio::test]
async fn malformed_json_body_over_http_is_a_parse_error() {
    let http = HttpServer::start(&server()).await;
    for style in [HttpStyle::Plain, HttpStyle::Full] {
        let mut conn = ready(http.connect(style)).await;
        let reply = conn.raw("{ not json").await;
        assert_eq!(conn.last_http_status(), Some(400), "{style:?}: {reply}");
        assert_eq!(conn.last_content_type(), Some("application/json"), "{style:?}");
        assert_eq!(reply["id"], Value::Null, "{style:?}: {reply}");
        assert_eq!(error_code(&reply["error"]), PARSE_ERROR, "{style:?}: {reply}");
        assert_parse_error(&mut conn).await;
    }
}

/// JSON that is not a JSON-RPC 2.0 message (JSON-RPC 2.0 §5: Invalid Request).
const NOT_MESSAGES: [&str; 5] =
    ["{}", "[]", "5", r#"{"jsonrpc":"2.0","id":1}"#, r#"{"jsonrpc":"2.0","id":2,"method":5}"#];

async fn assert_invalid_request(conn: &mut Conn) {
    for body in NOT_MESSAGES {
        let reply = conn.raw(body).await;
        assert_eq!(error_code(&reply["error"]), -32600, "{}: {body} => {reply}", conn.label);
    }
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(manifest["languages"][0]["name"], LANGUAGE, "{}: still serving", conn.label);
}

#[tokio::test]
async fn json_that_is_not_a_message_is_invalid_request_over_http() {
    let http = HttpServer::start(&server()).await;
    for style in [HttpStyle::Plain, HttpStyle::Full] {
        let mut conn = ready(http.connect(style)).await;
        assert_invalid_request(&mut conn).await;
    }
}

/// rmcp drops such lines without a reply once the session runs; the stdio transport answers them.
#[tokio::test]
async fn json_that_is_not_a_message_is_invalid_request_over_lines() {
    let mut conn = duplex().await;
    assert_invalid_request(&mut conn).await;
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_invalid_params() {
    let mut conn = duplex().await;
    for arguments in [json!([1, 2]), json!("workflow"), json!(7)] {
        let reply = conn.request("tools/call", json!({"name": VALIDATE, "arguments": arguments})).await;
        let error = reply.get("error").unwrap_or_else(|| panic!("arguments {arguments}: {reply}"));
        assert_eq!(error_code(error), INVALID_PARAMS, "arguments {arguments}: {reply}");
    }
}

#[tokio::test]
async fn validate_without_its_program_is_invalid_params() {
    let mut conn = duplex().await;
    let error = conn.call_carrier_error(VALIDATE, json!({})).await;
    assert_eq!(error_code(&error), INVALID_PARAMS, "{error}");
    // Positive control: the same tool with its required argument is a result.
    let ok = conn.call(VALIDATE, json!({ARGUMENT: profile_program("cap_read_user_profile")})).await;
    assert!(!ok.is_error, "{}", ok.raw);
    assert_eq!(ok.structured["valid"], true, "{}", ok.raw);
}

#[tokio::test]
async fn execute_with_a_wrongly_typed_trace_level_is_invalid_params() {
    let mut conn = duplex().await;
    let args = json!({ARGUMENT: profile_program("cap_read_user_profile"), "input": {"userId": "42"}, "trace_level": 5});
    let error = conn.call_carrier_error(EXECUTE, args).await;
    assert_eq!(error_code(&error), INVALID_PARAMS, "{error}");
}

#[tokio::test]
async fn execute_with_an_unknown_trace_level_is_a_request_error() {
    let mut conn = duplex().await;
    let before = scenario::fingerprint(&mut conn).await;
    let args = json!({ARGUMENT: profile_program("cap_read_user_profile"), "input": {"userId": "42"}, "trace_level": "verbose"});
    let call = conn.call(EXECUTE, args).await;
    assert!(call.is_error, "unknown trace_level is a request error: {}", call.raw);
    assert_eq!(call.raw["result"]["isError"], json!(true));
    assert_eq!(call.structured["error"]["kind"], "invalid_request", "{}", call.raw);
    assert!(call.structured["error"]["message"].is_string(), "{}", call.raw);
    assert_eq!(scenario::fingerprint(&mut conn).await, before, "a refused request changes nothing");
}

#[tokio::test]
async fn trace_fetch_of_an_unknown_run_is_not_found() {
    let mut conn = duplex().await;
    let call = conn.call(TRACE, json!({"run_id": "run_0123456789abcdef"})).await;
    assert!(call.is_error, "{}", call.raw);
    assert_eq!(call.structured["error"]["kind"], "not_found", "{}", call.raw);
    assert!(call.structured["error"]["message"].is_string(), "{}", call.raw);
}

/// A run executed with `store: false` is not retained, and fetching it is indistinguishable
/// from fetching an id that never existed (Part II §6.6).
#[tokio::test]
async fn a_run_not_stored_is_indistinguishable_from_an_unknown_one() {
    let mut conn = duplex().await;
    let args = |store: bool| json!({ARGUMENT: profile_program("cap_read_user_profile"), "input": {"userId": "42"}, "store": store});
    let kept = conn.call_ok(EXECUTE, args(true)).await;
    let kept = conn.call_ok(TRACE, json!({"run_id": kept["run_id"]})).await;
    assert_eq!(kept["outcome"]["ok"], true, "positive control: a stored run is fetchable: {kept}");

    let dropped = conn.call_ok(EXECUTE, args(false)).await;
    assert_eq!(dropped["outcome"]["ok"], true, "{dropped}");
    assert!(
        dropped["trace"].is_object(),
        "the inline trace rides the response regardless of store: {dropped}"
    );
    let fetched = conn.call(TRACE, json!({"run_id": dropped["run_id"]})).await;
    let unknown = conn.call(TRACE, json!({"run_id": "run_0123456789abcdef"})).await;
    assert!(fetched.is_error, "{}", fetched.raw);
    assert_eq!(fetched.structured["error"]["kind"], "not_found", "{}", fetched.raw);
    assert_eq!(
        serde_json::to_string(&fetched.raw["result"]).unwrap(),
        serde_json::to_string(&unknown.raw["result"]).unwrap()
    );
}

/// A run stored in session A is invisible to session B, and B cannot tell it from an id
/// that never existed: the whole `result` objects are byte-identical.
#[tokio::test]
async fn a_foreign_sessions_run_is_indistinguishable_from_an_unknown_one() {
    let http = HttpServer::start(&server()).await;
    let mut a = ready(http.connect(HttpStyle::Plain)).await;
    let mut b = ready(http.connect(HttpStyle::Plain)).await;
    assert_ne!(a.session_id(), b.session_id());
    assert!(a.session_id().is_some() && b.session_id().is_some());

    let run = a
        .call_ok(
            EXECUTE,
            json!({ARGUMENT: profile_program("cap_read_user_profile"), "input": {"userId": "42"}, "store": true}),
        )
        .await;
    assert_eq!(run["outcome"]["ok"], true, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    // Positive control: the owner can fetch it.
    let own = a.call_ok(TRACE, json!({"run_id": run_id})).await;
    assert_eq!(own["run_id"], json!(run_id), "{own}");

    let foreign = b.call(TRACE, json!({"run_id": run_id})).await;
    let unknown = b.call(TRACE, json!({"run_id": "run_0123456789abcdef"})).await;
    assert!(foreign.is_error, "{}", foreign.raw);
    assert_eq!(foreign.structured["error"]["kind"], "not_found", "{}", foreign.raw);
    let foreign_result = serde_json::to_string(&foreign.raw["result"]).unwrap();
    let unknown_result = serde_json::to_string(&unknown.raw["result"]).unwrap();
    assert_eq!(foreign_result, unknown_result, "a foreign run must be indistinguishable from an unknown one");
}

/// A client that does not declare the extension still gets the whole Pilotage surface
/// (Part III §1.3, §3.4).
#[tokio::test]
async fn a_client_without_the_extension_sees_everything() {
    let mut conn = Conn::duplex(&server());
    let inline = scenario::handshake(&mut conn, false).await;
    scenario::check_tool_surface(&mut conn).await;
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    scenario::check_manifest(&conn.label, &manifest);
    assert_eq!(inline, manifest);
    let index = conn.call_ok("pilotage_get_guide", json!({"language": LANGUAGE})).await;
    assert!(!index["guides"].as_array().unwrap().is_empty(), "{index}");
    // The same over HTTP.
    let http = HttpServer::start(&server()).await;
    let mut conn = http.connect(HttpStyle::Plain);
    let response = conn.initialize(false).await;
    let result = &response["result"];
    assert_eq!(result["capabilities"]["extensions"][EXT], json!({"version": "1.1"}), "{result}");
    assert!(result["instructions"].as_str().unwrap().contains("pilotage_manifest"), "{result}");
    assert_eq!(result["_meta"][EXT]["manifest"], manifest, "{result}");
    scenario::check_tool_surface(&mut conn).await;
}
