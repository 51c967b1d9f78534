//! Execution of a validated program against the world, recording every step through `Run`.
//!
//! Order: bind `input` (refusing before any step when it does not fit `inputs`), run the
//! steps, evaluate `output`. A failing step ends the Run: `error` when nothing ran before it,
//! `partial` otherwise (earlier steps may have had effects).

use std::collections::HashMap;
use std::sync::Mutex;

use pilotage::prelude::*;
use serde_json::Map;

use super::program::{self, article, ptr, short, type_name, Arm, Body, Program, Root, Step};
use super::world::World;
use super::WfStatus;

/// Why execution stopped early.
enum Stop {
    /// A step failed; `earlier` says whether anything was recorded before the failing entry.
    Failed { message: String, earlier: bool },
    /// The runtime's step bound was reached.
    Bound,
}

type Flow = Result<(), Stop>;

/// Loop iterations one Run may perform in total. The runtime bounds trace entries; this bounds
/// the iterations of bodies that record few or no entries.
pub const MAX_ITERATIONS: usize = 100_000;

/// Execute `doc` (already validated) against `world`.
pub fn execute(world: &Mutex<World>, doc: &Json, run: &mut Run<WfStatus>) -> Finish<WfStatus> {
    let (program, findings) = program::parse(doc);
    if program::has_errors(&findings) {
        return Finish::error("the program does not parse (it should have failed validation)");
    }
    let Some(inputs) = bind_inputs(&program, run) else {
        return Finish::error("the input does not fit the program's `inputs`");
    };
    let mut exec = Exec {
        world,
        run,
        inputs,
        outputs: HashMap::new(),
        vars: Vec::new(),
        iterations: Vec::new(),
        recorded: 0,
        budget: MAX_ITERATIONS,
    };
    let flow = exec.steps(&program.steps);
    let stop = match flow {
        Ok(()) => match &program.output {
            None => return Finish::done(),
            Some((_, template)) => match exec.resolve(template) {
                Ok(v) => return Finish::output(v),
                Err(e) => Stop::Failed {
                    message: format!("the program's `output` could not be evaluated: {e}"),
                    earlier: exec.recorded > 0,
                },
            },
        },
        Err(stop) => stop,
    };
    match stop {
        Stop::Bound => Finish::partial(format!(
            "execution reached a resource bound (trace entries, or {MAX_ITERATIONS} loop iterations)"
        )),
        Stop::Failed { message, earlier: true } => {
            Finish::partial(format!("{message} (earlier steps ran and may have had effects)"))
        }
        Stop::Failed { message, earlier: false } => Finish::error(message),
    }
}

/// The parameter-binding convention: `input` is an object with exactly the declared names,
/// each of its declared type. Every misfit is reported; `None` when there was one.
fn bind_inputs(program: &Program, run: &mut Run<WfStatus>) -> Option<Map<String, Json>> {
    let declared: Vec<String> =
        program.inputs.iter().map(|i| format!("{}: {}", i.name, i.ty.map_or("?", |t| t.name()))).collect();
    let supplied = match run.input() {
        None if program.inputs.is_empty() => return Some(Map::new()),
        None => {
            run.reject_input(
                "",
                format!(
                    "this program declares inputs ({}): supply `input` as an object",
                    declared.join(", ")
                ),
            );
            return None;
        }
        Some(Json::Object(m)) => m.clone(),
        Some(other) => {
            run.reject_input("", format!("`input` is an object of name → value, not {}", type_name(other)));
            return None;
        }
    };
    let mut fits = true;
    for input in &program.inputs {
        let at = ptr("", &input.name);
        match (supplied.get(&input.name), input.ty) {
            (None, ty) => {
                fits = false;
                let ty = ty.map_or("value", |t| t.name());
                run.reject_input(at, format!("the declared input '{}' ({ty}) is missing", input.name));
            }
            (Some(v), Some(ty)) if !ty.admits(v) => {
                fits = false;
                run.reject_input(
                    at,
                    format!(
                        "input '{}' is declared {}, but {} was supplied",
                        input.name,
                        ty.name(),
                        article(type_name(v))
                    ),
                );
            }
            _ => {}
        }
    }
    for key in supplied.keys().filter(|k| !program.inputs.iter().any(|i| &i.name == *k)) {
        fits = false;
        let known = if declared.is_empty() { "none".to_owned() } else { declared.join(", ") };
        run.reject_input(ptr("", key), format!("'{key}' is not a declared input (declared: {known})"));
    }
    fits.then_some(supplied)
}

struct Exec<'a> {
    world: &'a Mutex<World>,
    run: &'a mut Run<WfStatus>,
    inputs: Map<String, Json>,
    /// Latest output of every call and set step that ran.
    outputs: HashMap<String, Json>,
    /// Loop variables, innermost last.
    vars: Vec<(String, Json)>,
    /// 1-based iteration numbers of the enclosing loops.
    iterations: Vec<usize>,
    /// Trace entries recorded so far.
    recorded: usize,
    /// Loop iterations left.
    budget: usize,
}

