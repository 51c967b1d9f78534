//! The typed forms: plain tools whose arguments (and answer) are Rust types with their schemas
//! generated (caller before or after the arguments, any `Display` error), the raw form beside
//! them, a context schema from a type, `trace_tool = "..."` instead of an empty trace method,
//! and `no_input` with engine-defined statuses. `tests/it/typed_tools.rs` drives the same
//! forms over the MCP endpoint.

use pilotage::engine::{Engine, PlainToolError};
use pilotage::prelude::*;

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
    #[status(side_effects = true)]
    Timeout,
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
    guides = "../../../../tests/ui/guides/immediate",
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
            return Finish::failed(TodoStatus::Timeout, "the list took too long");
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
    fn count(&self, args: AddList, _caller: &Caller) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![args.title])
    }

    /// The raw form, caller first.
    #[plain_tool(name = "echo")]
    fn echo(&self, caller: &Caller, args: &Json) -> Result<Json, String> {
        Ok(json!({"args": args, "by": caller.id.to_string()}))
    }
}

fn main() {
    let engine = Todo;
    let spec = engine.language_spec();
    assert_eq!(spec.tools.trace.as_ref().map(|t| t.name), Some("trace_todo"));
    let context = spec.context_schema.as_ref().unwrap();
    assert_eq!(context["required"], json!(["owner"]));

    let [add, count, echo] = spec.plain_tools.as_slice() else { panic!("three plain tools") };
    assert_eq!(add.input_schema["required"], json!(["title"]));
    assert_eq!(add.input_schema["additionalProperties"], json!(false));
    // An Option is an anyOf of its type and null (no type arrays: several hosts refuse them).
    assert_eq!(add.input_schema["properties"]["limit"]["anyOf"][0]["maximum"], json!(255));
    assert_eq!(add.input_schema["properties"]["limit"]["anyOf"][1], json!({"type": "null"}));
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
}
