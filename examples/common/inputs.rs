//! The declared inputs of a JSON program (`"inputs": {"<name>": "<type>", ...}`) of
//! `workflow/v1` and `automation/v1`: the input types, and the parse of the declaration.
//!
//! Each engine's `program.rs` includes it beside `findings.rs` and `references.rs` (it uses
//! both) with `#[path = "../../common/inputs.rs"] mod inputs;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use serde_json::{Map, Value as Json};

use super::findings::Finding;
use super::references::{close_hint, is_name, ptr};

/// The declared type of a program input (a Language accepts some of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputType {
    String,
    Number,
    Integer,
    Boolean,
    Object,
    Array,
}

impl InputType {
    pub fn name(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Integer => "integer",
            InputType::Boolean => "boolean",
            InputType::Object => "object",
            InputType::Array => "array",
        }
    }
    /// Whether `v` has this type.
    pub fn admits(self, v: &Json) -> bool {
        match self {
            InputType::String => v.is_string(),
            InputType::Number => v.is_number(),
            InputType::Integer => v.is_i64() || v.is_u64(),
            InputType::Boolean => v.is_boolean(),
            InputType::Object => v.is_object(),
            InputType::Array => v.is_array(),
        }
    }
}

/// One declared input.
#[derive(Clone, Debug)]
pub struct Input {
    pub name: String,
    /// `None` when the declared type is not one the Language accepts (already reported).
    pub ty: Option<InputType>,
    pub path: String,
}

/// The inputs the object `inputs` (at `/inputs`) declares, each of one of `types`. A name that
/// is not a plain name is reported as `malformed`, a type not in `types` as `invalid_type`.
pub fn parse_inputs<C: Copy>(
    inputs: &Map<String, Json>,
    types: &[InputType],
    (malformed, invalid_type): (C, C),
    findings: &mut Vec<Finding<C>>,
) -> Vec<Input> {
    let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
    let mut declared = Vec::new();
    for (name, ty) in inputs {
        let at = ptr("/inputs", name);
        if !is_name(name) {
            findings.push(
                Finding::error(malformed, at.clone(), format!("'{name}' is not a usable input name"))
                    .hint("input names use letters, digits and '_' and do not start with a digit"),
            );
        }
        let parsed = ty.as_str().and_then(|s| types.iter().copied().find(|t| t.name() == s));
        if parsed.is_none() {
            let shown = ty.as_str().map_or_else(|| ty.to_string(), |s| format!("'{s}'"));
            let hint = ty
                .as_str()
                .and_then(|s| close_hint(s, names.iter().copied()))
                .unwrap_or_else(|| format!("input types are: {}", names.join(", ")));
            findings.push(
                Finding::error(
                    invalid_type,
                    at.clone(),
                    format!("input '{name}' has the unknown type {shown}"),
                )
                .hint(hint),
            );
        }
        declared.push(Input { name: name.clone(), ty: parsed, path: at });
    }
    declared
}
