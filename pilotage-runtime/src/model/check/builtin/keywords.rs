//! The validation vocabulary: each assertion keyword read into its compiled form.

use std::collections::HashSet;

use serde_json::Value;

use super::names::{child, must};
use super::tree::{Bound, Dep, Kw, Limit, TYPES};

/// What one keyword compiles to.
pub(super) enum Step {
    /// A keyword to evaluate, with its priority (lower runs first, as in `jsonschema`).
    Keep(u8, Kw),
    /// Checked (or ignored), nothing to evaluate.
    Done,
    /// Well formed but not evaluated by this check.
    Unsupported,
    /// Not this group's keyword.
    Pass,
}

/// The validation vocabulary.
pub(super) fn assertion(key: &str, at: &str, value: &Value) -> Result<Step, String> {
    let (priority, kw) = match key {
        "type" => (1, Kw::Type(types(at, value)?)),
        "const" => (5, Kw::Const(value.clone())),
        "enum" => (6, Kw::Enum(value.as_array().ok_or_else(|| must(at, "an array"))?.clone())),
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
            return bound(key, at, value);
        }
        "multipleOf" => (14, Kw::MultipleOf(positive(at, value)?)),
        "minLength" => (20, Kw::Length(Limit::Min, count(at, value)?)),
        "maxLength" => (21, Kw::Length(Limit::Max, count(at, value)?)),
        "minItems" => (22, Kw::ItemCount(Limit::Min, count(at, value)?)),
        "maxItems" => (23, Kw::ItemCount(Limit::Max, count(at, value)?)),
        "minProperties" => (24, Kw::PropCount(Limit::Min, count(at, value)?)),
        "maxProperties" => (25, Kw::PropCount(Limit::Max, count(at, value)?)),
        "required" => (26, Kw::Required(names(at, value)?)),
        "dependentRequired" => (27, Kw::Dependencies(dependent_required(at, value)?)),
        "uniqueItems" => match value {
            Value::Bool(true) => (35, Kw::UniqueItems),
            Value::Bool(false) => return Ok(Step::Done),
            _ => return Err(must(at, "a boolean")),
        },
        _ => return Ok(Step::Pass),
    };
    Ok(Step::Keep(priority, kw))
}

/// `minimum`, `maximum`, `exclusiveMinimum` or `exclusiveMaximum`; the draft-04 boolean forms
/// are not evaluated.
fn bound(key: &str, at: &str, value: &Value) -> Result<Step, String> {
    let (priority, bound) = match key {
        "minimum" => (10, Bound::Min),
        "maximum" => (11, Bound::Max),
        "exclusiveMinimum" => (12, Bound::ExclusiveMin),
        _ => (13, Bound::ExclusiveMax),
    };
    match value {
        Value::Number(limit) => Ok(Step::Keep(priority, Kw::Bound(bound, limit.clone()))),
        Value::Bool(_) if priority >= 12 => Ok(Step::Unsupported),
        _ => Err(must(at, "a number")),
    }
}

/// `type`: a type name or a non-empty array of distinct ones.
fn types(at: &str, value: &Value) -> Result<u8, String> {
    let bad = || must(at, "a type name or a non-empty array of distinct type names");
    let names: Vec<&Value> = match value {
        Value::String(_) => vec![value],
        Value::Array(items) if !items.is_empty() => items.iter().collect(),
        _ => return Err(bad()),
    };
    let mut bits = 0u8;
    for name in names {
        let bit = name.as_str().and_then(|name| TYPES.iter().find(|(t, _)| *t == name));
        let bit = bit.map(|(_, bit)| *bit).ok_or_else(bad)?;
        if bits & bit != 0 {
            return Err(bad());
        }
        bits |= bit;
    }
    Ok(bits)
}

/// A non-negative integer (`2.0` is one); past `u64`, `u64::MAX`.
pub(super) fn count(at: &str, value: &Value) -> Result<u64, String> {
    if let Some(n) = value.as_u64() {
        return Ok(n);
    }
    match value.as_f64() {
        Some(f) if value.is_f64() && f >= 0.0 && f.fract() == 0.0 => {
            Ok(if f >= 18_446_744_073_709_551_616.0 { u64::MAX } else { f as u64 })
        }
        _ => Err(must(at, "a non-negative integer")),
    }
}

/// `multipleOf`: a number greater than zero.
fn positive(at: &str, value: &Value) -> Result<f64, String> {
    match value.as_f64() {
        Some(f) if f > 0.0 && f.is_finite() => Ok(f),
        _ => Err(must(at, "a number greater than 0")),
    }
}

/// An array of distinct strings (`required`, a `dependentRequired` member).
pub(super) fn names(at: &str, value: &Value) -> Result<Vec<String>, String> {
    let bad = || must(at, "an array of distinct strings");
    let items = value.as_array().ok_or_else(bad)?;
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let name = item.as_str().ok_or_else(bad)?;
        if !seen.insert(name) {
            return Err(bad());
        }
        out.push(name.to_owned());
    }
    Ok(out)
}

fn dependent_required(at: &str, value: &Value) -> Result<Vec<(String, Dep)>, String> {
    let members = value.as_object().ok_or_else(|| must(at, "an object"))?;
    members
        .iter()
        .map(|(name, list)| Ok((name.clone(), Dep::Required(names(&child(at, name), list)?))))
        .collect()
}
