//! The compiled tree: nodes of keywords, subschemas as indices into one table.

use std::cmp::Ordering;

use serde_json::{Number, Value};

use super::values::compare_numbers;

/// The dialect a document is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// JSON Schema 2020-12 (with the draft-07 spellings it still reads).
    Modern,
    /// Draft-07, named by the root's `$schema`.
    Draft7,
}

/// One compiled subschema: its keywords in the order `jsonschema` runs them.
#[derive(Debug, Clone, Default)]
pub(super) struct Node {
    pub(super) kws: Vec<Kw>,
}

/// Which side of a limit an instance must stay on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    Min,
    Max,
}

impl Limit {
    pub(super) fn holds(self, value: u64, limit: u64) -> bool {
        match self {
            Limit::Min => value >= limit,
            Limit::Max => value <= limit,
        }
    }
}

/// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bound {
    Min,
    Max,
    ExclusiveMin,
    ExclusiveMax,
}

impl Bound {
    pub(super) fn holds(self, value: &Number, limit: &Number) -> bool {
        let Some(order) = compare_numbers(value, limit) else { return true };
        match self {
            Bound::Min => order != Ordering::Less,
            Bound::Max => order != Ordering::Greater,
            Bound::ExclusiveMin => order == Ordering::Greater,
            Bound::ExclusiveMax => order == Ordering::Less,
        }
    }

    pub(super) fn phrase(self) -> &'static str {
        match self {
            Bound::Min => "is less than the minimum of",
            Bound::Max => "is greater than the maximum of",
            Bound::ExclusiveMin => "is less than or equal to the minimum of",
            Bound::ExclusiveMax => "is greater than or equal to the maximum of",
        }
    }
}

/// What a present member requires (`dependencies`, `dependentRequired`, `dependentSchemas`).
#[derive(Debug, Clone)]
pub(super) enum Dep {
    Required(Vec<String>),
    Schema(usize),
}

/// One compiled keyword. Subschemas are node indices.
#[derive(Debug, Clone)]
pub(super) enum Kw {
    /// The `false` schema.
    False,
    /// `type`, as a set of bits (see [`TYPES`]).
    Type(u8),
    Const(Value),
    Enum(Vec<Value>),
    Bound(Bound, Number),
    MultipleOf(f64),
    Length(Limit, u64),
    ItemCount(Limit, u64),
    PropCount(Limit, u64),
    Required(Vec<String>),
    UniqueItems,
    /// `properties`, sorted by name.
    Properties(Vec<(String, usize)>),
    /// `additionalProperties` beside `properties` (`known`, sorted): a schema, or `None` for
    /// `false`.
    Additional {
        known: Vec<String>,
        rest: Option<usize>,
    },
    /// `additionalProperties: false` without `properties`.
    NoMembers,
    PropertyNames(usize),
    /// `propertyNames: false`.
    NoNames,
    PrefixItems(Vec<usize>),
    /// `items` past `skip` leading items (`prefixItems`), or `additionalItems` past a tuple.
    Items {
        skip: usize,
        node: usize,
    },
    /// `additionalItems: false` past a tuple of this length.
    NoMoreItems(usize),
    Contains {
        node: usize,
        min: Option<u64>,
        max: Option<u64>,
    },
    Dependencies(Vec<(String, Dep)>),
    AllOf(Vec<usize>),
    AnyOf(Vec<usize>),
    OneOf(Vec<usize>),
    /// `not`, with its schema as a message shows it.
    Not(usize, String),
    If {
        cond: usize,
        then: Option<usize>,
        els: Option<usize>,
    },
    Ref(usize),
}

impl Kw {
    /// The subschemas this keyword applies to the very instance it checks.
    pub(super) fn same_instance(&self, out: &mut Vec<usize>) {
        match self {
            Kw::AllOf(ids) | Kw::AnyOf(ids) | Kw::OneOf(ids) => out.extend(ids),
            Kw::Not(id, _) | Kw::Ref(id) => out.push(*id),
            Kw::If { cond, then, els } => {
                out.push(*cond);
                out.extend(then);
                out.extend(els);
            }
            Kw::Dependencies(deps) => out.extend(deps.iter().filter_map(|(_, dep)| match dep {
                Dep::Schema(id) => Some(*id),
                Dep::Required(_) => None,
            })),
            _ => {}
        }
    }

    /// The subschemas this keyword applies to members, items or names of the instance.
    pub(super) fn below(&self, out: &mut Vec<usize>) {
        match self {
            Kw::Properties(props) => out.extend(props.iter().map(|(_, id)| *id)),
            Kw::Additional { rest, .. } => out.extend(rest),
            Kw::PropertyNames(id) | Kw::Items { node: id, .. } | Kw::Contains { node: id, .. } => {
                out.push(*id)
            }
            Kw::PrefixItems(ids) => out.extend(ids),
            _ => {}
        }
    }
}

pub(super) const NULL: u8 = 1;
pub(super) const BOOLEAN: u8 = 2;
pub(super) const INTEGER: u8 = 4;
pub(super) const NUMBER: u8 = 8;
pub(super) const STRING: u8 = 16;
pub(super) const ARRAY: u8 = 32;
pub(super) const OBJECT: u8 = 64;

/// The JSON types `type` names, as bits in the order `jsonschema` lists them.
pub(super) const TYPES: [(&str, u8); 7] = [
    ("null", NULL),
    ("boolean", BOOLEAN),
    ("integer", INTEGER),
    ("number", NUMBER),
    ("string", STRING),
    ("array", ARRAY),
    ("object", OBJECT),
];

/// Keywords 2020-12 has and draft-07 does not: a draft-07 document ignores them.
pub(super) const MODERN_ONLY: &[&str] = &[
    "prefixItems",
    "dependentRequired",
    "dependentSchemas",
    "minContains",
    "maxContains",
    "$defs",
    "deprecated",
    "contentSchema",
    "unevaluatedItems",
    "unevaluatedProperties",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
];
