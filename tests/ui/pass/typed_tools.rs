//! The typed forms: plain tools whose arguments (and answer) are Rust types with their schemas
//! generated, a context schema from a type, `trace_tool = "..."` instead of an empty trace
//! method, and `no_input` instead of hand-written refusal code.

use pilotage::engine::{Engine, ExecuteRequest, PlainToolError, Recorder};
use pilotage::prelude::*;
use std::sync::Arc;

#[derive(Clone, Copy, pilotage::Codes)]
enum TodoCode {
    Malformed,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum TodoRisk {
    #[risk(read_only)]
    Safe,
}

#[derive(Clone, Copy, pilotage::Statuses)]
enum TodoStatus {
    #[status(side_effects = false)]
    Full,
}

/// Who the lists belong to.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct TodoContext {
    owner: String,
}

/// A new list.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddList {
    /// The list's title.
    title: String,
    /// At most this many items.
    limit: Option<u8>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Added {
    id: String,
    by: String,
}

struct Todo;

#[pilotage::language(
    name = "todo/v1",
    title = "Todo lists",
    program = "todo",
    locator = "json-pointer",
    capabilities(guides, validate, execute, trace_fetch),
    execution = "immediate",
    trace = "full",
    retention = "session",
    trace_tool = "trace_todo",
    context = TodoContext,
    guides = "../../../../tests/ui/guides/minimal",
    codes = TodoCode,
    risk = TodoRisk,
    statuses = TodoStatus,
)]
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, todo: &Json, v: &mut Validation<TodoCode, TodoRisk>) {
        if !todo.is_object() {
            v.error(TodoCode::Malformed, "", "a todo list is an object");
        }
        v.step("all", TodoRisk::Safe);
    }

    #[loop_tool(execute, name = "run_todo", no_input)]
    async fn run(&self, todo: &Json, run: &mut Run<TodoStatus>) -> Finish<TodoStatus> {
        if todo.get("full").is_some() {
            return Finish::failed(TodoStatus::Full, "the list is full");
        }
        run.step("all").output(json!("done")).succeeded();
        Finish::done()
    }

    /// Adds a list.
    #[plain_tool(name = "add_list")]
    fn add(&self, caller: &Caller, args: AddList) -> Result<Added, String> {
        if args.limit == Some(0) {
            return Err("a list holds at least one item".into());
        }
        Ok(Added { id: args.title.to_lowercase(), by: caller.id.to_string() })
    }

    /// Counts the lists: a typed answer that is not an object.
    #[plain_tool(name = "count_lists", read_only)]
    fn count(&self, args: AddList) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![args.title])
    }

    /// The raw form, caller first.
    #[plain_tool(name = "echo")]
    fn echo(&self, caller: &Caller, args: &Json) -> Result<Json, String> {
        Ok(json!({"args": args, "by": caller.id.to_string()}))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let engine = Todo;
    let spec = engine.language_spec();
    assert_eq!(spec.tools.trace.as_ref().map(|t| t.name), Some("trace_todo"));
    let context = spec.context_schema.as_ref().unwrap();
    assert_eq!(context["required"], json!(["owner"]));

    let [add, count, echo] = spec.plain_tools.as_slice() else { panic!("three plain tools") };
    assert_eq!(add.input_schema["required"], json!(["title"]));
    assert_eq!(add.input_schema["additionalProperties"], json!(false));
    assert_eq!(add.input_schema["properties"]["limit"]["maximum"], json!(255));
    assert!(!add.input_schema.to_string().contains("uint8"));
    let out = add.output_schema.as_ref().unwrap();
    assert_eq!(out["anyOf"][0]["required"], json!(["id", "by"]));
    assert_eq!(count.output_schema.as_ref().unwrap()["anyOf"][0]["required"], json!(["result"]));
    assert!(count.read_only);
    assert_eq!(echo.input_schema, json!({"type": "object"}));
    assert!(echo.output_schema.is_none());

    let me = Caller::new("me");
    assert_eq!(
        engine.call_plain_tool("add_list", &json!({"title": "Home"}), &me),
        Some(Ok(json!({"id": "home", "by": "me"})))
    );
    assert_eq!(
        engine.call_plain_tool("add_list", &json!({"title": "Home", "limit": 0}), &me),
        Some(Err(PlainToolError::Failed("a list holds at least one item".into())))
    );
    let Some(Err(PlainToolError::InvalidArguments(why))) =
        engine.call_plain_tool("add_list", &json!({"title": 3}), &me)
    else {
        panic!("a number is no title")
    };
    assert!(why.contains("invalid type"), "{why}");
    assert_eq!(engine.call_plain_tool("count_lists", &json!({"title": "a"}), &me), Some(Ok(json!(["a"]))));
    assert_eq!(
        engine.call_plain_tool("echo", &json!({"x": 1}), &me),
        Some(Ok(json!({"args": {"x": 1}, "by": "me"})))
    );

    // `no_input`: a Run given input is refused before the method runs.
    let request = |input: Option<Json>| ExecuteRequest {
        run_id: "r1".into(),
        program: Arc::new(json!({})),
        input: input.map(Arc::new),
        context: None,
        catalog: None,
        caller: me.clone(),
        mode: pilotage::model::declaration::ExecutionMode::Immediate,
        test_run: false,
        promoted: Arc::default(),
    };
    let refused = request(Some(json!({"a": 1})));
    let recorder = Recorder::new(100);
    let finish = engine.execute_program(&refused, recorder.clone()).await;
    assert_eq!(recorder.input_findings().len(), 1);
    assert!(recorder.steps().is_empty());
    let _ = finish;
    let ran = request(None);
    let recorder = Recorder::new(100);
    engine.execute_program(&ran, recorder.clone()).await;
    assert!(recorder.input_findings().is_empty());
    assert_eq!(recorder.steps().len(), 1);
}
