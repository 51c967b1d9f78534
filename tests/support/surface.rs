//! The discovery surface of the `workflow/v1` server: the handshake, the tool list (Part III
//! §3–§6) and the manifest, each checked against exact values.

use serde_json::{json, Value};

use super::scenario::{ARGUMENT, EXECUTE, LANGUAGE, PLAIN_TOOLS, TRACE, VALIDATE};
use super::{assert_def, Conn, EXT, PROTOCOL};

/// The `_meta["io.github.jafarsa0/pilotage"]` member of `v`.
pub fn pilotage_meta(v: &Value) -> &Value {
    &v["_meta"][EXT]
}

/// Initialize with the extension and check the handshake; returns the inline manifest.
pub async fn handshake(conn: &mut Conn, with_extension: bool) -> Value {
    let response = conn.initialize(with_extension).await;
    let result = &response["result"];
    let label = &conn.label;
    assert_eq!(result["protocolVersion"], PROTOCOL, "{label}: {result}");
    assert_eq!(
        result["capabilities"]["extensions"][EXT],
        json!({"version": "1.1"}),
        "{label}: the server must declare the Pilotage extension: {result}"
    );
    assert!(result["capabilities"]["tools"].is_object(), "{label}: {result}");
    let instructions =
        result["instructions"].as_str().unwrap_or_else(|| panic!("{label}: no instructions: {result}"));
    assert!(instructions.contains("Pilotage"), "{label}: instructions must name Pilotage: {instructions}");
    assert!(
        instructions.contains("pilotage_manifest"),
        "{label}: instructions must direct the agent to pilotage_manifest: {instructions}"
    );
    let meta = pilotage_meta(result);
    assert_def(meta, "InitializeMetaValue");
    let manifest = meta["manifest"].clone();
    assert_def(&manifest, "Manifest");
    manifest
}

