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
//! stops past 512 nested subschemas or 1,000,000 units of work (one per subschema evaluation
//! and per comparison of `uniqueItems`) with a fault saying so. Nothing here panics or
//! recurses without a bound.
//!
//! Faults carry the instance location as a JSON Pointer and a message in the words of
//! `jsonschema`; [`BuiltIn::faults`] collects them as its `iter_errors` does: `anyOf`,
//! `oneOf`, `not` and `contains` fail with one fault at their location, `allOf`, `$ref`, `if`
//! (through `then`/`else`) and the dependencies pass on the faults of their subschemas.

use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Number, Value};

/// The deepest schema document accepted, in nested objects and arrays.
const MAX_SCHEMA_DEPTH: usize = 256;
/// The deepest chain of subschema evaluations, across instance levels and references.
const MAX_EVAL_DEPTH: u32 = 512;
/// The most work one check may do: subschema evaluations and `uniqueItems` comparisons.
const MAX_WORK: u64 = 1_000_000;
/// How much of a value's JSON a message shows.
const SHOWN: usize = 100;
/// How many names or items a message lists.
const LISTED: usize = 10;

/// A compiled check of instances against one JSON Schema (2020-12; the draft-07 spellings
/// schemars and hand-written schemas use are read too).
#[derive(Debug, Clone)]
pub struct BuiltIn {
    nodes: Vec<Node>,
}

/// One way an instance fails: where (a JSON Pointer into the instance, "" for the root) and why
/// (a sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The instance location, a JSON Pointer (`/a/0/b`, with `~0` and `~1` escapes).
    pub path: String,
    /// What is wrong there, in the words `jsonschema` uses.
    pub message: String,
}

/// Why a schema was not compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The schema is malformed.
    Invalid(String),
    /// The schema is well formed but uses keywords this check does not evaluate (their names),
    /// e.g. `pattern`.
    Unsupported(Vec<String>),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Invalid(reason) => write!(f, "not a valid JSON Schema: {reason}"),
            Refusal::Unsupported(keywords) => {
                write!(f, "uses keywords this check does not evaluate: {}", keywords.join(", "))
            }
        }
    }
}

impl std::error::Error for Refusal {}

impl BuiltIn {
    /// Compiles `schema`. Err(reason) when it is not a schema (not an object or boolean, a
    /// keyword of the wrong type, a `$ref` that does not resolve inside the document) or when it
    /// uses a keyword this check cannot evaluate (see [`Refusal::Unsupported`]).
    pub fn new(schema: &Value) -> Result<BuiltIn, Refusal> {
        if deeper_than(schema, MAX_SCHEMA_DEPTH) {
            let reason = format!("the schema is nested deeper than {MAX_SCHEMA_DEPTH} levels");
            return Err(Refusal::Invalid(reason));
        }
        let dialect = dialect_of(schema)?;
        let mut compiler = Compiler::new(schema, dialect);
        compiler.run().map_err(Refusal::Invalid)?;
        compiler.finish()
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
        // Conforming instances are the common case: the cheaper question first, describing
        // faults (and tracking where they are) only when there are some.
        if max == 0 || self.is_valid(instance) {
            return Vec::new();
        }
        let mut run = Run { budget: Budget::default(), path: Vec::new(), faults: Vec::new(), max };
        self.collect(&mut run, 0, instance);
        match run.budget.stop {
            Some(stop) => vec![stop.fault()],
            None => run.faults,
        }
    }

    /// Whether `instance` conforms (the cheapest question: no fault is described).
    pub fn is_valid(&self, instance: &Value) -> bool {
        let mut budget = Budget::default();
        self.valid(&mut budget, 0, instance) && budget.stop.is_none()
    }
}

// ---------------------------------------------------------------------------------------------
// The compiled tree
// ---------------------------------------------------------------------------------------------

/// The dialect a document is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// JSON Schema 2020-12 (with the draft-07 spellings it still reads).
    Modern,
    /// Draft-07, named by the root's `$schema`.
    Draft7,
}

/// One compiled subschema: its keywords in the order `jsonschema` runs them.
#[derive(Debug, Clone, Default)]
struct Node {
    kws: Vec<Kw>,
}

/// Which side of a limit an instance must stay on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Min,
    Max,
}

impl Limit {
    fn holds(self, value: u64, limit: u64) -> bool {
        match self {
            Limit::Min => value >= limit,
            Limit::Max => value <= limit,
        }
    }
}

/// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Min,
    Max,
    ExclusiveMin,
    ExclusiveMax,
}

impl Bound {
    fn holds(self, value: &Number, limit: &Number) -> bool {
        let Some(order) = compare_numbers(value, limit) else { return true };
        match self {
            Bound::Min => order != Ordering::Less,
            Bound::Max => order != Ordering::Greater,
            Bound::ExclusiveMin => order == Ordering::Greater,
            Bound::ExclusiveMax => order == Ordering::Less,
        }
    }

    fn phrase(self) -> &'static str {
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
enum Dep {
    Required(Vec<String>),
    Schema(usize),
}

/// One compiled keyword. Subschemas are node indices.
#[derive(Debug, Clone)]
enum Kw {
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
    fn same_instance(&self, out: &mut Vec<usize>) {
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
    fn below(&self, out: &mut Vec<usize>) {
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

const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;

/// The JSON types `type` names, as bits in the order `jsonschema` lists them.
const TYPES: [(&str, u8); 7] = [
    ("null", NULL),
    ("boolean", BOOLEAN),
    ("integer", INTEGER),
    ("number", NUMBER),
    ("string", STRING),
    ("array", ARRAY),
    ("object", OBJECT),
];

/// Keywords 2020-12 has and draft-07 does not: a draft-07 document ignores them.
const MODERN_ONLY: &[&str] = &[
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

// ---------------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------------

/// What one keyword compiles to.
enum Step {
    /// A keyword to evaluate, with its priority (lower runs first, as in `jsonschema`).
    Keep(u8, Kw),
    /// Checked (or ignored), nothing to evaluate.
    Done,
    /// Well formed but not evaluated by this check.
    Unsupported,
    /// Not this group's keyword.
    Pass,
}

/// Compiles a document into nodes, one per schema location, without recursion: each location
/// is compiled once from a work queue, its subschemas and `$ref` targets queued by pointer.
struct Compiler<'s> {
    doc: &'s Value,
    dialect: Dialect,
    nodes: Vec<Node>,
    pointers: Vec<String>,
    index: HashMap<String, usize>,
    queue: Vec<(usize, &'s Value)>,
    unsupported: BTreeSet<String>,
    /// `$ref`s that do not resolve: the node holding each, and why.
    unresolved: Vec<(usize, String)>,
    current: usize,
}

/// The dialect the root's `$schema` names (2020-12 without one).
fn dialect_of(schema: &Value) -> Result<Dialect, Refusal> {
    let Some(declared) = schema.get("$schema") else { return Ok(Dialect::Modern) };
    let Some(uri) = declared.as_str() else {
        return Err(Refusal::Invalid("#/$schema must be a string".into()));
    };
    dialect_named(uri).ok_or_else(|| Refusal::Unsupported(vec!["$schema".into()]))
}

fn dialect_named(uri: &str) -> Option<Dialect> {
    match uri.trim_end_matches('#') {
        "https://json-schema.org/draft/2020-12/schema"
        | "http://json-schema.org/draft/2020-12/schema"
        | "https://json-schema.org/schema"
        | "http://json-schema.org/schema" => Some(Dialect::Modern),
        "https://json-schema.org/draft-07/schema" | "http://json-schema.org/draft-07/schema" => {
            Some(Dialect::Draft7)
        }
        _ => None,
    }
}

/// Whether `value` nests objects and arrays deeper than `max` levels (without recursion).
fn deeper_than(value: &Value, max: usize) -> bool {
    let mut stack = vec![(value, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        let is_container = value.is_array() || value.is_object();
        if is_container && depth > max {
            return true;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|item| (item, depth + 1))),
            Value::Object(members) => stack.extend(members.values().map(|member| (member, depth + 1))),
            _ => {}
        }
    }
    false
}

/// `pointer` extended by one reference token.
fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape(token))
}

/// A reference token escaped for a JSON Pointer.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn must(at: &str, what: &str) -> String {
    format!("#{at} must be {what}")
}

impl<'s> Compiler<'s> {
    fn new(doc: &'s Value, dialect: Dialect) -> Self {
        Compiler {
            doc,
            dialect,
            nodes: Vec::new(),
            pointers: Vec::new(),
            index: HashMap::new(),
            queue: Vec::new(),
            unsupported: BTreeSet::new(),
            unresolved: Vec::new(),
            current: 0,
        }
    }

