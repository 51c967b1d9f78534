//! Portable tool schemas on every example's `tools/list`, by the rules of the MCP Inspector's
//! schema lint (`model::schema::unportable`): no bare boolean where a schema object is
//! expected, no `type` array, no `$ref` outside the document, and no schema node without a
//! validation keyword. The Inspector 2.12 reports these as "Schema portability: N errors, M
//! warnings" on `tools/list`; this test fails where it would report any, without needing it
//! (its counts before and after are in `docs/schema-check.md`).

use crate::support;

use pilotage::model::schema::{any_value, unportable};
use pilotage::testkit::TempStore;
use serde_json::{json, Value};
use support::{Conn, HttpServer, HttpStyle};

/// Every finding in `tools`' input and output schemas, as `server: tool member finding`, and
/// the number of schemas walked.
fn findings(server: &str, tools: &[Value]) -> (Vec<String>, usize) {
    let mut found = Vec::new();
    let mut walked = 0;
    for tool in tools {
        for member in ["inputSchema", "outputSchema"] {
            if let Some(schema) = tool.get(member) {
                walked += 1;
                let at = format!("{server}: {} {member}", tool["name"]);
                found.extend(unportable(schema).into_iter().map(|f| format!("{at} {f}")));
            }
        }
    }
    (found, walked)
}

async fn tools_of(mut conn: Conn) -> Vec<Value> {
    conn.initialize(true).await;
    conn.tools_list().await
}

#[tokio::test]
async fn every_example_lists_portable_tool_schemas_over_stdio() {
    let store = TempStore::new("portable-schemas");
    let store = store.path().to_str().expect("a UTF-8 temp path").to_owned();
    let mut all = Vec::new();
    for (name, args) in crate::standard_schemas::every_example(&store) {
        let tools = tools_of(Conn::stdio(name, &args)).await;
        let (found, walked) = findings(name, &tools);
        // A walk of nothing would prove nothing: each example lists its loop tools and the
        // fixed ones, every one with both schemas.
        assert!(walked >= 8, "{name}: only {walked} schemas listed");
        all.extend(found);
    }
    assert_eq!(all, Vec::<String>::new(), "unportable tool schemas");
}

/// The same over Streamable HTTP, where the list is served by the HTTP edge.
#[tokio::test]
async fn the_workflow_server_lists_portable_tool_schemas_over_http() {
    let server = pilotage::Server::builder().language(crate::workflow::Workflow::new).build().unwrap();
    let http = HttpServer::start(&server).await;
    let tools = tools_of(http.connect(HttpStyle::Full)).await;
    let (found, walked) = findings("workflow over HTTP", &tools);
    assert!(walked >= 8, "only {walked} schemas listed");
    assert_eq!(found, Vec::<String>::new(), "unportable tool schemas");
}

/// The `sql/postgres` example's Language, on a schema of the test PostgreSQL.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_postgres_server_lists_portable_tool_schemas() {
    let fixture = crate::postgres_loop::Fixture::new("portable").await;
    let http = HttpServer::start(&fixture.server(Some(&fixture.reader))).await;
    let tools = tools_of(http.connect(HttpStyle::Full)).await;
    let (found, walked) = findings("postgres", &tools);
    assert!(walked >= 8, "only {walked} schemas listed");
    assert_eq!(found, Vec::<String>::new(), "unportable tool schemas");
}

/// The permissive members stay permissive: the program argument and `context` accept any JSON
/// value (Part III §4.6), now spelled so that the node says so.
#[tokio::test]
async fn unconstrained_members_still_accept_any_value() {
    let tools = tools_of(Conn::stdio("workflow", &[])).await;
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).expect(name).clone();
    for name in ["validate_workflow", "run_workflow"] {
        let properties = &tool(name)["inputSchema"]["properties"];
        assert_eq!(properties["workflow"], any_value(), "{name}");
        assert_eq!(properties["context"], any_value(), "{name}");
    }
    // Every JSON type reaches validation through the program argument (a wrong program is a
    // diagnostic, never a schema failure).
    let mut conn = Conn::stdio("workflow", &[]);
    conn.initialize(true).await;
    for program in [json!(null), json!(true), json!(1), json!("text"), json!([]), json!({})] {
        let answer = conn.call("validate_workflow", json!({ "workflow": program })).await;
        assert!(!answer.is_error, "{program}: {:?}", answer.structured);
        assert_eq!(answer.structured["valid"], false, "{program}");
    }
}

/// The rules themselves, on a schema with one of each finding (the test above must be able to
/// fail).
#[test]
fn the_rules_find_each_kind_of_finding() {
    let tools = [json!({"name": "t", "inputSchema": {"type": "object", "properties": {
        "a": {}, "b": {"type": ["string", "null"]}, "c": true, "d": {"$ref": "other.json"}}}})];
    let (found, walked) = findings("s", &tools);
    assert_eq!(walked, 1);
    assert_eq!(found.len(), 4, "{found:?}");
}
