//! Execution: immediate evaluation, rule installation (deploy), side-effect-free test runs,
//! and the firing of installed rules by `emit_event`. Every step is recorded through `Run`.
//!
//! A failing step ends the Run. Its run-level status: `timeout` when a device did not answer;
//! the step's own `not_found`, `denied`, `rejected`, `stale` or `mode_mismatch` when nothing
//! changed the building before it; `error` for a reference without a value when nothing changed
//! the building before it; `partial` otherwise (earlier steps had effects), and at a resource
//! bound.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pilotage::engine::Caller;
use pilotage::engine::CatalogSnapshot;
use pilotage::engine::Failure;
use pilotage::engine::ValidateRequest;
use pilotage::model::declaration::ExecutionMode;
use pilotage::prelude::*;
use serde_json::Map;

use super::check;
use super::program::{self, short, type_name, Arm, Body, Program, Root, Step, Test, Whole};
use super::world::{ActionError, Rule, World};
use super::{AutoCode, AutoRisk, AutoStatus};

/// How deep promoted programs may call promoted programs (the expansion-depth bound).
pub const MAX_EXPANSION: usize = 4;
/// Loop iterations one Run may perform in total (beside the runtime's step bound).
pub const MAX_ITERATIONS: usize = 100_000;

/// The world a Run acts on: the live one, or a private copy (test runs).
pub enum Target<'w> {
    Live(&'w Mutex<World>),
    Scratch(Box<World>),
}

fn lock(m: &Mutex<World>) -> MutexGuard<'_, World> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Target<'_> {
    fn call(&mut self, action: &str, args: &Json) -> Result<Json, ActionError> {
        match self {
            Target::Live(m) => lock(m).call(action, args),
            Target::Scratch(w) => w.call(action, args),
        }
    }
}

/// The failure class of a step.
#[derive(Clone, Copy, Debug)]
enum Fail {
    Status(AutoStatus),
    /// A reference without a value, a loop over something that is not a list.
    Error,
}

impl Fail {
    fn failure(self) -> Failure<AutoStatus> {
        match self {
            Fail::Status(s) => Failure::Engine(s),
            Fail::Error => Failure::Error,
        }
    }
}

enum Stop {
    Failed { fail: Fail, message: String },
    Bound,
}

type Flow = Result<(), Stop>;

/// The values one program (or sub-program) sees.
#[derive(Default)]
struct Frame {
    inputs: Map<String, Json>,
    event: Option<Json>,
    context: Option<Json>,
    outputs: HashMap<String, Json>,
    vars: Vec<(String, Json)>,
}

/// One evaluation.
pub struct Exec<'r, 'w> {
    run: &'r mut Run<AutoStatus>,
    world: Target<'w>,
    catalog: CatalogSnapshot,
    caller: Caller,
    test_run: bool,
    frame: Frame,
    /// An action with effects succeeded (never in a test run).
    effects: bool,
    depth: usize,
    iterations: usize,
}

/// Execute a validated program (the `execute` loop tool).
pub fn execute(world: &Mutex<World>, doc: &Json, run: &mut Run<AutoStatus>) -> Finish<AutoStatus> {
    let (program, findings) = program::parse(doc);
    if program::has_errors(&findings) {
        return Finish::error("the program does not parse (it should have failed validation)");
    }
    let test = if run.is_test_run() { " (test_run applies the same rule)" } else { "" };
    match (run.mode(), program.trigger.is_some()) {
        (ExecutionMode::Deploy, false) => {
            return Finish::failed(
                AutoStatus::ModeMismatch,
                format!(
                    "mode \"deploy\" installs a rule, and a rule needs a `trigger` ({{\"event\": ...}}): add one, or execute with mode \"immediate\" to run the steps now{test}"
                ),
            )
        }
        (ExecutionMode::Immediate, true) => {
            return Finish::failed(
                AutoStatus::ModeMismatch,
                format!(
                    "this program has a `trigger`, so it is a rule: execute it with mode \"deploy\" to install it (add test_run: true to try its body now without effects), or remove `trigger` to run the steps now{test}"
                ),
            )
        }
        _ => {}
    }
    let Some(inputs) = bind_inputs(&program, run) else {
        return Finish::error("the input does not fit the program's `inputs`");
    };
    let context = run.context().cloned();
    if run.mode() == ExecutionMode::Deploy && !run.is_test_run() {
        return install(world, doc, &program, inputs, context, run);
    }
    let catalog = run.catalog().cloned().unwrap_or_else(|| CatalogSnapshot::new(Vec::new()));
    let event = program
        .trigger
        .as_ref()
        .and_then(|t| t.event.as_deref())
        .map(|e| synthetic_event(catalog.get(e).and_then(|x| x.output_schema.as_ref())));
    let target =
        if run.is_test_run() { Target::Scratch(Box::new(lock(world).clone())) } else { Target::Live(world) };
    let caller = run.caller().clone();
    let test_run = run.is_test_run();
    let mut exec = Exec {
        run,
        world: target,
        catalog,
        caller,
        test_run,
        frame: Frame { inputs, event, context, ..Frame::default() },
        effects: false,
        depth: 0,
        iterations: 0,
    };
    exec.program(&program)
}

