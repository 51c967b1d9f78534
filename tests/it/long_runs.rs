//! Long runs (beyond Pilotage 1.1, opt-in by the client): progress notifications for an execute
//! that carries a `progressToken`, and `notifications/cancelled` stopping a Run, which then ends
//! `partial` with the trace it has and is fetchable like any other Run. Over duplex and the
//! example binary over stdio, on the `automation/v1` engine.

use crate::{kit, support};

use kit::{ctx, ids, Client, TempStore, ARG, EXECUTE, TRACE};
use pilotage::engine::progress::max_ticks;
use serde_json::{json, Value};
use support::{Conn, EXT};

/// A flat program of `n` steps, each a `wait` of `ms` milliseconds.
pub fn waits(n: usize, ms: u64) -> Value {
    let steps: Vec<Value> =
        (0..n).map(|i| json!({"id": format!("s{i}"), "call": "wait", "with": {"ms": ms}})).collect();
    json!({"steps": steps})
}

/// A program that loops over `n` items, waiting `ms` milliseconds in each.
pub fn slow_loop(n: usize, ms: u64) -> Value {
    let items: Vec<usize> = (0..n).collect();
    json!({"steps": [{"id": "each", "loop": items, "as": "i", "steps": [
        {"id": "pause", "call": "wait", "with": {"ms": ms}}
    ]}]})
}

/// The execute arguments of an immediate run of `program`.
fn run_args(program: &Value) -> Value {
    json!({ARG: program, "mode": "immediate", "context": ctx()})
}

/// The `notifications/progress` messages for `token` among `messages`.
fn progress_of(messages: &[Value], token: &str) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == token)
        .map(|m| m["params"].clone())
        .collect()
}

async fn progress_run(conn: &mut Conn) {
    let program = waits(10_000, 0);
    let id = conn
        .start(
            "tools/call",
            json!({"name": EXECUTE, "arguments": run_args(&program), "_meta": {"progressToken": "p1"}}),
        )
        .await;
    let response = conn.finish(id).await;
    let result = &response["result"]["structuredContent"];
    assert_eq!(result["outcome"]["status"], "success", "{}: {response:#}", conn.label);
    conn.check_tool_result(EXECUTE, &response["result"]).await;
    let ticks = progress_of(conn.unsolicited(), "p1");
    // Deterministic: every power of two and the first step of each 32nd of the plan.
    assert_eq!(ticks.len(), 46, "{}: {ticks:?}", conn.label);
    assert!(ticks.len() <= max_ticks(10_000));
    let run = json!({EXT: {"run_id": result["run_id"]}});
    assert_eq!(
        ticks[0],
        json!({"progressToken": "p1", "progress": 1.0, "total": 10000.0, "message": "s0", "_meta": run})
    );
    assert_eq!(
        ticks[45],
        json!({"progressToken": "p1", "progress": 10000.0, "total": 10000.0, "message": "s9999", "_meta": run})
    );
    let done: Vec<f64> = ticks.iter().map(|t| t["progress"].as_f64().unwrap()).collect();
    assert!(done.windows(2).all(|w| w[0] < w[1]), "progress must increase: {done:?}");
    // Without a token, the same run sends none.
    let before = conn.unsolicited().len();
    let plain = conn.call(EXECUTE, run_args(&waits(50, 0))).await;
    assert_eq!(plain.structured["outcome"]["status"], "success");
    let after: Vec<&Value> =
        conn.unsolicited()[before..].iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(after.is_empty(), "{}: progress without a token: {after:?}", conn.label);
}

#[tokio::test]
async fn progress_is_bounded_over_duplex() {
    let store = TempStore::new("long-progress");
    let mut c = Client::duplex(&kit::server_on(store.path(), None)).await;
    progress_run(&mut c.conn).await;
}

#[tokio::test]
async fn progress_is_bounded_over_stdio() {
    let dir = TempStore::new("long-progress-stdio");
    let mut c = Client::new(Conn::stdio("automation", &["--store", dir.path().to_str().unwrap()])).await;
    progress_run(&mut c.conn).await;
}

