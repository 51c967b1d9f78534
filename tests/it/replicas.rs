//! Stateless replicas behind one URL: three processes of the `automation` example serve MCP
//! 2026-07-28 without sessions (`--stateless`), verify callers with one JWT secret and keep
//! runs, idempotency keys, promotions and served catalogs in one PostgreSQL database
//! (`--postgres URL`; each test run gets a schema of its own). A client that lands on any
//! replica gets the same answers: runs executed on one are fetched on the others, duplicates
//! spread over all three run once, a program promoted on one runs by reference on another, a
//! replica killed with SIGKILL loses no acknowledged run, and no caller sees another's state.
//!
//! Everything talks to 127.0.0.1 only and the whole scenario is bounded by [`BOUND`].

use crate::{kit, support};

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kit::{ctx, ARG, EXECUTE, PROMOTE, TRACE, VALIDATE};
use pilotage::state::suite::TestSchema;
use serde_json::{json, Value};
use support::{free_port, Served as Replica, ToolKind};

/// The whole scenario's bound: a hang fails the test instead of holding CI.
const BOUND: Duration = Duration::from_secs(240);

/// A `tools/call` as the verified caller `who` on `url`: the JSON-RPC `result`, or why none came.
/// Every Pilotage result's `structuredContent` is checked against the tool's advertised
/// `outputSchema` (as this replica lists it) and the official schema.
pub(crate) async fn try_call(url: &str, who: &str, tool: &str, arguments: Value) -> Result<Value, String> {
    let params = json!({"name": tool, "arguments": arguments});
    let bearer = support::auth::bearer(who);
    let reply = support::try_stateless_request(url, "tools/call", params, json!({}), Some(&bearer)).await?;
    let result = reply.get("result").cloned().ok_or_else(|| format!("no result: {reply}"))?;
    if let Some(kind) =
        [(VALIDATE, ToolKind::Validate), (EXECUTE, ToolKind::Execute), (TRACE, ToolKind::Trace)]
            .into_iter()
            .find_map(|(name, kind)| (name == tool).then_some(kind))
    {
        let structured = &result["structuredContent"];
        support::assert_def(structured, kind.output_def());
        let advertised = advertised_output(url, tool).await;
        if let Some(e) = support::schemas::errors(&advertised, structured) {
            panic!("{tool}'s structuredContent does not match its advertised outputSchema:\n{e}");
        }
    }
    Ok(result)
}

/// The validator of `tool`'s advertised `outputSchema` on the replica at `url`, listed once.
async fn advertised_output(url: &str, tool: &str) -> Arc<jsonschema::Validator> {
    type Listed = std::sync::Mutex<std::collections::HashMap<(String, String), Arc<jsonschema::Validator>>>;
    static LISTED: std::sync::OnceLock<Listed> = std::sync::OnceLock::new();
    let key = (url.to_owned(), tool.to_owned());
    if let Some(v) = LISTED.get_or_init(Listed::default).lock().unwrap().get(&key) {
        return v.clone();
    }
    let reply = support::stateless_request(
        url,
        "tools/list",
        json!({}),
        json!({}),
        Some(&support::auth::bearer("lister")),
    )
    .await;
    let tools = reply["result"]["tools"].as_array().cloned().unwrap_or_default();
    let found =
        tools.iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("{tool} is not listed: {reply}"));
    let validator = support::schemas::compile(&found["outputSchema"], tool);
    LISTED.get_or_init(Listed::default).lock().unwrap().insert(key, validator.clone());
    validator
}

async fn call(replica: &Replica, who: &str, tool: &str, arguments: Value) -> Value {
    try_call(&replica.url(), who, tool, arguments).await.unwrap_or_else(|e| panic!("{e}"))
}

/// A program that touches the building and adds 3 to its counter.
fn program() -> Value {
    json!({
        "steps": [
            {"id": "lights", "call": "devices_list", "with": {"kind": "light"}},
            {"id": "count", "call": "counter_add", "with": {"by": 3}}
        ],
        "output": {"counter": "$.steps.count.output.counter"}
    })
}

