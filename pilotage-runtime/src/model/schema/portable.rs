//! Portable tool schemas: every schema node says what it accepts.
//!
//! A schema node with no validation keyword (`{}`, `{"description": "..."}`) or a bare `true`
//! accepts any JSON value; a bare `false` in a schema position rejects every one. Both are legal
//! JSON Schema, but clients that map tool schemas onto a narrower dialect (the OpenAPI subset of
//! some model providers) drop or refuse them, and the MCP Inspector reports each
//! (`untyped-schema`, `boolean-schema`). [`StandardFormats`](super::StandardFormats) rewrites
//! them into forms that accept exactly the same values:
//!
//! * an unconstrained node keeps its annotations and gains [`any_value`]'s `anyOf`, one branch
//!   per JSON type;
//! * `true` becomes [`any_value`] (`{}` directly under `not`, where any-value is `{}`'s only
//!   meaning and the Inspector expects that spelling);
//! * `false` becomes `{"not": {}}`.
//!
//! Booleans stay where JSON Schema gives them a meaning of their own (`additionalProperties`,
//! `unevaluatedProperties`, `additionalItems`, `unevaluatedItems`), and a node directly under
//! `not` is left as it is. [`unportable`] finds what the rewrite removes, with the same rules
//! as the Inspector's schema lint, so a test can hold every advertised schema to them.
//!
//! ```
//! use pilotage_runtime::model::schema::{any_value, standardize, unportable};
//! use serde_json::json;
//!
//! let generated = json!({"type": "object", "properties": {
//!     "program": {"description": "any JSON value"},
//!     "extra": true,
//! }});
//! assert_eq!(unportable(&generated).len(), 2);
//! let portable = standardize(generated);
//! assert_eq!(portable["properties"]["extra"], any_value());
//! assert_eq!(portable["properties"]["program"]["description"], "any JSON value");
//! assert_eq!(portable["properties"]["program"]["anyOf"], any_value()["anyOf"]);
//! assert!(unportable(&portable).is_empty());
//! ```

use serde_json::{json, Map, Value};

/// The keywords that constrain an instance (the MCP Inspector's list): a node holding none of
/// them, and not `if` with `then` or `else`, accepts every value.
pub const CONSTRAINING: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "items",
    "prefixItems",
    "contains",
    "additionalItems",
    "unevaluatedItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "dependentSchemas",
    "dependencies",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
];

/// The keywords where a bare boolean has a meaning of its own and stays.
const BOOLEAN_VALUED: &[&str] =
    &["additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"];