impl Exec<'_> {
    /// `id` qualified with the enclosing iteration numbers, as the trace shows it.
    fn qualified(&self, id: &str) -> String {
        self.iterations.iter().fold(id.to_owned(), |q, n| format!("{q}#{n}"))
    }

    fn failed(&self, id: &str, message: impl std::fmt::Display) -> Stop {
        Stop::Failed {
            message: format!("step '{}' failed: {message}", self.qualified(id)),
            earlier: self.recorded > 1,
        }
    }

    fn steps(&mut self, steps: &[Step]) -> Flow {
        for step in steps {
            if self.run.should_stop() {
                return Err(Stop::Bound);
            }
            self.step(step)?;
            if self.run.should_stop() {
                return Err(Stop::Bound);
            }
        }
        Ok(())
    }

    fn step(&mut self, step: &Step) -> Flow {
        let id = step.id.as_deref().unwrap_or_default();
        match &step.body {
            Body::Call { capability, with, .. } => {
                let capability = capability.as_deref().unwrap_or_default();
                let template = Json::Object(with.clone());
                self.recorded += 1;
                let args = match self.resolve(&template) {
                    Ok(a) => a,
                    Err(e) => {
                        self.run
                            .step(id)
                            .calls(capability)
                            .input(template)
                            .failed(Failure::Engine(WfStatus::Unresolved), e.clone());
                        return Err(self.failed(id, e));
                    }
                };
                let result = self.world.lock().unwrap_or_else(|p| p.into_inner()).call(capability, &args);
                match result {
                    Ok(output) => {
                        self.run.step(id).calls(capability).input(args).output(output.clone()).succeeded();
                        self.outputs.insert(id.to_owned(), output);
                        Ok(())
                    }
                    Err(e) => {
                        self.run
                            .step(id)
                            .calls(capability)
                            .input(args)
                            .failed(Failure::Engine(e.status), e.message.clone());
                        Err(self.failed(id, e.message))
                    }
                }
            }
            Body::Set { value } => {
                let template = value.clone().unwrap_or(Json::Null);
                self.recorded += 1;
                match self.resolve(&template) {
                    Ok(v) => {
                        self.run.step(id).output(v.clone()).succeeded();
                        self.outputs.insert(id.to_owned(), v);
                        Ok(())
                    }
                    Err(e) => {
                        self.run.step(id).failed(Failure::Engine(WfStatus::Unresolved), e.clone());
                        Err(self.failed(id, e))
                    }
                }
            }
            Body::Branch { on, arms } => {
                let on = on.as_deref().unwrap_or_default();
                self.recorded += 1;
                let value = match self.resolve_text(on) {
                    Ok(v) => v,
                    Err(e) => {
                        // No branch-failure entry exists in the runtime API: the failed
                        // branch is recorded as a failed step without decisions.
                        self.run.step(id).failed(Failure::Engine(WfStatus::Unresolved), e.clone());
                        return Err(self.failed(id, e));
                    }
                };
                let Some((arm, because)) = choose(arms, on, &value) else {
                    let message = format!("{on} is {} and no arm matches", short(&value));
                    self.run.step(id).failed(Failure::Engine(WfStatus::Unresolved), message.clone());
                    return Err(self.failed(id, message));
                };
                let label = arm.label.as_deref().unwrap_or_default();
                self.run.branch(id, label, because);
                self.steps(&arm.steps)
            }
            Body::Loop { over, var, steps } => {
                let over = over.as_deref().unwrap_or_default();
                let var = var.clone().unwrap_or_default();
                let handle = self.run.enter_loop(id);
                self.recorded += 1;
                let items = match self.resolve_text(over) {
                    Ok(Json::Array(items)) => items,
                    Ok(other) => {
                        let message = format!("{over} is {}, not a list", article(type_name(&other)));
                        self.run.fail_loop(handle, Failure::Engine(WfStatus::Unresolved), message.clone());
                        return Err(self.failed(id, message));
                    }
                    Err(e) => {
                        self.run.fail_loop(handle, Failure::Engine(WfStatus::Unresolved), e.clone());
                        return Err(self.failed(id, e));
                    }
                };
                let n = items.len();
                for (i, item) in items.into_iter().enumerate() {
                    if self.run.should_stop() || self.budget == 0 {
                        self.run.fail_loop(handle, Failure::Partial, "stopped: a resource bound was reached");
                        return Err(Stop::Bound);
                    }
                    self.budget -= 1;
                    self.run.next_iteration(&handle, format!("item {} of {n}", i + 1));
                    self.iterations.push(i + 1);
                    self.vars.push((var.clone(), item));
                    let flow = self.steps(steps);
                    self.vars.pop();
                    self.iterations.pop();
                    if let Err(stop) = flow {
                        self.run.fail_loop(
                            handle,
                            Failure::Partial,
                            format!("iteration {} of {n} did not complete", i + 1),
                        );
                        return Err(stop);
                    }
                }
                let because =
                    if n == 0 { format!("{over} is an empty list") } else { format!("all {n} items done") };
                self.run.exit_loop(handle, because);
                Ok(())
            }
            Body::Unknown => Err(self.failed(id, "unknown step kind")),
        }
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
        match root {
            Root::Input(name) => self.inputs.get(name),
            Root::Step(id) => self.outputs.get(id),
            Root::Var(name) => self.vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v),
            Root::Own(none) => match *none {},
        }
    }
}

/// The arm a branch takes for `value`, with the decision's reason: the first arm whose
/// `equals` is `value`, else the default arm.
fn choose<'a>(arms: &'a [Arm], on: &str, value: &Json) -> Option<(&'a Arm, String)> {
    for arm in arms {
        match &arm.equals {
            Some(eq) if eq == value => return Some((arm, format!("{on} == {}", short(eq)))),
            Some(_) => {}
            None => {
                return Some((arm, format!("{on} is {}: no earlier arm matches, default arm", short(value))));
            }
        }
    }
    None
}
