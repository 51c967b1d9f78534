//! Validation (names, arguments, references and the scope rule) and plan derivation.
//!
//! The plan has one step per program step, in document order, arms and loop bodies included:
//! `call` steps carry their action's risk and `calls`; `run` steps carry the promoted entry's
//! declared risk (level and hints) and `calls` = the program_ref; `set`, `branch` and `loop`
//! steps are `safe` and carry no `calls`.

use std::collections::{BTreeMap, BTreeSet};

use pilotage::engine::{CatalogSnapshot, Signal};
use pilotage::prelude::*;
use serde_json::Map;

use super::program::{
    self, classify, close_hint, ptr, references, Body, Finding, InputType, Program, Ref, Root, Step, Test,
    Text, Whole,
};
use super::{AutoCode, AutoKind, AutoRisk};

/// The members of the context (see `context.schema.json`).
pub const CONTEXT_MEMBERS: [&str; 2] = ["timezone", "operator"];

/// The risk level named `name` (`write` for an unknown name: never safer than it could be).
pub fn risk_named(name: &str) -> AutoRisk {
    match name {
        "safe" => AutoRisk::Safe,
        "destructive" => AutoRisk::Destructive,
        "external" => AutoRisk::External,
        _ => AutoRisk::Write,
    }
}

fn kind_of(e: &CatalogEntry) -> Option<AutoKind> {
    match e.kind.as_str() {
        "action" => Some(AutoKind::Action),
        "event" => Some(AutoKind::Event),
        "routine" => Some(AutoKind::Routine),
        _ => None,
    }
}

fn ids_of(snapshot: &CatalogSnapshot, kind: AutoKind) -> Vec<&str> {
    snapshot.entries().iter().filter(|e| kind_of(e) == Some(kind)).map(|e| e.id.as_str()).collect()
}

/// Validate `doc`, reporting findings and plan steps on `v`.
pub fn validate(doc: &Json, v: &mut Validation<AutoCode, AutoRisk>) {
    program::begin_hints();
    let (program, findings) = program::parse(doc);
    let snapshot = v.snapshot();
    let empty = CatalogSnapshot::new(Vec::new());
    let snapshot = snapshot.as_deref().unwrap_or(&empty);
    let mut c = Checker::new(&program, snapshot);
    c.findings = findings;
    c.check_program(&program);
    for f in c.findings {
        f.report(v);
    }
    for id in &c.reserved {
        v.step_id(&id.0, id.1.as_str());
    }
    for p in c.plan {
        let step = v.step(p.id, p.risk);
        if let Some(calls) = p.calls {
            step.calls(calls);
        }
        if let Some((b, l)) = p.arm {
            step.arm(b, l);
        }
        if let Some(l) = p.in_loop {
            step.in_loop(l);
        }
        if let Some(h) = p.hints {
            step.risk_hints = h;
        }
        if let Some(r) = p.risk_name {
            step.risk = r;
        }
    }
}

/// A plan step before it is handed to the runtime.
struct PlanItem {
    id: String,
    risk: AutoRisk,
    /// The promoted entry's declared risk, which a `run` step carries as is.
    risk_name: Option<String>,
    hints: Option<RiskHints>,
    calls: Option<String>,
    arm: Option<(String, String)>,
    in_loop: Option<String>,
}

/// What a step id names, for reference checks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Produces {
    Output,
    Nothing,
}

/// Where a step sits: its innermost arm and innermost loop.
#[derive(Clone, Default)]
struct Nesting {
    arm: Option<(String, String)>,
    in_loop: Option<String>,
}

/// What a step can see.
#[derive(Clone, Default)]
struct Scope {
    steps: BTreeSet<String>,
    vars: Vec<String>,
}