    /// Compiles every schema location reachable in the document; Err on the first malformation.
    fn run(&mut self) -> Result<(), String> {
        self.sub(String::new(), self.doc)?;
        while let Some((id, value)) = self.queue.pop() {
            self.current = id;
            let pointer = self.pointers.get(id).cloned().unwrap_or_default();
            let node = self.node(&pointer, value)?;
            if let Some(slot) = self.nodes.get_mut(id) {
                *slot = node;
            }
        }
        Ok(())
    }

    /// The check, or why there is none: unsupported keywords first, then a `$ref` the root
    /// reaches that does not resolve, then a `$ref` cycle that never descends into the instance.
    fn finish(self) -> Result<BuiltIn, Refusal> {
        if !self.unsupported.is_empty() {
            return Err(Refusal::Unsupported(self.unsupported.into_iter().collect()));
        }
        let reachable = reachable(&self.nodes);
        let unresolved = self.unresolved.iter().find(|(id, _)| reachable.get(*id) == Some(&true));
        if let Some((_, reason)) = unresolved {
            return Err(Refusal::Invalid(reason.clone()));
        }
        if let Some(id) = cycle(&self.nodes, &reachable) {
            let at = self.pointers.get(id).cloned().unwrap_or_default();
            return Err(Refusal::Invalid(format!(
                "#{at} refers back to itself without descending into the instance (a $ref cycle)"
            )));
        }
        Ok(BuiltIn { nodes: self.nodes })
    }

    /// The node of the schema at `pointer`, queued for compilation on first sight.
    fn sub(&mut self, pointer: String, value: &'s Value) -> Result<usize, String> {
        if !(value.is_object() || value.is_boolean()) {
            return Err(must(&pointer, "a schema (an object or a boolean)"));
        }
        if let Some(&id) = self.index.get(&pointer) {
            return Ok(id);
        }
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.pointers.push(pointer.clone());
        self.index.insert(pointer, id);
        self.queue.push((id, value));
        Ok(id)
    }

    /// A non-empty array of schemas (`allOf`, `prefixItems`, ...).
    fn sub_array(&mut self, at: &str, value: &'s Value) -> Result<Vec<usize>, String> {
        let items = value.as_array().filter(|items| !items.is_empty());
        let items = items.ok_or_else(|| must(at, "a non-empty array of schemas"))?;
        items.iter().enumerate().map(|(i, item)| self.sub(format!("{at}/{i}"), item)).collect()
    }

    /// An object of schemas (`properties`, `$defs`, ...).
    fn sub_map(&mut self, at: &str, value: &'s Value) -> Result<Vec<(String, usize)>, String> {
        let members = value.as_object().ok_or_else(|| must(at, "an object of schemas"))?;
        members.iter().map(|(name, v)| Ok((name.clone(), self.sub(child(at, name), v)?))).collect()
    }

    /// The schema at `at` when `map` has `name`.
    fn optional(
        &mut self,
        at: &str,
        map: &'s Map<String, Value>,
        name: &str,
    ) -> Result<Option<usize>, String> {
        map.get(name).map(|value| self.sub(child(at, name), value)).transpose()
    }

    fn node(&mut self, pointer: &str, value: &'s Value) -> Result<Node, String> {
        match value {
            Value::Bool(true) => Ok(Node::default()),
            Value::Bool(false) => Ok(Node { kws: vec![Kw::False] }),
            Value::Object(map) => self.object(pointer, map),
            _ => Err(must(pointer, "a schema (an object or a boolean)")),
        }
    }

    fn object(&mut self, pointer: &str, map: &'s Map<String, Value>) -> Result<Node, String> {
        let mut kws = Vec::new();
        for (key, value) in map {
            if self.dialect == Dialect::Draft7 && MODERN_ONLY.contains(&key.as_str()) {
                continue;
            }
            let at = child(pointer, key);
            let step = match assertion(key, &at, value)? {
                Step::Pass => match self.applicator(key, &at, value)? {
                    Step::Pass => self.annotation(pointer.is_empty(), key, &at, value)?,
                    step => step,
                },
                step => step,
            };
            match step {
                Step::Keep(priority, kw) => kws.push((priority, kw)),
                Step::Unsupported => {
                    self.unsupported.insert(key.clone());
                }
                Step::Done | Step::Pass => {}
            }
        }
        self.object_applicators(pointer, map, &mut kws)?;
        self.array_applicators(pointer, map, &mut kws)?;
        self.contains(pointer, map, &mut kws)?;
        self.conditional(pointer, map, &mut kws)?;
        if self.dialect == Dialect::Draft7 && map.contains_key("$ref") {
            kws.retain(|(_, kw)| matches!(kw, Kw::Ref(_)));
        }
        kws.sort_by_key(|(priority, _)| *priority);
        Ok(Node { kws: kws.into_iter().map(|(_, kw)| kw).collect() })
    }

