//! Compilation: a schema document into the nodes of a [`BuiltIn`], without recursion.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::faults::Refusal;
use super::keywords::{assertion, count, names, Step};
use super::messages::shown;
use super::names::{child, must};
use super::refs::{cycle, reachable, resolve};
use super::tree::{Dep, Dialect, Kw, Node, MODERN_ONLY};

/// The deepest schema document accepted, in nested objects and arrays.
const MAX_SCHEMA_DEPTH: usize = 256;

/// The nodes of `schema` (the root first), or why it is refused.
pub(super) fn compile(schema: &Value) -> Result<Vec<Node>, Refusal> {
    if deeper_than(schema, MAX_SCHEMA_DEPTH) {
        let reason = format!("the schema is nested deeper than {MAX_SCHEMA_DEPTH} levels");
        return Err(Refusal::Invalid(reason));
    }
    let dialect = dialect_of(schema)?;
    let mut compiler = Compiler::new(schema, dialect);
    compiler.run().map_err(Refusal::Invalid)?;
    compiler.finish()
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
    fn finish(self) -> Result<Vec<Node>, Refusal> {
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
        Ok(self.nodes)
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