/// Fire one installed rule on the live world for `event` (`emit_event`), recording into `run`.
pub fn fire(
    world: &Mutex<World>,
    rule: &Rule,
    payload: &Json,
    run: &mut Run<AutoStatus>,
) -> Finish<AutoStatus> {
    let (program, findings) = program::parse(&rule.body);
    if program::has_errors(&findings) {
        return Finish::error("the rule body does not parse");
    }
    let catalog = run.catalog().cloned().unwrap_or_else(|| CatalogSnapshot::new(Vec::new()));
    let caller = run.caller().clone();
    let mut exec = Exec {
        run,
        world: Target::Live(world),
        catalog,
        caller,
        test_run: false,
        frame: Frame {
            inputs: rule.inputs.clone(),
            event: Some(payload.clone()),
            context: rule.context.clone(),
            ..Frame::default()
        },
        effects: false,
        depth: 0,
        iterations: 0,
    };
    exec.program(&program)
}

/// The synthetic event payload of a test run: each payload property's first `examples` value
/// (or the empty value of its type).
pub fn synthetic_event(schema: Option<&Json>) -> Json {
    let props =
        schema.and_then(|s| s.get("properties")).and_then(Json::as_object).cloned().unwrap_or_default();
    let payload: Map<String, Json> = props
        .into_iter()
        .map(|(k, p)| {
            let v = p.get("examples").and_then(|e| e.get(0)).cloned().unwrap_or_else(|| {
                match p.get("type").and_then(Json::as_str) {
                    Some("number" | "integer") => json!(0),
                    Some("boolean") => json!(false),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => json!(""),
                }
            });
            (k, v)
        })
        .collect();
    Json::Object(payload)
}

/// Install `program` as a rule: the trace is one `install` entry; the output is the rule.
fn install(
    world: &Mutex<World>,
    doc: &Json,
    program: &Program,
    inputs: Map<String, Json>,
    context: Option<Json>,
    run: &mut Run<AutoStatus>,
) -> Finish<AutoStatus> {
    let event = program.trigger.as_ref().and_then(|t| t.event.clone()).unwrap_or_default();
    let mut routines = BTreeMap::new();
    capture_routines(&program.steps, run, &mut routines, 0);
    let rule_id = {
        let mut w = lock(world);
        let rule_id = format!("rule_{}", w.next_rule);
        w.next_rule += 1;
        w.rules.push(Rule {
            rule_id: rule_id.clone(),
            event: event.clone(),
            body: doc.clone(),
            inputs: inputs.clone(),
            context,
            routines,
        });
        rule_id
    };
    let output = json!({"rule_id": rule_id, "event": event});
    run.step("install")
        .input(json!({"trigger": {"event": event}, "input": inputs}))
        .output(output.clone())
        .succeeded();
    Finish::output(output)
}

/// The bodies of the promoted programs `steps` runs (transitively), for a rule to fire later.
fn capture_routines(
    steps: &[Step],
    run: &Run<AutoStatus>,
    out: &mut BTreeMap<String, (Arc<Json>, CatalogEntry)>,
    depth: usize,
) {
    for s in steps {
        match &s.body {
            Body::Run { routine: Some(r), .. } if depth <= MAX_EXPANSION => {
                let entry = run.catalog().and_then(|c| c.get(r)).cloned();
                if let (Some(body), Some(entry)) = (run.promoted(r), entry) {
                    if out.insert(r.clone(), (body.clone(), entry)).is_none() {
                        let (p, _) = program::parse(&body);
                        capture_routines(&p.steps, run, out, depth + 1);
                    }
                }
            }
            Body::Branch { arms, .. } => {
                for a in arms {
                    capture_routines(&a.steps, run, out, depth);
                }
            }
            Body::Loop { steps, .. } => capture_routines(steps, run, out, depth),
            _ => {}
        }
    }
}

