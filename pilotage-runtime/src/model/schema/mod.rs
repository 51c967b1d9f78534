//! Standard JSON Schema on the wire: the JSON Schema 2020-12 vocabulary, the transform that
//! brings a generated schema into it, and the check that finds anything outside it.
//!
//! schemars describes Rust numbers with `format` values of its own (`uint32`, `int64`, `uint`,
//! `double`, ...). JSON Schema 2020-12 defines none of them, and strict validators such as AJV
//! (behind the official TypeScript MCP SDK) warn about each one on every connection. Every
//! schema the server advertises goes through [`standardize`] once, when the server is built:
//! a non-standard integer format becomes the range it stands for (`minimum`/`maximum`, where
//! the range is exact in a JSON number), and any other non-standard format is dropped.
//!
//! ```
//! use pilotage_runtime::model::schema::{nonstandard, standardize};
//! use serde_json::json;
//!
//! let generated = json!({"type": "object", "properties": {
//!     "count": {"type": "integer", "format": "uint32", "minimum": 0},
//!     "ratio": {"type": "number", "format": "double"},
//! }});
//! assert_eq!(
//!     nonstandard(&generated),
//!     ["#/properties/count: format `uint32`", "#/properties/ratio: format `double`"]
//! );
//! let standard = standardize(generated);
//! assert_eq!(standard["properties"]["count"], json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32}));
//! assert_eq!(standard["properties"]["ratio"], json!({"type": "number"}));
//! assert!(nonstandard(&standard).is_empty());
//! ```

mod portable;

use schemars::transform::{transform_subschemas, Transform};
use schemars::Schema;
use serde_json::{Map, Value};

pub use self::portable::{any_value, unportable, CONSTRAINING};

/// The `format` values JSON Schema 2020-12 defines (§7.3 of its validation vocabulary).
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The keywords of JSON Schema 2020-12's vocabularies: core, applicator, unevaluated,
/// validation, format annotation, content and meta-data.
pub const KEYWORDS: &[&str] = &[
    // core
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    // applicator
    "prefixItems",
    "items",
    "contains",
    "additionalProperties",
    "properties",
    "patternProperties",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    // unevaluated
    "unevaluatedItems",
    "unevaluatedProperties",
    // validation
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
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    // format annotation, content, meta-data
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

/// The exact range of a non-standard integer format, as `(minimum, maximum)`; `None` for a
/// bound a JSON number cannot state exactly (64 and 128 bits) or that the format lacks.
fn integer_range(format: &str) -> Option<(Option<i64>, Option<i64>)> {
    let range = match format {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint" | "uint64" | "uint128" => (Some(0), None),
        "int" | "int64" | "int128" => (None, None),
        _ => return None,
    };
    Some(range)
}

/// The schemars [`Transform`] behind [`standardize`]: a `format` outside
/// [`STANDARD_FORMATS`] is removed, an integer one replaced by its range, and a `type` array
/// (schemars writes `Option<String>` as `{"type": ["string", "null"]}`, which several model
/// providers refuse in a tool schema) becomes the same set of values written with `anyOf`, one
/// branch per type (see [`TYPE_SPECIFIC`]), and a subschema that constrains nothing (`{}`,
/// `true`) or a bare `false` is spelled so that it carries a validation keyword (see
/// [`any_value`] and the `portable` module). It reaches every subschema (`properties`, `$defs`,
/// `anyOf`, `items`, ...), never a property merely named `format` or `type`. Add it to a
/// generator with `SchemaSettings::with_transform(StandardFormats)`.
///
/// ```
/// use pilotage_runtime::model::schema::standardize;
/// use serde_json::json;
///
/// let option = json!({"description": "a name", "type": ["string", "null"], "maxLength": 9});
/// assert_eq!(
///     standardize(option),
///     json!({"description": "a name", "anyOf": [{"type": "string", "maxLength": 9}, {"type": "null"}]})
/// );
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct StandardFormats;

impl Transform for StandardFormats {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut() {
            restrict_format(object);
            split_type_array(object);
        }
        transform_subschemas(self, schema);
        // After the subschemas' own rewrites: a `format` dropped there may leave one empty.
        if let Some(object) = schema.as_object_mut() {
            portable::portable_children(object);
        }
    }
}

/// The keywords that constrain only values of one JSON type (numbers, strings, arrays or
/// objects). A `type` array's branches each take them; the others (annotations, `enum`,
/// `const`, the applicators, `$ref`) stay beside the `anyOf`, where they apply to every value
/// as they did, so the rewritten schema accepts exactly the values the original accepted.
pub const TYPE_SPECIFIC: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "items",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "unevaluatedItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "required",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
];

