//! Plain tools as an engine serves them: how a call can fail ([`PlainToolError`]), and the
//! conversions the code generated for typed plain tools goes through: arguments from JSON into
//! the method's parameter type, the method's `Result` into JSON, and schemas from types.
//!
//! A typed plain tool, `fn f(&self, caller: &Caller, args: MyArgs) -> Result<MyOut, MyError>`,
//! advertises `MyArgs`'s JSON Schema as its `inputSchema` (the way rmcp's `Parameters<T>` does)
//! and `MyOut`'s as its `outputSchema`; both carry only standard JSON Schema (see
//! [`crate::model::schema::StandardFormats`]).

use std::fmt::Display;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::model::schema::StandardFormats;

/// Why a plain tool call produced no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlainToolError {
    /// The arguments fit the advertised `inputSchema` but not the tool's parameter type; the
    /// caller gets JSON-RPC `-32602`, as for arguments the schema refuses.
    InvalidArguments(String),
    /// The tool ran and failed: the result is `{"error": message}` with `isError`.
    Failed(String),
}

impl From<String> for PlainToolError {
    fn from(message: String) -> Self {
        PlainToolError::Failed(message)
    }
}

impl From<&str> for PlainToolError {
    fn from(message: &str) -> Self {
        PlainToolError::Failed(message.to_owned())
    }
}

/// The arguments of a typed plain tool, read into its parameter type `T`.
pub fn arguments<T: DeserializeOwned>(arguments: &Value) -> Result<T, PlainToolError> {
    T::deserialize(arguments).map_err(|e| PlainToolError::InvalidArguments(e.to_string()))
}

/// The answer of a plain tool: its value as JSON, or its error's message.
pub fn answer<T: Serialize, E: Display>(result: Result<T, E>) -> Result<Value, PlainToolError> {
    match result {
        Ok(value) => serde_json::to_value(value)
            .map_err(|e| PlainToolError::Failed(format!("the tool's answer is not JSON: {e}"))),
        Err(e) => Err(PlainToolError::Failed(e.to_string())),
    }
}

/// The `inputSchema` of a typed plain tool, or a Language's context schema, from the type the
/// values are read into.
pub fn input_schema<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().for_deserialize().with_transform(StandardFormats);
    settings.into_generator().into_root_schema_for::<T>().to_value()
}

/// The `outputSchema` of a plain tool answering `T`: `T`'s schema (the runtime wraps an answer
/// that is not an object as `{"result": value}`, and its schema the same way) or the failure
/// shape `{"error": message}`.
pub fn output_schema<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().for_serialize().with_transform(StandardFormats);
    let mut root = settings.into_generator().into_root_schema_for::<T>().to_value();
    let defs = root.as_object_mut().and_then(|o| o.remove("$defs"));
    if let Some(o) = root.as_object_mut() {
        o.remove("$schema");
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        root = json!({"type": "object", "properties": {"result": root}, "required": ["result"]});
    }
    let failed =
        json!({"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]});
    let mut schema = json!({"type": "object", "anyOf": [root, failed]});
    if let (Some(defs), Some(o)) = (defs, schema.as_object_mut()) {
        o.insert("$defs".into(), defs);
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, serde::Serialize, JsonSchema, Debug, PartialEq)]
    struct Args {
        count: u8,
        label: String,
    }

    #[test]
    fn typed_arguments_and_their_refusal() {
        let ok: Args = arguments(&json!({"count": 3, "label": "x"})).unwrap();
        assert_eq!(ok, Args { count: 3, label: "x".into() });
        let Err(PlainToolError::InvalidArguments(why)) =
            arguments::<Args>(&json!({"count": 300, "label": "x"}))
        else {
            panic!("300 is no u8")
        };
        assert!(why.contains("300"), "{why}");
    }

    #[test]
    fn answers() {
        assert_eq!(answer::<_, String>(Ok(json!(1))), Ok(json!(1)));
        assert_eq!(answer::<Value, _>(Err("no")), Err(PlainToolError::Failed("no".into())));
    }

    #[test]
    fn schemas_carry_standard_bounds_only() {
        let input = input_schema::<Args>();
        assert_eq!(input["type"], "object");
        assert_eq!(input["properties"]["count"], json!({"type": "integer", "minimum": 0, "maximum": 255}));
        assert!(!input.to_string().contains("uint8"));
        let kept = crate::model::schema::standardize(json!({"type": "string", "format": "date-time"}));
        assert_eq!(kept, json!({"type": "string", "format": "date-time"}));
        let own =
            crate::model::schema::standardize(json!({"type": "integer", "format": "uint32", "minimum": 1}));
        assert_eq!(own, json!({"type": "integer", "minimum": 1, "maximum": u32::MAX}));
    }

    #[test]
    fn output_schema_wraps_non_objects_and_admits_failures() {
        let object = output_schema::<Args>();
        assert_eq!(object["anyOf"][0]["properties"]["count"]["maximum"], 255);
        assert_eq!(object["anyOf"][1]["required"], json!(["error"]));
        let wrapped = &output_schema::<Vec<String>>()["anyOf"][0];
        assert_eq!(wrapped["required"], json!(["result"]));
        assert_eq!(wrapped["properties"]["result"]["type"], "array");
        assert!(wrapped["properties"]["result"].get("$schema").is_none());
        let validator = jsonschema::validator_for(&output_schema::<Vec<String>>()).unwrap();
        assert!(validator.is_valid(&json!({"result": ["a"]})));
        assert!(validator.is_valid(&json!({"error": "no"})));
        assert!(!validator.is_valid(&json!({"result": [1]})));
        assert!(!validator.is_valid(&json!(["a"])));
    }
}