/// The parameter-binding convention: `input` is an object with exactly the declared names,
/// each of its declared type. Every misfit is reported; `None` when there was one.
fn bind_inputs(program: &Program, run: &mut Run<AutoStatus>) -> Option<Map<String, Json>> {
    match bind(program, run.input()) {
        Ok(m) => Some(m),
        Err(misfits) => {
            for (path, message) in misfits {
                run.reject_input(path, message);
            }
            None
        }
    }
}

/// `input` against `program.inputs`: the bound values, or every misfit (pointer into `input`,
/// message).
fn bind(program: &Program, input: Option<&Json>) -> Result<Map<String, Json>, Vec<(String, String)>> {
    let declared: Vec<String> =
        program.inputs.iter().map(|i| format!("{}: {}", i.name, i.ty.map_or("?", |t| t.name()))).collect();
    let supplied = match input {
        None if program.inputs.is_empty() => return Ok(Map::new()),
        None => {
            return Err(vec![(
                String::new(),
                format!(
                    "this program declares inputs ({}): supply `input` as an object",
                    declared.join(", ")
                ),
            )])
        }
        Some(Json::Object(m)) => m.clone(),
        Some(other) => {
            return Err(vec![(
                String::new(),
                format!("`input` is an object of name → value, not {}", type_name(other)),
            )])
        }
    };
    let mut misfits = Vec::new();
    for input in &program.inputs {
        let at = program::ptr("", &input.name);
        match (supplied.get(&input.name), input.ty) {
            (None, ty) => misfits.push((
                at,
                format!(
                    "the declared input '{}' ({}) is missing",
                    input.name,
                    ty.map_or("value", |t| t.name())
                ),
            )),
            (Some(v), Some(ty)) if !ty.admits(v) => misfits.push((
                at,
                format!(
                    "input '{}' is declared {}, but {} was supplied",
                    input.name,
                    ty.name(),
                    type_name(v)
                ),
            )),
            _ => {}
        }
    }
    for key in supplied.keys().filter(|k| !program.inputs.iter().any(|i| &i.name == *k)) {
        let known = if declared.is_empty() { "none".to_owned() } else { declared.join(", ") };
        misfits.push((program::ptr("", key), format!("'{key}' is not a declared input (declared: {known})")));
    }
    if misfits.is_empty() {
        Ok(supplied)
    } else {
        Err(misfits)
    }
}

impl Exec<'_, '_> {
    /// Run the steps and evaluate `output`.
    fn program(&mut self, program: &Program) -> Finish<AutoStatus> {
        let stop = match self.steps(&program.steps) {
            Ok(()) => match &program.output {
                None => return Finish::done(),
                Some(template) => match self.resolve(template) {
                    Ok(v) => return Finish::output(v),
                    Err(e) => Stop::Failed {
                        fail: Fail::Error,
                        message: format!("the program's `output` could not be evaluated: {e}"),
                    },
                },
            },
            Err(stop) => stop,
        };
        match stop {
            Stop::Bound => Finish::partial(format!(
                "execution stopped at a resource bound (the server's step or time bound, or {MAX_ITERATIONS} loop iterations)"
            )),
            Stop::Failed { fail, message } => match (fail, self.effects) {
                (Fail::Status(AutoStatus::Timeout), _) => Finish::failed(AutoStatus::Timeout, message),
                (Fail::Status(s), false) => Finish::failed(s, message),
                (Fail::Error, false) => Finish::error(message),
                (_, true) => Finish::partial(format!("{message} (earlier steps changed the building)")),
            },
        }
    }

    fn steps(&mut self, steps: &[Step]) -> Flow {
        for step in steps {
            if self.run.should_stop() {
                return Err(Stop::Bound);
            }
            self.step(step)?;
        }
        Ok(())
    }

    fn failed(id: &str, fail: Fail, message: impl std::fmt::Display) -> Stop {
        Stop::Failed { fail, message: format!("step '{id}' failed: {message}") }
    }

