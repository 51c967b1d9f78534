//! Agreement with `jsonschema` on hand-written, generated, model and random schemas.

use std::collections::{BTreeSet, HashMap};

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value};

use super::super::names::escape;
use super::compiled;
use crate::model::schema::{standardize, StandardFormats};

/// Hand-written schemas of every kind, the runtime's own tool input schemas among them.
const SCHEMAS: &str = r##"[
    true, false, {},
    {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
    {"type": "object", "required": ["tz"]},
    {"type": ["integer", "string"]},
    {"type": "integer", "minimum": 0, "maximum": 4294967295},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 3, "multipleOf": 0.5},
    {"multipleOf": 0.1},
    {"enum": [1, "a", null, [1, 2], {"tz": "UTC"}]},
    {"const": {"tz": "UTC"}},
    {"type": "string", "minLength": 2, "maxLength": 5},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3, "uniqueItems": true},
    {"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false},
    {"prefixItems": [{"type": "integer"}], "items": {"type": "string"}, "minItems": 2},
    {"contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
    {"contains": {"type": "integer"}, "maxContains": 1},
    {"contains": {"const": 1}, "minContains": 0},
    {"minProperties": 1, "maxProperties": 2},
    {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "additionalProperties": false},
    {"additionalProperties": false},
    {"properties": {"a": {}}, "additionalProperties": {"type": "string"}},
    {"additionalProperties": {"type": "integer"}},
    {"propertyNames": {"maxLength": 2}},
    {"propertyNames": false},
    {"dependentRequired": {"a": ["b", "c"]}},
    {"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}},
    {"dependencies": {"a": ["b"], "tz": {"required": ["extra"]}}},
    {"allOf": [{"type": "object"}, {"required": ["a"]}, {"properties": {"a": {"type": "string"}}}]},
    {"anyOf": [{"type": "string"}, {"type": "object", "required": ["tz"]}]},
    {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
    {"not": {"type": ["object", "array"]}},
    {"if": {"type": "object", "required": ["kind"]}, "then": {"required": ["side"]}, "else": {"type": "array"}},
    {"if": {"minimum": 2}, "then": {"multipleOf": 2}},
    {"$defs": {"pos": {"type": "integer", "minimum": 0}}, "type": "array", "items": {"$ref": "#/$defs/pos"}},
    {"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}, "minLength": 2},
    {"definitions": {"n": {"type": "number"}},
     "properties": {"a": {"$ref": "#/definitions/n"}, "b": {"$ref": "#/properties/a"}}},
    {"$defs": {"node": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"},
    {"properties": {"a/b": {"type": "string"}, "c~d": {"type": "integer"}}},
    {"type": "object", "properties": {"x": {"properties": {"y": {"items": {"type": "integer"}}}}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"minimum": 3}},
     "$ref": "#/definitions/a", "type": "string"},
    {"$schema": "http://json-schema.org/draft-07/schema#",
     "items": [{"type": "integer"}, {"type": "string"}], "additionalItems": false},
    {"$schema": "http://json-schema.org/draft-07/schema#",
     "items": [{"type": "integer"}], "additionalItems": {"type": "string"}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "prefixItems": [{"type": "string"}],
     "contains": {"type": "integer"}, "minContains": 3, "dependentRequired": {"a": ["zz"]}},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
     "properties": {"when": {"type": "string", "format": "date-time"}}},
    {"uniqueItems": true},
    {"type": "object", "properties": {}},
    {"type": "object", "properties": {"language": {"type": "string"}, "id": {"type": "string"},
        "topic": {"type": "string"}}, "required": ["language"]},
    {"type": "object", "properties": {"language": {"type": "string"},
        "verb": {"type": "string", "enum": ["list", "get", "changed_since"]}, "kind": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1}}, "required": ["language", "verb"]},
    {"type": "object", "properties": {"program": {}, "context": {}, "input": {"type": "object"},
        "store": {"type": "boolean"}, "name": {"type": "string"}}, "required": ["program", "name"]}
]"##;

/// Instances aimed at the schemas above and the generated ones below.
const INSTANCES: &str = r##"[
    null, true, false, 0, 1, -1, 1.0, 1.5, 2, 3, 42, 255, 256, 4294967295, 4294967296, -0.5, 0.3, 1e300,
    "", "a", "tz", "UTC", "Fast", "low", "hello world", "Unit",
    [], [1], [1, "a"], [1, 1], [1.0, 1], ["a", "b", "c"], [[1, 2], [3]], [1, 2, 3, 4], [1, "a", "b", "c", 5],
    {}, {"tz": "UTC"}, {"tz": 5}, {"tz": "UTC", "extra": 1}, {"a": 1, "b": "x"}, {"a/b": 1, "c~d": "x"},
    {"a": 1, "b": 2, "c": 3}, {"abc": {"d": 1}},
    {"kind": "Circle", "radius": 1.5}, {"kind": "Square", "side": 2}, {"kind": "Square", "side": -1},
    {"kind": "Other"}, {"Int": 5}, {"Text": "x"}, {"Pair": [1, 2]}, {"Pair": [1, 300]}, {"Int": 1, "Text": "x"},
    {"t": "X", "c": 5}, {"t": "Y", "c": {"z": true}}, {"t": "Y", "c": {"z": 1}},
    {"name": "root", "children": [{"name": "a", "children": []}, {"name": 5, "children": [{"children": []}]}]},
    {"tz": "UTC", "count": 3, "ratio": null, "tags": ["a", "b"], "mode": "Fast", "pair": [1, "x"],
     "extra": {"k": 1}, "level": "low"},
    {"tz": "UTC", "count": -3, "ratio": "x", "tags": ["a", 2], "mode": "Medium",
     "shape": {"kind": "Square", "side": 1.5}, "pair": [300, 2, 3], "nested": {"tz": 1}, "extra": {"k": "v"}},
    {"a": 70000, "b": true}, {"a": 1, "b": null, "c": 0}, {"a": "x", "b": "y"},
    {"x": {"y": [1, 2, {"z": null}]}}, {"x": {"y": [1, "2"]}}, {"tags": ["a", "a"]}, {"opt": null},
    {"language": "en", "verb": "list", "limit": 0}, {"language": "en", "verb": "find"},
    {"program": "x", "name": "n", "input": [], "store": "yes"}, {"when": "yesterday"}
]"##;

/// `ours` decides as `jsonschema` does on each instance: the same validity, the same set of
/// fault locations, a first fault among them. Returns how many instances were invalid.
fn agree(schema: &Value, instances: &[Value]) -> usize {
    let mut invalid = 0;
    let reference = jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("jsonschema: {schema}: {e}"));
    let ours = compiled(schema);
    for instance in instances {
        let valid = reference.is_valid(instance);
        invalid += usize::from(!valid);
        let first = ours.first_fault(instance);
        assert_eq!(first.is_none(), valid, "{schema} on {instance}: {first:?}");
        assert_eq!(ours.is_valid(instance), valid, "{schema} on {instance}");
        let theirs: BTreeSet<String> =
            reference.iter_errors(instance).map(|e| e.instance_path().to_string()).collect();
        let mine: BTreeSet<String> = ours.faults(instance, usize::MAX).into_iter().map(|f| f.path).collect();
        assert_eq!(mine, theirs, "{schema} on {instance}");
        if let Some(first) = first {
            assert!(theirs.contains(&first.path), "{schema} on {instance}: {first:?}");
        }
    }
    invalid
}

/// Checks every schema against every instance, and against an instance made to conform to
/// it with each of its mutations; both outcomes must be well represented.
fn agree_all(schemas: &[Value]) {
    let (mut invalid, mut total, mut conforming) = (0, 0, 0);
    for schema in schemas {
        let mut instances = instances();
        let example = example(schema, schema, 0);
        instances.extend(mutations(&example));
        conforming += 1 - agree(schema, std::slice::from_ref(&example));
        instances.push(example);
        invalid += agree(schema, &instances);
        total += instances.len();
    }
    let n = schemas.len();
    eprintln!("{n} schemas: {invalid} invalid instances of {total}; {conforming} examples conform");
    assert!(invalid > total / 5 && invalid < total * 19 / 20, "{invalid} of {total}");
    assert!(conforming * 10 >= n * 8, "{conforming} of {n} examples conform");
}

/// An instance meant to conform to `schema` (`root` resolves its `$ref`s): the first
/// branch, value, type or bound each keyword offers.
fn example(root: &Value, schema: &Value, depth: u8) -> Value {
    let Some(map) = schema.as_object().filter(|_| depth < 12) else { return Value::Null };
    let deeper = |s: &Value| example(root, s, depth + 1);
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        return root.pointer(target.trim_start_matches('#')).map(deeper).unwrap_or_default();
    }
    if let Some(value) = map.get("const").or_else(|| map.get("enum").and_then(|e| e.get(0))) {
        return value.clone();
    }
    let branch = ["anyOf", "oneOf", "allOf"].iter().find_map(|k| map.get(*k).and_then(|b| b.get(0)));
    if let Some(branch) = branch {
        return deeper(branch);
    }
    let kind = match map.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().find(|k| *k != "null").and_then(Value::as_str),
        Some(kind) => kind.as_str(),
        None if map.contains_key("properties") => Some("object"),
        None => None,
    };
    match kind {
        Some("object") => {
            let props = map.get("properties").and_then(Value::as_object).into_iter().flatten();
            Value::Object(props.map(|(name, s)| (name.clone(), deeper(s))).collect())
        }
        Some("array") => {
            let prefix = map.get("prefixItems").and_then(Value::as_array).into_iter().flatten();
            let mut items: Vec<Value> = prefix.map(deeper).collect();
            let least = map.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            while let Some(item) = map.get("items").filter(|_| (items.len() as u64) < least) {
                items.push(deeper(item));
            }
            Value::Array(items)
        }
        Some("string") => {
            json!("x".repeat(map.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize))
        }
        Some("integer") => map.get("minimum").cloned().unwrap_or(json!(3)),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        _ => Value::Null,
    }
}