/// `{"type": [A, B], ...}` as `{"anyOf": [{"type": A, ...}, {"type": B, ...}], ...}`: each
/// branch gets the type-specific keywords (none for `"null"`); an `anyOf` already there is kept
/// by moving both under `allOf`.
fn split_type_array(object: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = object.get("type") else {
        return;
    };
    let types = types.clone();
    object.remove("type");
    let specific: Map<String, Value> =
        TYPE_SPECIFIC.iter().filter_map(|k| object.remove(*k).map(|v| ((*k).to_owned(), v))).collect();
    let branches: Vec<Value> = types
        .into_iter()
        .map(|t| {
            let mut branch = Map::new();
            let nothing_specific = t == "null";
            branch.insert("type".to_owned(), t);
            if !nothing_specific {
                branch.extend(specific.clone());
            }
            Value::Object(branch)
        })
        .collect();
    let split = Value::Array(branches);
    match object.remove("anyOf") {
        None => {
            object.insert("anyOf".to_owned(), split);
        }
        Some(before) => {
            let all = object.entry("allOf").or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(all) = all {
                all.push(serde_json::json!({"anyOf": before}));
                all.push(serde_json::json!({"anyOf": split}));
            }
        }
    }
}

fn restrict_format(object: &mut Map<String, Value>) {
    let Some(format) = object.get("format") else {
        return;
    };
    let format = format.as_str().unwrap_or_default();
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    if let Some((minimum, maximum)) = integer_range(format) {
        for (keyword, bound) in [("minimum", minimum), ("maximum", maximum)] {
            if let Some(bound) = bound {
                object.entry(keyword).or_insert(bound.into());
            }
        }
    }
    object.remove("format");
}

/// `schema` with only standard `format` values, no `type` array and every node constraining
/// (see [`StandardFormats`]; a root that accepts everything becomes [`any_value`]). A value
/// that is not a schema (neither an object nor a boolean) is returned unchanged.
pub fn standardize(schema: Value) -> Value {
    if !(schema.is_object() || schema.is_boolean()) {
        return schema;
    }
    let mut schema = Schema::try_from(schema).unwrap_or_default();
    StandardFormats.transform(&mut schema);
    let mut schema = schema.to_value();
    portable::make_portable(&mut schema, None);
    schema
}

/// Every departure of `schema` from JSON Schema 2020-12, one line each with its location
/// (a JSON Pointer fragment such as `#/properties/count`):
/// a keyword outside [`KEYWORDS`] or a `format` outside [`STANDARD_FORMATS`]. Empty when the
/// schema is standard. It follows the keywords that hold subschemas, so a property named like
/// a keyword is not mistaken for one.
pub fn nonstandard(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, String::new(), &mut found, nonstandard_at);
    found
}

/// Every `type` array in `schema` (`#/properties/name: type ["string","null"]`), which several
/// model providers refuse in a tool schema although JSON Schema allows it; [`standardize`]
/// rewrites each as an `anyOf`. Empty when there is none.
pub fn type_arrays(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, String::new(), &mut found, |keyword, value, at, found| {
        if keyword == "type" && value.is_array() {
            found.push(format!("#{at}: type {value}"));
        }
    });
    found
}

/// What [`nonstandard`] reports of one keyword.
fn nonstandard_at(keyword: &str, value: &Value, at: &str, found: &mut Vec<String>) {
    if !KEYWORDS.contains(&keyword) {
        found.push(format!("#{at}: keyword `{keyword}`"));
    } else if keyword == "format" {
        match value.as_str() {
            Some(f) if STANDARD_FORMATS.contains(&f) => {}
            _ => found.push(format!("#{at}: format {}", shown(value))),
        }
    }
}

