//! Quiet by default: MCP hosts show a stdio server's stderr to people, so an example server
//! writes nothing there for a normal session (not rmcp's INFO lines, nor its dump of the
//! client's `InitializeRequestParams`, nor a warning per `-32602`). `RUST_LOG` or `--log` raise
//! it, and the runtime's own event per tool call (target `pilotage`) carries the tool, the
//! Language, the run id, the duration and the outcome.

use std::time::{Duration, Instant};

use crate::support;

use serde_json::json;
use support::Conn;

/// `initialize`, a call to an unknown tool (`-32602`) and a run that fails (an unknown user):
/// returns the failed run's id.
async fn session(conn: &mut Conn) -> String {
    conn.initialize(true).await;
    let error = conn.call_carrier_error("no_such_tool", json!({})).await;
    assert_eq!(error["code"], -32602, "{error}");
    let program = json!({"inputs": {"userId": "string"}, "steps": [
        {"id": "profile", "kind": "call", "capability": "cap_read_user_profile", "with": {"user_id": "$.input.userId"}}
    ]});
    let ran = conn.call_ok("run_workflow", json!({"workflow": program, "input": {"userId": "99"}})).await;
    assert_eq!(ran["outcome"]["status"], "error", "{ran}");
    ran["run_id"].as_str().expect("a run id").to_owned()
}

/// The example's stderr once it holds every piece of `wanted` (or after 5 s).
async fn stderr_with(conn: &Conn, wanted: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = conn.stderr();
        if wanted.iter().all(|w| text.contains(w)) || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_stdio_session_writes_nothing_to_stderr_by_default() {
    let mut conn = Conn::stdio_env("workflow", &[], &[("RUST_LOG", None)]);
    session(&mut conn).await;
    // Anything logged would have been written before the answers it accompanies; give the
    // reader of the pipe time to collect it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(conn.stderr(), "");
}

#[tokio::test]
async fn rust_log_selects_our_structured_event_per_tool_call() {
    let mut conn = Conn::stdio_env("workflow", &[], &[("RUST_LOG", Some("pilotage=info"))]);
    let run_id = session(&mut conn).await;
    let run = format!("run_id=\"{run_id}\"");
    let text = stderr_with(&conn, &["outcome=\"error\"", "outcome=\"jsonrpc_error:-32602\""]).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "one event per tool call (the unknown tool, the run):\n{text}");
    let unknown = lines.iter().find(|l| l.contains("tool=no_such_tool")).expect("the unknown tool's event");
    assert!(unknown.contains("pilotage: tools/call answered"), "{unknown}");
    assert!(unknown.contains("outcome=\"jsonrpc_error:-32602\""), "{unknown}");
    assert!(!unknown.contains("language="), "no Language for an unknown tool: {unknown}");
    let failed = lines.iter().find(|l| l.contains("tool=run_workflow")).expect("the run's event");
    for field in ["language=\"workflow/v1\"", run.as_str(), "duration_ms=", "outcome=\"error\""] {
        assert!(failed.contains(field), "{field} missing from {failed}");
    }
    assert!(!text.contains("rmcp"), "rmcp's lines stay off under pilotage=info:\n{text}");
}

#[tokio::test]
async fn the_log_flag_raises_everything() {
    let mut conn = Conn::stdio_env("workflow", &["--log", "info"], &[("RUST_LOG", None)]);
    session(&mut conn).await;
    let text = stderr_with(&conn, &["rmcp::", "outcome=\"error\""]).await;
    assert!(text.contains("serving workflow/v1 over stdio"), "{text}");
    assert!(text.contains("rmcp::"), "{text}");
    assert!(text.contains("pilotage: tools/call answered"), "{text}");
}
