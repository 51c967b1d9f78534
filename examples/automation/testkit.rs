//! Shared helpers of the `automation/v1` integration tests (`tests/automation_*.rs`,
//! `tests/execution_*.rs`). A test file includes it with
//!
//! ```ignore
//! mod support;
//! #[allow(dead_code)]
//! #[path = "../examples/automation/engine/mod.rs"]
//! mod automation;
//! #[allow(dead_code)]
//! #[path = "../examples/automation/testkit.rs"]
//! mod kit;
//! ```
//!
//! Every execute response a test receives goes through [`Client::execute`], which checks the
//! trace against the plan with `pilotage::model::correspondence::check` (Part II §5.8.4) whenever the
//! run is an immediate run or a test run, and checks the installation trace of a deploy run.

use std::path::Path;
use std::sync::Arc;

use pilotage::engine::Limits;
use pilotage::model::execution::ExecuteResponse;
use pilotage::model::plan::Plan;
use pilotage::state::SqliteState;
/// A run store file in the temp directory, deleted (with its WAL files) on drop.
pub use pilotage::testkit::TempStore;
use pilotage::testkit::{check_correspondence, Ran};
use pilotage::Server;
use serde_json::{json, Value};

/// The example binary `name` of this build, built first so it is never stale.
#[allow(unused_imports)] // used by the tests that spawn the binary
pub use crate::support::example_binary;
use crate::support::{Conn, ToolCall};

pub const LANGUAGE: &str = "automation/v1";
pub const ARG: &str = "automation";
pub const VALIDATE: &str = "validate_automation";
pub const EXECUTE: &str = "run_automation";
pub const TRACE: &str = "trace_automation";
pub const PROMOTE: &str = "promote_automation";

/// The sample context every request carries.
pub fn ctx() -> Value {
    json!({"timezone": "Europe/Paris"})
}

/// An automation/v1 server on the store file `store`, with `limits` when given.
pub fn server_on(store: &Path, limits: Option<Limits>) -> Server {
    let store = SqliteState::open(store).expect("open the run store");
    let mut builder =
        Server::builder().name("automation-test", "0").language(crate::automation::Automation::new);
    if let Some(l) = limits {
        builder = builder.limits(l);
    }
    builder.state(Arc::new(store)).build().expect("the automation server builds")
}

/// The plan of a validate response.
pub fn plan_of(validated: &Value) -> Plan {
    serde_json::from_value(validated["plan"].clone()).unwrap_or_else(|e| panic!("no plan ({e}): {validated}"))
}

/// Check an execute response against `plan` (Part II §5.8.4) with the public testkit's
/// [`check_correspondence`]: the trace of an immediate run or a test run corresponds to the
/// plan (every expected step when the run succeeded, a prefix of it otherwise); a deploy run's
/// trace is the one `install` entry.
pub fn check_run(plan: &Plan, response: &Value, deploy: bool) {
    let response: ExecuteResponse = serde_json::from_value(response.clone())
        .unwrap_or_else(|e| panic!("not an execute response ({e}): {response}"));
    let ran = Ran::new(response, Some(plan.clone()));
    if deploy {
        let ids = ran.ids();
        assert!(
            ids.is_empty() || ids == ["install"],
            "a deploy run's trace is its installation: {:?}",
            ran.response
        );
        return;
    }
    check_correspondence(&ran);
}

/// A connected client of an automation/v1 server.
pub struct Client {
    pub conn: Conn,
}

impl Client {
    /// Initialize `conn` (with the Pilotage extension).
    pub async fn new(mut conn: Conn) -> Client {
        conn.initialize(true).await;
        Client { conn }
    }

    /// A duplex connection to `server`.
    pub async fn duplex(server: &Server) -> Client {
        Client::new(Conn::duplex(server)).await
    }

    pub async fn validate(&mut self, program: &Value) -> Value {
        self.conn.call_ok(VALIDATE, json!({ARG: program, "context": ctx()})).await
    }

    /// Validate `program` (it must be valid) and return its plan and catalog_version.
    pub async fn plan(&mut self, program: &Value) -> (Plan, String) {
        let v = self.validate(program).await;
        assert_eq!(v["valid"], true, "the program must be valid: {v:#}");
        (plan_of(&v), v["catalog_version"].as_str().unwrap().to_owned())
    }

    /// `run_automation` with `args` exactly; the response is checked against `plan` when it is
    /// a started run (see [`check_run`]).
    pub async fn execute_with(&mut self, plan: &Plan, args: Value) -> ToolCall {
        let deploy = args["mode"] == "deploy" && args.get("test_run") != Some(&json!(true));
        let call = self.conn.call(EXECUTE, args).await;
        if !call.is_error {
            check_run(plan, &call.structured, deploy);
        }
        call
    }

    /// Validate `program`, then execute it in `mode` with the validated catalog_version and
    /// the extra members `extra` (merged over the defaults). Returns the execute response,
    /// which must not be a request error.
    pub async fn run(&mut self, program: &Value, mode: &str, extra: Value) -> Value {
        let (plan, version) = self.plan(program).await;
        let mut args =
            json!({ARG: program, "mode": mode, "context": ctx(), "expected_catalog_version": version});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            args[k] = v;
        }
        let call = self.execute_with(&plan, args).await;
        assert!(!call.is_error, "{EXECUTE} returned a request error: {}", call.raw);
        call.structured
    }

    pub async fn fingerprint(&mut self) -> Value {
        self.conn.call_ok("world_fingerprint", json!({})).await
    }

    pub async fn fetch(&mut self, args: Value) -> ToolCall {
        self.conn.call(TRACE, args).await
    }

    /// `pilotage_catalog` get.
    pub async fn get(&mut self, id: &str) -> ToolCall {
        self.conn.call("pilotage_catalog", json!({"language": LANGUAGE, "verb": "get", "id": id})).await
    }
}

/// The ids of a response's trace entries.
pub fn ids(response: &Value) -> Vec<String> {
    response["trace"]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no trace: {response}"))
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The trace entry `id` of a response.
pub fn entry<'a>(response: &'a Value, id: &str) -> &'a Value {
    response["trace"]["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|e| e["id"] == id))
        .unwrap_or_else(|| panic!("no trace entry {id}: {:?}", ids(response)))
}

/// The `(took, because)` decisions of the trace entry `id`.
pub fn decisions(response: &Value, id: &str) -> Vec<(String, String)> {
    entry(response, id)["decisions"]
        .as_array()
        .unwrap_or_else(|| panic!("entry {id} has no decisions"))
        .iter()
        .map(|d| (d["took"].as_str().unwrap().to_owned(), d["because"].as_str().unwrap().to_owned()))
        .collect()
}

/// Assert a request error of `kind`.
pub fn assert_request_error(call: &ToolCall, kind: &str) {
    assert!(call.is_error, "expected the request error {kind}, got: {}", call.raw);
    assert_eq!(call.structured["error"]["kind"], kind, "{}", call.raw);
}