/// Keywords whose value is one schema (`items` may also be an array of schemas).
const ONE: &[&str] = &[
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose value is an array of schemas.
const ARRAY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas (`dependencies` also holds name arrays).
const MAP: &[&str] =
    &["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"];

/// The JSON types, each the `type` of one branch of [`any_value`].
const JSON_TYPES: [&str; 6] = ["null", "boolean", "object", "array", "number", "string"];

/// Nodes deeper than this are neither rewritten nor reported (as the Inspector stops there).
const MAX_DEPTH: usize = 64;

/// The schema that accepts every JSON value, spelled so that every node carries a validation
/// keyword: `{"anyOf": [{"type": "null"}, {"type": "boolean"}, {"type": "object"},
/// {"type": "array"}, {"type": "number"}, {"type": "string"}]}` (`number` includes integers).
pub fn any_value() -> Value {
    json!({"anyOf": JSON_TYPES.iter().map(|t| json!({"type": t})).collect::<Vec<_>>()})
}

/// Whether `node` constrains the values it accepts (see [`CONSTRAINING`]).
fn constrains(node: &Map<String, Value>) -> bool {
    node.keys().any(|k| CONSTRAINING.contains(&k.as_str()))
        || (node.contains_key("if") && (node.contains_key("then") || node.contains_key("else")))
}

/// `node`, found under `keyword` (`None` at the root), rewritten when it is unportable; its
/// subschemas are left to the caller.
pub(super) fn make_portable(node: &mut Value, keyword: Option<&str>) {
    match node {
        Value::Bool(_) if keyword.is_some_and(|k| BOOLEAN_VALUED.contains(&k)) => {}
        Value::Bool(true) if keyword == Some("not") => *node = json!({}),
        Value::Bool(true) => *node = any_value(),
        Value::Bool(false) => *node = json!({"not": {}}),
        Value::Object(object) if keyword != Some("not") && !constrains(object) => {
            if let Value::Object(any) = any_value() {
                object.extend(any);
            }
        }
        _ => {}
    }
}

/// Rewrites the direct subschemas of `object` with [`make_portable`].
pub(super) fn portable_children(object: &mut Map<String, Value>) {
    for (keyword, value) in object.iter_mut() {
        let keyword = keyword.as_str();
        if keyword == "items" && value.is_array() || ARRAY.contains(&keyword) {
            for sub in value.as_array_mut().into_iter().flatten() {
                make_portable(sub, Some(keyword));
            }
        } else if ONE.contains(&keyword) {
            make_portable(value, Some(keyword));
        } else if MAP.contains(&keyword) {
            for sub in value.as_object_mut().into_iter().flat_map(|m| m.values_mut()) {
                if keyword != "dependencies" || sub.is_object() || sub.is_boolean() {
                    make_portable(sub, Some(keyword));
                }
            }
        }
    }
}

/// Every portability finding in `schema`, one line each with its location (a JSON Pointer
/// fragment), by the MCP Inspector's schema-lint rules: a bare boolean where a schema object is
/// expected (`boolean-schema`), a `type` array (`type-union`), a `$ref` outside the document
/// when no `$id` is embedded (`remote-ref`), and a node with no validation keyword outside a
/// `not` (`untyped-schema`). Empty when the schema is portable.
pub fn unportable(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let embedded_ids = has_id(schema, 0);
    lint(schema, String::new(), None, 0, embedded_ids, &mut found);
    found
}

fn has_id(node: &Value, depth: usize) -> bool {
    let Value::Object(object) = node else { return false };
    if depth > MAX_DEPTH {
        return false;
    }
    if object.get("$id").and_then(Value::as_str).is_some_and(|id| !id.is_empty()) {
        return true;
    }
    let mut found = false;
    children(object, "", &mut |child, _, _| found = found || has_id(child, depth + 1));
    found
}

fn lint(node: &Value, at: String, keyword: Option<&str>, depth: usize, ids: bool, found: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    let object = match node {
        Value::Bool(b) => {
            if !keyword.is_some_and(|k| BOOLEAN_VALUED.contains(&k)) {
                found.push(format!("#{at}: boolean-schema: bare `{b}` where a schema object is expected"));
            }
            return;
        }
        Value::Object(object) => object,
        _ => return,
    };
    if let Some(Value::Array(types)) = object.get("type") {
        let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
        let distinct = names.iter().collect::<std::collections::BTreeSet<_>>().len() == names.len();
        if !types.is_empty()
            && names.len() == types.len()
            && names.iter().all(|t| JSON_TYPES.contains(t) || *t == "integer")
            && distinct
        {
            found.push(format!("#{at}: type-union: `type` is an array {}", Value::Array(types.clone())));
        }
    }
    if let Some(Value::String(r)) = object.get("$ref") {
        if !r.is_empty() && !r.starts_with('#') && !ids {
            found.push(format!("#{at}: remote-ref: `$ref` {r} points outside the document"));
        }
    }
    if keyword != Some("not") && !constrains(object) {
        found.push(format!("#{at}: untyped-schema: no validation keyword"));
    }
    children(object, &at, &mut |child, here, k| lint(child, here, Some(k), depth + 1, ids, found));
}

/// Calls `visit(child, its location, the keyword it is under)` on each direct subschema.
fn children(object: &Map<String, Value>, at: &str, visit: &mut dyn FnMut(&Value, String, &str)) {
    let escape = |s: &str| s.replace('~', "~0").replace('/', "~1");
    for (keyword, value) in object {
        let k = keyword.as_str();
        let here = format!("{at}/{}", escape(k));
        if k == "items" && value.is_array() || ARRAY.contains(&k) {
            for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                visit(sub, format!("{here}/{i}"), k);
            }
        } else if ONE.contains(&k) {
            visit(value, here, k);
        } else if MAP.contains(&k) {
            for (name, sub) in value.as_object().into_iter().flatten() {
                visit(sub, format!("{here}/{}", escape(name)), k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_is_reported_with_its_pointer() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {},
                "b": {"type": ["string", "null"]},
                "c": true,
                "d": false,
                "e/f": {"$ref": "https://example.com/s.json"},
                "g": {"not": {}},
                "h": {"if": {"const": 1}, "then": {"minimum": 2}},
                "i": {"if": {"const": 1}}
            },
            "additionalProperties": true,
            "dependencies": {"a": ["b"]}
        });
        assert_eq!(
            unportable(&schema),
            [
                "#/properties/a: untyped-schema: no validation keyword",
                "#/properties/b: type-union: `type` is an array [\"string\",\"null\"]",
                "#/properties/c: boolean-schema: bare `true` where a schema object is expected",
                "#/properties/d: boolean-schema: bare `false` where a schema object is expected",
                "#/properties/e~1f: remote-ref: `$ref` https://example.com/s.json points outside the document",
                "#/properties/i: untyped-schema: no validation keyword",
            ]
        );
    }

    #[test]
    fn an_embedded_id_makes_a_relative_ref_local() {
        let schema = json!({"$id": "https://example.com/root", "$ref": "other.json"});
        assert_eq!(unportable(&schema), Vec::<String>::new());
    }

    #[test]
    fn the_rewrite_accepts_exactly_what_the_original_accepted() {
        let cases = [
            json!({"type": "object", "properties": {"a": {}, "b": true, "c": false, "d": {"description": "x"}}}),
            json!({"prefixItems": [true, {}], "not": true}),
            json!({"not": {"not": true}}),
            json!({"type": "array", "items": {"default": 1}, "additionalItems": false}),
            json!({"type": "object", "additionalProperties": true, "$defs": {"Any": true}}),
            json!({"type": "object", "dependencies": {"a": ["b"], "c": {}}}),
            json!({"anyOf": [{}, {"if": {"const": 1}}]}),
            json!({"type": "object", "properties": {"x": {"format": "double"}}}),
        ];
        let values = [
            json!(null),
            json!(true),
            json!(1),
            json!(1.5),
            json!("s"),
            json!([]),
            json!([1, "x"]),
            json!({}),
            json!({"a": 1}),
            json!({"a": 1, "b": 2, "c": 3}),
            json!({"a": {}, "d": [1]}),
        ];
        for schema in cases {
            let portable = super::super::standardize(schema.clone());
            assert_eq!(unportable(&portable), Vec::<String>::new(), "{schema} became {portable}");
            let (before, after) =
                (jsonschema::validator_for(&schema).unwrap(), jsonschema::validator_for(&portable).unwrap());
            for v in &values {
                assert_eq!(before.is_valid(v), after.is_valid(v), "{schema} ({portable}) on {v}");
            }
        }
    }

    #[test]
    fn portable_schemas_are_left_as_they_are() {
        let schema = json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}, "not_any": {"not": {}}},
            "additionalProperties": false
        });
        assert_eq!(super::super::standardize(schema.clone()), schema);
        assert_eq!(any_value(), super::super::standardize(json!(true)));
        assert_eq!(any_value(), super::super::standardize(json!({})));
    }
}