/// `value` with one location changed each: replaced by values of other types, or (for an
/// object member) removed, and `value` with an unknown member.
fn mutations(value: &Value) -> Vec<Value> {
    let mut pointers = Vec::new();
    let mut stack = vec![(String::new(), value)];
    while let Some((at, here)) = stack.pop().filter(|_| pointers.len() < 40) {
        match here {
            Value::Object(m) => stack.extend(m.iter().map(|(k, v)| (format!("{at}/{}", escape(k)), v))),
            Value::Array(a) => stack.extend(a.iter().enumerate().map(|(i, v)| (format!("{at}/{i}"), v))),
            _ => {}
        }
        pointers.push(at);
    }
    let mut out = Vec::new();
    for at in &pointers {
        for other in [json!(null), json!("x"), json!(-7), json!({"zzz": [1.5]}), json!([true])] {
            let mut changed = value.clone();
            if let Some(slot) = changed.pointer_mut(at) {
                *slot = other;
                out.push(changed);
            }
        }
        let (parent, name) = at.rsplit_once('/').unwrap_or_default();
        let mut removed = value.clone();
        if let Some(members) = removed.pointer_mut(parent).and_then(Value::as_object_mut) {
            members.remove(&name.replace("~1", "/").replace("~0", "~"));
            out.push(removed);
        }
    }
    let mut extended = value.clone();
    if let Some(members) = extended.as_object_mut() {
        members.insert("zzz_unknown".into(), json!(1));
    }
    out.push(extended);
    out
}