    /// The applicators that stand alone (the others are compiled by group, see `object`).
    fn applicator(&mut self, key: &str, at: &str, value: &'s Value) -> Result<Step, String> {
        let (priority, kw) = match key {
            "propertyNames" => match value {
                Value::Bool(true) => return Ok(Step::Done),
                Value::Bool(false) => (43, Kw::NoNames),
                _ => (43, Kw::PropertyNames(self.sub(at.to_owned(), value)?)),
            },
            "dependencies" => (48, Kw::Dependencies(self.dependencies(at, value)?)),
            "dependentSchemas" => {
                let deps = self.sub_map(at, value)?;
                (49, Kw::Dependencies(deps.into_iter().map(|(k, id)| (k, Dep::Schema(id))).collect()))
            }
            "allOf" => (50, Kw::AllOf(self.sub_array(at, value)?)),
            "anyOf" => (51, Kw::AnyOf(self.sub_array(at, value)?)),
            "oneOf" => (52, Kw::OneOf(self.sub_array(at, value)?)),
            "not" => (53, Kw::Not(self.sub(at.to_owned(), value)?, shown(value))),
            "$ref" => return self.reference(at, value),
            "$defs" | "definitions" => {
                self.sub_map(at, value)?;
                return Ok(Step::Done);
            }
            "patternProperties" => {
                self.sub_map(at, value)?;
                return Ok(Step::Unsupported);
            }
            "unevaluatedItems" | "unevaluatedProperties" => {
                self.sub(at.to_owned(), value)?;
                return Ok(Step::Unsupported);
            }
            "contentSchema" => {
                self.sub(at.to_owned(), value)?;
                return Ok(Step::Done);
            }
            _ => return Ok(Step::Pass),
        };
        Ok(Step::Keep(priority, kw))
    }

    /// Core keywords, annotations and keywords this check does not evaluate.
    fn annotation(&mut self, root: bool, key: &str, at: &str, value: &Value) -> Result<Step, String> {
        let text = || value.as_str().ok_or_else(|| must(at, "a string"));
        let draft7 = self.dialect == Dialect::Draft7;
        Ok(match key {
            "$comment" | "title" | "description" => text().map(|_| Step::Done)?,
            "readOnly" | "writeOnly" | "deprecated" => {
                value.as_bool().ok_or_else(|| must(at, "a boolean"))?;
                Step::Done
            }
            "examples" => value.as_array().map(|_| Step::Done).ok_or_else(|| must(at, "an array"))?,
            "$vocabulary" => value.as_object().map(|_| Step::Done).ok_or_else(|| must(at, "an object"))?,
            "format" | "contentMediaType" | "contentEncoding" => {
                text()?;
                if draft7 {
                    Step::Unsupported
                } else {
                    Step::Done
                }
            }
            "pattern" => text().map(|_| Step::Unsupported)?,
            "$id" if root => text().map(|_| Step::Done)?,
            "$id" => text().map(|_| Step::Unsupported)?,
            "$schema" => {
                let same = root || dialect_named(text()?) == Some(self.dialect);
                if same {
                    Step::Done
                } else {
                    Step::Unsupported
                }
            }
            "$anchor" | "$dynamicAnchor" | "$dynamicRef" | "$recursiveRef" | "$recursiveAnchor" => {
                Step::Unsupported
            }
            _ => Step::Done,
        })
    }

    /// `$ref`: a fragment of this document (`#`, `#/$defs/a`, any JSON Pointer).
    fn reference(&mut self, at: &str, value: &'s Value) -> Result<Step, String> {
        let target = value.as_str().ok_or_else(|| must(at, "a string"))?;
        let Some(fragment) = target.strip_prefix('#') else { return Ok(Step::Unsupported) };
        match resolve(self.doc, fragment) {
            Ok((pointer, value)) => Ok(Step::Keep(70, Kw::Ref(self.sub(pointer, value)?))),
            Err(reason) => {
                self.unresolved.push((self.current, format!("#{at}: {reason}")));
                Ok(Step::Done)
            }
        }
    }

    /// `dependencies`: each member a schema or an array of names.
    fn dependencies(&mut self, at: &str, value: &'s Value) -> Result<Vec<(String, Dep)>, String> {
        let members = value.as_object().ok_or_else(|| must(at, "an object"))?;
        let mut deps = Vec::with_capacity(members.len());
        for (name, dep) in members {
            let here = child(at, name);
            let dep = match dep {
                Value::Array(_) => Dep::Required(names(&here, dep)?),
                _ => Dep::Schema(self.sub(here, dep)?),
            };
            deps.push((name.clone(), dep));
        }
        Ok(deps)
    }

    /// `properties` and `additionalProperties`.
    fn object_applicators(
        &mut self,
        at: &str,
        map: &'s Map<String, Value>,
        kws: &mut Vec<(u8, Kw)>,
    ) -> Result<(), String> {
        let mut props = match map.get("properties") {
            Some(value) => self.sub_map(&child(at, "properties"), value)?,
            None => Vec::new(),
        };
        props.sort_by(|a, b| a.0.cmp(&b.0));
        let known: Vec<String> = props.iter().map(|(name, _)| name.clone()).collect();
        if !props.is_empty() {
            kws.push((40, Kw::Properties(props)));
        }
        let kw = match map.get("additionalProperties") {
            None | Some(Value::Bool(true)) => return Ok(()),
            Some(Value::Bool(false)) if !map.contains_key("properties") => Kw::NoMembers,
            Some(Value::Bool(false)) => Kw::Additional { known, rest: None },
            Some(rest) => {
                let rest = self.sub(child(at, "additionalProperties"), rest)?;
                Kw::Additional { known, rest: Some(rest) }
            }
        };
        kws.push((42, kw));
        Ok(())
    }

    /// `prefixItems`, `items` and `additionalItems`.
    fn array_applicators(
        &mut self,
        at: &str,
        map: &'s Map<String, Value>,
        kws: &mut Vec<(u8, Kw)>,
    ) -> Result<(), String> {
        let modern = self.dialect == Dialect::Modern;
        let prefix = match map.get("prefixItems").filter(|_| modern) {
            Some(value) => Some(self.sub_array(&child(at, "prefixItems"), value)?),
            None => None,
        };
        let skip = prefix.as_ref().map_or(0, Vec::len);
        let tuple = match map.get("items") {
            Some(value @ Value::Array(_)) if prefix.is_none() => {
                Some(self.sub_array(&child(at, "items"), value)?)
            }
            Some(Value::Array(_)) => return Err(must(at, "without both `prefixItems` and array `items`")),
            Some(value) => {
                let node = self.sub(child(at, "items"), value)?;
                kws.push((44, Kw::Items { skip, node }));
                None
            }
            None => None,
        };
        if let Some(prefix) = prefix {
            kws.push((45, Kw::PrefixItems(prefix)));
        }
        let extra = map.get("additionalItems");
        let Some(tuple) = tuple else {
            if let Some(extra) = extra.filter(|_| !modern) {
                self.sub(child(at, "additionalItems"), extra)?;
            }
            return Ok(());
        };
        let length = tuple.len();
        kws.push((44, Kw::PrefixItems(tuple)));
        match extra {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => kws.push((46, Kw::NoMoreItems(length))),
            Some(extra) => {
                let node = self.sub(child(at, "additionalItems"), extra)?;
                kws.push((46, Kw::Items { skip: length, node }));
            }
        }
        Ok(())
    }

