//! `#[loop_tool(validate, inline)]`, through the in-process duplex transport: a validator
//! declared inline runs on the request's own task (here the test's thread: the test runtime
//! has one) while an undeclared one runs elsewhere (an engine thread); the manifest entry says
//! `x-validation: "inline"` only for the declared one; the program's size and depth bounds
//! still refuse a program before the validator runs, at validate and at execute's
//! re-validation; a validator past `validate_time` is still answered `bounds_exceeded`; and
//! the wait a validator reports (`Validation::waited`) is the result's `queued_ms`, inline or
//! not, as is the wait a catalog method reports (`Signal::waited`).

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use crate::support;

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

/// The threads each validation ran on, in order.
type Seen = Arc<Mutex<Vec<ThreadId>>>;

/// What both engines' validators do: note the thread, sleep `pause` when the program asks.
fn judge(seen: &Seen, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
    seen.lock().unwrap().push(std::thread::current().id());
    if let Some(ms) = program["sleep_ms"].as_u64() {
        std::thread::sleep(Duration::from_millis(ms));
    }
    if let Some(ms) = program["waited_ms"].as_u64() {
        v.waited(Duration::from_millis(ms));
    }
    if program["op"] != "add" {
        v.error(StepCode::UnknownOp, "/op", "only `add` exists");
    }
    v.step("only", StepRisk::Safe);
}

struct Cheap {
    seen: Seen,
}

#[pilotage::language(
    name = "cheap/v1", title = "A cheap validator", program = "steps", locator = "json-pointer",
    capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
    retention = "none", guides = "examples/calc/guides", codes = StepCode, risk = StepRisk,
)]
impl Cheap {
    #[loop_tool(validate, name = "validate_cheap", inline)]
    fn validate(&self, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
        judge(&self.seen, program, v);
    }

    #[loop_tool(execute, name = "run_cheap", no_input)]
    async fn run(&self, _program: &Json, run: &mut Run) -> Finish {
        run.step("only").succeeded();
        Finish::done()
    }
}

struct Isolated {
    seen: Seen,
}

#[pilotage::language(
    name = "isolated/v1", title = "An isolated validator", program = "steps", locator = "json-pointer",
    capabilities(guides, validate, plan), guides = "examples/calc/guides", codes = StepCode, risk = StepRisk,
)]
impl Isolated {
    #[loop_tool(validate, name = "validate_isolated")]
    fn validate(&self, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
        judge(&self.seen, program, v);
    }
}

/// A server of `cheap/v1` under `limits` and one of `isolated/v1` (they share a guide folder,
/// so one server cannot host both), the threads each validator saw, and a client of each.
async fn serve(limits: Limits) -> (Seen, Seen, Conn, Conn) {
    let (cheap, isolated) = (Seen::default(), Seen::default());
    let (c, i) = (cheap.clone(), isolated.clone());
    let first = pilotage::Server::builder()
        .name("inline", "0")
        .language(move || Cheap { seen: c.clone() })
        .limits(limits)
        .build()
        .expect("the server builds");
    let second = pilotage::Server::builder()
        .name("isolated", "0")
        .language(move || Isolated { seen: i.clone() })
        .build()
        .expect("the server builds");
    let (mut conn, mut other) = (Conn::duplex(&first), Conn::duplex(&second));
    conn.initialize(true).await;
    other.initialize(true).await;
    (cheap, isolated, conn, other)
}

fn error_of(structured: &Value) -> (&str, &str) {
    let e = &structured["error"];
    (e["kind"].as_str().unwrap_or_default(), e["message"].as_str().unwrap_or_default())
}

#[tokio::test]
async fn an_inline_validator_runs_on_the_request_task_and_the_manifest_says_so() {
    let (cheap, isolated, mut conn, mut other) = serve(Limits::default()).await;
    let here = std::thread::current().id();
    let program = json!({"op": "add"});
    assert_eq!(conn.call_ok("validate_cheap", json!({"steps": program})).await["valid"], true);
    assert_eq!(other.call_ok("validate_isolated", json!({"steps": program})).await["valid"], true);
    let ran = conn.call_ok("run_cheap", json!({"steps": program})).await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    assert_eq!(*cheap.lock().unwrap(), [here, here], "validate and execute's re-validation ran inline");
    let elsewhere = isolated.lock().unwrap().clone();
    assert_eq!(elsewhere.len(), 1);
    assert_ne!(elsewhere[0], here, "an undeclared validator runs on an engine thread");

    for (conn, name, validation) in
        [(&mut conn, "cheap/v1", json!("inline")), (&mut other, "isolated/v1", Value::Null)]
    {
        let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
        let entry = &manifest["languages"][0];
        assert_eq!((&entry["name"], &entry["x-validation"]), (&json!(name), &validation), "{manifest}");
    }
}

