//! Typed plain tools, a context schema from a type, `trace_tool = "..."` and `no_input`, over
//! the in-process duplex transport: what a client sees in `tools/list`, and how a call is
//! answered when the arguments fit the type, fail the advertised schema, or pass the schema
//! but not the type (`-32602` both ways), and when the tool fails.

use crate::support;

use pilotage::prelude::*;
use serde_json::Value;
use support::Conn;

const INVALID_PARAMS: i64 = -32602;

#[derive(Clone, Copy, pilotage::Codes)]
enum TodoCode {
    Malformed,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum TodoRisk {
    #[risk(read_only)]
    Safe,
}

/// Who the lists belong to.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct TodoContext {
    owner: String,
}

/// A new list.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddList {
    /// The list's title: any string by the schema, a non-blank one by the type.
    #[serde(deserialize_with = "not_blank")]
    title: String,
    /// At most this many items.
    limit: Option<u8>,
}

fn not_blank<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = <String as serde::Deserialize>::deserialize(d)?;
    if s.trim().is_empty() {
        return Err(serde::de::Error::custom("a title is not blank"));
    }
    Ok(s)
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Added {
    id: String,
    by: String,
    limit: u8,
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
    guides = "tests/ui/guides/minimal",
    codes = TodoCode,
    risk = TodoRisk,
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
    async fn run(&self, _todo: &Json, run: &mut Run) -> Finish {
        run.step("all").output(json!("done")).succeeded();
        Finish::done()
    }

    /// Adds a list.
    #[plain_tool(name = "add_list")]
    fn add(&self, caller: &Caller, args: AddList) -> Result<Added, String> {
        match args.limit {
            Some(0) => Err("a list holds at least one item".into()),
            limit => Ok(Added {
                id: args.title.to_lowercase(),
                by: caller.id.to_string(),
                limit: limit.unwrap_or(10),
            }),
        }
    }

    /// The titles: a typed answer that is not an object, so it arrives as `{"result": ...}`.
    #[plain_tool(name = "titles", read_only)]
    fn titles(&self, args: AddList) -> Result<Vec<String>, String> {
        Ok(vec![args.title])
    }
}

async fn conn() -> Conn {
    let server = pilotage::Server::builder().name("test", "0").language(|| Todo).build().unwrap();
    let mut conn = Conn::duplex(&server);
    conn.initialize(true).await;
    conn
}

/// Every `format` in `schema`, at any depth.
fn formats(schema: &Value) -> Vec<String> {
    match schema {
        Value::Object(o) => o
            .iter()
            .flat_map(|(k, v)| match (k.as_str(), v) {
                ("format", Value::String(f)) => vec![f.clone()],
                _ => formats(v),
            })
            .collect(),
        Value::Array(a) => a.iter().flat_map(formats).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn tools_list_advertises_schemas_from_the_types() {
    let mut conn = conn().await;
    let tools = conn.tools_list().await;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"trace_todo"), "{names:?}");
    let add = conn.tool("add_list").unwrap().clone();
    assert_eq!(add["inputSchema"]["type"], "object");
    assert_eq!(add["inputSchema"]["required"], json!(["title"]));
    assert_eq!(add["inputSchema"]["additionalProperties"], json!(false));
    // `Option<u8>`: its range in the integer branch, null beside it (no `type` array).
    let limit = &add["inputSchema"]["properties"]["limit"]["anyOf"];
    assert_eq!(limit[0], json!({"type": "integer", "minimum": 0, "maximum": 255}));
    assert_eq!(limit[1], json!({"type": "null"}));
    assert_eq!(add["outputSchema"]["anyOf"][0]["required"], json!(["id", "by", "limit"]));
    assert_eq!(formats(&add), Vec::<String>::new());
    let titles = conn.tool("titles").unwrap().clone();
    assert_eq!(titles["outputSchema"]["anyOf"][0]["properties"]["result"]["type"], "array");
    assert_eq!(titles["annotations"]["readOnlyHint"], true);
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    let context = &manifest["languages"][0]["context_schema"];
    assert_eq!(context["required"], json!(["owner"]), "{manifest}");
    assert_eq!(context["additionalProperties"], json!(false), "{manifest}");
}

#[tokio::test]
async fn typed_calls_fit_their_output_schema() {
    let mut conn = conn().await;
    conn.tools_list().await;
    let added = conn.call("add_list", json!({"title": "Home", "limit": 3})).await;
    assert!(!added.is_error, "{}", added.raw);
    assert_eq!(added.structured["id"], "home");
    assert_eq!(added.structured["limit"], 3);
    let validator = jsonschema::validator_for(&conn.tool("add_list").unwrap()["outputSchema"]).unwrap();
    assert!(validator.is_valid(&added.structured), "{}", added.structured);

    let failed = conn.call("add_list", json!({"title": "Home", "limit": 0})).await;
    assert!(failed.is_error);
    assert_eq!(failed.structured, json!({"error": "a list holds at least one item"}));
    assert!(validator.is_valid(&failed.structured));

    let titles = conn.call_ok("titles", json!({"title": "Home"})).await;
    assert_eq!(titles, json!({"result": ["Home"]}));
}

#[tokio::test]
async fn arguments_that_do_not_fit_are_invalid_params() {
    let mut conn = conn().await;
    // Refused by the advertised schema: a number is no title, 256 is no u8, no unknown members.
    for args in
        [json!({"title": 3}), json!({"title": "a", "limit": 256}), json!({"title": "a", "x": 1}), json!({})]
    {
        let error = conn.call_carrier_error("add_list", args.clone()).await;
        assert_eq!(error["code"], INVALID_PARAMS, "{args}: {error}");
    }
    // The schema admits a blank title; the type does not: `-32602` all the same.
    let error = conn.call_carrier_error("add_list", json!({"title": "  "})).await;
    assert_eq!(error["code"], INVALID_PARAMS, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("Invalid arguments for tool add_list: "), "{message}");
    assert!(message.contains("a title is not blank"), "{message}");
    // The connection keeps working.
    assert_eq!(conn.call_ok("titles", json!({"title": "x"})).await, json!({"result": ["x"]}));
}

#[tokio::test]
async fn no_input_refuses_a_run_given_input() {
    let mut conn = conn().await;
    let context = json!({"owner": "me"});
    let refused = conn.call("run_todo", json!({"todo": {}, "context": context, "input": {"a": 1}})).await;
    assert_eq!(refused.structured["outcome"]["status"], "validation_error", "{}", refused.raw);
    let diagnostics = refused.structured["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{}", refused.raw);
    assert_eq!(diagnostics[0]["code"], "input_binding");
    assert_eq!(diagnostics[0]["message"], "todo/v1 programs take no input: run them without `input`");
    let ran = conn.call("run_todo", json!({"todo": {}, "context": context})).await;
    assert_eq!(ran.structured["outcome"]["status"], "success", "{}", ran.raw);
}