/// The envelope a trace fetch returns, without its narration: what the execute response carried.
pub(crate) fn envelope(fetched: &Value) -> Value {
    assert_eq!(fetched["isError"], false, "{fetched}");
    let mut envelope = fetched["structuredContent"].clone();
    envelope.as_object_mut().expect("an object").remove("narration");
    envelope
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_stateless_replicas_on_one_postgres_database_serve_as_one() {
    if !pilotage::state::suite::postgres_or_skip(
        "replicas::three_stateless_replicas_on_one_postgres_database_serve_as_one",
    ) {
        return;
    }
    tokio::time::timeout(BOUND, scenario()).await.expect("the replica scenario finished within its bound");
}

async fn scenario() {
    let schema = TestSchema::create("replicas").await;
    let secret = std::env::temp_dir().join(format!("{}.secret", schema.name));
    // The three start at once: their migrations meet under the advisory lock.
    let ports = [free_port(), free_port(), free_port()];
    let on_postgres = ["--postgres".as_ref(), schema.url.as_ref()];
    let (a, b, c) = tokio::join!(
        Replica::start(ports[0], &on_postgres, &secret),
        Replica::start(ports[1], &on_postgres, &secret),
        Replica::start(ports[2], &on_postgres, &secret),
    );
    let mut replicas = [a, b, c];
    let tables = schema.tables().await;
    assert!(tables.contains(&"pilotage_schema".to_owned()), "migrated once into the test schema: {tables:?}");

    let run = executed_on_a_fetched_on_b_and_c(&replicas).await;
    duplicates_spread_over_three_replicas_run_once(&replicas).await;
    let reference = promoted_on_a_runs_on_c(&replicas).await;
    callers_never_meet(&replicas, &run, &reference).await;
    a_task_started_on_a_is_polled_on_b(&replicas).await;
    acknowledged_runs_survive_a_sigkill(&mut replicas, &schema.url, &secret).await;

    for r in &mut replicas {
        r.kill9().await;
    }
    let _ = std::fs::remove_file(&secret);
    schema.drop_all().await;
}

/// A task started by one stateless request on A outlives that request: later requests on B see
/// it `working`, then `completed` with the execute result, whose Run C serves; another caller
/// polling it is told what it would be told of a task that never existed.
async fn a_task_started_on_a_is_polled_on_b(replicas: &[Replica; 3]) {
    const TASKS: &str = "io.modelcontextprotocol/tasks";
    let with_tasks = json!({"extensions": {TASKS: {}}});
    let x = support::auth::bearer("task-x");
    let steps: Vec<Value> =
        (0..8).map(|i| json!({"id": format!("w{i}"), "call": "wait", "with": {"ms": 100}})).collect();
    let arguments = json!({ARG: {"steps": steps}, "mode": "immediate", "context": ctx()});
    let params = json!({"name": EXECUTE, "arguments": arguments});
    let a = replicas[0].url();
    let started = support::stateless_request(&a, "tools/call", params, with_tasks.clone(), Some(&x)).await;
    assert_eq!(
        started["result"]["resultType"], "task",
        "a task-augmented call answers with a task: {started}"
    );
    let task_id = started["result"]["taskId"].as_str().expect("the task's id").to_owned();
    let get = |who: String, id: String| {
        let (b, caps) = (replicas[1].url(), with_tasks.clone());
        async move {
            let params = json!({"taskId": id});
            support::stateless_request(&b, "tasks/get", params, caps, Some(&support::auth::bearer(&who)))
                .await
        }
    };
    let first = get("task-x".into(), task_id.clone()).await;
    assert_eq!(first["result"]["status"], "working", "polled on B while A runs it: {first}");
    let mut ended = first;
    for _ in 0..400 {
        if ended["result"]["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        ended = get("task-x".into(), task_id.clone()).await;
    }
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    let response = &ended["result"]["result"]["structuredContent"];
    support::assert_def(response, support::ToolKind::Execute.output_def());
    if let Some(e) = support::schemas::errors(&*advertised_output(&a, EXECUTE).await, response) {
        panic!("the task's execute result does not match the advertised outputSchema:\n{e}");
    }
    assert_eq!(response["outcome"]["status"], "success", "{response}");
    let run_id = response["run_id"].as_str().expect("the task's run").to_owned();
    let fetched = call(&replicas[2], "task-x", TRACE, json!({"run_id": run_id})).await;
    assert_eq!(fetched["structuredContent"]["outcome"], response["outcome"]);
    let theirs = get("task-y".into(), task_id.clone()).await;
    let never = get("task-y".into(), "task_0000000000000000".into()).await;
    assert_eq!(theirs["error"]["code"], never["error"]["code"], "{theirs} / {never}");
    assert_eq!(theirs["error"]["message"], json!(format!("unknown task: {task_id}")), "{theirs}");
}

/// Execute on A; the trace comes back identical from B and C (and A).
async fn executed_on_a_fetched_on_b_and_c(replicas: &[Replica; 3]) -> String {
    let [a, b, c] = replicas;
    let validated = call(a, "xavier", VALIDATE, json!({ARG: program(), "context": ctx()})).await;
    let plan = kit::plan_of(&validated["structuredContent"]);
    let arguments = json!({ARG: program(), "mode": "immediate", "context": ctx(), "store": true,
        "expected_catalog_version": validated["structuredContent"]["catalog_version"]});
    let response = call(a, "xavier", EXECUTE, arguments).await["structuredContent"].clone();
    kit::check_run(&plan, &response, false);
    assert_eq!(response["outcome"]["status"], "success", "{response}");
    let run_id = response["run_id"].as_str().expect("a run id").to_owned();
    let on_b = call(b, "xavier", TRACE, json!({"run_id": run_id})).await;
    let on_c = call(c, "xavier", TRACE, json!({"run_id": run_id})).await;
    let on_a = call(a, "xavier", TRACE, json!({"run_id": run_id})).await;
    assert_eq!(envelope(&on_b), response, "B serves the run A executed");
    assert_eq!(on_b, on_c, "B and C answer alike");
    assert_eq!(on_a, on_c, "A answers as its peers do");
    run_id
}

/// 32 concurrent duplicates of one idempotent execute, round-robin over A, B and C: one Run,
/// every duplicate answered with its response, and the caller's three buildings together
/// counted one execution (+3).
async fn duplicates_spread_over_three_replicas_run_once(replicas: &[Replica; 3]) {
    let arguments =
        json!({ARG: program(), "mode": "immediate", "context": ctx(), "idempotency_key": "k-replicas"});
    let calls = (0..32).map(|i| {
        let url = replicas[i % 3].url();
        let arguments = arguments.clone();
        async move { try_call(&url, "dora", EXECUTE, arguments).await.expect("every duplicate is answered") }
    });
    let mut answers = futures::future::join_all(calls).await;
    // A request that waited a millisecond or more for an engine slot says so in its own
    // `_meta` (`queued_ms`, its wait, not the Run's): the one thing a duplicate's answer may
    // not share with the first. Checked for what it is, then set aside.
    for answer in &mut answers {
        if let Some(meta) = answer.as_object_mut().and_then(|a| a.remove("_meta")) {
            let waited = meta["io.github.jafarsa0/pilotage"]["queued_ms"].as_u64().unwrap_or(0);
            assert!(waited >= 1, "only a wait is reported in a result's _meta: {meta}");
            assert_eq!(meta, json!({"io.github.jafarsa0/pilotage": {"queued_ms": waited}}));
        }
    }
    assert_eq!(answers[0]["isError"], false, "{}", answers[0]);
    assert_eq!(answers[0]["structuredContent"]["outcome"]["status"], "success");
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer, &answers[0], "duplicate {i} (on replica {}) got the first Run's answer", i % 3);
    }
    let mut counted = 0;
    for r in replicas {
        let world = call(r, "dora", "world_fingerprint", json!({})).await;
        counted += world["structuredContent"]["counter"].as_i64().expect("a counter");
    }
    assert_eq!(counted, 3, "the program ran once across the three replicas");
}

