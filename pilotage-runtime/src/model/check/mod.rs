//! Checking JSON instances against JSON Schemas: a tool's `inputSchema` (JSON-RPC `-32602`), a
//! Language's context schema (`context_binding`), a promoted program's `input_schema`
//! (`input_binding`) and, in debug builds, the runtime's results against their `outputSchema`.
//!
//! [`SchemaCheck`] uses the [built-in check](builtin) for every schema it can evaluate, which is
//! every keyword of JSON Schema 2020-12 (and the draft-07 spellings) except those that need
//! regular expressions or dynamic scopes. A schema using one of those is checked by the
//! `jsonschema` crate with the feature `jsonschema`, and refused without it, so a build without
//! the feature compiles no regex engine.

pub mod builtin;

use serde_json::Value;

pub use self::builtin::{BuiltIn, Fault, Refusal};

/// The most faults one check reports (a diagnostics list is then cut to
/// `Limits::max_diagnostics`).
pub const MAX_FAULTS: usize = 1_000;

/// A compiled check of instances against one JSON Schema.
#[derive(Debug)]
pub struct SchemaCheck(Checker);

#[derive(Debug)]
enum Checker {
    BuiltIn(BuiltIn),
    #[cfg(feature = "jsonschema")]
    Full(Box<jsonschema::Validator>),
}

impl SchemaCheck {
    /// Compiles `schema`; the error completes a sentence about the schema ("is not a valid JSON
    /// Schema: ...", or names the keywords only the feature `jsonschema` evaluates).
    pub fn new(schema: &Value) -> Result<SchemaCheck, String> {
        match BuiltIn::new(schema) {
            Ok(check) => Ok(SchemaCheck(Checker::BuiltIn(check))),
            Err(Refusal::Invalid(reason)) => Err(format!("is not a valid JSON Schema: {reason}")),
            Err(Refusal::Unsupported(keywords)) => full(schema, &keywords),
        }
    }

    /// Whether the built-in check evaluates this schema (rather than `jsonschema`).
    pub fn is_built_in(&self) -> bool {
        matches!(self.0, Checker::BuiltIn(_))
    }

    /// The first fault of `instance`, or `None` when it conforms.
    pub fn first_fault(&self, instance: &Value) -> Option<Fault> {
        self.faults(instance, 1).into_iter().next()
    }

    /// Every fault of `instance`, at most `max` of them.
    pub fn faults(&self, instance: &Value, max: usize) -> Vec<Fault> {
        match &self.0 {
            Checker::BuiltIn(check) => check.faults(instance, max),
            #[cfg(feature = "jsonschema")]
            Checker::Full(validator) => validator
                .iter_errors(instance)
                .take(max)
                .map(|e| Fault { path: e.instance_path().to_string(), message: e.to_string() })
                .collect(),
        }
    }
}

/// A schema the built-in check does not evaluate, by `jsonschema`.
#[cfg(feature = "jsonschema")]
fn full(schema: &Value, _keywords: &[String]) -> Result<SchemaCheck, String> {
    jsonschema::validator_for(schema)
        .map(|validator| SchemaCheck(Checker::Full(Box::new(validator))))
        .map_err(|e| format!("is not a valid JSON Schema: {e}"))
}

/// A schema the built-in check does not evaluate, refused without the feature `jsonschema`.
#[cfg(not(feature = "jsonschema"))]
fn full(_schema: &Value, keywords: &[String]) -> Result<SchemaCheck, String> {
    Err(format!(
        "uses {}, which only the feature `jsonschema` of pilotage evaluates (the built-in check has no regular expressions)",
        keywords.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_built_in_check_takes_what_it_evaluates_and_jsonschema_the_rest() {
        let plain = SchemaCheck::new(&json!({"type": "object", "required": ["tz"]})).unwrap();
        assert!(plain.is_built_in());
        let fault = plain.first_fault(&json!({})).unwrap();
        assert_eq!((fault.path.as_str(), fault.message.as_str()), ("", "\"tz\" is a required property"));
        let pattern = json!({"type": "string", "pattern": "^a+$"});
        match SchemaCheck::new(&pattern) {
            #[cfg(feature = "jsonschema")]
            Ok(check) => {
                assert!(!check.is_built_in());
                assert!(check.first_fault(&json!("aaa")).is_none());
                assert_eq!(check.faults(&json!("b"), 10).len(), 1);
            }
            #[cfg(not(feature = "jsonschema"))]
            Err(why) => {
                assert!(why.starts_with("uses `pattern`, which only the feature `jsonschema`"), "{why}")
            }
            #[allow(unreachable_patterns)]
            other => panic!("{other:?}"),
        }
        let wrong = SchemaCheck::new(&json!({"type": 5})).unwrap_err();
        assert!(wrong.starts_with("is not a valid JSON Schema: "), "{wrong}");
    }
}
