//! A JSON Schema check without regular expressions: [`BuiltIn`] compiles a schema once into
//! a small tree of keyword nodes (subschemas and `$ref` targets are indices into one table) and
//! checks instances against it on every call, deciding what `jsonschema::validator_for(schema)`
//! decides with its defaults.
//!
//! It reads JSON Schema 2020-12, the default, and draft-07 when the root's `$schema` names it
//! (a `$ref` then hides its sibling keywords, and `format` asserts). Within 2020-12 the draft-07
//! spellings are read too: `definitions`, `dependencies`, and an array-form `items` meaning
//! `prefixItems` (with `additionalItems` then acting as `items`; `jsonschema` refuses that form
//! under 2020-12).
//!
//! A schema is refused ([`Refusal`]) when it is malformed, or when it uses a keyword this check
//! does not evaluate: `pattern` and `patternProperties` (they need regular expressions),
//! `unevaluatedProperties`, `unevaluatedItems`, the dynamic and recursive references and
//! anchors, `$anchor`, an `$id` below the root, a `$ref` that is not a fragment of this
//! document, another dialect, and in draft-07 `format`, `contentMediaType` and
//! `contentEncoding`. A caller falls back on `jsonschema` for those.
//!
//! Hostile schemas and instances (promoted programs' schemas come from agents) are bounded:
//! a schema nested deeper than 256 levels is refused, so is a `$ref` cycle that never descends
//! into the instance (`{"$ref": "#"}`; `jsonschema` accepts it and checks nothing); evaluation
//! stops past 512 nested subschemas or 1,000,000 units of work with a fault saying so. Work
//! counts what a check reads, not only where it goes: each subschema and keyword evaluated,
//! and each value, member name and 64 bytes of text a keyword reads (`const`, `enum` and
//! `uniqueItems` compare and hash whole values; `minLength` measures whole strings), both
//! passes of [`BuiltIn::faults`] on one budget (see the private `budget` module). Nothing
//! here panics or recurses without a bound.
//!
//! Faults carry the instance location as a JSON Pointer and a message in the words of
//! `jsonschema`; [`BuiltIn::faults`] collects them as its `iter_errors` does: `anyOf`,
//! `oneOf`, `not` and `contains` fail with one fault at their location, `allOf`, `$ref`, `if`
//! (through `then`/`else`) and the dependencies pass on the faults of their subschemas.

mod budget;
mod compile;
mod equality;
mod eval;
mod faults;
mod keywords;
mod messages;
mod names;
mod refs;
mod tree;
mod values;

use serde_json::Value;

pub use self::faults::{Fault, Refusal};
use self::tree::Node;

/// A compiled check of instances against one JSON Schema (2020-12; the draft-07 spellings
/// schemars and hand-written schemas use are read too).
#[derive(Debug, Clone)]
pub struct BuiltIn {
    nodes: Vec<Node>,
}

impl BuiltIn {
    /// Compiles `schema`. Err(reason) when it is not a schema (not an object or boolean, a
    /// keyword of the wrong type, a `$ref` that does not resolve inside the document) or when it
    /// uses a keyword this check cannot evaluate (see [`Refusal::Unsupported`]).
    pub fn new(schema: &Value) -> Result<BuiltIn, Refusal> {
        compile::compile(schema).map(|nodes| BuiltIn { nodes })
    }

    /// The first fault of `instance`, or None when it conforms. An instance the check cannot
    /// finish within its bounds gets one fault at the root saying so.
    pub fn first_fault(&self, instance: &Value) -> Option<Fault> {
        self.faults(instance, 1).into_iter().next()
    }

    /// Every fault of `instance`, at most `max` of them, in the order `jsonschema`'s
    /// `iter_errors` finds them. An instance the check cannot finish within its bounds (work or
    /// depth) gets only one fault, at the root, saying so.
    pub fn faults(&self, instance: &Value, max: usize) -> Vec<Fault> {
        eval::faults(&self.nodes, instance, max).0
    }

    /// Whether `instance` conforms (the cheapest question: no fault is described).
    pub fn is_valid(&self, instance: &Value) -> bool {
        eval::is_valid(&self.nodes, instance)
    }
}

#[cfg(test)]
mod tests;
