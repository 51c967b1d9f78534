//! Validation: the structural findings of the parse, then the semantic checks against the
//! caller's catalog snapshot (names, arguments, references and the scope rule), and the plan.
//!
//! Side-effect free: it reads only the program and the snapshot it is handed. Every hint that
//! names a catalog entry comes from that snapshot, so an entry the caller cannot see is never
//! suggested.

use std::collections::{BTreeSet, HashMap};

use pilotage::engine::Signal;
use pilotage::model::closed_sets::{EntryKind, RiskLevel};
use pilotage::prelude::*;

use super::program::{
    self, article, close_hint, is_step_id, ptr, type_name, Arm, Body, Finding, InputType, Program, Ref, Root,
    Step, Text,
};
use super::{WfCode, WfKind, WfRisk};

/// One plan step, before it is handed to the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanItem {
    pub id: String,
    pub calls: Option<String>,
    pub risk: WfRisk,
    pub arm: Option<(String, String)>,
    pub in_loop: Option<String>,
}

/// Everything validation found.
#[derive(Debug, Default)]
pub struct Analysis {
    pub findings: Vec<Finding>,
    pub plan: Vec<PlanItem>,
    /// Every step id with the pointer of its `id` member, in document order.
    pub ids: Vec<(String, String)>,
}

/// Validate `doc` into `v`.
pub fn validate(doc: &Json, v: &mut Validation<WfCode, WfRisk>) {
    let analysis = analyse(doc, v.catalog());
    for (id, at) in &analysis.ids {
        v.step_id(id, at.as_str());
    }
    for f in analysis.findings {
        f.report(v);
    }
    for item in analysis.plan {
        let step = v.step(item.id, item.risk);
        if let Some(c) = item.calls {
            step.calls(c);
        }
        if let Some((branch, label)) = item.arm {
            step.arm(branch, label);
        }
        if let Some(l) = item.in_loop {
            step.in_loop(l);
        }
    }
}

/// The risk level named `wire` (an unknown name is treated as the most severe effect).
pub fn risk_named(wire: &str) -> WfRisk {
    [WfRisk::Safe, WfRisk::Write, WfRisk::Destructive, WfRisk::External]
        .into_iter()
        .find(|r| r.wire() == wire)
        .unwrap_or(WfRisk::Destructive)
}

fn kind_named(wire: &str) -> Option<WfKind> {
    [WfKind::Capability, WfKind::Dataset].into_iter().find(|k| k.wire() == wire)
}

/// What a reference can be known to hold: a JSON Schema, or `None` when nothing is known.
type Shape = Option<Json>;

/// A container enclosing a step list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Container {
    Arm { branch: String, label: String },
    Body { loop_id: String },
}

impl Container {
    fn describe(&self) -> String {
        match self {
            Container::Arm { branch, label } => format!("inside arm '{label}' of branch '{branch}'"),
            Container::Body { loop_id } => format!("inside the body of loop '{loop_id}'"),
        }
    }
}

/// Where a step id is declared.
struct Declared {
    containers: Vec<Container>,
    /// Call and set steps have an output; branches and loops do not.
    kind: &'static str,
    id_path: String,
}

/// Run every check on `doc` against `catalog`.
pub fn analyse(doc: &Json, catalog: Option<&CatalogSnapshot>) -> Analysis {
    program::begin_hints();
    let (program, findings) = program::parse(doc);
    let mut c = Checker {
        catalog,
        findings,
        plan: Vec::new(),
        ids: Vec::new(),
        declared: HashMap::new(),
        loop_vars: HashMap::new(),
        frames: Vec::new(),
        visible: HashMap::new(),
        containers: Vec::new(),
        vars: Vec::new(),
        shapes: HashMap::new(),
        inputs: HashMap::new(),
        used_inputs: BTreeSet::new(),
    };
    c.program(&program);
    Analysis { findings: c.findings, plan: c.plan, ids: c.ids }
}

struct Checker<'a> {
    catalog: Option<&'a CatalogSnapshot>,
    findings: Vec<Finding>,
    plan: Vec<PlanItem>,
    ids: Vec<(String, String)>,
    declared: HashMap<String, Declared>,
    /// Loop variable name → loops declaring it.
    loop_vars: HashMap<String, Vec<String>>,
    /// Visible step ids, one frame per enclosing step list.
    frames: Vec<Vec<String>>,
    /// How many frames hold each visible id (the scope test without scanning the frames).
    visible: HashMap<String, usize>,
    containers: Vec<Container>,
    /// Loop variables in scope, innermost last, with the item shape.
    vars: Vec<(String, Shape)>,
    shapes: HashMap<String, Shape>,
    inputs: HashMap<String, Option<InputType>>,
    used_inputs: BTreeSet<String>,
}