/// Promote on A, look up and run by `program_ref` on C.
async fn promoted_on_a_runs_on_c(replicas: &[Replica; 3]) -> String {
    let [a, _, c] = replicas;
    let promoted =
        call(a, "xavier", PROMOTE, json!({ARG: program(), "name": "count three", "context": ctx()})).await;
    assert_eq!(promoted["isError"], false, "{promoted}");
    let reference = promoted["structuredContent"]["program_ref"].as_str().expect("a program_ref").to_owned();
    let ran =
        call(c, "xavier", EXECUTE, json!({"program_ref": reference, "mode": "immediate", "context": ctx()}))
            .await;
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(ran["structuredContent"]["outcome"]["status"], "success", "{ran}");
    reference
}

/// Caller Y, on every replica, cannot tell X's run, promotion or idempotency key from ones
/// that never existed.
async fn callers_never_meet(replicas: &[Replica; 3], run_id: &str, reference: &str) {
    let by_ref = |r: &str| json!({"program_ref": r, "mode": "immediate", "context": ctx()});
    for r in replicas {
        let foreign = call(r, "yvonne", TRACE, json!({"run_id": run_id})).await;
        let unknown = call(r, "yvonne", TRACE, json!({"run_id": "run_0000000000000000"})).await;
        assert_eq!(foreign["isError"], true, "{foreign}");
        assert_eq!(foreign.to_string(), unknown.to_string(), "X's run reads as a never-existing one");
        // The answer names only the reference Y supplied: with it swapped for a never-issued
        // one, the two answers are the same bytes.
        let foreign = call(r, "yvonne", EXECUTE, by_ref(reference)).await;
        let unknown = call(r, "yvonne", EXECUTE, by_ref("prog_0000000000000000")).await;
        assert_eq!(foreign["isError"], true, "{foreign}");
        assert_eq!(
            foreign.to_string().replace(reference, "prog_0000000000000000"),
            unknown.to_string(),
            "X's promotion reads as a never-issued reference"
        );
    }
    // Dora's key, used by Yvonne with another program: a fresh Run, neither a replay nor a
    // conflict. The same call as Dora is a conflict.
    let other = json!({ARG: {"steps": [{"id": "count", "call": "counter_add", "with": {"by": 1}}]},
        "mode": "immediate", "context": ctx(), "idempotency_key": "k-replicas"});
    let dora_first = call(
        &replicas[0],
        "dora",
        EXECUTE,
        json!({ARG: program(), "mode": "immediate",
        "context": ctx(), "idempotency_key": "k-replicas"}),
    )
    .await;
    let mut first_as_yvonne = None;
    for r in replicas {
        let as_yvonne = call(r, "yvonne", EXECUTE, other.clone()).await;
        assert_eq!(as_yvonne["isError"], false, "{as_yvonne}");
        assert_ne!(as_yvonne["structuredContent"]["run_id"], dora_first["structuredContent"]["run_id"]);
        // Y's own key replays on every replica.
        assert_eq!(first_as_yvonne.get_or_insert_with(|| as_yvonne.clone()), &as_yvonne);
        let as_dora = call(r, "dora", EXECUTE, other.clone()).await;
        assert_eq!(as_dora["structuredContent"]["error"]["kind"], "idempotency_conflict", "{as_dora}");
    }
}

