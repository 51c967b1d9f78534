//! The whole Pilotage loop against the `workflow/v1` example engine, on any [`Conn`]:
//! discover → learn → lookup → validate (invalid, then corrected) → execute → trace fetch →
//! catalog change → execute refused for drift. Every step asserts exact values.

use serde_json::{json, Value};

pub use super::surface::{check_manifest, check_tool_surface, handshake, pilotage_meta};
use super::{Conn, ToolKind};

/// The Language under test and its loop tools.
pub const LANGUAGE: &str = "workflow/v1";
pub const ARGUMENT: &str = "workflow";
pub const VALIDATE: &str = "validate_workflow";
pub const EXECUTE: &str = "run_workflow";
pub const TRACE: &str = "trace_run";
/// The plain (non-Pilotage) tools of the example engine.
pub const PLAIN_TOOLS: [&str; 5] = [
    "world_fingerprint",
    "catalog_add_entry",
    "catalog_remove_entry",
    "catalog_update_entry",
    "inject_fault",
];

/// A program reading user `$.input.userId`'s profile; `capability` is the called entry.
pub fn profile_program(capability: &str) -> Value {
    json!({
        "inputs": {"userId": "string"},
        "steps": [
            {
                "id": "profile",
                "kind": "call",
                "capability": capability,
                "with": {"user_id": "$.input.userId"}
            }
        ],
        "output": {"name": "$.steps.profile.output.name", "tier": "$.steps.profile.output.tier"}
    })
}

/// What the loop produced, for transport-specific follow-ups.
pub struct LoopResult {
    /// The stored run.
    pub run_id: String,
    /// The catalog version before the catalog change.
    pub first_catalog_version: String,
}