impl Checker<'_> {
    fn report(&mut self, f: Finding) {
        self.findings.push(f);
    }

    fn program(&mut self, p: &Program) {
        for input in &p.inputs {
            self.inputs.insert(input.name.clone(), input.ty);
        }
        let mut containers = Vec::new();
        self.declare(&p.steps, &mut containers);
        self.frames.push(Vec::new());
        self.steps(&p.steps);
        if let Some((at, out)) = &p.output {
            self.template(out, at);
        }
        self.pop_frame();
        for input in &p.inputs {
            if !self.used_inputs.contains(&input.name) {
                self.report(
                    Finding::warning(
                        WfCode::UnusedInput,
                        input.path.clone(),
                        format!("input '{}' is never used", input.name),
                    )
                    .hint(format!("reference it as $.input.{}, or remove it from `inputs`", input.name)),
                );
            }
        }
    }

    /// Pre-pass: where every id is declared; duplicate and unusable ids.
    fn declare(&mut self, steps: &[Step], containers: &mut Vec<Container>) {
        for step in steps {
            if Signal::current().is_cancelled() {
                return;
            }
            if let Some(id) = &step.id {
                let id_path = ptr(&step.path, "id");
                self.ids.push((id.clone(), id_path.clone()));
                if !is_step_id(id) && pilotage::model::diagnostic::reserved_char(id).is_none() {
                    self.report(
                        Finding::error(
                            WfCode::MalformedStep,
                            id_path.clone(),
                            format!("'{id}' is not a usable step id"),
                        )
                        .hint("step ids use letters, digits, '_' and '-'"),
                    );
                }
                let kind = match step.body {
                    Body::Call { .. } => "call",
                    Body::Set { .. } => "set",
                    Body::Branch { .. } => "branch",
                    Body::Loop { .. } => "loop",
                    Body::Unknown => "unknown",
                };
                if let Some(first) = self.declared.get(id) {
                    let first = first.id_path.clone();
                    self.report(
                        Finding::error(
                            WfCode::DuplicateStepId,
                            id_path.clone(),
                            format!("step id '{id}' is already used at {first}"),
                        )
                        .hint("step ids are unique in the whole program, nested steps included: rename one"),
                    );
                } else {
                    self.declared
                        .insert(id.clone(), Declared { containers: containers.clone(), kind, id_path });
                }
            }
            match &step.body {
                Body::Branch { arms, .. } => {
                    for arm in arms {
                        if let (Some(branch), Some(label)) = (&step.id, &arm.label) {
                            containers.push(Container::Arm { branch: branch.clone(), label: label.clone() });
                            self.declare(&arm.steps, containers);
                            containers.pop();
                        } else {
                            self.declare(&arm.steps, containers);
                        }
                    }
                }
                Body::Loop { var, steps, .. } => {
                    let loop_id = step.id.clone().unwrap_or_default();
                    if let Some(var) = var {
                        self.loop_vars.entry(var.clone()).or_default().push(loop_id.clone());
                    }
                    containers.push(Container::Body { loop_id });
                    self.declare(steps, containers);
                    containers.pop();
                }
                _ => {}
            }
        }
    }

    /// Leave a step list: its ids go out of scope.
    fn pop_frame(&mut self) {
        for id in self.frames.pop().unwrap_or_default() {
            if let Some(n) = self.visible.get_mut(&id) {
                *n -= 1;
                if *n == 0 {
                    self.visible.remove(&id);
                }
            }
        }
    }

    fn plan_item(&self, id: &str, calls: Option<String>, risk: WfRisk) -> PlanItem {
        let arm = match self.containers.last() {
            Some(Container::Arm { branch, label }) => Some((branch.clone(), label.clone())),
            _ => None,
        };
        let in_loop = self.containers.iter().rev().find_map(|c| match c {
            Container::Body { loop_id } => Some(loop_id.clone()),
            Container::Arm { .. } => None,
        });
        PlanItem { id: id.to_owned(), calls, risk, arm, in_loop }
    }

    fn steps(&mut self, steps: &[Step]) {
        for step in steps {
            if Signal::current().is_cancelled() {
                return;
            }
            let id = step.id.clone().unwrap_or_default();
            let shape = self.step(step, &id);
            if !id.is_empty() {
                if let Some(frame) = self.frames.last_mut() {
                    frame.push(id.clone());
                    *self.visible.entry(id.clone()).or_default() += 1;
                }
                self.shapes.insert(id, shape);
            }
        }
    }

    /// Check one step; returns the shape of its output.
    fn step(&mut self, step: &Step, id: &str) -> Shape {
        let at = step.path.as_str();
        match &step.body {
            Body::Call { capability, with, with_present } => {
                let with_at = ptr(at, "with");
                let Some(name) = capability else {
                    self.template(&Json::Object(with.clone()), &with_at);
                    return None;
                };
                let entry = self.catalog.and_then(|c| c.get(name)).cloned();
                let Some(entry) = entry else {
                    let hint = self
                        .catalog
                        .map(|c| program::close(name, c.entries().iter().map(|e| e.id.as_str())))
                        .filter(|m| !m.is_empty())
                        .map(|m| format!("close match: {}", m.join(", ")));
                    self.report(
                        Finding::error(
                            WfCode::UnknownCapability,
                            ptr(at, "capability"),
                            format!("unknown capability '{name}'"),
                        )
                        .hint(hint.unwrap_or_else(|| {
                            "list the catalog (pilotage_catalog, verb list) for the capability ids".to_owned()
                        })),
                    );
                    self.template(&Json::Object(with.clone()), &with_at);
                    return None;
                };
                if !kind_named(&entry.kind).is_some_and(|k| k.callable()) {
                    self.report(
                        Finding::error(
                            WfCode::NotCallable,
                            ptr(at, "capability"),
                            format!("'{name}' is a {} entry: it cannot be called", entry.kind),
                        )
                        .hint("only capability entries are callable; look the dataset up in the catalog and write its values into the program"),
                    );
                    self.template(&Json::Object(with.clone()), &with_at);
                    return None;
                }
                self.arguments(name, &entry, with, *with_present, at);
                let risk = risk_named(&entry.risk);
                let item = self.plan_item(id, Some(name.clone()), risk);
                self.plan.push(item);
                entry.output_schema.clone()
            }
            Body::Set { value } => {
                let Some(value) = value else { return None };
                self.template(value, &ptr(at, "value"));
                let item = self.plan_item(id, None, WfRisk::Safe);
                self.plan.push(item);
                Some(literal_shape(value))
            }
            Body::Branch { on, arms } => {
                if let Some(on) = on {
                    self.reference(on, &ptr(at, "on"));
                }
                let item = self.plan_item(id, None, WfRisk::Safe);
                self.plan.push(item);
                self.arms(id, arms, at);
                None
            }
            Body::Loop { over, var, steps } => {
                let mut item_shape = None;
                if let Some(over) = over {
                    let shape = self.reference(over, &ptr(at, "over"));
                    match schema_type(shape.as_ref()) {
                        Some("array") | None => {
                            item_shape = shape.as_ref().and_then(|s| s.get("items")).cloned()
                        }
                        Some(other) => self.report(
                            Finding::error(
                                WfCode::TypeMismatch,
                                ptr(at, "over"),
                                format!("`over` must be a list, but {over} is {}", article(other)),
                            )
                            .hint("loop over an array, such as $.steps.tickets.output.tickets"),
                        ),
                    }
                }
                let item = self.plan_item(id, None, WfRisk::Safe);
                self.plan.push(item);
                self.containers.push(Container::Body { loop_id: id.to_owned() });
                self.vars.push((var.clone().unwrap_or_default(), item_shape));
                self.frames.push(Vec::new());
                self.steps(steps);
                self.pop_frame();
                self.vars.pop();
                self.containers.pop();
                None
            }
            Body::Unknown => None,
        }
    }

    fn arms(&mut self, branch: &str, arms: &[Arm], at: &str) {
        let mut labels: HashMap<&str, &str> = HashMap::new();
        let mut seen_equals: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut default_at: Option<&str> = None;
        for arm in arms {
            if let Some(label) = &arm.label {
                if let Some(first) = labels.get(label.as_str()) {
                    self.report(
                        Finding::error(
                            WfCode::DuplicateArmLabel,
                            ptr(&arm.path, "label"),
                            format!("branch '{branch}' already has an arm labelled '{label}' (at {first})"),
                        )
                        .hint("arm labels are unique within a branch: the trace names the arm taken by its label"),
                    );
                } else {
                    labels.insert(label, &arm.path);
                }
            }
            if let Some(d) = default_at {
                self.report(
                    Finding::warning(
                        WfCode::UnreachableArm,
                        arm.path.clone(),
                        "this arm comes after the default arm and never runs",
                    )
                    .hint(format!("move the default arm ({d}) last")),
                );
            } else if let Some(eq) = &arm.equals {
                if !seen_equals.insert(canonical(eq)) {
                    self.report(
                        Finding::warning(
                            WfCode::UnreachableArm,
                            ptr(&arm.path, "equals"),
                            format!("an earlier arm already matches {eq}: this arm never runs"),
                        )
                        .hint("arms are tried in order and the first match runs"),
                    );
                }
            } else {
                default_at = Some(&arm.path);
            }
        }
        if default_at.is_none() && !arms.is_empty() {
            self.report(
                Finding::error(WfCode::MissingDefaultArm, ptr(at, "arms"), format!("branch '{branch}' has no default arm"))
                    .hint("add a last arm without `equals`, e.g. {\"label\": \"otherwise\", \"steps\": []}: a branch always takes exactly one arm"),
            );
        }
        for arm in arms {
            match &arm.label {
                Some(label) => {
                    self.containers.push(Container::Arm { branch: branch.to_owned(), label: label.clone() });
                    self.frames.push(Vec::new());
                    self.steps(&arm.steps);
                    self.pop_frame();
                    self.containers.pop();
                }
                None => {
                    self.frames.push(Vec::new());
                    self.steps(&arm.steps);
                    self.pop_frame();
                }
            }
        }
    }

    fn arguments(
        &mut self,
        name: &str,
        entry: &CatalogEntry,
        with: &serde_json::Map<String, Json>,
        with_present: bool,
        at: &str,
    ) {
        let with_at = ptr(at, "with");
        let schema = entry.input_schema.clone().unwrap_or(Json::Null);
        let props = schema.get("properties").and_then(Json::as_object);
        let open =
            !matches!(schema.get("additionalProperties"), Some(Json::Bool(false)) | None) || props.is_none();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Json::as_array)
            .map(|r| r.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        for r in required.iter().filter(|r| !with.contains_key(**r)) {
            let ty = props
                .and_then(|p| p.get(*r))
                .and_then(|s| s.get("type"))
                .and_then(Json::as_str)
                .unwrap_or("value");
            let path = if with_present { with_at.clone() } else { at.to_owned() };
            self.report(
                Finding::error(WfCode::MissingArgument, path, format!("{name} requires the argument `{r}`"))
                    .hint(format!("add \"{r}\": <{ty}> to `with`")),
            );
        }
        for (key, value) in with {
            let key_at = ptr(&with_at, key);
            let shape = self.template(value, &key_at);
            let Some(props) = props else { continue };
            match props.get(key) {
                None if !open => {
                    let hint = close_hint(key, props.keys().map(String::as_str)).unwrap_or_else(|| {
                        let all: Vec<&str> = props.keys().map(String::as_str).collect();
                        if all.is_empty() {
                            format!("{name} takes no arguments")
                        } else {
                            format!("{name} takes: {}", all.join(", "))
                        }
                    });
                    self.report(
                        Finding::warning(
                            WfCode::UnexpectedArgument,
                            key_at,
                            format!("{name} has no argument `{key}`; it is ignored"),
                        )
                        .hint(hint),
                    );
                }
                Some(prop) => {
                    if let (Some(expected), Some(actual)) =
                        (schema_type(Some(prop)), schema_type(shape.as_ref()))
                    {
                        let literal =
                            !matches!(value, Json::String(s) if matches!(program::classify(s), Text::Ref(_)));
                        if !compatible(actual, expected, literal) {
                            self.report(
                                Finding::error(
                                    WfCode::TypeMismatch,
                                    key_at,
                                    format!(
                                        "`{key}` of {name} is {}, but this value is {}",
                                        article(expected),
                                        article(actual)
                                    ),
                                )
                                .hint(
                                    if expected == "string" && actual == "integer" {
                                        format!("quote it: \"{key}\": \"{value}\"")
                                    } else {
                                        format!("pass {} value", article(expected))
                                    },
                                ),
                            );
                        }
                    }
                }
                None => {}
            }
        }
    }

    /// Check every reference inside a template value; returns the value's shape.
    fn template(&mut self, v: &Json, at: &str) -> Shape {
        if let Json::String(s) = v {
            if let Text::Ref(_) = program::classify(s) {
                return self.reference(s, at);
            }
        }
        let mut refs = Vec::new();
        program::references(v, at, &mut refs);
        for (p, text) in refs {
            self.reference(text, &p);
        }
        Some(literal_shape(v))
    }

    /// Check one reference at `at`; returns what it is known to hold.
    fn reference(&mut self, text: &str, at: &str) -> Shape {
        let r = match program::classify(text) {
            Text::Ref(Ok(r)) => r,
            Text::Ref(Err(message)) => {
                self.report(Finding::error(WfCode::UnknownReference, at, message));
                return None;
            }
            Text::Literal(_) => return None,
        };
        let root_shape = match &r.root {
            Root::Input(name) => match self.inputs.get(name) {
                Some(ty) => {
                    self.used_inputs.insert(name.clone());
                    ty.map(|t| json!({"type": t.name()}))
                }
                None => {
                    let hint = close_hint(name, self.inputs.keys().map(String::as_str))
                        .unwrap_or_else(|| format!("declare it: \"inputs\": {{\"{name}\": \"string\"}}"));
                    self.report(
                        Finding::error(
                            WfCode::UnknownReference,
                            at,
                            format!("{text}: the program declares no input '{name}'"),
                        )
                        .hint(hint),
                    );
                    return None;
                }
            },
            Root::Var(name) => {
                match self.vars.iter().rev().find(|(n, _)| n == name) {
                    Some((_, shape)) => shape.clone(),
                    None => {
                        match self.loop_vars.get(name) {
                            Some(loops) => self.report(
                                Finding::error(
                                    WfCode::OutOfScope,
                                    at,
                                    format!(
                                        "{text}: $.vars.{name} exists only inside the body of loop '{}'",
                                        loops[0]
                                    ),
                                )
                                .hint("use the loop variable inside its loop body only"),
                            ),
                            None => {
                                let in_scope: Vec<&str> = self.vars.iter().map(|(n, _)| n.as_str()).collect();
                                let hint = close_hint(name, in_scope)
                                .unwrap_or_else(|| "loop variables are declared by a loop's `as` and exist inside its body".to_owned());
                                self.report(
                                    Finding::error(
                                        WfCode::UnknownReference,
                                        at,
                                        format!("{text}: no loop declares the variable '{name}'"),
                                    )
                                    .hint(hint),
                                );
                            }
                        }
                        return None;
                    }
                }
            }
            Root::Step(id) => {
                let Some(declared) = self.declared.get(id) else {
                    let hint = program::hints_left()
                        .then(|| close_hint(id, self.visible.keys().map(String::as_str)))
                        .flatten()
                        .unwrap_or_else(|| "reference a step that runs before this one".to_owned());
                    self.report(
                        Finding::error(
                            WfCode::UnknownReference,
                            at,
                            format!("{text}: the program has no step '{id}'"),
                        )
                        .hint(hint),
                    );
                    return None;
                };
                if !matches!(declared.kind, "call" | "set" | "unknown") {
                    self.report(
                        Finding::error(
                            WfCode::UnknownReference,
                            at,
                            format!("{text}: '{id}' is a {} step, which produces no output", declared.kind),
                        )
                        .hint("only call and set steps produce output; reference a step inside it instead (within its arm or body)"),
                    );
                    return None;
                }
                if !self.visible.contains_key(id) {
                    let why = match declared
                        .containers
                        .iter()
                        .zip(self.containers.iter())
                        .position(|(a, b)| a != b)
                    {
                        Some(i) => declared.containers[i].describe(),
                        None if declared.containers.len() > self.containers.len() => {
                            declared.containers[self.containers.len()].describe()
                        }
                        None => {
                            "declared at or after this point: a step sees only the steps that ran before it"
                                .to_owned()
                        }
                    };
                    let message = format!("{text}: step '{id}' is not in scope here ({why})");
                    self.report(
                        Finding::error(WfCode::OutOfScope, at, message).hint(
                            "a step's output is addressable only after it, in its own step list and the lists nested there; \
                             outputs inside an arm or loop body stay inside it (move the reference, or build the value with a set step inside)",
                        ),
                    );
                    return None;
                }
                self.shapes.get(id).cloned().flatten()
            }
            Root::Own(none) => match *none {},
        };
        self.walk(root_shape, &r, text, at)
    }

    /// Follow the member path of `r` through `shape`.
    fn walk(&mut self, mut shape: Shape, r: &Ref, text: &str, at: &str) -> Shape {
        for seg in &r.path {
            let s = shape?;
            match member(&s, seg) {
                Ok(next) => shape = next,
                Err((message, hint)) => {
                    self.report(
                        Finding::error(WfCode::UnknownField, at, format!("{text}: {message}"))
                            .maybe_hint(hint),
                    );
                    return None;
                }
            }
        }
        shape
    }
}