/// Four clients execute and store runs round-robin while B is killed with SIGKILL and
/// restarted; every run a client got an answer for is then fetched, identical, from all three.
async fn acknowledged_runs_survive_a_sigkill(replicas: &mut [Replica; 3], database: &str, secret: &Path) {
    let urls: Vec<String> = replicas.iter().map(Replica::url).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4).map(|w| tokio::spawn(load(w, urls.clone(), stop.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    replicas[1].kill9().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    replicas[1] = Replica::start(replicas[1].port, &["--postgres".as_ref(), database.as_ref()], secret).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let (mut acknowledged, mut refused) = (Vec::new(), 0);
    for worker in workers {
        let (acks, refusals) = worker.await.expect("a load worker");
        acknowledged.extend(acks);
        refused += refusals;
    }
    eprintln!("under SIGKILL: {} runs acknowledged, {refused} requests found no server", acknowledged.len());
    assert!(refused > 0, "B was down under load: some requests found no server");
    assert!(acknowledged.len() >= 12, "the replicas kept acknowledging runs: {}", acknowledged.len());
    for response in &acknowledged {
        let run_id = response["run_id"].as_str().expect("a run id");
        for r in replicas.iter() {
            let fetched = call(r, "lena", TRACE, json!({"run_id": run_id})).await;
            assert_eq!(&envelope(&fetched), response, "run {run_id} on replica {}", r.port);
        }
    }
}

/// One load client: stored executes round-robin until `stop` (at most 400): the responses it
/// got, and how many requests found no server.
async fn load(worker: usize, urls: Vec<String>, stop: Arc<AtomicBool>) -> (Vec<Value>, usize) {
    let (mut acknowledged, mut refused) = (Vec::new(), 0);
    for i in 0..400 {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let arguments = json!({ARG: program(), "mode": "immediate", "context": ctx(), "store": true});
        match try_call(&urls[(worker + i) % 3], "lena", EXECUTE, arguments).await {
            Ok(result) if result["isError"] == false => {
                acknowledged.push(result["structuredContent"].clone())
            }
            Ok(result) => panic!("an execute failed as a tool: {result}"),
            Err(_) => refused += 1, // no server: nothing acknowledged, nothing promised
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (acknowledged, refused)
}