    /// `contains` with `minContains` and `maxContains` (2020-12).
    fn contains(
        &mut self,
        at: &str,
        map: &'s Map<String, Value>,
        kws: &mut Vec<(u8, Kw)>,
    ) -> Result<(), String> {
        let modern = self.dialect == Dialect::Modern;
        let limit = |name: &str| -> Result<Option<u64>, String> {
            map.get(name).filter(|_| modern).map(|value| count(&child(at, name), value)).transpose()
        };
        let (min, max) = (limit("minContains")?, limit("maxContains")?);
        if let Some(node) = self.optional(at, map, "contains")? {
            kws.push((47, Kw::Contains { node, min, max }));
        }
        Ok(())
    }

    /// `if`, `then` and `else`.
    fn conditional(
        &mut self,
        at: &str,
        map: &'s Map<String, Value>,
        kws: &mut Vec<(u8, Kw)>,
    ) -> Result<(), String> {
        let cond = self.optional(at, map, "if")?;
        let then = self.optional(at, map, "then")?;
        let els = self.optional(at, map, "else")?;
        if let Some(cond) = cond.filter(|_| then.is_some() || els.is_some()) {
            kws.push((54, Kw::If { cond, then, els }));
        }
        Ok(())
    }
}

/// The validation vocabulary.
fn assertion(key: &str, at: &str, value: &Value) -> Result<Step, String> {
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
fn count(at: &str, value: &Value) -> Result<u64, String> {
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
fn names(at: &str, value: &Value) -> Result<Vec<String>, String> {
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

/// The value `fragment` (a `$ref` after its `#`) points at, with its canonical JSON Pointer.
fn resolve<'s>(doc: &'s Value, fragment: &str) -> Result<(String, &'s Value), String> {
    let decoded = percent_decode(fragment).ok_or("its fragment is not percent-encoded UTF-8")?;
    if decoded.is_empty() {
        return Ok((String::new(), doc));
    }
    let Some(tokens) = decoded.strip_prefix('/') else {
        return Err(format!("no location is named `{decoded}` in the document"));
    };
    let mut here = doc;
    let mut pointer = String::new();
    for raw in tokens.split('/') {
        let token = unescape(raw).ok_or_else(|| format!("`{decoded}` is not a JSON Pointer"))?;
        let next = match here {
            Value::Object(members) => members.get(&token),
            Value::Array(items) => array_index(&token).and_then(|i| items.get(i)),
            _ => None,
        };
        here = next.ok_or_else(|| format!("`#{decoded}` does not resolve inside the document"))?;
        pointer.push('/');
        pointer.push_str(&escape(&token));
    }
    Ok((pointer, here))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = text.get(i + 1..i + 3).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A JSON Pointer reference token with `~1` and `~0` undone.
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn array_index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.starts_with('0') && token.bytes().all(|b| b.is_ascii_digit()));
    if canonical {
        token.parse().ok()
    } else {
        None
    }
}

/// Which nodes the root reaches through any keyword.
fn reachable(nodes: &[Node]) -> Vec<bool> {
    let mut seen = vec![false; nodes.len()];
    let mut stack = vec![0usize];
    let mut next = Vec::new();
    while let Some(id) = stack.pop() {
        match seen.get_mut(id) {
            Some(flag) if !*flag => *flag = true,
            _ => continue,
        }
        for kw in nodes.get(id).map(|node| node.kws.as_slice()).unwrap_or_default() {
            kw.same_instance(&mut next);
            kw.below(&mut next);
        }
        stack.append(&mut next);
    }
    seen
}

/// A reachable node on a cycle of keywords applying to the same instance, if any: evaluating it
/// would never end.
fn cycle(nodes: &[Node], reachable: &[bool]) -> Option<usize> {
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|node| {
            let mut out = Vec::new();
            node.kws.iter().for_each(|kw| kw.same_instance(&mut out));
            out
        })
        .collect();
    // 0: not visited, 1: on the current path, 2: done.
    let mut colour = vec![0u8; nodes.len()];
    let paint = |colour: &mut Vec<u8>, id: usize, to: u8| {
        if let Some(c) = colour.get_mut(id) {
            *c = to;
        }
    };
    for start in 0..nodes.len() {
        if reachable.get(start) != Some(&true) || colour.get(start) != Some(&0) {
            continue;
        }
        paint(&mut colour, start, 1);
        let mut stack = vec![(start, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            let Some(&target) = edges.get(node).and_then(|out| out.get(next)) else {
                paint(&mut colour, node, 2);
                stack.pop();
                continue;
            };
            top.1 += 1;
            match colour.get(target) {
                Some(0) => {
                    paint(&mut colour, target, 1);
                    stack.push((target, 0));
                }
                Some(1) => return Some(target),
                _ => {}
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/// Why an evaluation stopped short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Work,
    Depth,
}

impl Stop {
    fn fault(self) -> Fault {
        let message = match self {
            Stop::Work => format!(
                "the check exceeded its work bound ({MAX_WORK} subschema evaluations) on this instance"
            ),
            Stop::Depth => {
                format!("the check exceeded its depth bound ({MAX_EVAL_DEPTH} nested subschemas) on this instance")
            }
        };
        Fault { path: String::new(), message }
    }
}

/// The work and depth an evaluation has used.
#[derive(Debug, Clone, Copy, Default)]
struct Budget {
    work: u64,
    depth: u32,
    stop: Option<Stop>,
}

impl Budget {
    /// One more unit of work; false once the bound is passed.
    fn spend(&mut self) -> bool {
        if self.stop.is_some() {
            return false;
        }
        self.work += 1;
        if self.work > MAX_WORK {
            self.stop = Some(Stop::Work);
        }
        self.stop.is_none()
    }

    /// Into one more subschema; false (and nothing to leave) once a bound is passed.
    fn enter(&mut self) -> bool {
        if !self.spend() {
            return false;
        }
        if self.depth >= MAX_EVAL_DEPTH {
            self.stop = Some(Stop::Depth);
            return false;
        }
        self.depth += 1;
        true
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// One step of an instance location.
#[derive(Debug, Clone, Copy)]
enum Seg<'i> {
    Key(&'i str),
    Index(usize),
}

/// A collecting evaluation: where it is in the instance, and the faults found so far.
struct Run<'i> {
    budget: Budget,
    path: Vec<Seg<'i>>,
    faults: Vec<Fault>,
    max: usize,
}

impl Run<'_> {
    fn full(&self) -> bool {
        self.faults.len() >= self.max
    }

    fn here(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            out.push('/');
            match seg {
                Seg::Key(key) => out.push_str(&escape(key)),
                Seg::Index(i) => out.push_str(&i.to_string()),
            }
        }
        out
    }

    fn fault(&mut self, message: String) {
        if !self.full() {
            let path = self.here();
            self.faults.push(Fault { path, message });
        }
    }
}

/// Up to this many names, a lookup compares them one by one; past it, it searches.
const SCANNED: usize = 12;

/// The schema of member `name` in sorted `properties`.
fn property(props: &[(String, usize)], name: &str) -> Option<usize> {
    if props.len() <= SCANNED {
        return props.iter().find(|(p, _)| same(p, name)).map(|(_, id)| *id);
    }
    props.binary_search_by(|(p, _)| p.as_str().cmp(name)).ok().and_then(|i| props.get(i)).map(|(_, id)| *id)
}

/// Whether `name` is among the sorted `known` names.
fn is_known(known: &[String], name: &str) -> bool {
    if known.len() <= SCANNED {
        return known.iter().any(|k| same(k, name));
    }
    known.binary_search_by(|k| k.as_str().cmp(name)).is_ok()
}

/// Whether `members` has `name`: by comparing names for a small object (cheaper than hashing
/// the name), by hash for a large one.
fn has(members: &Map<String, Value>, name: &str) -> bool {
    if members.len() <= 2 * SCANNED {
        members.keys().any(|key| same(key, name))
    } else {
        members.contains_key(name)
    }
}

/// Equality of two names, compared in place when short (a library call costs more than the
/// comparison itself).
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 32 {
        return a == b;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

impl BuiltIn {
    /// Whether `value` conforms to node `id`.
    fn valid(&self, budget: &mut Budget, id: usize, value: &Value) -> bool {
        let Some(node) = self.nodes.get(id) else { return true };
        if !budget.enter() {
            return false;
        }
        let ok = node.kws.iter().all(|kw| self.valid_kw(budget, kw, value));
        budget.leave();
        ok && budget.stop.is_none()
    }

    fn valid_kw(&self, budget: &mut Budget, kw: &Kw, value: &Value) -> bool {
        match (kw, value) {
            (Kw::Properties(props), Value::Object(members)) => members
                .iter()
                .all(|(name, member)| property(props, name).is_none_or(|id| self.valid(budget, id, member))),
            (Kw::Additional { known, rest: Some(id) }, Value::Object(members)) => {
                members.iter().all(|(name, member)| is_known(known, name) || self.valid(budget, *id, member))
            }
            (Kw::PropertyNames(id), Value::Object(members)) => {
                members.keys().all(|name| self.valid(budget, *id, &Value::String(name.clone())))
            }
            (Kw::PrefixItems(ids), Value::Array(items)) => {
                items.iter().zip(ids).all(|(item, id)| self.valid(budget, *id, item))
            }
            (Kw::Items { skip, node }, Value::Array(items)) => {
                items.iter().skip(*skip).all(|item| self.valid(budget, *node, item))
            }
            (Kw::Contains { node, min, max }, Value::Array(items)) => {
                self.contains_ok(budget, *node, *min, *max, items)
            }
            (Kw::Dependencies(deps), Value::Object(members)) => deps.iter().all(|(name, dep)| {
                !has(members, name)
                    || match dep {
                        Dep::Required(names) => names.iter().all(|n| has(members, n)),
                        Dep::Schema(id) => self.valid(budget, *id, value),
                    }
            }),
            (Kw::AllOf(ids), _) => ids.iter().all(|id| self.valid(budget, *id, value)),
            (Kw::AnyOf(ids), _) => ids.iter().any(|id| self.valid(budget, *id, value)),
            (Kw::OneOf(ids), _) => self.matches(budget, ids, value) == 1,
            (Kw::Not(id, _), _) => !self.valid(budget, *id, value),
            (Kw::If { cond, then, els }, _) => {
                let branch = if self.valid(budget, *cond, value) { then } else { els };
                branch.is_none_or(|id| self.valid(budget, id, value))
            }
            (Kw::Ref(id), _) => self.valid(budget, *id, value),
            _ => leaf_ok(budget, kw, value),
        }
    }

    /// How many of `ids` `value` conforms to, counting no further than 2.
    fn matches(&self, budget: &mut Budget, ids: &[usize], value: &Value) -> usize {
        let mut count = 0;
        for id in ids {
            if self.valid(budget, *id, value) {
                count += 1;
                if count > 1 {
                    break;
                }
            }
        }
        count
    }

    fn contains_ok(
        &self,
        budget: &mut Budget,
        node: usize,
        min: Option<u64>,
        max: Option<u64>,
        items: &[Value],
    ) -> bool {
        let least = min.unwrap_or(1);
        let mut count = 0u64;
        for item in items {
            if max.is_none() && count >= least {
                break;
            }
            if self.valid(budget, node, item) {
                count += 1;
                if max.is_some_and(|max| count > max) {
                    return false;
                }
            }
        }
        count >= least
    }

    /// Collects the faults of `value` against node `id` into `run`.
    fn collect<'i>(&self, run: &mut Run<'i>, id: usize, value: &'i Value) {
        let Some(node) = self.nodes.get(id) else { return };
        if run.full() || !run.budget.enter() {
            return;
        }
        for kw in &node.kws {
            if run.full() || run.budget.stop.is_some() {
                break;
            }
            self.collect_kw(run, kw, value);
        }
        run.budget.leave();
    }

    /// One keyword's faults. Each kind has a function of its own, keeping this frame (on the
    /// recursive path) small.
    fn collect_kw<'i>(&self, run: &mut Run<'i>, kw: &Kw, value: &'i Value) {
        match (kw, value) {
            (Kw::Properties(_) | Kw::Additional { rest: Some(_), .. }, Value::Object(members)) => {
                self.collect_members(run, kw, members)
            }
            (Kw::PropertyNames(id), Value::Object(members)) => self.collect_names(run, *id, members),
            (Kw::PrefixItems(_) | Kw::Items { .. }, Value::Array(items)) => {
                self.collect_items(run, kw, items)
            }
            (Kw::Dependencies(deps), Value::Object(members)) => {
                self.collect_dependencies(run, deps, members, value)
            }
            (Kw::AllOf(ids), _) => ids.iter().for_each(|id| self.collect(run, *id, value)),
            (Kw::OneOf(ids), _) => self.collect_one_of(run, ids, value),
            (Kw::If { cond, then, els }, _) => {
                let branch = if self.valid(&mut run.budget, *cond, value) { then } else { els };
                if let Some(id) = branch {
                    self.collect(run, *id, value);
                }
            }
            (Kw::Ref(id), _) => self.collect(run, *id, value),
            _ => self.collect_leaf(run, kw, value),
        }
    }

    /// `properties` and a schema `additionalProperties`.
    fn collect_members<'i>(&self, run: &mut Run<'i>, kw: &Kw, members: &'i Map<String, Value>) {
        for (name, member) in members {
            let id = match kw {
                Kw::Properties(props) => property(props, name),
                Kw::Additional { known, rest } => rest.filter(|_| !is_known(known, name)),
                _ => None,
            };
            if let Some(id) = id {
                self.collect_at(run, Seg::Key(name), id, member);
            }
        }
    }

    /// `prefixItems` and `items` (or `additionalItems` past a tuple).
    fn collect_items<'i>(&self, run: &mut Run<'i>, kw: &Kw, items: &'i [Value]) {
        for (i, item) in items.iter().enumerate() {
            let id = match kw {
                Kw::PrefixItems(ids) => ids.get(i).copied(),
                Kw::Items { skip, node } => Some(*node).filter(|_| i >= *skip),
                _ => None,
            };
            match id {
                Some(id) => self.collect_at(run, Seg::Index(i), id, item),
                None if matches!(kw, Kw::PrefixItems(_)) => return,
                None => {}
            }
        }
    }

    fn collect_dependencies<'i>(
        &self,
        run: &mut Run<'i>,
        deps: &[(String, Dep)],
        members: &Map<String, Value>,
        value: &'i Value,
    ) {
        for (_, dep) in deps.iter().filter(|(name, _)| has(members, name)) {
            match dep {
                Dep::Required(names) => missing(names, members).for_each(|m| run.fault(m)),
                Dep::Schema(id) => self.collect(run, *id, value),
            }
        }
    }