/// The schema of member `seg` of a value with schema `s`.
fn member(s: &Json, seg: &str) -> Result<Shape, (String, Option<String>)> {
    if let Some(props) = s.get("properties").and_then(Json::as_object) {
        if let Some(p) = props.get(seg) {
            return Ok(Some(p.clone()));
        }
        return match s.get("additionalProperties") {
            Some(Json::Bool(false)) | None => Err((
                format!("there is no member '{seg}'"),
                close_hint(seg, props.keys().map(String::as_str)).or_else(|| {
                    Some(format!("members: {}", props.keys().cloned().collect::<Vec<_>>().join(", ")))
                }),
            )),
            Some(extra @ Json::Object(_)) => Ok(Some(extra.clone())),
            Some(_) => Ok(None),
        };
    }
    match schema_type(Some(s)) {
        Some("array") if seg.parse::<usize>().is_ok() => Ok(s.get("items").cloned()),
        Some("array") => Err((
            format!("'{seg}' is not an index: the value is a list"),
            Some("index a list with a number, e.g. .0, or loop over it".to_owned()),
        )),
        Some("object") | None => Ok(None),
        Some(scalar) => Err((format!("the value is {} and has no member '{seg}'", article(scalar)), None)),
    }
}

/// `v`'s JSON text with object members sorted: equal values (objects compare regardless of
/// member order) have equal texts.
fn canonical(v: &Json) -> String {
    match v {
        Json::Object(o) => {
            let mut members: Vec<(&String, &Json)> = o.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> =
                members.iter().map(|(k, x)| format!("{}:{}", Json::from(k.as_str()), canonical(x))).collect();
            format!("{{{}}}", inner.join(","))
        }
        Json::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// The single `type` of a schema, when it has exactly one.
fn schema_type(s: Option<&Json>) -> Option<&str> {
    let s = s?;
    match s.get("type") {
        Some(Json::String(t)) => Some(t.as_str()),
        _ => match s.get("enum").and_then(Json::as_array) {
            Some(values) if !values.is_empty() => {
                let first = type_name(&values[0]);
                values.iter().all(|v| type_name(v) == first).then_some(first)
            }
            _ => None,
        },
    }
}

/// Whether a value of type `actual` fits `expected`. A reference of type `number` may hold an
/// integer; a literal cannot change its type.
fn compatible(actual: &str, expected: &str, literal: bool) -> bool {
    actual == expected
        || (actual == "integer" && expected == "number")
        || (!literal && actual == "number" && expected == "integer")
}

/// The schema of a literal template: objects are closed over their members; references inside
/// are unknown. At most [`MAX_SHAPE_NODES`] values are described; the rest are unknown (`{}`),
/// so a shape stays small however large the literal, and copying it per reference is cheap.
fn literal_shape(v: &Json) -> Json {
    let mut left = MAX_SHAPE_NODES;
    shape_within(v, &mut left)
}

/// Values of a literal its shape describes at most.
const MAX_SHAPE_NODES: usize = 256;

fn shape_within(v: &Json, left: &mut usize) -> Json {
    if *left == 0 {
        return json!({});
    }
    *left -= 1;
    match v {
        Json::String(s) if matches!(program::classify(s), Text::Ref(_)) => json!({}),
        Json::Object(o) if o.len() > *left => json!({"type": "object"}),
        Json::Object(o) => {
            let props: serde_json::Map<String, Json> =
                o.iter().map(|(k, x)| (k.clone(), shape_within(x, left))).collect();
            json!({"type": "object", "properties": props, "additionalProperties": false})
        }
        Json::Array(_) => json!({"type": "array"}),
        other => json!({"type": type_name(other)}),
    }
}