/// Check the `tools/list` surface of the workflow server (Part III §4–§6).
pub async fn check_tool_surface(conn: &mut Conn) {
    let tools = conn.tools_list().await;
    let label = conn.label.clone();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    let mut expected =
        vec!["pilotage_manifest", "pilotage_get_guide", "pilotage_catalog", VALIDATE, EXECUTE, TRACE];
    expected.extend(PLAIN_TOOLS);
    expected.sort_unstable();
    assert_eq!(names, expected, "{label}: the tool surface");
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    let declaration = json!({"argument": ARGUMENT, "language": LANGUAGE});

    for name in ["pilotage_manifest", "pilotage_get_guide", "pilotage_catalog", VALIDATE, EXECUTE, TRACE] {
        let t = tool(name);
        let input = &t["inputSchema"];
        assert_eq!(input["type"], "object", "{label}: {name} inputSchema: {input}");
        assert_ne!(
            input["additionalProperties"],
            json!(false),
            "{label}: {name} inputSchema must not forbid members"
        );
        let output = &t["outputSchema"];
        assert_eq!(output["type"], "object", "{label}: {name} outputSchema root: {output}");
        assert!(
            output["anyOf"].as_array().is_some_and(|a| a.len() >= 2),
            "{label}: {name} outputSchema must be an anyOf union: {output}"
        );
        assert!(
            t["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{label}: {name} has no description"
        );
        if name == EXECUTE {
            // The maximum effect of the Language: destructive and external capabilities exist.
            assert_eq!(
                t["annotations"],
                json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": true}),
                "{label}: {name} annotations"
            );
        } else {
            assert_eq!(t["annotations"]["readOnlyHint"], true, "{label}: {name} should be read-only: {t}");
        }
    }
    // Loop tools name their stage's Language (Part III §3.4).
    for name in [VALIDATE, EXECUTE, TRACE] {
        let description = tool(name)["description"].as_str().unwrap().to_owned();
        assert!(
            description.contains(LANGUAGE),
            "{label}: {name} description must name {LANGUAGE}: {description}"
        );
    }
    assert!(
        tool("pilotage_manifest")["description"].as_str().unwrap().to_lowercase().contains("first"),
        "{label}: pilotage_manifest must be signposted as the starting point"
    );

    // Fixed access tools: the Part III §4 schemas.
    assert_eq!(tool("pilotage_manifest")["inputSchema"].get("required"), None);
    assert_eq!(tool("pilotage_get_guide")["inputSchema"]["required"], json!(["language"]));
    assert_eq!(tool("pilotage_catalog")["inputSchema"]["required"], json!(["language", "verb"]));
    assert_eq!(
        tool("pilotage_catalog")["inputSchema"]["properties"]["verb"]["enum"],
        json!(["list", "get", "changed_since"])
    );
    for name in ["pilotage_manifest", "pilotage_get_guide", "pilotage_catalog"] {
        assert_eq!(pilotage_meta(&tool(name)), &Value::Null, "{label}: {name} is not program-valued");
    }

    // Validate: program declaration, program argument required.
    let validate = tool(VALIDATE);
    assert_eq!(pilotage_meta(&validate), &declaration, "{label}: {VALIDATE} _meta");
    assert_def(pilotage_meta(&validate), "ProgramDeclaration");
    assert_eq!(validate["inputSchema"]["required"], json!([ARGUMENT]), "{label}: {validate}");
    assert!(validate["inputSchema"]["properties"].get("context").is_some(), "{label}: {validate}");

    // Execute: program declaration, no runnable required, reserved members typed only.
    let execute = tool(EXECUTE);
    assert_eq!(pilotage_meta(&execute), &declaration, "{label}: {EXECUTE} _meta");
    let schema = &execute["inputSchema"];
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        !required.contains(&ARGUMENT) && !required.contains(&"program_ref"),
        "{label}: {EXECUTE} must not require a runnable: {schema}"
    );
    let properties = &schema["properties"];
    assert!(properties.get(ARGUMENT).is_some(), "{label}: {schema}");
    assert_eq!(properties["trace_level"], json!({"type": "string"}), "{label}: {schema}");
    assert_eq!(properties["expected_catalog_version"], json!({"type": "string"}), "{label}: {schema}");
    assert_eq!(properties["store"], json!({"type": "boolean"}), "{label}: {schema}");
    assert_eq!(properties["input"], json!({"type": "object"}), "{label}: {schema}");
    assert!(properties.get("context").is_some(), "{label}: {schema}");

    // Trace fetch: run_id required, not program-valued.
    let trace = tool(TRACE);
    assert_eq!(trace["inputSchema"]["required"], json!(["run_id"]), "{label}: {trace}");
    assert_eq!(trace["inputSchema"]["properties"]["run_id"], json!({"type": "string"}), "{label}: {trace}");
    assert_eq!(pilotage_meta(&trace), &Value::Null, "{label}: {TRACE} is not program-valued");

    // Plain tools get no Pilotage semantics.
    for name in PLAIN_TOOLS {
        let t = tool(name);
        assert_eq!(pilotage_meta(&t), &Value::Null, "{label}: {name}");
        assert_eq!(t["inputSchema"]["type"], "object", "{label}: {name}");
    }
}

/// The manifest of the workflow server: one Language with its loop tools.
pub fn check_manifest(label: &str, manifest: &Value) {
    assert_def(manifest, "Manifest");
    assert_eq!(manifest["pilotage"], "1.1", "{label}: {manifest}");
    let languages = manifest["languages"].as_array().unwrap();
    assert_eq!(languages.len(), 1, "{label}: {manifest}");
    let language = &languages[0];
    assert_eq!(language["name"], LANGUAGE, "{label}: {manifest}");
    assert_eq!(language["guides"], "pilotage_get_guide", "{label}: {manifest}");
    assert_eq!(language["catalog"], "pilotage_catalog", "{label}: {manifest}");
    assert_eq!(
        language["loop"],
        json!({"validate": VALIDATE, "execute": EXECUTE, "trace": TRACE}),
        "{label}: {manifest}"
    );
    assert_eq!(language["locator"], "json-pointer", "{label}: {manifest}");
}
