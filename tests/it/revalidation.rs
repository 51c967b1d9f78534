//! The revalidation cache (Part IV §6, `Limits::revalidation_cache`), through the in-process
//! duplex transport: execute's re-validation of a program the session has judged valid is a
//! look-up; an invalid program, a changed program, a changed context and a changed catalog are
//! judged again; the cache forgets its oldest verdict past its bound; it is off by default.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::{kit, support};

use pilotage::engine::Limits;
use pilotage::prelude::*;
use serde_json::{json, Value};
use support::Conn;

#[derive(Clone, Copy, pilotage::Codes)]
enum StepCode {
    UnknownOp,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum StepRisk {
    #[risk(read_only)]
    Safe,
}

/// An engine of numbered steps that counts its validator's calls.
struct Counted {
    judged: Arc<AtomicUsize>,
}

fn steps(program: &Json) -> &[Json] {
    program["steps"].as_array().map(Vec::as_slice).unwrap_or_default()
}

#[pilotage::language(
    name = "counted/v1", title = "Counted steps", program = "steps", locator = "json-pointer",
    capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
    retention = "none", guides = "examples/calc/guides", codes = StepCode, risk = StepRisk,
)]
impl Counted {
    #[loop_tool(validate, name = "validate_steps")]
    fn validate(&self, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
        self.judged.fetch_add(1, Ordering::SeqCst);
        for (i, step) in steps(program).iter().enumerate() {
            if step["op"] != "add" {
                v.error(StepCode::UnknownOp, format!("/steps/{i}/op"), "only `add` exists");
            }
            v.step(step["id"].as_str().unwrap_or("step"), StepRisk::Safe);
        }
    }

    #[loop_tool(execute, name = "run_steps", no_input)]
    async fn run(&self, program: &Json, run: &mut Run) -> Finish {
        for step in steps(program) {
            run.step(step["id"].as_str().unwrap_or("step")).succeeded();
        }
        Finish::output(json!({"count": steps(program).len()}))
    }
}

/// A server of `counted/v1` keeping `cache` verdicts per session, its counter and a client.
async fn counted(cache: Option<usize>) -> (Arc<AtomicUsize>, Conn) {
    let judged = Arc::new(AtomicUsize::default());
    let engine = judged.clone();
    let mut builder = pilotage::Server::builder()
        .name("revalidation", "0")
        .language(move || Counted { judged: engine.clone() });
    if let Some(n) = cache {
        builder = builder.limits(Limits { revalidation_cache: n, ..Limits::default() });
    }
    let mut conn = Conn::duplex(&builder.build().expect("the server builds"));
    conn.initialize(true).await;
    (judged, conn)
}

fn program(ids: &[&str]) -> Value {
    json!({"steps": ids.iter().map(|id| json!({"id": id, "op": "add"})).collect::<Vec<_>>()})
}

async fn validate(conn: &mut Conn, p: &Value) -> Value {
    conn.call_ok("validate_steps", json!({"steps": p})).await
}

/// Executes `p`; the response must not be a request error.
async fn execute(conn: &mut Conn, p: &Value) -> Value {
    conn.call_ok("run_steps", json!({"steps": p})).await
}