/// The whole loop. The connection must be fresh (not yet initialized).
pub async fn full_loop(conn: &mut Conn) -> LoopResult {
    // Discover: handshake, tool surface, manifest.
    let inline = handshake(conn, true).await;
    check_tool_surface(conn).await;
    let label = conn.label.clone();
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    check_manifest(&label, &manifest);
    assert_eq!(inline, manifest, "{label}: the inline manifest must equal the pilotage_manifest result");

    // Learn: the guide index, then the core guide.
    let index = conn.call_ok("pilotage_get_guide", json!({"language": LANGUAGE})).await;
    let guides = index["guides"].as_array().unwrap_or_else(|| panic!("{label}: {index}"));
    assert!(!guides.is_empty(), "{label}: no guides: {index}");
    for g in guides {
        assert!(g.get("body").is_none(), "{label}: index entries carry no body: {g}");
        assert_eq!(g["language"], LANGUAGE, "{label}: {g}");
    }
    let core = guides
        .iter()
        .find(|g| g["level"] == "core")
        .unwrap_or_else(|| panic!("{label}: no core guide: {index}"));
    let id = core["id"].as_str().unwrap();
    let fetched = conn.call_ok("pilotage_get_guide", json!({"language": LANGUAGE, "id": id})).await;
    let guide = &fetched["guide"];
    let body =
        guide["body"].as_str().unwrap_or_else(|| panic!("{label}: the fetched guide has no body: {fetched}"));
    assert!(!body.is_empty(), "{label}: empty core guide");
    assert_eq!(guide["size_bytes"], json!(body.len()), "{label}: size_bytes must be the body's byte length");
    assert_eq!(guide["id"], id, "{label}: {fetched}");
    let mut metadata = guide.clone();
    metadata.as_object_mut().unwrap().remove("body");
    assert_eq!(&metadata, core, "{label}: the fetched guide's metadata must equal its index entry");

    // Lookup: the catalog.
    let list = conn.call_ok("pilotage_catalog", json!({"language": LANGUAGE, "verb": "list"})).await;
    let catalog_version = list["catalog_version"]
        .as_str()
        .unwrap_or_else(|| panic!("{label}: catalog list without catalog_version: {list}"))
        .to_owned();
    assert!(!catalog_version.is_empty(), "{label}: {list}");
    let items = list["items"].as_array().unwrap();
    let profile = items
        .iter()
        .find(|e| e["id"] == "cap_read_user_profile")
        .unwrap_or_else(|| panic!("{label}: cap_read_user_profile is not listed: {list}"));
    assert_eq!(profile["kind"], "capability", "{label}: {profile}");
    assert_eq!(profile["input_schema"]["required"], json!(["user_id"]), "{label}: {profile}");

    // Validate an invalid program: a result, not an error.
    let invalid = conn.call(VALIDATE, json!({ARGUMENT: profile_program("cap_read_user_profil")})).await;
    assert_eq!(invalid.raw["result"]["isError"], json!(false), "{label}: {}", invalid.raw);
    let verdict = &invalid.structured;
    assert_eq!(verdict["valid"], false, "{label}: {verdict}");
    assert_eq!(verdict["catalog_version"], json!(catalog_version), "{label}: {verdict}");
    assert!(verdict.get("plan").is_none(), "{label}: an invalid program gets no plan: {verdict}");
    let diagnostics = verdict["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{label}: exactly the misspelling is reported: {verdict}");
    let d = &diagnostics[0];
    assert_eq!(d["severity"], "error", "{label}: {d}");
    assert_eq!(d["code"], "unknown_capability", "{label}: {d}");
    assert_eq!(d["path"], "/steps/0/capability", "{label}: {d}");
    let hint = d["hint"].as_str().unwrap_or_else(|| panic!("{label}: no hint: {d}"));
    assert!(hint.contains("cap_read_user_profile"), "{label}: the hint should name the close match: {hint}");
    assert_eq!(invalid.text, "invalid: 1 diagnostic", "{label}");

    // Validate the corrected program: valid, with a plan.
    let program = profile_program("cap_read_user_profile");
    let valid = conn.call_ok(VALIDATE, json!({ARGUMENT: program})).await;
    assert_eq!(valid["valid"], true, "{label}: {valid}");
    assert_eq!(valid["diagnostics"], json!([]), "{label}: {valid}");
    let expected_catalog_version = valid["catalog_version"].as_str().unwrap().to_owned();
    assert_eq!(expected_catalog_version, catalog_version, "{label}: the catalog did not change");
    let plan = &valid["plan"];
    let plan_steps = plan["steps"].as_array().unwrap_or_else(|| panic!("{label}: no plan: {valid}"));
    assert_eq!(plan_steps.len(), 1, "{label}: {plan}");
    assert_eq!(plan_steps[0]["id"], "profile", "{label}: {plan}");
    assert_eq!(plan_steps[0]["calls"], "cap_read_user_profile", "{label}: {plan}");
    assert_eq!(plan_steps[0]["risk"], "safe", "{label}: {plan}");
    assert_eq!(plan["max_risk"], "safe", "{label}: {plan}");
    assert_eq!(plan["max_risk_hints"]["readOnly"], true, "{label}: {plan}");
    assert_eq!(plan["max_risk_hints"]["destructive"], false, "{label}: {plan}");

    // Execute, stored, with a full trace.
    let run = conn
        .call(
            EXECUTE,
            json!({
                ARGUMENT: program,
                "input": {"userId": "42"},
                "trace_level": "full",
                "store": true,
                "expected_catalog_version": expected_catalog_version,
            }),
        )
        .await;
    assert_eq!(run.raw["result"]["isError"], json!(false), "{label}: {}", run.raw);
    let ran = &run.structured;
    let run_id = ran["run_id"].as_str().unwrap_or_else(|| panic!("{label}: no run_id: {ran}")).to_owned();
    assert_eq!(ran["outcome"], json!({"ok": true, "status": "success", "error": null}), "{label}: {ran}");
    assert_eq!(ran["output"], json!({"name": "Amira Hassan", "tier": "gold"}), "{label}: {ran}");
    assert!(ran.get("diagnostics").is_none(), "{label}: {ran}");
    assert_eq!(run.text, "success", "{label}");
    let trace = &ran["trace"];
    assert_eq!(trace["run_id"], json!(run_id), "{label}: {trace}");
    assert_eq!(trace["level"], "full", "{label}: {trace}");
    let steps = trace["steps"].as_array().unwrap_or_else(|| panic!("{label}: no trace steps: {ran}"));
    assert_eq!(steps.len(), 1, "{label}: {trace}");
    let step = &steps[0];
    assert_eq!(step["id"], "profile", "{label}: {step}");
    assert_eq!(step["calls"], "cap_read_user_profile", "{label}: {step}");
    assert_eq!(step["input"], json!({"user_id": "42"}), "{label}: {step}");
    assert_eq!(
        step["output"],
        json!({"user_id": "42", "name": "Amira Hassan", "email": "amira.hassan@example.com", "tier": "gold"}),
        "{label}: {step}"
    );
    assert_eq!(step["outcome"], json!({"ok": true, "status": "success", "error": null}), "{label}: {step}");

    // Trace fetch: the same run through the second door.
    let fetched = conn.call_ok(TRACE, json!({"run_id": run_id})).await;
    assert_eq!(fetched["run_id"], json!(run_id), "{label}: {fetched}");
    assert_eq!(fetched["outcome"], ran["outcome"], "{label}: {fetched}");
    assert_eq!(fetched["output"], ran["output"], "{label}: {fetched}");
    assert_eq!(fetched["trace"]["run_id"], json!(run_id), "{label}: {fetched}");
    assert_eq!(fetched["trace"]["level"], "full", "{label}: {fetched}");
    assert_eq!(fetched["trace"]["steps"], trace["steps"], "{label}: fetched and inline traces differ");

    // The world changes its catalog through a plain tool.
    let before = fingerprint(conn).await;
    let added = conn
        .call(
            "catalog_add_entry",
            json!({"id": "cap_audit_note", "name": "Audit note", "description": "Records a note."}),
        )
        .await;
    assert!(!added.is_error, "{label}: catalog_add_entry failed: {}", added.raw);
    assert_eq!(added.structured["added"]["id"], "cap_audit_note", "{label}: {}", added.raw);
    let changed = fingerprint(conn).await;
    assert_ne!(before, changed, "{label}: adding an entry must change the world");
    let relisted = conn.call_ok("pilotage_catalog", json!({"language": LANGUAGE, "verb": "list"})).await;
    let new_version = relisted["catalog_version"].as_str().unwrap().to_owned();
    assert_ne!(new_version, catalog_version, "{label}: catalog_version must move when the catalog changes");
    assert!(
        relisted["items"].as_array().unwrap().iter().any(|e| e["id"] == "cap_audit_note"),
        "{label}: the added entry is listed: {relisted}"
    );

    // Execute with the now stale catalog version: refused as an outcome, nothing happens.
    let stale = conn
        .call(
            EXECUTE,
            json!({
                ARGUMENT: program,
                "input": {"userId": "42"},
                "trace_level": "full",
                "expected_catalog_version": expected_catalog_version,
            }),
        )
        .await;
    assert_eq!(stale.raw["result"]["isError"], json!(false), "{label}: drift is an outcome: {}", stale.raw);
    let refused = &stale.structured;
    assert_eq!(refused["outcome"]["ok"], false, "{label}: {refused}");
    assert_eq!(refused["outcome"]["status"], "catalog_drift", "{label}: {refused}");
    assert!(refused["outcome"]["error"].is_string(), "{label}: {refused}");
    assert!(refused.get("trace").is_none(), "{label}: a refused run has no trace: {refused}");
    assert!(refused.get("output").is_none(), "{label}: a refused run has no output: {refused}");
    assert!(refused["run_id"].is_string(), "{label}: {refused}");
    assert_ne!(refused["run_id"], json!(run_id), "{label}: {refused}");
    assert_eq!(fingerprint(conn).await, changed, "{label}: the refused run must not touch the world");
    // A refused Run is never retained (Part II §6.6): its id is as unknown as any other.
    let refused_id = refused["run_id"].as_str().unwrap();
    let gone = conn.call(TRACE, json!({"run_id": refused_id})).await;
    assert!(gone.is_error, "{label}: a refused run is not fetchable: {}", gone.raw);
    assert_eq!(gone.structured["error"]["kind"], "not_found", "{label}: {}", gone.raw);

    // Every result above went through the automatic schema checks, by kind.
    for (kind, calls) in [
        (ToolKind::Manifest, 1),
        (ToolKind::Guide, 2),
        (ToolKind::Catalog, 2),
        (ToolKind::Validate, 2),
        (ToolKind::Execute, 2),
        (ToolKind::Trace, 2),
    ] {
        assert_eq!(conn.schema_checked(kind), calls, "{label}: schema-checked {kind:?} results");
    }

    LoopResult { run_id, first_catalog_version: catalog_version }
}

/// The `world_fingerprint` plain tool's answer.
pub async fn fingerprint(conn: &mut Conn) -> Value {
    let call = conn.call("world_fingerprint", json!({})).await;
    assert!(!call.is_error, "{}: world_fingerprint failed: {}", conn.label, call.raw);
    assert!(call.structured.is_object(), "{}: {}", conn.label, call.raw);
    call.structured
}