struct Checker<'a> {
    snapshot: &'a CatalogSnapshot,
    inputs: BTreeMap<String, Option<InputType>>,
    /// Every step id of the program and whether it produces an output.
    all: BTreeMap<String, Produces>,
    /// Every loop variable name some loop declares.
    all_vars: BTreeSet<String>,
    /// The payload properties of the trigger's event, when the program has a valid trigger.
    event: Option<Option<Vec<String>>>,
    used_inputs: BTreeSet<String>,
    seen_ids: BTreeSet<String>,
    findings: Vec<Finding>,
    reserved: Vec<(String, String)>,
    plan: Vec<PlanItem>,
    /// Each catalog tool argument's schema, compiled once per validation (a long program calls
    /// the same tools many times), keyed by tool and argument; `None` when it does not compile.
    argument_checks: BTreeMap<(String, String), Option<jsonschema::Validator>>,
}

fn collect(steps: &[Step], all: &mut BTreeMap<String, Produces>, vars: &mut BTreeSet<String>) {
    for s in steps {
        let produces = match &s.body {
            Body::Call { .. } | Body::Set { .. } | Body::Run { .. } => Produces::Output,
            _ => Produces::Nothing,
        };
        if let Some(id) = &s.id {
            all.entry(id.clone()).or_insert(produces);
        }
        match &s.body {
            Body::Branch { arms, .. } => {
                for a in arms {
                    collect(&a.steps, all, vars);
                }
            }
            Body::Loop { steps, var, .. } => {
                vars.extend(var.clone());
                collect(steps, all, vars);
            }
            _ => {}
        }
    }
}

impl<'a> Checker<'a> {
    fn new(program: &Program, snapshot: &'a CatalogSnapshot) -> Self {
        let mut all = BTreeMap::new();
        let mut all_vars = BTreeSet::new();
        collect(&program.steps, &mut all, &mut all_vars);
        Checker {
            snapshot,
            inputs: program.inputs.iter().map(|i| (i.name.clone(), i.ty)).collect(),
            all,
            all_vars,
            event: None,
            used_inputs: BTreeSet::new(),
            seen_ids: BTreeSet::new(),
            findings: Vec::new(),
            reserved: Vec::new(),
            plan: Vec::new(),
            argument_checks: BTreeMap::new(),
        }
    }

    fn report(&mut self, f: Finding) {
        self.findings.push(f);
    }

    fn check_program(&mut self, program: &Program) {
        if let Some(t) = &program.trigger {
            self.event = Some(None);
            if let Some(e) = &t.event {
                match self.snapshot.get(e) {
                    Some(entry) if kind_of(entry) == Some(AutoKind::Event) => {
                        let props = entry
                            .output_schema
                            .as_ref()
                            .and_then(|s| s.get("properties"))
                            .and_then(Json::as_object)
                            .map(|p| p.keys().cloned().collect())
                            .unwrap_or_default();
                        self.event = Some(Some(props));
                    }
                    Some(entry) => {
                        let f = Finding::error(
                            AutoCode::UnknownEvent,
                            t.path.clone(),
                            format!("'{e}' is an {} entry, not an event", entry.kind),
                        )
                        .maybe_hint(close_hint(e, ids_of(self.snapshot, AutoKind::Event)));
                        self.report(f);
                    }
                    None => {
                        let hint =
                            close_hint(e, ids_of(self.snapshot, AutoKind::Event)).unwrap_or_else(|| {
                                format!("events are: {}", ids_of(self.snapshot, AutoKind::Event).join(", "))
                            });
                        self.report(
                            Finding::error(
                                AutoCode::UnknownEvent,
                                t.path.clone(),
                                format!("no event '{e}' in your catalog"),
                            )
                            .hint(hint),
                        );
                    }
                }
            }
        }
        let mut scope = Scope::default();
        self.steps(&program.steps, &mut scope, &Nesting::default());
        if let Some(output) = &program.output {
            self.refs_in(output, "/output", &scope);
        }
        for input in &program.inputs {
            if !self.used_inputs.contains(&input.name) {
                self.report(
                    Finding::warning(
                        AutoCode::UnusedInput,
                        input.path.clone(),
                        format!("input '{}' is declared but never referenced", input.name),
                    )
                    .hint(format!("use it as $.input.{}, or remove it from `inputs`", input.name)),
                );
            }
        }
    }