#[tokio::test]
async fn execute_after_validate_reuses_the_verdict() {
    let (judged, mut conn) = counted(Some(8)).await;
    let (a, b) = (program(&["a1", "a2"]), program(&["b1"]));
    assert_eq!(validate(&mut conn, &a).await["valid"], true);
    assert_eq!(judged.load(Ordering::SeqCst), 1);
    for _ in 0..2 {
        let ran = execute(&mut conn, &a).await;
        assert_eq!(ran["outcome"]["status"], "success", "{ran}");
        assert_eq!(ran["output"], json!({"count": 2}));
        assert_eq!(ran["trace"]["steps"].as_array().map(Vec::len), Some(2));
    }
    assert_eq!(judged.load(Ordering::SeqCst), 1, "both runs used the validated verdict");
    // A program executed without a validate first is judged once, then remembered.
    execute(&mut conn, &b).await;
    execute(&mut conn, &b).await;
    assert_eq!(judged.load(Ordering::SeqCst), 2);
    // The validate tool always asks the engine.
    validate(&mut conn, &a).await;
    assert_eq!(judged.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_invalid_program_is_judged_again_and_refused_with_its_diagnostics() {
    let (judged, mut conn) = counted(Some(8)).await;
    let bad = json!({"steps": [{"id": "x", "op": "mul"}]});
    assert_eq!(validate(&mut conn, &bad).await["valid"], false);
    let refused = execute(&mut conn, &bad).await;
    assert_eq!(
        refused["outcome"],
        json!({"ok": false, "status": "validation_error", "error": "the program failed validation"})
    );
    assert_eq!(refused["diagnostics"][0]["path"], "/steps/0/op", "{refused}");
    assert_eq!(judged.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn past_its_bound_the_cache_forgets_the_oldest_verdict() {
    let (judged, mut conn) = counted(Some(2)).await;
    let ps = [program(&["p1"]), program(&["p2"]), program(&["p3"])];
    for p in &ps {
        validate(&mut conn, p).await;
    }
    assert_eq!(judged.load(Ordering::SeqCst), 3);
    execute(&mut conn, &ps[2]).await;
    execute(&mut conn, &ps[1]).await;
    assert_eq!(judged.load(Ordering::SeqCst), 3, "the two newest are kept");
    execute(&mut conn, &ps[0]).await;
    assert_eq!(judged.load(Ordering::SeqCst), 4, "the oldest was forgotten");
}

#[tokio::test]
async fn without_a_cache_every_execute_judges_again() {
    for cache in [None, Some(0)] {
        let (judged, mut conn) = counted(cache).await;
        let p = program(&["a"]);
        validate(&mut conn, &p).await;
        execute(&mut conn, &p).await;
        execute(&mut conn, &p).await;
        assert_eq!(judged.load(Ordering::SeqCst), 3, "{cache:?}");
    }
}

/// `automation/v1` judges against its catalog and its context: a verdict is reused only for
/// the same context and the same `catalog_version`.
#[tokio::test]
async fn a_changed_catalog_or_context_is_judged_again() {
    let store = kit::TempStore::new("revalidation");
    let limits = Limits { revalidation_cache: 16, ..Limits::default() };
    let mut c = kit::Client::duplex(&kit::server_on(store.path(), Some(limits))).await;
    let p = json!({
        "steps": [
            {"id": "zone", "set": "$.context.timezone"},
            {"id": "add", "call": "counter_add", "with": {"by": 1}}
        ],
        "output": {"zone": "$.steps.zone.output"}
    });
    let (plan, _) = c.plan(&p).await;
    let run = |context: Value| json!({kit::ARG: p, "mode": "immediate", "context": context});
    // Another context: judged again, and bound as given.
    let tokyo = c.execute_with(&plan, run(json!({"timezone": "Asia/Tokyo"}))).await;
    assert_eq!(tokyo.structured["output"], json!({"zone": "Asia/Tokyo"}), "{}", tokyo.raw);
    let missing = c.execute_with(&plan, run(Value::Null)).await;
    assert_eq!(missing.structured["outcome"]["status"], "validation_error", "{}", missing.raw);
    // The entry the program calls is removed: the remembered verdict was for the old catalog.
    c.conn.call_ok("catalog_remove_entry", json!({"id": "counter_add"})).await;
    let before = c.fingerprint().await;
    let refused = c.execute_with(&plan, run(kit::ctx())).await;
    assert!(!refused.is_error, "{}", refused.raw);
    assert_eq!(refused.structured["outcome"]["status"], "validation_error", "{}", refused.raw);
    assert_eq!(refused.structured["diagnostics"][0]["path"], "/steps/1/call", "{}", refused.raw);
    assert_eq!(c.fingerprint().await, before, "nothing ran");
}