    fn collect_one_of(&self, run: &mut Run<'_>, ids: &[usize], value: &Value) {
        match self.matches(&mut run.budget, ids, value) {
            1 => {}
            0 => run.fault(format!("{} {NOT_ANY} 'oneOf' keyword", shown(value))),
            _ => run.fault(format!("{} {MORE_THAN_ONE} 'oneOf' keyword", shown(value))),
        }
    }

    /// A keyword that fails with its own messages (those applying no subschema, `anyOf`, `not`,
    /// `contains`).
    fn collect_leaf(&self, run: &mut Run<'_>, kw: &Kw, value: &Value) {
        if !self.valid_kw(&mut run.budget, kw, value) {
            messages(kw, value).into_iter().for_each(|m| run.fault(m));
        }
    }

    /// Collects the faults of `value`, one step below the current location.
    fn collect_at<'i>(&self, run: &mut Run<'i>, seg: Seg<'i>, id: usize, value: &'i Value) {
        if run.full() {
            return;
        }
        run.path.push(seg);
        self.collect(run, id, value);
        run.path.pop();
    }

    /// `propertyNames`: each name checked as a string; its faults are the object's.
    fn collect_names(&self, run: &mut Run<'_>, id: usize, members: &Map<String, Value>) {
        let here = run.here();
        for name in members.keys() {
            if run.full() || run.budget.stop.is_some() {
                return;
            }
            let name = Value::String(name.clone());
            let max = run.max.saturating_sub(run.faults.len());
            let mut inner = Run { budget: run.budget, path: Vec::new(), faults: Vec::new(), max };
            self.collect(&mut inner, id, &name);
            run.budget = inner.budget;
            let moved = inner.faults.into_iter().map(|f| Fault { path: here.clone(), message: f.message });
            run.faults.extend(moved);
        }
    }
}