/// Start a 40 × 100 ms loop with a progress token, cancel it once its first step is reported,
/// and check the Run: no answer to the cancelled request (MCP), and, fetched by the `run_id` its
/// progress named, `partial` with a strict prefix of the full trace.
async fn cancelled_run(conn: &mut Conn) {
    let program = slow_loop(40, 100);
    let id = conn
        .start(
            "tools/call",
            json!({"name": EXECUTE, "arguments": run_args(&program), "_meta": {"progressToken": "c1"}}),
        )
        .await;
    let first = conn
        .message_where(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "c1")
        .await;
    let run_id = first["params"]["_meta"][EXT]["run_id"].as_str().expect("the run id in _meta").to_owned();
    conn.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "the operator changed their mind"}),
    )
    .await;
    let fetched = fetch_when_kept(conn, &run_id).await;
    assert_eq!(fetched["outcome"]["ok"], false, "{}: {fetched:#}", conn.label);
    assert_eq!(fetched["outcome"]["status"], "partial", "{}: {fetched:#}", conn.label);
    let error = fetched["outcome"]["error"].as_str().unwrap();
    assert!(error.starts_with("the client cancelled the run after "), "{error}");
    let steps = fetched["trace"]["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() < 41, "{}: a cancelled run stops early: {steps:?}", conn.label);
    assert!(
        !conn.unsolicited().iter().any(|m| m["id"] == json!(id)),
        "{}: a cancelled request is not answered",
        conn.label
    );
}

