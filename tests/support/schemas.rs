//! Validation against the official Pilotage 1.1 JSON Schema (`tests/fixtures`) and against
//! schemas a server advertises.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use serde_json::{json, Value};

/// The official schema file, vendored unchanged.
pub const OFFICIAL_SCHEMA: &str = include_str!("../fixtures/pilotage.schema.json");

/// What a Pilotage tool binds, which selects its official output union.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolKind {
    Manifest,
    Guide,
    Catalog,
    Validate,
    Execute,
    Trace,
}

impl ToolKind {
    /// The official `$defs` name of this kind's `outputSchema` union.
    pub fn output_def(self) -> &'static str {
        match self {
            ToolKind::Manifest => "ManifestToolOutput",
            ToolKind::Guide => "GetGuideToolOutput",
            ToolKind::Catalog => "CatalogToolOutput",
            ToolKind::Validate => "ValidateToolOutput",
            ToolKind::Execute => "ExecuteToolOutput",
            ToolKind::Trace => "TraceToolOutput",
        }
    }

    /// The kind of a fixed-name access tool.
    pub fn fixed(name: &str) -> Option<ToolKind> {
        match name {
            "pilotage_manifest" => Some(ToolKind::Manifest),
            "pilotage_get_guide" => Some(ToolKind::Guide),
            "pilotage_catalog" => Some(ToolKind::Catalog),
            _ => None,
        }
    }

    /// Every Pilotage tool of `manifest` with its kind: the fixed names plus each Language's
    /// `loop` names.
    pub fn from_manifest(manifest: &Value) -> HashMap<String, ToolKind> {
        let mut kinds: HashMap<String, ToolKind> =
            ["pilotage_manifest", "pilotage_get_guide", "pilotage_catalog"]
                .iter()
                .map(|n| (n.to_string(), ToolKind::fixed(n).unwrap()))
                .collect();
        let languages = manifest["languages"].as_array().cloned().unwrap_or_default();
        for language in &languages {
            for (member, kind) in
                [("validate", ToolKind::Validate), ("execute", ToolKind::Execute), ("trace", ToolKind::Trace)]
            {
                if let Some(name) = language["loop"][member].as_str() {
                    kinds.insert(name.to_owned(), kind);
                }
            }
        }
        kinds
    }
}

/// The official schema as a JSON value.
pub fn official() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA
        .get_or_init(|| serde_json::from_str(OFFICIAL_SCHEMA).expect("the vendored official schema is JSON"))
}

/// A compiled validator for the official `$defs/<def>`, built as
/// `{"$ref": "#/$defs/<def>", "$defs": <all defs>}` and cached.
pub fn official_validator(def: &str) -> Arc<Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap().get(def) {
        return v.clone();
    }
    let defs = &official()["$defs"];
    assert!(defs.get(def).is_some(), "the official schema has no $defs/{def}");
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/$defs/{def}"),
        "$defs": defs,
    });
    let validator = Arc::new(
        jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("official $defs/{def} does not compile: {e}")),
    );
    cache.lock().unwrap().insert(def.to_owned(), validator.clone());
    validator
}

/// Compile a schema a server advertised; panics naming `what` when it is not a valid schema.
pub fn compile(schema: &Value, what: &str) -> Arc<Validator> {
    Arc::new(
        jsonschema::validator_for(schema)
            .unwrap_or_else(|e| panic!("{what} is not a valid JSON Schema: {e}\nschema: {schema:#}")),
    )
}

/// Every validation error of `value`, one per line with its location; `None` when valid.
pub fn errors(validator: &Validator, value: &Value) -> Option<String> {
    let found: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("  at '{}' (schema '{}'): {e}", e.instance_path(), e.schema_path()))
        .collect();
    if found.is_empty() {
        None
    } else {
        Some(found.join("\n"))
    }
}

/// Whether `value` satisfies the official `$defs/<def>`.
pub fn is_def(value: &Value, def: &str) -> bool {
    official_validator(def).is_valid(value)
}

/// Panics unless `value` satisfies the official `$defs/<def>` (for example `"Manifest"`).
#[track_caller]
pub fn assert_def(value: &Value, def: &str) {
    if let Some(e) = errors(&official_validator(def), value) {
        panic!("value does not match the official $defs/{def}:\n{e}\nvalue: {value:#}");
    }
}