const NOT_ANY: &str = "is not valid under any of the schemas listed in the";
const MORE_THAN_ONE: &str = "is valid under more than one of the schemas listed in the";

/// Whether `value` passes a keyword that applies no subschema.
fn leaf_ok(budget: &mut Budget, kw: &Kw, value: &Value) -> bool {
    match (kw, value) {
        (Kw::False, _) => false,
        (Kw::Type(bits), _) => type_ok(*bits, value),
        (Kw::Const(expected), _) => json_eq(expected, value),
        (Kw::Enum(options), _) => options.iter().any(|option| json_eq(option, value)),
        (Kw::Bound(bound, limit), Value::Number(n)) => bound.holds(n, limit),
        (Kw::MultipleOf(multiple), Value::Number(n)) => is_multiple(n, *multiple),
        (Kw::Length(limit, n), Value::String(s)) => limit.holds(length(s.chars().count()), *n),
        (Kw::ItemCount(limit, n), Value::Array(items)) => limit.holds(length(items.len()), *n),
        (Kw::PropCount(limit, n), Value::Object(members)) => limit.holds(length(members.len()), *n),
        (Kw::Required(names), Value::Object(members)) => names.iter().all(|n| has(members, n)),
        (Kw::UniqueItems, Value::Array(items)) => unique(budget, items),
        (Kw::Additional { known, rest: None }, Value::Object(members)) => {
            members.keys().all(|name| is_known(known, name))
        }
        (Kw::NoMembers | Kw::NoNames, Value::Object(members)) => members.is_empty(),
        (Kw::NoMoreItems(n), Value::Array(items)) => items.len() <= *n,
        _ => true,
    }
}

