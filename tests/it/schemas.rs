//! Self-tests of the schema checking the integration tests rely on: the vendored official
//! schema compiles, accepts the specification's own wire examples (Part III §9) and rejects
//! wrong shapes, so a passing loop test means something.

use crate::support;

use axum::response::IntoResponse;
use serde_json::{json, Value};
use support::schemas::{self, is_def, official, official_validator};
use support::{assert_def, Conn, HttpStyle, ToolKind};

const OUTPUT_DEFS: [&str; 6] = [
    "ManifestToolOutput",
    "GetGuideToolOutput",
    "CatalogToolOutput",
    "ValidateToolOutput",
    "ExecuteToolOutput",
    "TraceToolOutput",
];

/// Part III §9.1, the inline manifest.
fn spec_manifest() -> Value {
    json!({
        "pilotage": "1.1",
        "languages": [{
            "name": "workflow/v1",
            "title": "Workflow documents",
            "guides": "pilotage_get_guide",
            "catalog": "pilotage_catalog",
            "guides_resource": "pilotage://guides/workflow%2Fv1",
            "catalog_resource": "pilotage://catalog/workflow%2Fv1",
            "loop": {"validate": "validate_workflow", "execute": "run_workflow", "trace": "trace_run"},
            "capabilities": {
                "guides": true,
                "catalog": {"search": true},
                "validate": true,
                "plan": true,
                "execute": true,
                "trace_fetch": true
            },
            "locator": "json-pointer",
            "execution": "immediate",
            "trace": "full",
            "retention": "PT1H"
        }]
    })
}

#[test]
fn the_vendored_fixtures_are_the_official_ones() {
    let schema = official();
    assert_eq!(schema["$id"], "https://pilotagespec.org/schemas/1.1/pilotage.schema.json");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let vectors: Value = serde_json::from_str(include_str!("../fixtures/vectors.json")).unwrap();
    assert_eq!(vectors["pilotage"], "1.1");
    assert_eq!(vectors["count"], 54);
    assert_eq!(vectors["vectors"].as_array().unwrap().len(), 54);
    // Every shape a vector names exists and compiles.
    for v in vectors["vectors"].as_array().unwrap() {
        if let Some(def) = v["expected"]["structuredContent_validates"].as_str() {
            official_validator(def);
        }
    }
}

#[test]
fn every_official_def_compiles() {
    for def in official()["$defs"].as_object().unwrap().keys() {
        official_validator(def);
    }
    for def in OUTPUT_DEFS {
        assert!(official()["$defs"][def]["anyOf"].is_array(), "{def} is a union");
    }
}

#[test]
fn tool_kinds_come_from_the_manifest() {
    let kinds = ToolKind::from_manifest(&spec_manifest());
    assert_eq!(kinds.len(), 6);
    assert_eq!(kinds["pilotage_manifest"], ToolKind::Manifest);
    assert_eq!(kinds["pilotage_get_guide"], ToolKind::Guide);
    assert_eq!(kinds["pilotage_catalog"], ToolKind::Catalog);
    assert_eq!(kinds["validate_workflow"], ToolKind::Validate);
    assert_eq!(kinds["run_workflow"], ToolKind::Execute);
    assert_eq!(kinds["trace_run"], ToolKind::Trace);
    let defs: Vec<&str> = [
        ToolKind::Manifest,
        ToolKind::Guide,
        ToolKind::Catalog,
        ToolKind::Validate,
        ToolKind::Execute,
        ToolKind::Trace,
    ]
    .iter()
    .map(|k| k.output_def())
    .collect();
    assert_eq!(defs, OUTPUT_DEFS);
}

#[test]
fn the_specifications_wire_examples_validate() {
    let manifest = spec_manifest();
    assert_def(&manifest, "Manifest");
    assert_def(&manifest, "ManifestToolOutput");
    assert_def(&json!({"manifest": manifest}), "InitializeMetaValue");
    assert_def(&json!({"argument": "workflow", "language": "workflow/v1"}), "ProgramDeclaration");
    // §9.3
    let invalid = json!({
        "valid": false,
        "diagnostics": [{
            "severity": "error",
            "code": "unknown_capability",
            "path": "/steps/0/capability",
            "message": "unknown capability 'cap_read_user_profil'",
            "hint": "close match: cap_read_user_profile"
        }],
        "catalog_version": "cv_9f2c41ab07de"
    });
    assert_def(&invalid, "ValidateToolOutput");
    // §9.4
    let outcome = json!({"ok": true, "status": "success", "error": null});
    let executed = json!({
        "run_id": "run_7d3f0a9c21be",
        "outcome": outcome,
        "output": {"name": "Amira Hassan"},
        "trace": {
            "run_id": "run_7d3f0a9c21be",
            "level": "full",
            "steps": [{
                "id": "profile",
                "calls": "cap_read_user_profile",
                "input": {"user_id": "42"},
                "output": {"name": "Amira Hassan", "tier": "gold"},
                "outcome": outcome,
                "t_ms": 84
            }]
        }
    });
    assert_def(&executed, "ExecuteToolOutput");
    // §9.5
    let not_found = json!({"error": {"kind": "not_found", "message": "unknown run: it may have expired"}});
    for def in OUTPUT_DEFS {
        assert_def(&not_found, def);
    }
}