    fn step(&mut self, step: &Step) -> Flow {
        let id = step.id.as_deref().unwrap_or_default();
        match &step.body {
            Body::Call { action, with } => self.call(id, action.as_deref().unwrap_or_default(), with),
            Body::Run { routine, with } => self.subprogram(id, routine.as_deref().unwrap_or_default(), with),
            Body::Set { value } => match self.resolve(value) {
                Ok(v) => {
                    self.run.step(id).output(v.clone()).succeeded();
                    self.frame.outputs.insert(id.to_owned(), v);
                    Ok(())
                }
                Err(e) => {
                    self.run.step(id).failed(Failure::Error, e.clone());
                    Err(Self::failed(id, Fail::Error, e))
                }
            },
            Body::Branch { on, arms } => self.branch(id, on.as_deref().unwrap_or_default(), arms),
            Body::Loop { over, var, steps } => self.looped(
                id,
                over.as_ref().unwrap_or(&Json::Null),
                var.as_deref().unwrap_or_default(),
                steps,
            ),
            Body::Unknown => Err(Self::failed(id, Fail::Error, "unknown step kind")),
        }
    }

    fn call(&mut self, id: &str, action: &str, with: &Map<String, Json>) -> Flow {
        let template = Json::Object(with.clone());
        let args = match self.resolve(&template) {
            Ok(a) => a,
            Err(e) => {
                self.run.step(id).calls(action).input(template).failed(Failure::Error, e.clone());
                return Err(Self::failed(id, Fail::Error, e));
            }
        };
        let entry = self.catalog.get(action).cloned();
        let Some(entry) = entry else {
            let message = format!("no action '{action}' in the catalog");
            self.run
                .step(id)
                .calls(action)
                .input(args)
                .failed(Failure::Engine(AutoStatus::NotFound), message.clone());
            return Err(Self::failed(id, Fail::Status(AutoStatus::NotFound), message));
        };
        if let Some(message) = schema_misfit(entry.input_schema.as_ref(), &args) {
            let message = format!("the arguments do not fit '{action}': {message}");
            self.run
                .step(id)
                .calls(action)
                .input(args)
                .failed(Failure::Engine(AutoStatus::Rejected), message.clone());
            return Err(Self::failed(id, Fail::Status(AutoStatus::Rejected), message));
        }
        let result = if action == "wait" { self.wait(&args) } else { self.world.call(action, &args) };
        match result {
            Ok(output) => {
                if !self.test_run && check::risk_named(&entry.risk) != AutoRisk::Safe {
                    self.effects = true;
                }
                self.run.step(id).calls(action).input(args).output(output.clone()).succeeded();
                self.frame.outputs.insert(id.to_owned(), output);
                Ok(())
            }
            Err(e) => {
                self.run
                    .step(id)
                    .calls(action)
                    .input(args)
                    .failed(Failure::Engine(e.status), e.message.clone());
                Err(Self::failed(id, Fail::Status(e.status), e.message))
            }
        }
    }

    /// The `wait` action: sleeps in slices, so a Run told to stop stops promptly. A test run
    /// does not sleep.
    fn wait(&mut self, args: &Json) -> Result<Json, ActionError> {
        let ms = args.get("ms").and_then(Json::as_u64).unwrap_or(0);
        if !self.test_run {
            let until = Instant::now() + Duration::from_millis(ms);
            while Instant::now() < until && !self.run.should_stop() {
                std::thread::sleep(
                    Duration::from_millis(5).min(until.saturating_duration_since(Instant::now())),
                );
            }
        }
        self.world.call("wait", args)
    }

