//! Evaluation: an instance against the compiled nodes, within the work and depth bounds.

use serde_json::{Map, Value};

use super::budget::{path_cost, text_cost, Budget};
use super::equality::{json_eq, unique};
use super::faults::Fault;
use super::messages::{messages, missing, shown, MORE_THAN_ONE, NOT_ANY};
use super::names::{escape, has, is_known, property};
use super::tree::{Dep, Kw, Node, ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING};
use super::values::{is_integer, is_multiple};

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

    /// A fault here, its location charged to the work bound.
    fn fault(&mut self, message: String) {
        if !self.full() {
            let path = self.here();
            if self.budget.charge(path_cost(&path)) {
                self.faults.push(Fault { path, message });
            }
        }
    }
}

/// Every fault of `instance` against `nodes`, at most `max` of them (see
/// [`super::BuiltIn::faults`]), and the work the check did.
pub(super) fn faults(nodes: &[Node], instance: &Value, max: usize) -> (Vec<Fault>, u64) {
    if max == 0 {
        return (Vec::new(), 0);
    }
    // One pass: the instance is evaluated once, describing faults as it finds them, and a
    // check stopped by its bound is not run again.
    let mut run = Run { budget: Budget::default(), path: Vec::new(), faults: Vec::new(), max };
    Eval { nodes }.collect(&mut run, 0, instance);
    let used = run.budget.used();
    match run.budget.stop {
        Some(stop) => (vec![stop.fault()], used),
        None => (run.faults, used),
    }
}

/// Whether `instance` conforms to `nodes` (no fault is described), within the work bound.
pub(super) fn is_valid(nodes: &[Node], instance: &Value) -> bool {
    let mut budget = Budget::default();
    Eval { nodes }.valid(&mut budget, 0, instance) && budget.stop.is_none()
}

/// An evaluation against the compiled nodes.
struct Eval<'n> {
    nodes: &'n [Node],
}

impl Eval<'_> {
    /// Whether `value` conforms to node `id`.
    fn valid(&self, budget: &mut Budget, id: usize, value: &Value) -> bool {
        let Some(node) = self.nodes.get(id) else { return true };
        if !budget.enter(node.kws.len()) {
            return false;
        }
        let ok = node.kws.iter().all(|kw| self.valid_kw(budget, kw, value));
        budget.leave();
        ok && budget.stop.is_none()
    }

    fn valid_kw(&self, budget: &mut Budget, kw: &Kw, value: &Value) -> bool {
        match (kw, value) {
            (Kw::Properties(props), Value::Object(members)) => members.iter().all(|(name, member)| {
                read_name(budget, name)
                    && property(props, name).is_none_or(|id| self.valid(budget, id, member))
            }),
            (Kw::Additional { known, rest: Some(id) }, Value::Object(members)) => {
                members.iter().all(|(name, member)| {
                    read_name(budget, name) && (is_known(known, name) || self.valid(budget, *id, member))
                })
            }
            (Kw::PropertyNames(id), Value::Object(members)) => members
                .keys()
                .all(|name| read_name(budget, name) && self.valid(budget, *id, &Value::String(name.clone()))),
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
                !(read_name(budget, name) && has(members, name))
                    || match dep {
                        Dep::Required(names) => all_present(budget, names, members),
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
        if run.full() || !run.budget.enter(node.kws.len()) {
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
            if run.full() || !read_name(&mut run.budget, name) {
                return;
            }
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
            if run.full() || !run.budget.spend() {
                return;
            }
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
        for (name, dep) in deps {
            if !read_name(&mut run.budget, name) {
                return;
            }
            if !has(members, name) {
                continue;
            }
            match dep {
                Dep::Required(names) => {
                    if !all_present(&mut run.budget, names, members) {
                        missing(names, members).for_each(|m| run.fault(m))
                    }
                }
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
            if run.full() || !read_name(&mut run.budget, name) {
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

/// Whether `value` passes a keyword that applies no subschema.
fn leaf_ok(budget: &mut Budget, kw: &Kw, value: &Value) -> bool {
    match (kw, value) {
        (Kw::False, _) => false,
        (Kw::Type(bits), _) => type_ok(*bits, value),
        (Kw::Const(expected), _) => json_eq(budget, expected, value),
        (Kw::Enum(options), _) => options.iter().any(|option| json_eq(budget, option, value)),
        (Kw::Bound(bound, limit), Value::Number(n)) => bound.holds(n, limit),
        (Kw::MultipleOf(multiple), Value::Number(n)) => is_multiple(n, *multiple),
        (Kw::Length(limit, n), Value::String(s)) => {
            budget.charge(text_cost(s)) && limit.holds(length(s.chars().count()), *n)
        }
        (Kw::ItemCount(limit, n), Value::Array(items)) => limit.holds(length(items.len()), *n),
        (Kw::PropCount(limit, n), Value::Object(members)) => limit.holds(length(members.len()), *n),
        (Kw::Required(names), Value::Object(members)) => all_present(budget, names, members),
        (Kw::UniqueItems, Value::Array(items)) => unique(budget, items),
        (Kw::Additional { known, rest: None }, Value::Object(members)) => {
            members.keys().all(|name| read_name(budget, name) && is_known(known, name))
        }
        (Kw::NoMembers | Kw::NoNames, Value::Object(members)) => members.is_empty(),
        (Kw::NoMoreItems(n), Value::Array(items)) => items.len() <= *n,
        _ => true,
    }
}

/// Charges reading a member name (one unit, and its text): false once the bound is passed.
fn read_name(budget: &mut Budget, name: &str) -> bool {
    budget.charge(1 + text_cost(name))
}

/// Whether `members` has every one of `names`, each lookup charged.
fn all_present(budget: &mut Budget, names: &[String], members: &Map<String, Value>) -> bool {
    names.iter().all(|name| read_name(budget, name) && has(members, name))
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