#[test]
fn wrong_shapes_are_rejected() {
    assert!(!is_def(&json!({}), "Manifest"));
    assert!(!is_def(&json!({"pilotage": "1.1", "languages": []}), "Manifest"));
    // error must be null iff ok.
    assert!(!is_def(&json!({"ok": true, "status": "success", "error": "boom"}), "Outcome"));
    assert!(!is_def(&json!({"ok": false, "status": "error", "error": null}), "Outcome"));
    // The request-error kinds are a closed set.
    assert!(!is_def(&json!({"error": {"kind": "oops", "message": "m"}}), "TraceToolOutput"));
    // Index entries never carry a body.
    let entry = json!({
        "id": "core", "title": "Core", "level": "core", "topics": [],
        "language": "workflow/v1", "version": "1", "size_bytes": 4
    });
    assert!(is_def(&json!({"guides": [entry]}), "GetGuideToolOutput"));
    let mut with_body = entry.clone();
    with_body["body"] = json!("text");
    assert!(!is_def(&json!({"guides": [with_body]}), "GetGuideToolOutput"));
    // validation_error outcomes need diagnostics.
    let refused =
        json!({"run_id": "r", "outcome": {"ok": false, "status": "validation_error", "error": "invalid"}});
    assert!(!is_def(&refused, "ExecuteToolOutput"));
    // A validate result needs its diagnostics array.
    assert!(!is_def(&json!({"valid": true}), "ValidateToolOutput"));
}

#[test]
#[should_panic(expected = "does not match the official $defs/Manifest")]
fn assert_def_panics_on_a_mismatch() {
    assert_def(&json!({"pilotage": "1.1"}), "Manifest");
}

#[test]
fn advertised_schemas_are_checked_too() {
    let schema = json!({"type": "object", "anyOf": [{"required": ["valid"]}, {"required": ["error"]}]});
    let validator = schemas::compile(&schema, "a test schema");
    assert!(schemas::errors(&validator, &json!({"valid": true})).is_none());
    let e = schemas::errors(&validator, &json!({"other": 1})).expect("a violation");
    assert!(!e.is_empty());
}

/// A fake MCP endpoint (no Pilotage runtime behind it) whose every `tools/call` answers with
/// `result`: the automatic checks of [`Conn::call`] must reject what a real server must not
/// send.
async fn fake_server(result: Value) -> String {
    let manifest = spec_manifest();
    let permissive = json!({"type": "object", "anyOf": [{"required": ["valid"]}, {"required": ["error"]}]});
    let tools: Vec<Value> = ["pilotage_manifest", "validate_workflow"]
        .iter()
        .map(|name| json!({"name": name, "inputSchema": {"type": "object"}, "outputSchema": permissive}))
        .collect();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |axum::Json(request): axum::Json<Value>| {
            let (manifest, tools, result) = (manifest.clone(), tools.clone(), result.clone());
            async move {
                let reply = match request["method"].as_str().unwrap() {
                    "initialize" => json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake", "version": "0"},
                        "_meta": {support::EXT: {"manifest": manifest}}
                    }),
                    "tools/list" => json!({"tools": tools}),
                    "tools/call" => result,
                    _ => return axum::http::StatusCode::ACCEPTED.into_response(),
                };
                axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result": reply})).into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn call_fake(result: Value) {
    let mut conn = Conn::http(&fake_server(result).await, HttpStyle::Plain);
    conn.initialize(true).await;
    conn.call("validate_workflow", json!({"workflow": {}})).await;
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

#[tokio::test]
async fn the_client_accepts_a_conformant_fake_result() {
    let mut conn = Conn::http(
        &fake_server(json!({"content": [text("valid")], "structuredContent": {"valid": true, "diagnostics": []}, "isError": false})).await,
        HttpStyle::Plain,
    );
    conn.initialize(true).await;
    let call = conn.call("validate_workflow", json!({"workflow": {}})).await;
    assert_eq!(call.structured, json!({"valid": true, "diagnostics": []}));
    assert_eq!(call.text, "valid");
    assert!(!call.is_error);
    assert_eq!(conn.schema_checked(ToolKind::Validate), 1);
}

#[tokio::test]
#[should_panic(expected = "violates the official $defs/ValidateToolOutput")]
async fn the_client_rejects_a_result_outside_the_official_union() {
    // Satisfies the advertised schema (it has `valid`) but not ValidateResponse.
    call_fake(json!({"content": [text("x")], "structuredContent": {"valid": "yes"}, "isError": false})).await;
}

#[tokio::test]
#[should_panic(expected = "violates the tool's advertised outputSchema")]
async fn the_client_rejects_a_result_outside_the_advertised_schema() {
    call_fake(json!({"content": [text("x")], "structuredContent": {"other": 1}, "isError": false})).await;
}

#[tokio::test]
#[should_panic(expected = "exactly one text content block")]
async fn the_client_rejects_two_content_blocks() {
    call_fake(json!({
        "content": [text("a"), text("b")],
        "structuredContent": {"valid": true, "diagnostics": []},
        "isError": false
    }))
    .await;
}

#[tokio::test]
#[should_panic(expected = "returned no structuredContent")]
async fn the_client_rejects_a_pilotage_result_without_structured_content() {
    call_fake(json!({"content": [text("valid")], "isError": false})).await;
}