fn instances() -> Vec<Value> {
    serde_json::from_str(INSTANCES).unwrap()
}

#[test]
fn hand_written_schemas_agree_with_jsonschema() {
    let schemas: Vec<Value> = serde_json::from_str(SCHEMAS).unwrap();
    assert!(schemas.len() >= 40, "{}", schemas.len());
    agree_all(&schemas);
}

#[allow(dead_code)]
#[derive(JsonSchema)]
enum Mode {
    Fast,
    Slow,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(tag = "kind")]
enum Shape {
    Circle { radius: f64 },
    Square { side: u32 },
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Level {
    Low,
    High,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Settings {
    tz: String,
    count: u32,
    ratio: Option<f64>,
    tags: Vec<String>,
    mode: Mode,
    shape: Option<Shape>,
    pair: (u8, String),
    nested: Option<Box<Settings>>,
    extra: HashMap<String, i64>,
    #[serde(default)]
    level: Option<Level>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
enum Payload {
    Int(i64),
    Text(String),
    Pair(u8, u8),
    Unit,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
struct Strict {
    a: u16,
    #[serde(default)]
    b: Option<bool>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(untagged)]
enum Either {
    Number(u32),
    Text(String),
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Tree {
    name: String,
    children: Vec<Tree>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    X(i32),
    Y { z: bool },
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Unique {
    tags: std::collections::BTreeSet<String>,
    opt: Option<Option<u8>>,
}

/// A type's schema as the runtime generates it for a tool's input (deserialized) and
/// output (serialized).
fn generated<T: JsonSchema>() -> [Value; 2] {
    let input = SchemaSettings::draft2020_12().for_deserialize().with_transform(StandardFormats);
    let output = SchemaSettings::draft2020_12().for_serialize().with_transform(StandardFormats);
    [
        input.into_generator().into_root_schema_for::<T>().to_value(),
        output.into_generator().into_root_schema_for::<T>().to_value(),
    ]
}

#[test]
fn generated_schemas_agree_with_jsonschema() {
    let schemas = [
        generated::<Settings>(),
        generated::<Payload>(),
        generated::<Strict>(),
        generated::<Either>(),
        generated::<Tree>(),
        generated::<Adjacent>(),
        generated::<Unique>(),
        generated::<Shape>(),
        generated::<Mode>(),
        generated::<(u32, Option<String>)>(),
    ];
    agree_all(&schemas.concat());
}

/// `T`'s schema as `schema_for!` gives it, raw and standardized.
fn model<T: JsonSchema>() -> [Value; 2] {
    let raw = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    [raw.clone(), standardize(raw)]
}

/// An `outputSchema` the way the server builds one: an `anyOf` of shapes sharing `$defs`.
fn union(shapes: impl FnOnce(&mut schemars::SchemaGenerator) -> Vec<schemars::Schema>) -> Value {
    let mut generator = SchemaSettings::draft2020_12().for_serialize().into_generator();
    let any_of: Vec<Value> = shapes(&mut generator).into_iter().map(schemars::Schema::to_value).collect();
    let defs = generator.take_definitions(true);
    json!({"type": "object", "anyOf": any_of, "$defs": defs})
}

#[test]
fn every_model_schema_compiles_and_agrees() {
    use crate::model::{capabilities, catalog, diagnostic, errors, execution, guide, manifest, outcome};
    use crate::model::{plan, risk, trace};
    let mut schemas = vec![
        model::<capabilities::CapabilitySettings>(),
        model::<capabilities::CapabilityValue>(),
        model::<capabilities::CapabilityDeclaration>(),
        model::<catalog::CatalogEntry>(),
        model::<catalog::CatalogList>(),
        model::<catalog::CatalogGet>(),
        model::<catalog::CatalogChange>(),
        model::<catalog::ChangeKind>(),
        model::<catalog::CatalogChanges>(),
        model::<diagnostic::TextPosition>(),
        model::<diagnostic::TextRange>(),
        model::<diagnostic::Locator>(),
        model::<diagnostic::Severity>(),
        model::<diagnostic::Diagnostic>(),
        model::<errors::ErrorKind>(),
        model::<errors::ErrorBody>(),
        model::<errors::RequestError>(),
        model::<execution::ExecuteResponse>(),
        model::<guide::GuideLevel>(),
        model::<guide::Guide>(),
        model::<guide::GuideIndex>(),
        model::<guide::GuideFetch>(),
        model::<manifest::LoopObject>(),
        model::<manifest::LanguageEntry>(),
        model::<manifest::LongRuns>(),
        model::<manifest::Manifest>(),
        model::<outcome::Outcome>(),
        model::<plan::Arm>(),
        model::<plan::PlanStep>(),
        model::<plan::Plan>(),
        model::<plan::ValidateResponse>(),
        model::<risk::RiskHints>(),
        model::<trace::Decision>(),
        model::<trace::TraceStep>(),
        model::<trace::Trace>(),
        model::<trace::TraceLevelWire>(),
        model::<trace::TraceFetchResponse>(),
    ]
    .concat();
    schemas.extend(model_outputs());
    agree_all(&schemas);
}

/// The `outputSchema`s of the fixed tools, built from the model types as the server does.
fn model_outputs() -> Vec<Value> {
    use crate::model::{catalog, errors, execution, guide, manifest, plan, trace};
    fn of<T: JsonSchema>(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        g.subschema_for::<T>()
    }
    let error = of::<errors::RequestError>;
    let outputs = vec![
        union(|g| vec![of::<manifest::Manifest>(g), error(g)]),
        union(|g| vec![of::<guide::GuideIndex>(g), of::<guide::GuideFetch>(g), error(g)]),
        union(|g| {
            let (list, get) = (of::<catalog::CatalogList>(g), of::<catalog::CatalogGet>(g));
            vec![list, get, of::<catalog::CatalogChanges>(g), error(g)]
        }),
        union(|g| vec![of::<plan::ValidateResponse>(g), error(g)]),
        union(|g| vec![of::<execution::ExecuteResponse>(g), error(g)]),
        union(|g| vec![of::<trace::TraceFetchResponse>(g), error(g)]),
    ];
    outputs.into_iter().flat_map(|raw| [raw.clone(), standardize(raw)]).collect()
}

/// A small deterministic generator (a linear congruential one) for random schemas.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }

    fn pick(&mut self, values: &[Value]) -> Value {
        let i = usize::try_from(self.below(values.len() as u64)).unwrap();
        values[i].clone()
    }

    fn number(&mut self) -> Value {
        let numbers = [0, 1, -1, 2, 3, 10].map(|n| json!(n));
        let floats = [2.5, 0.1, 0.3, 1.0, -0.5, 1e20, 0.7, 1.1, 4.4].map(|f| json!(f));
        let mut all = numbers.to_vec();
        all.extend(floats);
        all.push(json!(9007199254740993u64));
        self.pick(&all)
    }

    fn instance(&mut self, depth: u32) -> Value {
        match self.below(if depth > 2 { 5 } else { 8 }) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 | 3 => self.number(),
            4 => self.pick(&["", "a", "ab", "abc", "é", "b"].map(|s| json!(s))),
            5 | 6 => Value::Array((0..self.below(4)).map(|_| self.instance(depth + 1)).collect()),
            _ => {
                let names = ["a", "b", "c", "ab"].map(|s| json!(s));
                let members = (0..self.below(4)).map(|_| {
                    let name = self.pick(&names).as_str().unwrap_or_default().to_owned();
                    (name, self.instance(depth + 1))
                });
                Value::Object(members.collect())
            }
        }
    }

    fn schema(&mut self, depth: u32) -> Value {
        if depth > 3 || self.below(6) == 0 {
            return json!(self.below(4) != 0);
        }
        let members = (0..1 + self.below(3)).map(|_| self.keyword(depth + 1));
        Value::Object(members.map(|(k, v)| (k.to_owned(), v)).collect())
    }

    fn keyword(&mut self, d: u32) -> (&'static str, Value) {
        let types = ["integer", "number", "string", "object", "array", "boolean"].map(|t| json!(t));
        match self.below(31) {
            0 => ("type", self.pick(&types)),
            1 => ("enum", json!([self.instance(2), self.instance(2), 1])),
            2 => ("const", self.instance(2)),
            3 => ("multipleOf", self.pick(&[json!(2), json!(0.1), json!(0.5), json!(1.5), json!(0.01)])),
            4 => ("minimum", self.number()),
            5 => ("maximum", self.number()),
            6 => ("exclusiveMinimum", self.number()),
            7 => ("exclusiveMaximum", self.number()),
            8 => ("minLength", json!(self.below(3))),
            9 => ("maxLength", json!(self.below(3))),
            10 => ("minItems", json!(self.below(3))),
            11 => ("maxItems", json!(self.below(3))),
            12 => ("uniqueItems", json!(true)),
            13 => ("contains", self.schema(d)),
            14 => ("minContains", json!(self.below(3))),
            15 => ("maxContains", json!(self.below(3))),
            16 => ("required", json!([if self.below(2) == 0 { "a" } else { "b" }])),
            17 => ("properties", json!({"a": self.schema(d), "b": self.schema(d)})),
            18 => ("additionalProperties", self.schema(d)),
            19 => ("propertyNames", self.schema(d)),
            20 => ("items", self.schema(d)),
            21 => ("prefixItems", json!([self.schema(d)])),
            22 => ("allOf", json!([self.schema(d), self.schema(d)])),
            23 => ("anyOf", json!([self.schema(d), self.schema(d)])),
            24 => ("oneOf", json!([self.schema(d), self.schema(d)])),
            25 => ("not", self.schema(d)),
            26 => ("if", self.schema(d)),
            27 => ("then", self.schema(d)),
            28 => ("else", self.schema(d)),
            29 => ("dependentSchemas", json!({"a": self.schema(d)})),
            _ => ("dependencies", json!({"a": ["b"], "b": self.schema(d)})),
        }
    }

    /// A random schema, a third of them draft-07 (with a tuple `items` or a `$ref` hiding
    /// its siblings now and then).
    fn document(&mut self) -> Value {
        let mut schema = self.schema(0);
        let Some(members) = schema.as_object_mut().filter(|_| self.below(3) == 0) else { return schema };
        members.insert("$schema".into(), json!("http://json-schema.org/draft-07/schema#"));
        if self.below(2) == 0 {
            members.insert("items".into(), json!([self.schema(2), self.schema(2)]));
            members.insert("additionalItems".into(), self.schema(2));
        }
        if self.below(3) == 0 {
            members.insert("definitions".into(), json!({"x": self.schema(2)}));
            members.insert("$ref".into(), json!("#/definitions/x"));
        }
        schema
    }
}

/// Random schemas of every keyword this check evaluates, each against random instances.
#[test]
fn random_schemas_agree_with_jsonschema() {
    let mut random = Random(42);
    let mut invalid = 0;
    for _ in 0..2000 {
        let schema = random.document();
        let instances: Vec<Value> = (0..10).map(|_| random.instance(0)).collect();
        invalid += agree(&schema, &instances);
    }
    assert!(invalid > 2000 && invalid < 18000, "{invalid} invalid of 20000");
}