    fn subprogram(&mut self, id: &str, reference: &str, with: &Map<String, Json>) -> Flow {
        let template = Json::Object(with.clone());
        let args = match self.resolve(&template) {
            Ok(a) => a,
            Err(e) => {
                self.run.step(id).calls(reference).input(template).failed(Failure::Error, e.clone());
                return Err(Self::failed(id, Fail::Error, e));
            }
        };
        let refuse = |exec: &mut Self, status: AutoStatus, message: String| {
            exec.run
                .step(id)
                .calls(reference)
                .input(args.clone())
                .failed(Failure::Engine(status), message.clone());
            Err(Self::failed(id, Fail::Status(status), message))
        };
        let entry = self.catalog.get(reference).cloned();
        let (Some(entry), Some(body)) = (entry, self.run.promoted(reference)) else {
            return refuse(self, AutoStatus::NotFound, format!("no promoted program '{reference}'"));
        };
        if let Some(message) = schema_misfit(entry.input_schema.as_ref(), &args) {
            return refuse(
                self,
                AutoStatus::Rejected,
                format!("the arguments do not fit its input_schema: {message}"),
            );
        }
        if self.depth >= MAX_EXPANSION {
            let message =
                format!("promoted programs call each other more than {MAX_EXPANSION} levels deep (the expansion bound)");
            self.run.step(id).calls(reference).input(args).failed(Failure::Partial, message);
            return Err(Stop::Bound);
        }
        let drifted = self.run.promoted_drift(reference);
        if !drifted.is_empty() {
            let why = format!("entries it references changed since promotion ({})", drifted.join(", "));
            return refuse(self, AutoStatus::Stale, format!("{why}: promote the program again"));
        }
        if let Some(why) = self.stale(&body, &entry) {
            return refuse(self, AutoStatus::Stale, format!("{why}: promote the program again"));
        }
        let (program, _) = program::parse(&body);
        if program.trigger.is_some() {
            return refuse(
                self,
                AutoStatus::ModeMismatch,
                "the promoted program is a rule (it has a `trigger`)".into(),
            );
        }
        let inputs = match bind(&program, Some(&args)) {
            Ok(m) => m,
            Err(misfits) => {
                let m: Vec<String> = misfits.into_iter().map(|(p, m)| format!("{p}: {m}")).collect();
                return refuse(
                    self,
                    AutoStatus::Rejected,
                    format!("the arguments do not bind its inputs: {}", m.join("; ")),
                );
            }
        };
        // The calling entry is reached first, so it comes first in the flat trace; it gets the
        // sub-program's outcome when the body ends.
        let call = self.run.step(id).calls(reference).input(args).open();
        let handle = self.run.enter_subprogram(id);
        let inner = Frame { inputs, context: self.frame.context.clone(), ..Frame::default() };
        let outer = std::mem::replace(&mut self.frame, inner);
        self.depth += 1;
        let flow = self.steps(&program.steps).and_then(|()| match &program.output {
            None => Ok(Json::Null),
            Some(t) => self.resolve(t).map_err(|e| Stop::Failed {
                fail: Fail::Error,
                message: format!("its `output` could not be evaluated: {e}"),
            }),
        });
        self.depth -= 1;
        self.frame = outer;
        self.run.exit_subprogram(handle);
        match flow {
            Ok(output) => {
                self.run.finish_step(call, Ok(output.clone()));
                self.frame.outputs.insert(id.to_owned(), output);
                Ok(())
            }
            Err(Stop::Bound) => {
                self.run.finish_step(
                    call,
                    Err((Failure::Partial, "a bound stopped the promoted program".into())),
                );
                Err(Stop::Bound)
            }
            Err(Stop::Failed { fail, message }) => {
                self.run.finish_step(call, Err((fail.failure(), message.clone())));
                Err(Self::failed(id, fail, format!("the promoted program failed: {message}")))
            }
        }
    }

    /// Why the promoted body no longer matches the current catalog, if it does not: it does
    /// not validate any more, or its risk now exceeds the entry's declared risk.
    fn stale(&self, body: &Json, entry: &CatalogEntry) -> Option<String> {
        let request = ValidateRequest {
            program: Arc::new(body.clone()),
            context: None,
            catalog: Some(Arc::new(self.catalog.clone())),
            caller: self.caller.clone(),
        };
        let mut v = Validation::<AutoCode, AutoRisk>::new(&request);
        check::validate(body, &mut v);
        let core = v.finish();
        if let Some(d) =
            core.diagnostics.iter().find(|d| d.severity == pilotage::model::diagnostic::Severity::Error)
        {
            return Some(format!("its body no longer validates against the catalog ({})", d.message));
        }
        let body_risk = RiskHints::aggregate(core.steps.iter().map(|s| s.risk_hints));
        (!entry.risk_hints.covers(&body_risk))
            .then(|| format!("its body is now riskier than its declared risk '{}'", entry.risk))
    }

