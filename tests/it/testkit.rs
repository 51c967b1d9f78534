//! The public testkit (`pilotage::testkit`) as an engine author uses it: a [`Kit`] over the
//! README's `calc/v1`, an async [`Client`] over a server hosting two Languages, and a run whose
//! trace strays from its plan failing the test that ran it.

use pilotage::model::errors::ErrorKind;
use pilotage::prelude::*;
use pilotage::testkit::{findings, has, Client, Kit};

use crate::{calc, sql, workflow};

#[test]
fn a_kit_validates_runs_and_refuses_through_the_protocol() {
    let mut kit = Kit::new(calc::Calc);
    assert_eq!(kit.client().language(), "calc/v1");
    assert_eq!(kit.args(&json!(1)), json!({"calc": 1}));

    let valid = kit.validate(&json!({"op": "add", "args": [1, 2]}));
    assert!(valid.valid);
    assert_eq!(valid.plan.expect("a valid program has a plan").steps[0].id, "sum");
    let invalid = kit.validate(&json!({"op": "mul"}));
    assert!(!invalid.valid);
    assert_eq!(findings(&invalid.diagnostics), [("unknown_op".to_owned(), "/op".to_owned())]);
    assert!(has(&invalid.diagnostics, "unknown_op", "/op"));
    assert!(!has(&invalid.diagnostics, "unknown_op", ""));

    let ran = kit.execute(&json!({"op": "add", "args": [1, 2.5]}));
    assert_eq!((ran.status(), ran.ok()), ("success", true));
    assert_eq!(ran.output(), Some(&json!({"sum": 3.5})));
    assert_eq!(ran.ids(), ["sum"]);
    assert_eq!(ran.step("sum").output, Some(json!(3.5)));
    assert_eq!(ran.plan.as_ref().map(|p| p.steps.len()), Some(1), "the kit validated first");

    // calc takes no input: a refusal before any step, with its finding in `input`.
    let mut args = kit.args(&json!({"op": "add", "args": []}));
    args["input"] = json!({"x": 1});
    let refused = kit.execute_args(args).expect("a refusal is a result, not a request error");
    assert_eq!(refused.status(), "validation_error");
    assert_eq!(refused.input_binding(), [""]);
    assert!(refused.steps().is_empty());

    // A JSON-RPC error (here: the program argument missing) reaches the test through `request`.
    let e = kit.request("tools/call", json!({"name": "validate_calc", "arguments": {}})).unwrap_err();
    assert_eq!(e["code"], -32602, "{e}");
}

/// A Language whose run records a step its plan never announced.
mod stray {
    use pilotage::prelude::*;

    #[derive(Clone, Copy, pilotage::Codes)]
    #[allow(dead_code)] // the guide names it; this engine never reports it
    pub enum StrayCode {
        UnknownOp,
    }

    #[derive(Clone, Copy, pilotage::RiskLevels)]
    pub enum StrayRisk {
        #[risk(read_only)]
        Safe,
    }

    pub struct Stray;

    #[pilotage::language(
        name = "stray/v1", title = "A run that strays from its plan", program = "calc", locator = "json-pointer",
        capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
        retention = "none", guides = "examples/calc/guides", codes = StrayCode, risk = StrayRisk,
    )]
    impl Stray {
        #[loop_tool(validate, name = "validate_stray")]
        fn validate(&self, _program: &Json, v: &mut Validation<StrayCode, StrayRisk>) {
            v.step("sum", StrayRisk::Safe);
        }

        #[loop_tool(execute, name = "run_stray")]
        async fn run(&self, _program: &Json, run: &mut Run) -> Finish {
            run.step("elsewhere").succeeded();
            Finish::done()
        }
    }
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "the trace does not correspond to the plan")]
fn a_run_that_strays_from_its_plan_fails_the_test() {
    Kit::new(stray::Stray).execute(&json!({}));
}

#[tokio::test]
async fn a_client_addresses_each_language_of_a_server_and_fetches_traces() {
    let server = Server::builder()
        .name("testkit", "0")
        .language(workflow::Workflow::new)
        .language(sql::Sql::factory(None))
        .build()
        .unwrap();
    let mut client = Client::connect(&server).await;
    assert_eq!(client.language(), "workflow/v1");
    let program = json!({"steps": [{"id": "one", "kind": "set", "value": 1}]});
    let mut args = client.args(&program);
    args["store"] = json!(true);
    let ran = client.execute_args(args).await.unwrap();
    assert_eq!(ran.ids(), ["one"]);
    let fetched = client.trace(&ran.response.run_id).await.unwrap();
    assert_eq!(fetched.trace.steps, ran.steps());
    let missing = client.trace("run_nothing").await.unwrap_err();
    assert_eq!(missing.error.kind, ErrorKind::NotFound);
    let list = client.catalog(json!({"verb": "list"})).await.unwrap();
    assert!(list["items"].as_array().is_some_and(|e| !e.is_empty()), "{list}");

    client.select("sql/sqlite-3");
    assert_eq!(client.args(&json!("SELECT 1")), json!({"query": "SELECT 1"}));
    let ran = client.execute(&json!("SELECT 1 AS one")).await.unwrap();
    assert_eq!(ran.output(), Some(&json!({"columns": ["one"], "rows": [[1]]})));
    let core = client.guide("sql-core").await.unwrap();
    assert_eq!(core["id"], "sql-core");
    assert!(core["body"].as_str().is_some_and(|b| b.contains("SELECT")));
}

#[test]
#[should_panic(expected = "the server hosts no Language \"nope/v1\"")]
fn selecting_a_language_the_server_does_not_host_fails() {
    Kit::new(calc::Calc).client().select("nope/v1");
}
