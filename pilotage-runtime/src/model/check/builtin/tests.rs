//! The built-in check's own cases: keywords, bounds, refusals and messages.

use serde_json::{json, Value};

use super::*;

mod agreement;
mod work;

fn compiled(schema: &Value) -> BuiltIn {
    BuiltIn::new(schema).unwrap_or_else(|e| panic!("{schema}: {e}"))
}

/// `schema` passes `good` and fails `bad` first at `path` with `message`.
fn case(schema: Value, good: Value, bad: Value, path: &str, message: &str) {
    let check = compiled(&schema);
    assert_eq!(check.first_fault(&good), None, "{schema} should pass {good}");
    assert!(check.is_valid(&good), "{schema} should pass {good}");
    let fault = check.first_fault(&bad).unwrap_or_else(|| panic!("{schema} should fail {bad}"));
    assert_eq!((fault.path.as_str(), fault.message.as_str()), (path, message), "{schema} on {bad}");
    assert!(!check.is_valid(&bad), "{schema} should fail {bad}");
}

#[test]
fn type_const_enum_and_numbers() {
    case(json!({"type": "string"}), json!("a"), json!(42), "", r#"42 is not of type "string""#);
    case(json!({"type": "integer"}), json!(1.0), json!(1.5), "", r#"1.5 is not of type "integer""#);
    let types = r#"1.5 is not of types "integer", "string""#;
    case(json!({"type": ["string", "integer"]}), json!("x"), json!(1.5), "", types);
    case(json!({"type": ["null"]}), json!(null), json!(0), "", r#"0 is not of type "null""#);
    case(json!({"enum": [1, "a"]}), json!(1.0), json!(2), "", r#"2 is not one of 1 or "a""#);
    let many = "5 is not one of 1, 2 or 2 other candidates";
    case(json!({"enum": [1, 2, 3, 4]}), json!(4), json!(5), "", many);
    let expected = r#"{"a":[1,2]} was expected"#;
    case(json!({"const": {"a": [1, 2]}}), json!({"a": [1.0, 2]}), json!(3), "", expected);
    case(json!({"multipleOf": 0.1}), json!(0.3), json!(0.35), "", "0.35 is not a multiple of 0.1");
    case(json!({"multipleOf": 2}), json!(4.0), json!(3), "", "3 is not a multiple of 2");
    case(
        json!({"multipleOf": 2}),
        json!(1e20),
        json!(9007199254740993u64),
        "",
        "9007199254740993 is not a multiple of 2",
    );
    case(json!({"minimum": 1}), json!(1), json!(0.5), "", "0.5 is less than the minimum of 1");
    case(json!({"maximum": 3.0}), json!(3), json!(3.5), "", "3.5 is greater than the maximum of 3.0");
    let exclusive = "1.0 is less than or equal to the minimum of 1";
    case(json!({"exclusiveMinimum": 1}), json!(1.5), json!(1.0), "", exclusive);
    let exclusive = "3 is greater than or equal to the maximum of 3";
    case(json!({"exclusiveMaximum": 3}), json!(2), json!(3), "", exclusive);
    let exact = "9007199254740993 is greater than the maximum of 9007199254740992.0";
    let (good, bad) = (json!(9007199254740992u64), json!(9007199254740993u64));
    case(json!({"maximum": 9007199254740992.0}), good, bad, "", exact);
    case(json!({"minimum": -1}), json!(-1), json!(-2), "", "-2 is less than the minimum of -1");
}

#[test]
fn sizes_and_members() {
    let short = r#""é" is shorter than 2 characters"#;
    case(json!({"minLength": 2}), json!("éé"), json!("é"), "", short);
    case(json!({"maxLength": 1}), json!("é"), json!("ab"), "", r#""ab" is longer than 1 character"#);
    case(json!({"minItems": 1}), json!([1]), json!([]), "", "[] has less than 1 item");
    case(json!({"maxItems": 1}), json!([1]), json!([1, 2]), "", "[1,2] has more than 1 item");
    case(json!({"minProperties": 1}), json!({"a": 1}), json!({}), "", "{} has less than 1 property");
    let more = r#"{"a":1,"b":2} has more than 1 property"#;
    case(json!({"maxProperties": 1}), json!({"a": 1}), json!({"a": 1, "b": 2}), "", more);
    case(json!({"required": ["x"]}), json!({"x": 1}), json!({}), "", r#""x" is a required property"#);
    let schema = json!({"dependentRequired": {"a": ["b"]}});
    case(schema, json!({"a": 1, "b": 2}), json!({"a": 1}), "", r#""b" is a required property"#);
    let schema = json!({"dependentSchemas": {"a": {"required": ["b"]}}});
    case(schema, json!({"b": 1}), json!({"a": 1}), "", r#""b" is a required property"#);
    case(json!({"uniqueItems": true}), json!([1, 2]), json!([1, 1.0]), "", "[1,1.0] has non-unique elements");
    let objects = json!([{"a": 1, "b": [1]}, {"b": [1.0], "a": 1}]);
    let message = r#"[{"a":1,"b":[1]},{"b":[1.0],"a":1}] has non-unique elements"#;
    case(json!({"uniqueItems": true}), json!([{"a": 1}, {"a": 2}]), objects, "", message);
    let many: Vec<Value> = (0..40).map(|i| json!({"id": i, "tags": [i, [i]]})).collect();
    let mut repeated = many.clone();
    repeated.push(json!({"tags": [7.0, [7]], "id": 7}));
    let check = compiled(&json!({"uniqueItems": true}));
    assert!(check.is_valid(&Value::Array(many)));
    assert!(!check.is_valid(&Value::Array(repeated)));
    let schema = json!({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}});
    let faults = compiled(&schema).faults(&json!({"a": 1, "c": 2}), 10);
    let messages: Vec<&str> = faults.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(messages, [r#""b" is a required property"#, r#""d" is a required property"#]);
}

#[test]
fn object_applicators() {
    let schema = json!({"properties": {"a": {"type": "string"}}});
    case(schema, json!({"a": "x", "b": 1}), json!({"a": 1}), "/a", r#"1 is not of type "string""#);
    let schema = json!({"properties": {"a": {}}, "additionalProperties": false});
    let message = "Additional properties are not allowed ('y', 'z' were unexpected)";
    case(schema, json!({"a": 1}), json!({"a": 1, "y": 2, "z": 3}), "", message);
    let schema = json!({"additionalProperties": false});
    case(schema, json!({}), json!({"a": 1}), "", "False schema does not allow 1");
    let schema = json!({"properties": {"a": {}}, "additionalProperties": {"type": "string"}});
    case(schema, json!({"a": 1, "b": "x"}), json!({"a": 1, "b": 2}), "/b", r#"2 is not of type "string""#);
    let schema = json!({"propertyNames": {"maxLength": 2}});
    case(schema, json!({"ab": 1}), json!({"ab": 1, "abc": 1}), "", r#""abc" is longer than 2 characters"#);
    let schema = json!({"propertyNames": false});
    case(schema, json!({}), json!({"a": 1}), "", r#"False schema does not allow {"a":1}"#);
    let schema = json!({"properties": {"a/b": {"properties": {"c~d": {"items": {"type": "string"}}}}}});
    let bad = json!({"a/b": {"c~d": ["x", 1]}});
    case(schema, json!({"a/b": {"c~d": ["x"]}}), bad, "/a~1b/c~0d/1", r#"1 is not of type "string""#);
}

#[test]
fn array_applicators() {
    let schema = json!({"items": {"type": "integer"}});
    case(schema, json!([1, 2]), json!([1, "x"]), "/1", r#""x" is not of type "integer""#);
    let schema = json!({"prefixItems": [{"type": "string"}], "items": false});
    case(schema, json!(["a"]), json!(["a", 2]), "/1", "False schema does not allow 2");
    let schema = json!({"items": [{"type": "string"}], "additionalItems": false});
    let message = "Additional items are not allowed (2, 3 were unexpected)";
    case(schema, json!(["a"]), json!(["a", 2, 3]), "", message);
    let schema = json!({"items": [{}], "additionalItems": {"type": "string"}});
    case(schema, json!([1, "a"]), json!([1, 2]), "/1", r#"2 is not of type "string""#);
    let none = r#"None of ["a"] are valid under the given schema"#;
    case(json!({"contains": {"type": "integer"}}), json!(["a", 1]), json!(["a"]), "", none);
    let schema = json!({"contains": {"type": "integer"}, "minContains": 2});
    let none = r#"None of [1,"a"] are valid under the given schema"#;
    case(schema, json!([1, 2]), json!([1, "a"]), "", none);
    let schema = json!({"contains": {"type": "integer"}, "maxContains": 1});
    case(
        schema.clone(),
        json!([1, "a"]),
        json!([1, 2]),
        "",
        "None of [1,2] are valid under the given schema",
    );
    assert!(!compiled(&schema).is_valid(&json!([])));
    let schema = json!({"contains": {"type": "integer"}, "minContains": 0, "maxContains": 1});
    assert!(compiled(&schema).is_valid(&json!([])));
}

#[test]
fn combinators_and_references() {
    let schema = json!({"allOf": [{"type": "integer"}, {"minimum": 2}]});
    case(schema, json!(2), json!(1), "", "1 is less than the minimum of 2");
    let schema = json!({"anyOf": [{"type": "integer"}, {"minimum": 2}]});
    let any = "1.5 is not valid under any of the schemas listed in the 'anyOf' keyword";
    case(schema, json!(2.5), json!(1.5), "", any);
    let schema = json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]});
    let two = "3 is valid under more than one of the schemas listed in the 'oneOf' keyword";
    case(schema.clone(), json!(1), json!(3), "", two);
    let none = "1.5 is not valid under any of the schemas listed in the 'oneOf' keyword";
    assert_eq!(compiled(&schema).first_fault(&json!(1.5)).map(|f| f.message), Some(none.into()));
    let schema = json!({"not": {"type": "string"}});
    case(schema, json!(1), json!("a"), "", r#"{"type":"string"} is not allowed for "a""#);
    let schema = json!({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}});
    case(schema.clone(), json!("ab"), json!("a"), "", r#""a" is shorter than 2 characters"#);
    case(schema, json!(1), json!(1.5), "", r#"1.5 is not of type "integer""#);
    let schema = json!({"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s"}}});
    case(schema, json!({"a": "x"}), json!({"a": 1}), "/a", r#"1 is not of type "string""#);
    let schema = json!({"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}, "minLength": 3});
    case(schema, json!("abc"), json!("ab"), "", r#""ab" is shorter than 3 characters"#);
    let schema = json!({"$ref": "#/$defs/a~1b%20c", "$defs": {"a/b c": {"type": "string"}}});
    case(schema, json!("x"), json!(1), "", r#"1 is not of type "string""#);
    let schema = json!({"$ref": "#/definitions/s", "definitions": {"s": {"type": "string"}}});
    case(schema, json!("x"), json!(1), "", r#"1 is not of type "string""#);
    let schema = json!({"properties": {"a": {"type": "integer"}, "b": {"$ref": "#/properties/a"}}});
    case(schema, json!({"b": 1}), json!({"b": "x"}), "/b", r#""x" is not of type "integer""#);
}

#[test]
fn booleans_drafts_and_annotations() {
    let check = compiled(&json!(false));
    assert_eq!(check.first_fault(&json!(1)).map(|f| f.message), Some("False schema does not allow 1".into()));
    assert!(compiled(&json!(true)).is_valid(&json!({"any": [1]})));
    let draft7 = "http://json-schema.org/draft-07/schema#";
    let schema = json!({"$schema": draft7, "$ref": "#/definitions/a", "type": "integer",
        "definitions": {"a": {"minimum": 3}}});
    case(schema, json!("x"), json!(1), "", "1 is less than the minimum of 3");
    let schema =
        json!({"$schema": draft7, "prefixItems": [{"type": "string"}], "items": {"type": "integer"}});
    case(schema, json!([1]), json!(["a"]), "/0", r#""a" is not of type "integer""#);
    let schema = json!({"type": "string", "format": "date-time", "title": "t", "description": "d",
        "default": 1, "examples": [1], "deprecated": true, "readOnly": false, "x-extra": {"pattern": 1},
        "$comment": "c", "contentMediaType": "application/json", "$id": "https://example.com/s"});
    case(schema, json!("not a date"), json!(1), "", r#"1 is not of type "string""#);
    let schema = json!({"properties": {"pattern": {"type": "string"}}, "enum": [{"pattern": "x"}, "y"]});
    assert!(compiled(&schema).is_valid(&json!({"pattern": "x"})));
}

fn refused(schema: &Value) -> Refusal {
    match BuiltIn::new(schema) {
        Ok(_) => panic!("{schema} should be refused"),
        Err(refusal) => refusal,
    }
}

fn invalid(schema: &Value) {
    assert!(matches!(refused(schema), Refusal::Invalid(_)), "{schema}: {:?}", refused(schema));
}

#[test]
fn ref_cycles_that_never_descend_are_refused() {
    invalid(&json!({"$ref": "#"}));
    invalid(&json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}));
    invalid(&json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
        "anyOf": [{"$ref": "#/$defs/a"}]}));
    invalid(&json!({"properties": {"x": {"if": {"$ref": "#/properties/x"}, "then": {}}}}));
    // A cycle the root never reaches is never evaluated (jsonschema accepts it too).
    assert!(BuiltIn::new(&json!({"$defs": {"a": {"$ref": "#/$defs/a"}}})).is_ok());
    // A recursion through members or items descends into the instance: it ends.
    let tree =
        json!({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"});
    let check = compiled(&tree);
    assert!(check.is_valid(&json!([[[]], []])));
    assert!(!check.is_valid(&json!([[1]])));
}

/// An instance of arrays nested `depth` deep, built and checked on a thread with the stack
/// of a tokio worker (2 MiB).
#[test]
fn evaluation_depth_is_bounded() {
    let handle = std::thread::Builder::new().stack_size(2 << 20).spawn(|| {
        let tree = json!({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"});
        let check = compiled(&tree);
        let mut deep = json!([]);
        for _ in 0..2000 {
            deep = Value::Array(vec![deep]);
        }
        let fault = check.first_fault(&deep).expect("too deep to check");
        assert!(fault.message.contains("depth bound"), "{fault:?}");
        assert!(!check.is_valid(&deep));
        let mut shallow = json!([]);
        for _ in 0..120 {
            shallow = Value::Array(vec![shallow]);
        }
        assert_eq!(check.first_fault(&shallow), None);
        // Dropping a deep value recurses in serde_json: take it apart first.
        while let Value::Array(mut items) = deep {
            deep = items.pop().unwrap_or(Value::Null);
        }
    });
    handle.unwrap().join().unwrap();
}

#[test]
fn exponential_schemas_hit_the_work_bound() {
    let mut defs = serde_json::Map::new();
    for level in 0..30 {
        let next = json!({"$ref": format!("#/$defs/l{}", level + 1)});
        defs.insert(format!("l{level}"), json!({"anyOf": [next.clone(), next]}));
    }
    defs.insert("l30".into(), json!({"type": "string"}));
    let schema = json!({"$defs": defs, "$ref": "#/$defs/l0"});
    let check = compiled(&schema);
    let started = std::time::Instant::now();
    assert!(check.is_valid(&json!("x")));
    let fault = check.first_fault(&json!(1)).expect("1 is no string");
    assert_eq!(fault.path, "");
    assert!(fault.message.contains("work bound"), "{fault:?}");
    assert_eq!(check.faults(&json!(1), 100), vec![fault]);
    assert!(!check.is_valid(&json!(1)));
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    let check = compiled(&json!({"uniqueItems": true}));
    let same: Vec<Value> = (0..3000).map(|_| json!([[[[[1]]]]])).collect();
    assert!(!check.is_valid(&Value::Array(same)));
    let distinct: Vec<Value> = (0..100_000).map(|i| json!(i)).collect();
    assert!(check.is_valid(&Value::Array(distinct)));
}

#[test]
fn deep_and_malformed_schemas_are_invalid() {
    let mut deep = json!({});
    for _ in 0..300 {
        deep = json!({"not": deep});
    }
    invalid(&deep);
    let mut nested = json!({"type": "string"});
    for _ in 0..150 {
        nested = json!({"properties": {"a": nested}});
    }
    invalid(&nested);
    let malformed = [
        json!({"type": 5}),
        json!({"required": "a"}),
        json!({"minimum": "x"}),
        json!(5),
        json!({"type": "strin"}),
        json!({"type": []}),
        json!({"type": ["string", "string"]}),
        json!({"required": ["a", "a"]}),
        json!({"properties": {"a": 5}}),
        json!({"allOf": []}),
        json!({"$ref": 5}),
        json!({"$ref": "#/nope"}),
        json!({"properties": {"a": {"$ref": "#/properties/a/x"}}}),
        json!({"multipleOf": 0}),
        json!({"minLength": -1}),
        json!({"minLength": 1.5}),
        json!({"title": 5}),
        json!({"format": 5}),
        json!({"enum": 5}),
        json!({"$defs": {"a": {"type": 5}}}),
        json!({"dependentRequired": {"a": ["b", "b"]}}),
        json!({"x-foo": {"type": 5}, "$ref": "#/x-foo"}),
        json!({"$schema": 7}),
    ];
    for schema in &malformed {
        invalid(schema);
        assert!(jsonschema::validator_for(schema).is_err(), "jsonschema accepts {schema}");
    }
    // The draft-07 spelling beside the 2020-12 one is ambiguous.
    invalid(&json!({"items": [{}], "prefixItems": [{}]}));
}

#[test]
fn unsupported_keywords_are_listed() {
    let schema = json!({
        "pattern": "^a", "patternProperties": {"^a": {}}, "unevaluatedProperties": false,
        "unevaluatedItems": false, "$dynamicRef": "#meta", "$dynamicAnchor": "meta",
        "$recursiveRef": "#", "$recursiveAnchor": "x", "$anchor": "here",
        "properties": {"a": {"$id": "https://example.com/a"}, "b": {"$ref": "https://example.com/b"},
            "c": {"exclusiveMinimum": true}}
    });
    let expected = [
        "$anchor",
        "$dynamicAnchor",
        "$dynamicRef",
        "$id",
        "$recursiveAnchor",
        "$recursiveRef",
        "$ref",
        "exclusiveMinimum",
        "pattern",
        "patternProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
    ];
    assert_eq!(refused(&schema), Refusal::Unsupported(expected.map(String::from).to_vec()));
    let draft7 = "http://json-schema.org/draft-07/schema#";
    let schema = json!({"$schema": draft7, "format": "date", "contentEncoding": "base64"});
    assert_eq!(refused(&schema), Refusal::Unsupported(vec!["contentEncoding".into(), "format".into()]));
    for other in ["https://json-schema.org/draft/2019-09/schema", "http://example.com/meta"] {
        assert_eq!(refused(&json!({"$schema": other})), Refusal::Unsupported(vec!["$schema".into()]));
    }
    let nested = json!({"properties": {"a": {"$schema": draft7}}});
    assert_eq!(refused(&nested), Refusal::Unsupported(vec!["$schema".into()]));
    let message = refused(&json!({"pattern": "a"})).to_string();
    assert_eq!(message, "uses keywords this check does not evaluate: pattern");
}

/// `value`, which must be shareable across threads.
fn shared<T: Send + Sync + Clone + 'static>(value: T) -> T {
    value
}

#[test]
fn a_check_is_shared_across_threads() {
    let check = shared(compiled(&json!({"type": "string"})));
    let handle = std::thread::spawn(move || check.is_valid(&json!("a")));
    assert!(handle.join().unwrap());
    assert_eq!(shared(Refusal::Invalid("x".into())), Refusal::Invalid("x".into()));
}

#[test]
fn long_instances_are_cut_in_messages() {
    let long: Vec<Value> = (0..1000).map(|i| json!(i)).collect();
    let fault = compiled(&json!({"type": "string"})).first_fault(&Value::Array(long)).unwrap();
    assert!(fault.message.len() < 140, "{}", fault.message);
    assert!(fault.message.ends_with(r#"... is not of type "string""#), "{}", fault.message);
    let wide = "é".repeat(200);
    let fault = compiled(&json!({"maxLength": 3})).first_fault(&json!(wide)).unwrap();
    assert!(fault.message.starts_with("\"éé") && fault.message.contains("..."), "{}", fault.message);
}