fn length(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn type_ok(bits: u8, value: &Value) -> bool {
    match value {
        Value::Null => bits & NULL != 0,
        Value::Bool(_) => bits & BOOLEAN != 0,
        Value::String(_) => bits & STRING != 0,
        Value::Array(_) => bits & ARRAY != 0,
        Value::Object(_) => bits & OBJECT != 0,
        Value::Number(n) => bits & NUMBER != 0 || (bits & INTEGER != 0 && is_integer(n)),
    }
}

/// The messages of a failed keyword that applies no subschema, or of `anyOf`, `not`,
/// `contains`.
fn messages(kw: &Kw, value: &Value) -> Vec<String> {
    let v = shown(value);
    let one = match kw {
        Kw::False => format!("False schema does not allow {v}"),
        Kw::Type(bits) => type_message(*bits, &v),
        Kw::Const(expected) => format!("{} was expected", shown(expected)),
        Kw::Enum(options) => enum_message(options, &v),
        Kw::Bound(bound, limit) => format!("{v} {} {limit}", bound.phrase()),
        Kw::MultipleOf(multiple) => format!("{v} is not a multiple of {multiple}"),
        Kw::Length(limit, n) => {
            let word = if *limit == Limit::Min { "shorter" } else { "longer" };
            format!("{v} is {word} than {n} character{}", plural(*n, "", "s"))
        }
        Kw::ItemCount(limit, n) => {
            let word = if *limit == Limit::Min { "less" } else { "more" };
            format!("{v} has {word} than {n} item{}", plural(*n, "", "s"))
        }
        Kw::PropCount(limit, n) => {
            let word = if *limit == Limit::Min { "less" } else { "more" };
            format!("{v} has {word} than {n} propert{}", plural(*n, "y", "ies"))
        }
        Kw::Required(names) => {
            return value.as_object().map(|m| missing(names, m).collect()).unwrap_or_default()
        }
        Kw::UniqueItems => format!("{v} has non-unique elements"),
        Kw::Additional { known, .. } => additional_message(known, value),
        Kw::NoMembers => {
            let first = value.as_object().and_then(|m| m.values().next()).map(shown).unwrap_or_default();
            format!("False schema does not allow {first}")
        }
        Kw::NoNames => format!("False schema does not allow {v}"),
        Kw::NoMoreItems(n) => items_message(*n, value),
        Kw::Contains { .. } => format!("None of {v} are valid under the given schema"),
        Kw::AnyOf(_) => format!("{v} {NOT_ANY} 'anyOf' keyword"),
        Kw::Not(_, schema) => format!("{schema} is not allowed for {v}"),
        _ => format!("{v} is not valid"),
    };
    vec![one]
}

fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// One message per name of `names` missing from `members`.
fn missing<'a>(names: &'a [String], members: &'a Map<String, Value>) -> impl Iterator<Item = String> + 'a {
    names
        .iter()
        .filter(|name| !has(members, name))
        .map(|name| format!("{} is a required property", shown(&Value::String(name.clone()))))
}

fn type_message(bits: u8, shown_value: &str) -> String {
    let named: Vec<&str> = TYPES.iter().filter(|(_, b)| bits & b != 0).map(|(t, _)| *t).collect();
    match named.as_slice() {
        [one] => format!("{shown_value} is not of type \"{one}\""),
        many => {
            let quoted: Vec<String> = many.iter().map(|t| format!("\"{t}\"")).collect();
            format!("{shown_value} is not of types {}", quoted.join(", "))
        }
    }
}

fn enum_message(options: &[Value], shown_value: &str) -> String {
    let mut out = format!("{shown_value} is not one of ");
    let n = options.len();
    if n <= 3 {
        for (i, option) in options.iter().enumerate() {
            if i > 0 {
                out.push_str(if i + 1 == n { " or " } else { ", " });
            }
            out.push_str(&shown(option));
        }
    } else {
        let first: Vec<String> = options.iter().take(2).map(shown).collect();
        out.push_str(&format!("{} or {} other candidates", first.join(", "), n - 2));
    }
    out
}

fn additional_message(known: &[String], value: &Value) -> String {
    let members = value.as_object().map(|m| m.keys().collect::<Vec<_>>()).unwrap_or_default();
    let unexpected: Vec<&String> = members.into_iter().filter(|name| !is_known(known, name)).collect();
    let mut listed: Vec<String> =
        unexpected.iter().take(LISTED).map(|name| format!("'{}'", cut(name, SHOWN))).collect();
    if unexpected.len() > LISTED {
        listed.push("...".into());
    }
    let verb = if unexpected.len() == 1 { "was" } else { "were" };
    format!("Additional properties are not allowed ({} {verb} unexpected)", listed.join(", "))
}

fn items_message(tuple: usize, value: &Value) -> String {
    let extra: Vec<&Value> = value.as_array().map(|a| a.iter().skip(tuple).collect()).unwrap_or_default();
    let mut listed: Vec<String> = extra.iter().take(LISTED).map(|item| shown(item)).collect();
    if extra.len() > LISTED {
        listed.push("...".into());
    }
    let verb = if extra.len() == 1 { "was" } else { "were" };
    format!("Additional items are not allowed ({} {verb} unexpected)", listed.join(", "))
}

/// `text` cut to `max` bytes at a character boundary, marked with `...` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = (0..=max).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    format!("{}...", text.get(..end).unwrap_or_default())
}