/// Keywords whose value is a schema, a map of schemas or an array of schemas.
const ONE: &[&str] = &[
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
const MAP: &[&str] = &["$defs", "properties", "patternProperties", "dependentSchemas"];
const ARRAY: &[&str] = &["prefixItems", "allOf", "anyOf", "oneOf"];

/// Calls `visit(keyword, value, at, found)` on every keyword of `schema` and of its subschemas.
fn walk(
    schema: &Value,
    at: String,
    found: &mut Vec<String>,
    visit: fn(&str, &Value, &str, &mut Vec<String>),
) {
    let Value::Object(object) = schema else {
        return;
    };
    for (keyword, value) in object {
        visit(keyword, value, &at, found);
        let here = format!("{at}/{}", keyword.replace('~', "~0").replace('/', "~1"));
        if ONE.contains(&keyword.as_str()) {
            walk(value, here, found, visit);
        } else if MAP.contains(&keyword.as_str()) {
            for (name, sub) in value.as_object().into_iter().flatten() {
                walk(sub, format!("{here}/{}", name.replace('~', "~0").replace('/', "~1")), found, visit);
            }
        } else if ARRAY.contains(&keyword.as_str()) {
            for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                walk(sub, format!("{here}/{i}"), found, visit);
            }
        }
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("`{s}`"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_integer_format_becomes_its_exact_range() {
        let cases = [
            ("int8", json!({"type": "integer", "minimum": -128, "maximum": 127})),
            ("int16", json!({"type": "integer", "minimum": -32768, "maximum": 32767})),
            ("int32", json!({"type": "integer", "minimum": -2147483648i64, "maximum": 2147483647})),
            ("uint8", json!({"type": "integer", "minimum": 0, "maximum": 255})),
            ("uint16", json!({"type": "integer", "minimum": 0, "maximum": 65535})),
            ("uint32", json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32})),
            ("uint", json!({"type": "integer", "minimum": 0})),
            ("uint64", json!({"type": "integer", "minimum": 0})),
            ("int64", json!({"type": "integer"})),
            ("int", json!({"type": "integer"})),
        ];
        for (format, expected) in cases {
            let got = standardize(json!({"type": "integer", "format": format}));
            assert_eq!(got, expected, "{format}");
        }
    }

    #[test]
    fn a_bound_already_stated_is_kept() {
        let got = standardize(json!({"type": "integer", "format": "uint8", "minimum": 1, "maximum": 9}));
        assert_eq!(got, json!({"type": "integer", "minimum": 1, "maximum": 9}));
    }

    #[test]
    fn standard_formats_stay_and_others_go_at_any_depth() {
        let got = standardize(json!({
            "$defs": {"When": {"type": "string", "format": "date-time"}},
            "anyOf": [{"type": "number", "format": "double"}, {"type": "string", "format": "ip"}],
            "properties": {"format": {"type": "string", "format": "uuid"}},
            "items": {"type": "number", "format": "float"}
        }));
        assert_eq!(
            got,
            json!({
                "$defs": {"When": {"type": "string", "format": "date-time"}},
                "anyOf": [{"type": "number"}, {"type": "string"}],
                "properties": {"format": {"type": "string", "format": "uuid"}},
                "items": {"type": "number"}
            })
        );
        assert!(nonstandard(&got).is_empty(), "{:?}", nonstandard(&got));
    }

    #[test]
    fn values_that_are_not_schemas_are_returned_as_they_are() {
        assert_eq!(standardize(json!([1])), json!([1]));
        assert_eq!(standardize(json!("string")), json!("string"));
        assert_eq!(
            standardize(json!({"format": 3})),
            any_value(),
            "an emptied schema still says what it accepts"
        );
    }

    #[test]
    fn nonstandard_names_each_departure_with_its_pointer() {
        let schema = json!({
            "type": "object",
            "nullable": true,
            "properties": {
                "nullable": {"type": "string"},
                "a/b": {"format": "int64"},
                "n": {"anyOf": [{"x-custom": 1}, {"format": 7}]}
            },
            "$defs": {"D": {"items": {"format": "uint"}}}
        });
        assert_eq!(
            nonstandard(&schema),
            [
                "#: keyword `nullable`",
                "#/properties/a~1b: format `int64`",
                "#/properties/n/anyOf/0: keyword `x-custom`",
                "#/properties/n/anyOf/1: format 7",
                "#/$defs/D/items: format `uint`",
            ]
        );
    }

    #[test]
    fn a_type_array_becomes_an_any_of_that_accepts_the_same_values() {
        let cases = [
            (
                json!({"type": ["integer", "null"], "minimum": 0, "maximum": 255, "default": 3}),
                json!({"default": 3, "anyOf": [{"type": "integer", "minimum": 0, "maximum": 255}, {"type": "null"}]}),
            ),
            (
                json!({"type": ["string", "number"], "enum": ["a", 1], "minLength": 1}),
                json!({"enum": ["a", 1], "anyOf": [{"type": "string", "minLength": 1}, {"type": "number", "minLength": 1}]}),
            ),
            (
                json!({"type": ["object", "null"], "anyOf": [{"required": ["a"]}, {"const": null}], "properties": {"a": {"type": ["string", "null"]}}}),
                json!({"allOf": [
                    {"anyOf": [{"required": ["a"]}, {"const": null}]},
                    {"anyOf": [{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}, {"type": "null"}]}
                ]}),
            ),
            (
                json!({"properties": {"type": {"type": "string"}}}),
                json!({"properties": {"type": {"type": "string"}}}),
            ),
        ];
        for (schema, expected) in cases {
            let got = standardize(schema.clone());
            assert_eq!(got, expected, "{schema}");
            assert_eq!(type_arrays(&got), Vec::<String>::new());
            let (before, after) =
                (jsonschema::validator_for(&schema).unwrap(), jsonschema::validator_for(&got).unwrap());
            let values = [
                json!(null),
                json!("a"),
                json!(""),
                json!(1),
                json!(300),
                json!({}),
                json!({"a": 1}),
                json!({"a": "x"}),
                json!([]),
            ];
            for v in values {
                assert_eq!(before.is_valid(&v), after.is_valid(&v), "{schema} on {v}");
            }
        }
    }

    #[test]
    fn type_arrays_are_found_at_any_depth_and_only_there() {
        let schema = json!({"type": ["object", "null"], "properties": {"type": {"type": "string"},
            "n": {"items": {"type": ["integer", "null"]}}}});
        assert_eq!(
            type_arrays(&schema),
            ["#: type [\"object\",\"null\"]", "#/properties/n/items: type [\"integer\",\"null\"]"]
        );
    }

    #[test]
    fn a_standard_schema_has_no_departure() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"when": {"type": "string", "format": "date-time", "description": "d"}},
            "required": ["when"],
            "additionalProperties": false
        });
        assert_eq!(nonstandard(&schema), Vec::<String>::new());
    }
}