#[tokio::test]
async fn an_inline_validator_is_still_bounded_by_size_depth_and_time() {
    let limits =
        Limits { max_program_bytes: 200, validate_time: Duration::from_millis(50), ..Limits::default() };
    let (cheap, _, mut conn, _) = serve(limits).await;
    let big = json!({"op": "add", "pad": "x".repeat(300)});
    let size = big.to_string().len();
    for tool in ["validate_cheap", "run_cheap"] {
        let refused = conn.call(tool, json!({"steps": big})).await;
        assert!(refused.is_error, "{tool}: {}", refused.raw);
        assert_eq!(
            error_of(&refused.structured),
            ("bounds_exceeded", format!("program is {size} bytes; the bound is 200").as_str())
        );
    }
    let mut deep = json!("leaf");
    for _ in 0..70 {
        deep = json!([deep]);
    }
    let refused = conn.call("validate_cheap", json!({"steps": {"op": "add", "deep": deep}})).await;
    let (kind, message) = error_of(&refused.structured);
    assert_eq!(kind, "bounds_exceeded");
    assert!(
        message.starts_with("program nests 7") && message.ends_with("levels deep; the bound is 64"),
        "{message}"
    );
    assert!(cheap.lock().unwrap().is_empty(), "no oversized program reached the validator");

    // Past its time bound the validator is not stopped (it runs inline), but its verdict is
    // refused once it returns.
    let slow = conn.call("validate_cheap", json!({"steps": {"op": "add", "sleep_ms": 120}})).await;
    assert_eq!(error_of(&slow.structured), ("bounds_exceeded", "validation exceeded its time bound of 50ms"));
    assert_eq!(cheap.lock().unwrap().len(), 1);
}

/// What a validator reports waiting for (`Validation::waited`, a pooled connection) is the
/// result's `_meta` queue time, whether it runs inline or on an engine thread; without a
/// report (and no wait for a slot) there is none.
#[tokio::test]
async fn a_validators_reported_wait_is_the_results_queue_time() {
    let (_, _, mut conn, mut other) = serve(Limits::default()).await;
    for (conn, tool) in [(&mut conn, "validate_cheap"), (&mut other, "validate_isolated")] {
        let waited = conn.call(tool, json!({"steps": {"op": "add", "waited_ms": 7}})).await;
        assert_eq!(waited.structured["valid"], true, "{}", waited.raw);
        let meta = &waited.raw["result"]["_meta"][support::EXT];
        assert_eq!(meta["queued_ms"], 7, "{tool}: {}", waited.raw);
        let plain = conn.call(tool, json!({"steps": {"op": "add"}})).await;
        assert_eq!(
            plain.raw["result"]["_meta"][support::EXT].get("queued_ms"),
            None,
            "{tool}: {}",
            plain.raw
        );
    }
}

#[allow(dead_code)] // the catalog below has no entries
#[derive(Clone, Copy, pilotage::EntryKinds)]
enum StepKind {
    #[kind(callable)]
    Op,
}

/// A Language whose catalog method reports waiting for a resource of its own.
struct Cataloged {
    /// What each snapshot reports waiting, in milliseconds (0: nothing reported).
    waited_ms: u64,
}

#[pilotage::language(
    name = "cataloged/v1", title = "A catalog that waits", program = "steps", locator = "json-pointer",
    capabilities(guides, catalog, validate, plan), guides = "examples/calc/guides", codes = StepCode,
    risk = StepRisk, kinds = StepKind, catalog = snapshot,
)]
impl Cataloged {
    #[loop_tool(validate, name = "validate_cataloged")]
    fn validate(&self, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
        if program["op"] != "add" {
            v.error(StepCode::UnknownOp, "/op", "only `add` exists");
        }
        v.step("only", StepRisk::Safe);
    }

    fn snapshot(&self, _caller: &Caller) -> Arc<pilotage::engine::CatalogSnapshot> {
        if self.waited_ms > 0 {
            pilotage::engine::Signal::current().waited(Duration::from_millis(self.waited_ms));
        }
        Arc::new(pilotage::engine::CatalogSnapshot::new(Vec::new()))
    }
}

/// What a catalog method reports waiting for (`Signal::waited`, say for a pooled connection)
/// is the catalog read's `_meta` queue time, and a validation's, whose snapshot it is; a
/// catalog that reports nothing adds none.
#[tokio::test]
async fn a_catalogs_reported_wait_is_the_queue_time_of_the_requests_that_read_it() {
    for waited_ms in [9, 0] {
        let server = pilotage::Server::builder()
            .name("cataloged", "0")
            .language(move || Cataloged { waited_ms })
            .build()
            .expect("the server builds");
        let mut conn = Conn::duplex(&server);
        conn.initialize(true).await;
        let args = json!({"language": "cataloged/v1", "verb": "list"});
        for (tool, args) in
            [("pilotage_catalog", args), ("validate_cataloged", json!({"steps": {"op": "add"}}))]
        {
            let read = conn.call(tool, args).await;
            assert!(!read.is_error, "{tool}: {}", read.raw);
            let queued = read.raw["result"]["_meta"][support::EXT].get("queued_ms").cloned();
            let expected = (waited_ms > 0).then(|| json!(waited_ms));
            assert_eq!(queued, expected, "{tool}: {}", read.raw);
        }
    }
}
