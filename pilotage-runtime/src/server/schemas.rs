//! Tool schemas (Part III §4, §6): the strict schemas of the fixed access tools, the
//! permissive loop-tool schemas of §4.6, and `outputSchema` unions derived from the very types
//! the runtime serialises (so schema and behaviour cannot drift).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use crate::engine::LanguageSpec;
use crate::model::capabilities::{Capability, CapabilityDeclaration, SubFeature};
use crate::model::catalog::{CatalogChanges, CatalogGet, CatalogList};
use crate::model::declaration::ExecutionMode;
use crate::model::errors::RequestError;
use crate::model::execution::ExecuteResponse;
use crate::model::guide::{GuideFetch, GuideIndex};
use crate::model::manifest::Manifest;
use crate::model::plan::ValidateResponse;
use crate::model::trace::TraceFetchResponse;

/// `pilotage_manifest`: an object with no required members.
pub(crate) fn manifest_input() -> Value {
    json!({"type": "object", "properties": {}})
}

/// `pilotage_get_guide` (Part III §4.1).
pub(crate) fn guide_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "language": {"type": "string"},
            "id": {"type": "string"},
            "topic": {"type": "string"}
        },
        "required": ["language"]
    })
}

/// `pilotage_catalog` (Part III §4.2).
pub(crate) fn catalog_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "language": {"type": "string"},
            "verb": {"type": "string", "enum": ["list", "get", "changed_since"]},
            "kind": {"type": "string"},
            "tag": {"type": "string"},
            "q": {"type": "string"},
            "cursor": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1},
            "id": {"type": "string"},
            "catalog_version": {"type": "string"}
        },
        "required": ["language", "verb"]
    })
}

/// A validate tool for one Language: the program argument is required and unconstrained,
/// `context` reaches validation whatever it is (a wrong context is a diagnostic).
pub(crate) fn validate_input(spec: &LanguageSpec) -> Value {
    json!({
        "type": "object",
        "properties": {
            spec.program_argument: {},
            "context": {}
        },
        "required": [spec.program_argument]
    })
}

/// An execute tool: neither runnable is required; reserved members are typed only.
pub(crate) fn execute_input(spec: &LanguageSpec, caps: &CapabilityDeclaration) -> Value {
    let mut p = Map::new();
    p.insert(spec.program_argument.to_owned(), json!({}));
    if spec.sets.promoted.is_some() {
        p.insert("program_ref".into(), json!({"type": "string"}));
    }
    p.insert("input".into(), json!({"type": "object"}));
    p.insert("context".into(), json!({}));
    p.insert("trace_level".into(), json!({"type": "string"}));
    p.insert("store".into(), json!({"type": "boolean"}));
    if caps.declares(Capability::Catalog) {
        p.insert("expected_catalog_version".into(), json!({"type": "string"}));
    }
    if caps.declares_sub(SubFeature::Idempotency) {
        p.insert("idempotency_key".into(), json!({"type": "string"}));
    }
    if caps.declares_sub(SubFeature::TestRun) {
        p.insert("test_run".into(), json!({"type": "boolean"}));
    }
    if spec.execution == Some(ExecutionMode::Both) {
        p.insert("mode".into(), json!({"type": "string"}));
    }
    json!({"type": "object", "properties": p})
}

/// A trace-fetch tool: `run_id` required.
pub(crate) fn trace_input(caps: &CapabilityDeclaration) -> Value {
    let mut p = Map::new();
    p.insert("run_id".into(), json!({"type": "string"}));
    p.insert("trace_level".into(), json!({"type": "string"}));
    if caps.declares_sub(SubFeature::Narrate) {
        p.insert("question".into(), json!({"type": "string"}));
    }
    json!({"type": "object", "properties": p, "required": ["run_id"]})
}

fn union(shapes: impl FnOnce(&mut SchemaGenerator) -> Vec<Schema>) -> Value {
    let mut generator = SchemaSettings::draft2020_12().for_serialize().into_generator();
    let any_of: Vec<Value> = shapes(&mut generator).into_iter().map(Schema::to_value).collect();
    let defs = generator.take_definitions(true);
    json!({"type": "object", "anyOf": any_of, "$defs": defs})
}

fn of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// `outputSchema` of `pilotage_manifest`.
pub(crate) fn manifest_output() -> Value {
    union(|g| vec![of::<Manifest>(g), of::<RequestError>(g)])
}
/// `outputSchema` of `pilotage_get_guide`.
pub(crate) fn guide_output() -> Value {
    union(|g| vec![of::<GuideIndex>(g), of::<GuideFetch>(g), of::<RequestError>(g)])
}
/// `outputSchema` of `pilotage_catalog`.
pub(crate) fn catalog_output() -> Value {
    union(|g| vec![of::<CatalogList>(g), of::<CatalogGet>(g), of::<CatalogChanges>(g), of::<RequestError>(g)])
}
/// `outputSchema` of a validate tool.
pub(crate) fn validate_output() -> Value {
    union(|g| vec![of::<ValidateResponse>(g), of::<RequestError>(g)])
}
/// `outputSchema` of an execute tool.
pub(crate) fn execute_output() -> Value {
    union(|g| vec![of::<ExecuteResponse>(g), of::<RequestError>(g)])
}
/// `outputSchema` of a trace-fetch tool.
pub(crate) fn trace_output() -> Value {
    union(|g| vec![of::<TraceFetchResponse>(g), of::<RequestError>(g)])
}

/// The promote tool of a Language with promoted programs.
pub(crate) fn promote_input(spec: &LanguageSpec) -> Value {
    json!({
        "type": "object",
        "properties": {
            spec.program_argument: {},
            "context": {},
            "name": {"type": "string"},
            "description": {"type": "string"},
            "input_schema": {"type": "object"}
        },
        "required": [spec.program_argument, "name"]
    })
}