    /// Check `steps` in order; returns the ids it added to `scope` (each visible to the steps
    /// after it).
    fn steps(&mut self, steps: &[Step], scope: &mut Scope, nesting: &Nesting) -> Vec<String> {
        let mut added = Vec::new();
        for step in steps {
            if Signal::current().is_cancelled() {
                break;
            }
            self.step(step, scope, nesting);
            if let (Some(id), Body::Call { .. } | Body::Set { .. } | Body::Run { .. }) =
                (&step.id, &step.body)
            {
                if scope.steps.insert(id.clone()) {
                    added.push(id.clone());
                }
            }
        }
        added
    }

    /// Check a nested step list (an arm, a loop body) in `scope` plus `var`, then restore
    /// `scope`: what the list declares stays inside it. No copy of the scope per list, so
    /// validation stays linear in the program's size.
    fn nested(&mut self, steps: &[Step], scope: &mut Scope, nesting: &Nesting, var: Option<String>) {
        let vars = scope.vars.len();
        scope.vars.extend(var);
        for id in self.steps(steps, scope, nesting) {
            scope.steps.remove(&id);
        }
        scope.vars.truncate(vars);
    }

    fn step(&mut self, step: &Step, scope: &mut Scope, nesting: &Nesting) {
        let id = step.id.clone().unwrap_or_default();
        if let Some(sid) = &step.id {
            let at = ptr(&step.path, "id");
            if program::is_step_id(sid) || sid.contains(['#', '/']) {
                if sid.contains(['#', '/']) {
                    self.reserved.push((sid.clone(), at.clone()));
                }
            } else {
                self.report(
                    Finding::error(
                        AutoCode::MalformedStep,
                        at.clone(),
                        format!("'{sid}' is not a usable step id"),
                    )
                    .hint("step ids use letters, digits, '_' and '-'"),
                );
            }
            if !self.seen_ids.insert(sid.clone()) {
                self.report(
                    Finding::error(
                        AutoCode::DuplicateStepId,
                        at,
                        format!("the step id '{sid}' is already used"),
                    )
                    .hint("step ids are unique in the whole program, nested steps included"),
                );
            }
        }
        let mut item = PlanItem {
            id: id.clone(),
            risk: AutoRisk::Safe,
            risk_name: None,
            hints: None,
            calls: None,
            arm: nesting.arm.clone(),
            in_loop: nesting.in_loop.clone(),
        };
        match &step.body {
            Body::Call { action, with } => {
                self.refs_in(&Json::Object(with.clone()), &ptr(&step.path, "with"), scope);
                if let Some(a) = action {
                    item.calls = Some(a.clone());
                    if let Some(entry) = self.callee(a, AutoKind::Action, &ptr(&step.path, "call")) {
                        item.risk = risk_named(&entry.risk);
                        let schema = entry.input_schema.clone().unwrap_or(json!({"type": "object"}));
                        self.arguments(&schema, with, &step.path, a);
                    }
                }
            }
            Body::Run { routine, with } => {
                self.refs_in(&Json::Object(with.clone()), &ptr(&step.path, "with"), scope);
                if let Some(r) = routine {
                    item.calls = Some(r.clone());
                    if let Some(entry) = self.callee(r, AutoKind::Routine, &ptr(&step.path, "run")) {
                        item.risk = risk_named(&entry.risk);
                        item.risk_name = Some(entry.risk.clone());
                        item.hints = Some(entry.risk_hints);
                        let schema = entry.input_schema.clone().unwrap_or(json!({"type": "object"}));
                        self.arguments(&schema, with, &step.path, r);
                    }
                }
            }
            Body::Set { value } => self.refs_in(value, &ptr(&step.path, "set"), scope),
            Body::Branch { on, arms } => {
                if let Some(on) = on {
                    self.check_ref(on, &ptr(&step.path, "branch"), scope);
                }
                self.plan.push(item);
                let mut labels = BTreeSet::new();
                let defaults: Vec<usize> = arms
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.test == Test::Default)
                    .map(|(i, _)| i)
                    .collect();
                match defaults.as_slice() {
                    [] if !arms.is_empty() => self.report(
                        Finding::error(
                            AutoCode::MalformedArms,
                            ptr(&step.path, "arms"),
                            "no arm is the default: a branch must always take exactly one arm",
                        )
                        .hint("add a last arm without `equals`, `above` or `below`"),
                    ),
                    [one] if *one + 1 != arms.len() => self.report(
                        Finding::error(
                            AutoCode::MalformedArms,
                            arms[*one].path.clone(),
                            "the default arm (no test) must be the last arm: arms after it never run",
                        )
                        .hint("move this arm to the end"),
                    ),
                    [_, more @ ..] if !more.is_empty() => {
                        for i in more {
                            self.report(
                                Finding::error(
                                    AutoCode::MalformedArms,
                                    arms[*i].path.clone(),
                                    "a branch has exactly one default arm (an arm without a test)",
                                )
                                .hint("give this arm `equals`, `above` or `below`"),
                            );
                        }
                    }
                    _ => {}
                }
                for arm in arms {
                    let Some(label) = &arm.label else { continue };
                    if !labels.insert(label.clone()) {
                        self.report(
                            Finding::error(
                                AutoCode::MalformedArms,
                                ptr(&arm.path, "label"),
                                format!("two arms of '{id}' are labelled '{label}'"),
                            )
                            .hint("arm labels are unique within a branch"),
                        );
                    }
                    let inner =
                        Nesting { arm: Some((id.clone(), label.clone())), in_loop: nesting.in_loop.clone() };
                    self.nested(&arm.steps, scope, &inner, None);
                }
                return;
            }
            Body::Loop { over, var, steps } => {
                match over {
                    Some(Json::String(r)) => {
                        self.check_ref(r, &ptr(&step.path, "loop"), scope);
                        if let Text::Ref(Ok(Ref { root: Root::Input(name), path })) = classify(r) {
                            if let (true, Some(Some(ty))) = (path.is_empty(), self.inputs.get(&name)) {
                                if *ty != InputType::Array {
                                    self.report(Finding::error(
                                        AutoCode::TypeMismatch,
                                        ptr(&step.path, "loop"),
                                        format!(
                                            "input '{name}' is declared {}, and a loop runs over a list",
                                            ty.name()
                                        ),
                                    ));
                                }
                            }
                        }
                    }
                    Some(other) => self.refs_in(other, &ptr(&step.path, "loop"), scope),
                    None => {}
                }
                self.plan.push(item);
                let inner = Nesting { arm: None, in_loop: Some(id.clone()) };
                self.nested(steps, scope, &inner, var.clone());
                return;
            }
            Body::Unknown => return,
        }
        self.plan.push(item);
    }

    /// The entry a `call` (`want` = action) or `run` (`want` = routine) names, if usable.
    fn callee(&mut self, name: &str, want: AutoKind, at: &str) -> Option<CatalogEntry> {
        let entry = self.snapshot.get(name).cloned();
        let (code, what) = match want {
            AutoKind::Routine => (AutoCode::UnknownRoutine, "promoted program"),
            _ => (AutoCode::UnknownAction, "action"),
        };
        match entry.as_ref().and_then(kind_of) {
            Some(k) if k == want => entry,
            Some(AutoKind::Routine) => {
                self.report(
                    Finding::error(AutoCode::NotCallable, at, format!("'{name}' is a promoted program, not an action"))
                        .hint(format!("run a promoted program with a `run` step: {{\"id\": ..., \"run\": \"{name}\", \"with\": {{...}}}}")),
                );
                None
            }
            Some(AutoKind::Action) => {
                self.report(
                    Finding::error(
                        AutoCode::NotCallable,
                        at,
                        format!("'{name}' is an action, not a promoted program"),
                    )
                    .hint(format!(
                        "call an action with a `call` step: {{\"id\": ..., \"call\": \"{name}\"}}"
                    )),
                );
                None
            }
            Some(AutoKind::Event) => {
                self.report(
                    Finding::error(AutoCode::NotCallable, at, format!("'{name}' is an event: steps cannot call events"))
                        .hint(format!("events start rules: write \"trigger\": {{\"event\": \"{name}\"}} and deploy the program")),
                );
                None
            }
            None => {
                let hint = program::hints_left()
                    .then(|| close_hint(name, ids_of(self.snapshot, want)))
                    .flatten()
                    .unwrap_or_else(|| {
                        format!(
                            "list them with pilotage_catalog (verb list, kind {})",
                            match want {
                                AutoKind::Routine => "routine",
                                _ => "action",
                            }
                        )
                    });
                self.report(
                    Finding::error(code, at, format!("no {what} '{name}' in your catalog")).hint(hint),
                );
                None
            }
        }
    }

    /// Check `with` against the callee's `input_schema`: required members, unknown members,
    /// literal values and typed input references.
    /// The first fault of `literal` against argument `k`'s schema `prop` of `callee`.
    fn argument_fault(&mut self, callee: &str, k: &str, prop: &Json, literal: &Json) -> Option<String> {
        let check = self
            .argument_checks
            .entry((callee.to_owned(), k.to_owned()))
            .or_insert_with(|| jsonschema::validator_for(prop).ok());
        check.as_ref()?.iter_errors(literal).next().map(|e| e.to_string())
    }

    fn arguments(&mut self, schema: &Json, with: &Map<String, Json>, step: &str, callee: &str) {
        let props = schema.get("properties").and_then(Json::as_object).cloned().unwrap_or_default();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .collect();
        let closed = schema.get("additionalProperties") == Some(&json!(false));
        let at = ptr(step, "with");
        for r in required {
            if !with.contains_key(r) {
                self.report(
                    Finding::error(
                        AutoCode::MissingArgument,
                        at.clone(),
                        format!("'{callee}' requires the argument `{r}`"),
                    )
                    .hint(format!(
                        "add \"{r}\" to `with` (see the input_schema of '{callee}' in the catalog)"
                    )),
                );
            }
        }
        for (k, value) in with {
            let vat = ptr(&at, k);
            let Some(prop) = props.get(k) else {
                if closed {
                    let names: Vec<&str> = props.keys().map(String::as_str).collect();
                    let hint = close_hint(k, names.iter().copied())
                        .unwrap_or_else(|| format!("'{callee}' takes: {}", names.join(", ")));
                    self.report(
                        Finding::error(
                            AutoCode::UnexpectedArgument,
                            vat,
                            format!("'{callee}' takes no argument `{k}`"),
                        )
                        .hint(hint),
                    );
                }
                continue;
            };
            let mut refs = Vec::new();
            references(value, &vat, &mut refs);
            if refs.is_empty() {
                let literal = unescape(value);
                if let Some(e) = self.argument_fault(callee, k, prop, &literal) {
                    self.report(Finding::error(
                        AutoCode::TypeMismatch,
                        vat,
                        format!("argument `{k}` of '{callee}': {e}"),
                    ));
                }
            } else if let Json::String(s) = value {
                if let Text::Ref(Ok(Ref { root: Root::Input(name), path })) = classify(s) {
                    let want = prop.get("type").and_then(Json::as_str);
                    if let (true, Some(Some(ty)), Some(want)) =
                        (path.is_empty(), self.inputs.get(&name), want)
                    {
                        let fits = ty.name() == want || (want == "number" && *ty == InputType::Integer);
                        if !fits {
                            self.report(Finding::error(
                                AutoCode::TypeMismatch,
                                vat,
                                format!("argument `{k}` of '{callee}' is {want}, and input '{name}' is declared {}", ty.name()),
                            ));
                        }
                    }
                }
            }
        }
    }

    fn refs_in(&mut self, v: &Json, at: &str, scope: &Scope) {
        let mut refs = Vec::new();
        references(v, at, &mut refs);
        for (path, text) in refs {
            self.check_ref(text, &path, scope);
        }
    }

    fn check_ref(&mut self, text: &str, at: &str, scope: &Scope) {
        let r = match classify(text) {
            Text::Literal(_) => return,
            Text::Ref(Err(e)) => {
                self.report(Finding::error(AutoCode::UnknownReference, at, e));
                return;
            }
            Text::Ref(Ok(r)) => r,
        };
        match &r.root {
            Root::Input(name) => {
                if self.inputs.contains_key(name) {
                    self.used_inputs.insert(name.clone());
                } else {
                    let hint = program::hints_left()
                        .then(|| close_hint(name, self.inputs.keys().map(String::as_str)))
                        .flatten()
                        .unwrap_or_else(|| {
                            format!("declare it in `inputs`: \"inputs\": {{\"{name}\": \"string\"}}")
                        });
                    self.report(
                        Finding::error(
                            AutoCode::UnknownReference,
                            at,
                            format!("{text}: no input '{name}' is declared"),
                        )
                        .hint(hint),
                    );
                }
            }
            Root::Step(id) => {
                if scope.steps.contains(id) {
                    return;
                }
                match self.all.get(id) {
                    Some(Produces::Output) => self.report(
                        Finding::error(
                            AutoCode::OutOfScope,
                            at,
                            format!("{text}: step '{id}' exists but its output is not visible here"),
                        )
                        .hint("a step sees the outputs of earlier steps of its own list and of the lists enclosing it; outputs made inside an arm or a loop body stay inside it (closed-sets guide, Scope rules)"),
                    ),
                    Some(Produces::Nothing) => self.report(
                        Finding::error(AutoCode::UnknownReference, at, format!("{text}: '{id}' is a branch or loop step"))
                            .hint("branch and loop steps produce no output"),
                    ),
                    None => {
                        let hint = program::hints_left()
                            .then(|| close_hint(id, self.all.keys().map(String::as_str)))
                            .flatten();
                        let f = Finding::error(AutoCode::UnknownReference, at, format!("{text}: no step '{id}'"))
                            .maybe_hint(hint);
                        self.report(f);
                    }
                }
            }
            Root::Var(name) => {
                if scope.vars.contains(name) {
                    return;
                }
                if self.all_vars.contains(name) {
                    self.report(
                        Finding::error(AutoCode::OutOfScope, at, format!("{text}: '{name}' exists only inside its loop's steps"))
                            .hint("a loop variable is visible in the body of the loop that declares it (`as`), nested lists included"),
                    );
                } else {
                    let f = Finding::error(
                        AutoCode::UnknownReference,
                        at,
                        format!("{text}: no loop declares '{name}'"),
                    )
                    .maybe_hint(close_hint(name, scope.vars.iter().map(String::as_str)));
                    self.report(f);
                }
            }
            Root::Own(Whole::Event) => match &self.event {
                None => self.report(
                    Finding::error(
                        AutoCode::UnknownReference,
                        at,
                        format!("{text}: this program has no `trigger`, so no event"),
                    )
                    .hint("only a rule (a program with \"trigger\": {\"event\": ...}) reads $.event"),
                ),
                Some(Some(props)) => {
                    if let Some(first) = r.path.first() {
                        if !props.contains(first) {
                            let f = Finding::error(
                                AutoCode::UnknownReference,
                                at,
                                format!(
                                    "{text}: the event's payload has no member '{first}' (it has: {})",
                                    props.join(", ")
                                ),
                            )
                            .maybe_hint(close_hint(first, props.iter().map(String::as_str)));
                            self.report(f);
                        }
                    }
                }
                Some(None) => {}
            },
            Root::Own(Whole::Context) => {
                if let Some(first) = r.path.first() {
                    if !CONTEXT_MEMBERS.contains(&first.as_str()) {
                        let f = Finding::error(
                            AutoCode::UnknownReference,
                            at,
                            format!(
                                "{text}: the context has no member '{first}' (it has: {})",
                                CONTEXT_MEMBERS.join(", ")
                            ),
                        )
                        .maybe_hint(close_hint(first, CONTEXT_MEMBERS));
                        self.report(f);
                    }
                }
            }
        }
    }
}

/// A literal template value with `$$` escapes undone (it contains no references).
pub fn unescape(v: &Json) -> Json {
    match v {
        Json::String(s) => match classify(s) {
            Text::Literal(l) => Json::String(l.to_owned()),
            Text::Ref(_) => v.clone(),
        },
        Json::Array(a) => Json::Array(a.iter().map(unescape).collect()),
        Json::Object(o) => Json::Object(o.iter().map(|(k, x)| (k.clone(), unescape(x))).collect()),
        other => other.clone(),
    }
}