/// A writer keeping the first `cap` bytes and failing past them.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
    cut: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.bytes.len());
        if buf.len() > room {
            self.bytes.extend_from_slice(buf.get(..room).unwrap_or_default());
            self.cut = true;
            return Err(std::io::Error::other("the message is long enough"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` as JSON, cut after about 100 characters (serialisation stops there, however large
/// the value).
fn shown(value: &Value) -> String {
    let mut out = Capped { bytes: Vec::new(), cap: SHOWN, cut: false };
    let _ = serde_json::to_writer(&mut out, value);
    let text = match std::str::from_utf8(&out.bytes) {
        Ok(text) => text,
        Err(e) => {
            std::str::from_utf8(out.bytes.get(..e.valid_up_to()).unwrap_or_default()).unwrap_or_default()
        }
    };
    if out.cut {
        format!("{text}...")
    } else {
        text.to_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// JSON values: numbers, equality, uniqueness
// ---------------------------------------------------------------------------------------------

/// A JSON number as serde_json holds it.
#[derive(Debug, Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

fn num(n: &Number) -> Num {
    if let Some(u) = n.as_u64() {
        Num::U(u)
    } else if let Some(i) = n.as_i64() {
        Num::I(i)
    } else {
        Num::F(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// 2^127: below it in magnitude, a float's integer part fits an `i128` exactly.
const I128_RANGE: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;

/// The exact order of two JSON numbers (1 == 1.0; 2^53 + 1 > 2^53 as a float).
fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (num(a), num(b)) {
        (Num::F(x), Num::F(y)) => x.partial_cmp(&y),
        (Num::F(x), Num::U(y)) => int_vs_float(i128::from(y), x).map(Ordering::reverse),
        (Num::F(x), Num::I(y)) => int_vs_float(i128::from(y), x).map(Ordering::reverse),
        (Num::U(x), Num::F(y)) => int_vs_float(i128::from(x), y),
        (Num::I(x), Num::F(y)) => int_vs_float(i128::from(x), y),
        (x, y) => Some(integer(x).cmp(&integer(y))),
    }
}

fn integer(n: Num) -> i128 {
    match n {
        Num::U(u) => i128::from(u),
        Num::I(i) => i128::from(i),
        Num::F(_) => 0,
    }
}

fn int_vs_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f >= I128_RANGE {
        return Some(Ordering::Less);
    }
    if f <= -I128_RANGE {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    match i.cmp(&(whole as i128)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(f - whole)),
        order => Some(order),
    }
}

fn is_integer(n: &Number) -> bool {
    match num(n) {
        Num::F(f) => f.is_finite() && f.fract() == 0.0,
        _ => true,
    }
}

/// JSON equality (numbers by value, objects regardless of member order), without recursion.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => containers_eq(a, b),
        _ => scalars_eq(a, b),
    }
}

fn scalars_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        _ => false,
    }
}

fn containers_eq(a: &Value, b: &Value) -> bool {
    let mut stack = vec![(a, b)];
    while let Some(pair) = stack.pop() {
        match pair {
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => stack.extend(x.iter().zip(y)),
            (Value::Object(x), Value::Object(y)) if x.len() == y.len() => {
                for (name, member) in x {
                    let Some(other) = y.get(name) else { return false };
                    stack.push((member, other));
                }
            }
            (x, y) if scalars_eq(x, y) => {}
            _ => return false,
        }
    }
    true
}

/// `uniqueItems`: pairwise for a few items, by hash buckets for more; each comparison counts as
/// work.
fn unique(budget: &mut Budget, items: &[Value]) -> bool {
    if items.len() <= 15 {
        for (i, x) in items.iter().enumerate() {
            for y in items.iter().skip(i + 1) {
                if !budget.spend() || json_eq(x, y) {
                    return false;
                }
            }
        }
        return true;
    }
    let mut buckets: HashMap<u64, Vec<&Value>> = HashMap::new();
    for x in items {
        let mut hasher = DefaultHasher::new();
        hash_value(x, 3, &mut hasher);
        let bucket = buckets.entry(hasher.finish()).or_default();
        for y in bucket.iter() {
            if !budget.spend() || json_eq(x, y) {
                return false;
            }
        }
        bucket.push(x);
    }
    true
}

/// A hash agreeing with [`json_eq`] (equal values hash alike), looking `depth` levels deep.
fn hash_value(value: &Value, depth: u8, hasher: &mut DefaultHasher) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(b) => (1u8, b).hash(hasher),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            (2u8, if f == 0.0 { 0 } else { f.to_bits() }).hash(hasher);
        }
        Value::String(s) => (3u8, s).hash(hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(hasher);
            let Some(below) = depth.checked_sub(1) else { return };
            for item in items {
                hash_value(item, below, hasher);
            }
        }
        Value::Object(members) => {
            (5u8, members.len()).hash(hasher);
            let Some(below) = depth.checked_sub(1) else { return };
            let mut sum = 0u64;
            for (name, member) in members {
                let mut entry = DefaultHasher::new();
                name.hash(&mut entry);
                hash_value(member, below, &mut entry);
                sum = sum.wrapping_add(entry.finish());
            }
            sum.hash(hasher);
        }
    }
}

/// 2^53: integers up to it are exact as floats.
const SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// `multipleOf`, as `jsonschema` decides it: integers by integer remainder, fractions by the
/// decimals both numbers print as (0.3 is a multiple of 0.1).
fn is_multiple(n: &Number, multiple: f64) -> bool {
    if multiple.fract() == 0.0 {
        return is_multiple_of_integer(n, multiple);
    }
    let Some(value) = n.as_f64() else { return false };
    if value == 0.0 {
        return true;
    }
    if value.abs() < multiple {
        return false;
    }
    if let Some(answer) = divides_exactly(value, multiple) {
        return answer;
    }
    let quotient = value / multiple;
    quotient.is_finite() && quotient.fract() == 0.0
}

fn is_multiple_of_integer(n: &Number, multiple: f64) -> bool {
    if multiple > 0.0 && multiple <= SAFE_INTEGER {
        let divisor = multiple as u64;
        match num(n) {
            Num::U(u) => return u % divisor == 0,
            Num::I(i) => return i % (divisor as i64) == 0,
            Num::F(f) if f.abs() >= SAFE_INTEGER => {
                if let Some(answer) = decimal_multiple(&n.to_string(), divisor) {
                    return answer;
                }
            }
            Num::F(_) => {}
        }
    }
    n.as_f64().is_some_and(|f| f.fract() == 0.0 && f % multiple == 0.0)
}

/// Whether the plain decimal integer `text` (no exponent) divides by `divisor`.
fn decimal_multiple(text: &str, divisor: u64) -> Option<bool> {
    if text.contains(['e', 'E']) || divisor == 0 {
        return None;
    }
    let text = text.strip_prefix('-').unwrap_or(text);
    let (digits, fraction) = text.split_once('.').unwrap_or((text, ""));
    if !fraction.bytes().all(|b| b == b'0') {
        return Some(false);
    }
    let mut remainder = 0u64;
    for byte in digits.bytes() {
        let digit = u64::from(byte.checked_sub(b'0').filter(|d| *d <= 9)?);
        remainder = (remainder.checked_mul(10)?.checked_add(digit)?) % divisor;
    }
    Some(remainder == 0)
}

/// A finite float as the decimal it prints as: `mantissa / 10^decimals`.
fn decimal_parts(value: f64) -> Option<(i128, i32)> {
    if !value.is_finite() {
        return None;
    }
    let text = format!("{value:e}");
    let (digits, exponent) = text.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let negative = digits.starts_with('-');
    let digits = digits.trim_start_matches('-');
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mut mantissa: i128 = 0;
    for byte in whole.bytes().chain(fraction.bytes()) {
        let digit = i128::from(byte.checked_sub(b'0').filter(|d| *d <= 9)?);
        mantissa = mantissa.checked_mul(10)?.checked_add(digit)?;
    }
    let decimals = i32::try_from(fraction.len()).ok()?.checked_sub(exponent)?;
    Some((if negative { -mantissa } else { mantissa }, decimals))
}

/// Whether `value / multiple` is an integer in the decimals both print as; None past `i128`.
fn divides_exactly(value: f64, multiple: f64) -> Option<bool> {
    let (value_mantissa, value_decimals) = decimal_parts(value)?;
    let (multiple_mantissa, multiple_decimals) = decimal_parts(multiple)?;
    if multiple_mantissa == 0 {
        return None;
    }
    let shared = value_decimals.min(multiple_decimals);
    let scale = |mantissa: i128, decimals: i32| {
        let places = u32::try_from(decimals.checked_sub(shared)?).ok()?;
        mantissa.checked_mul(10_i128.checked_pow(places)?)
    };
    let numerator = scale(value_mantissa, multiple_decimals)?;
    let denominator = scale(multiple_mantissa, value_decimals)?;
    numerator.checked_rem(denominator).map(|r| r == 0)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use schemars::generate::SchemaSettings;
    use schemars::JsonSchema;
    use serde_json::{json, Value};

    use super::*;
    use crate::model::schema::{standardize, StandardFormats};

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
        case(
            json!({"uniqueItems": true}),
            json!([1, 2]),
            json!([1, 1.0]),
            "",
            "[1,1.0] has non-unique elements",
        );
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
        case(
            schema,
            json!({"a": 1, "b": "x"}),
            json!({"a": 1, "b": 2}),
            "/b",
            r#"2 is not of type "string""#,
        );
        let schema = json!({"propertyNames": {"maxLength": 2}});
        case(
            schema,
            json!({"ab": 1}),
            json!({"ab": 1, "abc": 1}),
            "",
            r#""abc" is longer than 2 characters"#,
        );
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
        assert_eq!(
            check.first_fault(&json!(1)).map(|f| f.message),
            Some("False schema does not allow 1".into())
        );
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
        invalid(
            &json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
            "anyOf": [{"$ref": "#/$defs/a"}]}),
        );
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
        let reference =
            jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("jsonschema: {schema}: {e}"));
        let ours = compiled(schema);
        for instance in instances {
            let valid = reference.is_valid(instance);
            invalid += usize::from(!valid);
            let first = ours.first_fault(instance);
            assert_eq!(first.is_none(), valid, "{schema} on {instance}: {first:?}");
            assert_eq!(ours.is_valid(instance), valid, "{schema} on {instance}");
            let theirs: BTreeSet<String> =
                reference.iter_errors(instance).map(|e| e.instance_path().to_string()).collect();
            let mine: BTreeSet<String> =
                ours.faults(instance, usize::MAX).into_iter().map(|f| f.path).collect();
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
}