    fn branch(&mut self, id: &str, on: &str, arms: &[Arm]) -> Flow {
        let value = match self.resolve_text(on) {
            Ok(v) => v,
            Err(e) => {
                self.run.fail_branch(id, Failure::Error, e.clone());
                return Err(Self::failed(id, Fail::Error, e));
            }
        };
        let chosen = arms.iter().find_map(|arm| {
            let because = match &arm.test {
                Test::Equals(eq) if *eq == value => format!("{on} == {}", short(eq)),
                Test::Above(n) if value.as_f64().is_some_and(|v| v > *n) => {
                    format!("{on} is {} > {n}", short(&value))
                }
                Test::Below(n) if value.as_f64().is_some_and(|v| v < *n) => {
                    format!("{on} is {} < {n}", short(&value))
                }
                Test::Default => format!("{on} is {}: no earlier arm matches, default arm", short(&value)),
                _ => return None,
            };
            Some((arm, because))
        });
        let Some((arm, because)) = chosen else {
            let message = format!("{on} is {} and no arm matches", short(&value));
            self.run.fail_branch(id, Failure::Error, message.clone());
            return Err(Self::failed(id, Fail::Error, message));
        };
        self.run.branch(id, arm.label.as_deref().unwrap_or_default(), because);
        self.steps(&arm.steps)
    }

    fn looped(&mut self, id: &str, over: &Json, var: &str, steps: &[Step]) -> Flow {
        let handle = self.run.enter_loop(id);
        let (shown, items) = match over {
            Json::String(r) => (r.clone(), self.resolve_text(r)),
            literal => ("the literal list".to_owned(), self.resolve(literal)),
        };
        let items = match items {
            Ok(Json::Array(items)) => items,
            Ok(other) => {
                let message = format!("{shown} is {}, not a list", type_name(&other));
                self.run.fail_loop(handle, Failure::Error, message.clone());
                return Err(Self::failed(id, Fail::Error, message));
            }
            Err(e) => {
                self.run.fail_loop(handle, Failure::Error, e.clone());
                return Err(Self::failed(id, Fail::Error, e));
            }
        };
        let n = items.len();
        for (i, item) in items.into_iter().enumerate() {
            if self.run.should_stop() || self.iterations >= MAX_ITERATIONS {
                self.run.fail_loop(
                    handle,
                    Failure::Partial,
                    format!("stopped at a resource bound before item {} of {n}", i + 1),
                );
                return Err(Stop::Bound);
            }
            self.iterations += 1;
            self.run.next_iteration(&handle, format!("item {} of {n}", i + 1));
            self.frame.vars.push((var.to_owned(), item));
            let flow = self.steps(steps);
            self.frame.vars.pop();
            if let Err(stop) = flow {
                self.run.fail_loop(
                    handle,
                    Failure::Partial,
                    format!("item {} of {n} did not complete", i + 1),
                );
                return Err(stop);
            }
        }
        let because =
            if n == 0 { format!("{shown} is an empty list") } else { format!("all {n} items done") };
        self.run.exit_loop(handle, because);
        Ok(())
    }

    /// Evaluate a template: references replaced by their values, `$$` unescaped.
    fn resolve(&self, v: &Json) -> Result<Json, String> {
        program::resolve(v, &|root: &Root| self.value_of(root))
    }

    fn resolve_text(&self, s: &str) -> Result<Json, String> {
        program::resolve_text(s, &|root: &Root| self.value_of(root))
    }

    /// The value a reference root holds at this point.
    fn value_of(&self, root: &Root) -> Option<&Json> {
        let f = &self.frame;
        match root {
            Root::Input(name) => f.inputs.get(name),
            Root::Step(id) => f.outputs.get(id),
            Root::Var(name) => f.vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v),
            Root::Own(Whole::Event) => f.event.as_ref(),
            Root::Own(Whole::Context) => f.context.as_ref(),
        }
    }
}

/// The first way `v` does not fit `schema`, if any.
fn schema_misfit(schema: Option<&Json>, v: &Json) -> Option<String> {
    let schema = schema?;
    let validator = jsonschema::validator_for(schema).ok()?;
    let misfit = validator.iter_errors(v).next().map(|e| {
        let at = e.instance_path().to_string();
        if at.is_empty() {
            e.to_string()
        } else {
            format!("{e} (at {at})")
        }
    });
    misfit
}