/// The trace tool's answer for `run_id` once the Run is retained (a cancelled run is kept
/// when its engine has stopped, a moment after the cancellation).
pub async fn fetch_when_kept(conn: &mut Conn, run_id: &str) -> Value {
    for _ in 0..200 {
        let call = conn.call(TRACE, json!({"run_id": run_id})).await;
        if !call.is_error {
            return call.structured;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{}: run {run_id} was never retained", conn.label);
}

#[tokio::test]
async fn cancellation_stops_the_run_over_duplex() {
    let store = TempStore::new("long-cancel");
    let mut c = Client::duplex(&kit::server_on(store.path(), None)).await;
    cancelled_run(&mut c.conn).await;
}

#[tokio::test]
async fn cancellation_stops_the_run_over_stdio() {
    let dir = TempStore::new("long-cancel-stdio");
    let mut c = Client::new(Conn::stdio("automation", &["--store", dir.path().to_str().unwrap()])).await;
    cancelled_run(&mut c.conn).await;
}

/// The MCP Tasks extension id.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `initialize` declaring the Pilotage and the Tasks extensions, then `initialized`.
pub async fn initialize_with_tasks(conn: &mut Conn) -> Value {
    let response = conn
        .request(
            "initialize",
            json!({
                "protocolVersion": support::PROTOCOL,
                "capabilities": {"extensions": {EXT: {}, TASKS: {}}},
                "clientInfo": {"name": "pilotage-tests", "version": "0"}
            }),
        )
        .await;
    assert!(
        response["result"]["capabilities"]["extensions"].get(TASKS).is_some(),
        "{}: a server with a `tasks` Language advertises the Tasks extension: {response}",
        conn.label
    );
    conn.notify("notifications/initialized", Value::Null).await;
    response
}

/// Start `program` as a task; returns `(task_id, run_id)`.
async fn start_task(conn: &mut Conn, program: &Value) -> (String, String) {
    let response = conn.request("tools/call", json!({"name": EXECUTE, "arguments": run_args(program)})).await;
    let task = &response["result"];
    assert_eq!(
        task["resultType"], "task",
        "{}: a task-augmented call answers with a task: {response}",
        conn.label
    );
    assert_eq!(task["status"], "working", "{response}");
    let run_id = task["_meta"][EXT]["run_id"].as_str().expect("the task names its run").to_owned();
    (task["taskId"].as_str().unwrap().to_owned(), run_id)
}

async fn task_get(conn: &mut Conn, task_id: &str) -> Value {
    let response = conn.request("tasks/get", json!({"taskId": task_id})).await;
    response.get("result").unwrap_or_else(|| panic!("{}: tasks/get failed: {response}", conn.label)).clone()
}

/// Poll `tasks/get` until the task leaves `working`.
pub async fn task_end(conn: &mut Conn, task_id: &str) -> Value {
    for _ in 0..800 {
        let task = task_get(conn, task_id).await;
        if task["status"] != "working" {
            return task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{}: task {task_id} never ended", conn.label);
}

/// A task runs in the background: `working` with its steps so far and a partial trace by
/// `run_id` while it runs, then the very execute result a plain call returns.
async fn task_completes(conn: &mut Conn) {
    initialize_with_tasks(conn).await;
    let program = slow_loop(20, 100);
    let (task_id, run_id) = start_task(conn, &program).await;
    let first = task_get(conn, &task_id).await;
    assert_eq!(first["status"], "working", "{}: {first}", conn.label);
    assert_eq!(first["_meta"][EXT]["run_id"], run_id);
    let live = conn.call_ok(TRACE, json!({"run_id": run_id})).await;
    assert_eq!(live["outcome"]["status"], "partial", "a running task's trace is partial: {live}");
    assert!(live["outcome"]["error"].as_str().unwrap().starts_with("the run is still going"), "{live}");
    let done = task_end(conn, &task_id).await;
    assert_eq!(done["status"], "completed", "{}: {done}", conn.label);
    let result = done["result"].clone();
    conn.check_tool_result(EXECUTE, &result).await;
    let response = &result["structuredContent"];
    assert_eq!(response["run_id"], run_id);
    assert_eq!(response["outcome"], json!({"ok": true, "status": "success", "error": null}));
    assert_eq!(done["_meta"][EXT]["steps_done"], json!(ids(response).len()));
    let fetched = conn.call_ok(TRACE, json!({"run_id": run_id})).await;
    assert_eq!(fetched["outcome"], response["outcome"]);
    assert_eq!(fetched["trace"]["steps"], response["trace"]["steps"]);
}

/// `tasks/cancel` stops the Run: the task ends `cancelled`, its Run `partial` and fetchable.
async fn task_cancels(conn: &mut Conn) {
    initialize_with_tasks(conn).await;
    let (task_id, run_id) = start_task(conn, &slow_loop(40, 100)).await;
    let ack = conn.request("tasks/cancel", json!({"taskId": task_id})).await;
    assert!(ack.get("result").is_some(), "{}: {ack}", conn.label);
    let ended = task_end(conn, &task_id).await;
    assert_eq!(ended["status"], "cancelled", "{}: {ended}", conn.label);
    let fetched = fetch_when_kept(conn, &run_id).await;
    assert_eq!(fetched["outcome"]["status"], "partial", "{fetched}");
    assert!(fetched["outcome"]["error"].as_str().unwrap().starts_with("the client cancelled the run"));
    let unknown = conn.request("tasks/get", json!({"taskId": "task_0000000000000000"})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[tokio::test]
async fn a_task_completes_over_duplex() {
    let store = TempStore::new("long-task");
    let mut conn = Conn::duplex(&kit::server_on(store.path(), None));
    task_completes(&mut conn).await;
}

#[tokio::test]
async fn a_task_completes_over_http() {
    let store = TempStore::new("long-task-http");
    let http = support::HttpServer::start(&kit::server_on(store.path(), None)).await;
    let mut conn = http.connect(support::HttpStyle::Full);
    task_completes(&mut conn).await;
}

#[tokio::test]
async fn a_task_cancels_over_duplex() {
    let store = TempStore::new("long-task-cancel");
    let mut conn = Conn::duplex(&kit::server_on(store.path(), None));
    task_cancels(&mut conn).await;
}

#[tokio::test]
async fn a_task_cancels_over_http() {
    let store = TempStore::new("long-task-cancel-http");
    let http = support::HttpServer::start(&kit::server_on(store.path(), None)).await;
    let mut conn = http.connect(support::HttpStyle::Full);
    task_cancels(&mut conn).await;
}

#[tokio::test]
async fn running_tasks_are_bounded_per_caller() {
    let store = TempStore::new("long-task-bound");
    let limits = pilotage::engine::Limits { max_live_tasks: 2, ..Default::default() };
    let mut conn = Conn::duplex(&kit::server_on(store.path(), Some(limits)));
    initialize_with_tasks(&mut conn).await;
    let (a, _) = start_task(&mut conn, &slow_loop(40, 100)).await;
    let (b, _) = start_task(&mut conn, &slow_loop(40, 100)).await;
    let third = conn.call(EXECUTE, run_args(&slow_loop(1, 0))).await;
    kit::assert_request_error(&third, "bounds_exceeded");
    assert!(third.text.contains("already has 2 running tasks"), "{}", third.text);
    for t in [&a, &b] {
        conn.request("tasks/cancel", json!({"taskId": t})).await;
        assert_eq!(task_end(&mut conn, t).await["status"], "cancelled");
    }
    let (c, _) = start_task(&mut conn, &slow_loop(1, 0)).await;
    assert_eq!(task_end(&mut conn, &c).await["status"], "completed", "a slot is free again");
}

#[tokio::test]
async fn without_the_tasks_extension_execute_answers_plainly() {
    let store = TempStore::new("long-no-task");
    let mut c = Client::duplex(&kit::server_on(store.path(), None)).await;
    let r = c.conn.call(EXECUTE, run_args(&slow_loop(2, 0))).await;
    assert_eq!(r.structured["outcome"]["status"], "success", "{}", r.raw);
    assert!(r.raw["result"].get("resultType").is_none_or(|t| t == "complete"), "{}", r.raw);
}

/// A working task whose process stopped reports `failed` from the next process on the same
/// durable store (stdio, the SQLite run store of the example).
#[tokio::test]
async fn a_task_cut_by_a_restart_reports_failed() {
    let store = TempStore::new("long-task-restart");
    let path = store.path().to_str().unwrap().to_owned();
    let task_id = {
        let mut conn = Conn::stdio("automation", &["--store", &path]);
        initialize_with_tasks(&mut conn).await;
        let (task_id, _) = start_task(&mut conn, &slow_loop(40, 100)).await;
        assert_eq!(task_get(&mut conn, &task_id).await["status"], "working");
        task_id
    };
    let mut conn = Conn::stdio("automation", &["--store", &path]);
    initialize_with_tasks(&mut conn).await;
    let task = task_get(&mut conn, &task_id).await;
    assert_eq!(task["status"], "failed", "{task}");
    let message = task["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("the server stopped while this task was working"), "{message}");
    assert_eq!(task_get(&mut conn, &task_id).await, task, "the failure is recorded");
}

/// A working record that another process wrote, `moved_ms_ago` milliseconds ago.
fn foreign_working(task_id: &str, moved_ms_ago: u64) -> pilotage::state::TaskRecord {
    use pilotage::state::tasks::{now_ms, rfc3339};
    let at = rfc3339(now_ms() - moved_ms_ago);
    pilotage::state::TaskRecord {
        task_id: task_id.to_owned(),
        owner: "ambient".into(),
        language: kit::LANGUAGE.into(),
        run_id: format!("run_of_{task_id}"),
        state: pilotage::state::TaskState::Working,
        steps_done: 3,
        result: None,
        error: None,
        created_at: at.clone(),
        updated_at: at,
        ttl_ms: 3 * 3_600_000,
        instance: "another-process".into(),
    }
}

async fn status_of(state: std::sync::Arc<dyn pilotage::state::SharedState>, task_id: &str) -> Value {
    let server = pilotage::Server::builder()
        .name("automation-test", "0")
        .language(crate::automation::Automation::new)
        .state(state)
        .build()
        .expect("the automation server builds");
    let mut conn = Conn::duplex(&server);
    initialize_with_tasks(&mut conn).await;
    task_get(&mut conn, task_id).await
}

/// On a store of one process, a working task that is not running here never will: `failed`.
#[tokio::test]
async fn a_working_task_of_another_process_on_a_private_store_is_failed() {
    let store = TempStore::new("long-task-private");
    let state =
        std::sync::Arc::new(pilotage::state::SqliteState::open(store.path()).expect("open the store"));
    pilotage::state::SharedState::put_task(&*state, &foreign_working("task_private", 0)).await.unwrap();
    let task = status_of(state, "task_private").await;
    assert_eq!(task["status"], "failed", "{task}");
}

/// On a store shared by replicas, a working task of another replica is `working` while it may
/// still be running there, and `failed` once it has not moved for longer than its Run may take.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_working_task_of_another_replica_is_failed_only_once_stale() {
    if !pilotage::state::suite::postgres_or_skip(
        "long_runs::a_working_task_of_another_replica_is_failed_only_once_stale",
    ) {
        return;
    }
    let schema = pilotage::state::suite::TestSchema::create("tasks").await;
    let pg = pilotage::state::PostgresState::connect(&schema.url).await.expect("connect");
    let state: std::sync::Arc<dyn pilotage::state::SharedState> = std::sync::Arc::new(pg);
    state.put_task(&foreign_working("task_fresh", 0)).await.unwrap();
    state.put_task(&foreign_working("task_stale", 3_600_000)).await.unwrap();
    assert_eq!(status_of(state.clone(), "task_fresh").await["status"], "working");
    let stale = status_of(state, "task_stale").await;
    assert_eq!(stale["status"], "failed", "{stale}");
    schema.drop_all().await;
}

/// The manifest declares long runs in a member a 1.1 client ignores, for a `tasks` Language
/// only; the server advertises the Tasks extension beside the Pilotage one.
#[tokio::test]
async fn the_manifest_declares_long_runs_as_an_unknown_member() {
    let store = TempStore::new("long-manifest");
    let mut conn = Conn::duplex(&kit::server_on(store.path(), None));
    let init = initialize_with_tasks(&mut conn).await;
    assert_eq!(init["result"]["capabilities"]["extensions"][TASKS], json!({}));
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(
        manifest["languages"][0]["x-long-runs"],
        json!({"progress": true, "cancellation": true, "tasks": TASKS})
    );
    let workflow = pilotage::Server::builder()
        .name("test", "0")
        .language(crate::workflow::Workflow::new)
        .build()
        .unwrap();
    let mut plain = Conn::duplex(&workflow);
    let init = plain.initialize(true).await;
    assert!(init["result"]["capabilities"]["extensions"].get(TASKS).is_none(), "{init}");
    let manifest = plain.call_ok("pilotage_manifest", json!({})).await;
    assert!(manifest["languages"][0].get("x-long-runs").is_none(), "{manifest}");
}
