//! Only standard JSON Schema on the wire: every schema every example server advertises over
//! stdio (each tool's `inputSchema` and `outputSchema`, each Language's `context_schema` in the
//! manifest, each catalog entry's `input_schema` and `output_schema`) uses only JSON Schema 2020-12 keywords and
//! `format` values. Strict clients (AJV behind the official TypeScript SDK) warn about every
//! other format, once per connection. No tool schema has a `type` array: several model
//! providers refuse them, and the MCP Inspector warns about each.

use crate::support;

use pilotage::model::schema::{nonstandard, type_arrays};
use pilotage::testkit::TempStore;
use serde_json::{json, Value};
use support::Conn;

/// Every schema `conn`'s server advertises, as `(where, schema)`.
async fn advertised(conn: &mut Conn) -> Vec<(String, Value)> {
    conn.initialize(true).await;
    let mut schemas = Vec::new();
    for tool in conn.tools_list().await {
        for member in ["inputSchema", "outputSchema"] {
            if let Some(schema) = tool.get(member) {
                schemas.push((format!("tool {} {member}", tool["name"]), schema.clone()));
            }
        }
    }
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    for language in manifest["languages"].as_array().expect("the manifest lists its Languages") {
        let name = language["name"].as_str().expect("a Language has a name").to_owned();
        if let Some(schema) = language.get("context_schema") {
            schemas.push((format!("{name} context_schema"), schema.clone()));
        }
        if language["capabilities"].get("catalog").is_some() {
            let list = conn.call_ok("pilotage_catalog", json!({"language": name, "verb": "list"})).await;
            for entry in list["items"].as_array().expect("a catalog list has items") {
                for member in ["input_schema", "output_schema"] {
                    if let Some(schema) = entry.get(member) {
                        schemas
                            .push((format!("{name} catalog entry {} {member}", entry["id"]), schema.clone()));
                    }
                }
            }
        }
    }
    schemas
}

/// Assert that every schema of the example `name` (spawned with `args`) is standard, and
/// return them.
async fn assert_standard(name: &str, args: &[&str]) -> Vec<(String, Value)> {
    let schemas = advertised(&mut Conn::stdio(name, args)).await;
    let departures: Vec<String> = schemas
        .iter()
        .flat_map(|(at, schema)| nonstandard(schema).into_iter().map(move |d| format!("{name}: {at} {d}")))
        .collect();
    assert_eq!(departures, Vec::<String>::new(), "non-standard JSON Schema on the wire");
    // Portable: no `type` array in any tool schema (several model providers refuse them).
    let arrays: Vec<String> = schemas
        .iter()
        .filter(|(at, _)| at.starts_with("tool "))
        .flat_map(|(at, schema)| type_arrays(schema).into_iter().map(move |d| format!("{name}: {at} {d}")))
        .collect();
    assert_eq!(arrays, Vec::<String>::new(), "a type array in tools/list");
    schemas
}

/// Every example server, with the arguments it starts with over stdio (`store`: a durable
/// store's path, for automation).
pub(crate) fn every_example(store: &str) -> [(&'static str, Vec<&str>); 5] {
    [
        ("calc", vec![]),
        ("workflow", vec![]),
        ("sql", vec![]),
        ("combined", vec![]),
        ("automation", vec!["--store", store]),
    ]
}

#[tokio::test]
async fn every_example_advertises_only_standard_json_schema() {
    let store = TempStore::new("standard-schemas");
    let store = store.path().to_str().expect("a UTF-8 temp path").to_owned();
    let mut counts = Vec::new();
    for (name, args) in every_example(&store) {
        let schemas = assert_standard(name, &args).await;
        counts.push((name, schemas.len()));
    }
    // Each example was walked, its tool schemas and more (a count of zero would prove nothing).
    for (name, count) in counts {
        assert!(count >= 8, "{name}: only {count} schemas advertised");
    }
}

/// The runtime's own `u32` members (a text range's line and column) reach the wire as their
/// exact range, not as schemars' `"format": "uint32"`.
#[tokio::test]
async fn an_unsigned_32_bit_member_is_advertised_as_its_range() {
    let schemas = assert_standard("sql", &[]).await;
    let (_, validate) = schemas
        .iter()
        .find(|(at, _)| at == "tool \"validate_sql\" outputSchema")
        .expect("the validate tool's outputSchema");
    let line = &validate["$defs"]["TextPosition"]["properties"]["line"];
    assert_eq!(
        line,
        &json!({"description": "1-based line.", "type": "integer", "minimum": 0, "maximum": 4294967295u32})
    );
}
