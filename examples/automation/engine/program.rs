//! The `automation/v1` program: its typed form, the structural parse (every shape problem
//! reported with a JSON Pointer) and the reference grammar.
//!
//! The parse is tolerant: a malformed member is reported and left out, so validation goes on
//! to report every other finding in one pass. Execution only ever parses programs that passed
//! validation (inline programs are re-validated by the runtime; promoted bodies were validated
//! when promoted).

use serde_json::{Map, Value as Json};

use super::AutoCode;

#[path = "../../common/findings.rs"]
mod findings;
#[path = "../../common/inputs.rs"]
mod inputs;
#[path = "../../common/references.rs"]
mod references;

pub use findings::{has_errors, type_name};
pub use inputs::{Input, InputType};
pub use references::{
    begin_hints, classify, close_hint, hints_left, is_name, is_step_id, ptr, references, resolve,
    resolve_text, short,
};

/// One structural or semantic finding, before it is handed to the runtime.
pub type Finding = findings::Finding<AutoCode>;

/// The input types this Language accepts, in the order messages list them.
const INPUT_TYPES: [InputType; 6] = [
    InputType::String,
    InputType::Number,
    InputType::Integer,
    InputType::Boolean,
    InputType::Object,
    InputType::Array,
];

/// The `trigger` of a rule.
#[derive(Clone, Debug)]
pub struct Trigger {
    /// The event entry id (`None`: malformed, already reported).
    pub event: Option<String>,
    /// Pointer of `trigger/event`.
    pub path: String,
}

/// A whole program.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub trigger: Option<Trigger>,
    pub inputs: Vec<Input>,
    pub steps: Vec<Step>,
    /// The `output` template.
    pub output: Option<Json>,
}

/// One step.
#[derive(Clone, Debug)]
pub struct Step {
    /// `None` when missing or unusable (already reported).
    pub id: Option<String>,
    /// Pointer of the step object, e.g. `/steps/0`.
    pub path: String,
    pub body: Body,
}

/// What a step does. Members that failed the parse are `None` (already reported).
#[derive(Clone, Debug)]
pub enum Body {
    /// `{"id", "call": <action>, "with": {...}}`
    Call { action: Option<String>, with: Map<String, Json> },
    /// `{"id", "set": <value>}`
    Set { value: Json },
    /// `{"id", "branch": <reference>, "arms": [...]}`
    Branch { on: Option<String>, arms: Vec<Arm> },
    /// `{"id", "loop": <reference or list>, "as": <name>, "steps": [...]}`
    Loop { over: Option<Json>, var: Option<String>, steps: Vec<Step> },
    /// `{"id", "run": <program_ref>, "with": {...}}`
    Run { routine: Option<String>, with: Map<String, Json> },
    /// No usable kind (already reported).
    Unknown,
}

/// How an arm tests the branch value.
#[derive(Clone, Debug, PartialEq)]
pub enum Test {
    /// No test: the default arm.
    Default,
    Equals(Json),
    Above(f64),
    Below(f64),
}

/// One branch arm.
#[derive(Clone, Debug)]
pub struct Arm {
    pub label: Option<String>,
    pub test: Test,
    pub steps: Vec<Step>,
    pub path: String,
}

/// The step kinds: each step has exactly one of these members.
pub const KINDS: [&str; 5] = ["call", "set", "branch", "loop", "run"];
const TOP_MEMBERS: [&str; 4] = ["trigger", "inputs", "steps", "output"];
const ARM_MEMBERS: [&str; 6] = ["label", "equals", "above", "below", "steps", "note"];

fn members_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "call" => &["id", "note", "call", "with"],
        "set" => &["id", "note", "set"],
        "branch" => &["id", "note", "branch", "arms"],
        "loop" => &["id", "note", "loop", "as", "steps"],
        "run" => &["id", "note", "run", "with"],
        _ => &["id", "note"],
    }
}

// ---------------------------------------------------------------------------------------------
// References: the shared grammar (`examples/common/references.rs`) and two roots of its own

/// The roots `automation/v1` adds to the shared reference grammar: `$.event` (a rule's event
/// payload) and `$.context`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whole {
    Event,
    Context,
}

impl references::OwnRoots for Whole {
    const NAMES: &'static [(&'static str, Self)] = &[("event", Whole::Event), ("context", Whole::Context)];
    const FORMS: &'static str = "references are $.input.<name>, $.steps.<id>.output, $.vars.<name>, $.event \
         and $.context, each optionally followed by .<member>...";
}

/// What a reference starts from.
pub type Root = references::Root<Whole>;
/// A parsed reference.
pub type Ref = references::Ref<Whole>;
/// A string value in a template: a reference, or a literal string.
pub type Text<'a> = references::Text<'a, Whole>;

// ---------------------------------------------------------------------------------------------
// Structural parse

/// Parse `doc`, reporting every structural problem.
pub fn parse(doc: &Json) -> (Program, Vec<Finding>) {
    let mut p = Parser { findings: Vec::new() };
    let program = p.program(doc);
    (program, p.findings)
}

struct Parser {
    findings: Vec<Finding>,
}

impl Parser {
    fn report(&mut self, f: Finding) {
        self.findings.push(f);
    }

    fn unknown_members(
        &mut self,
        obj: &Map<String, Json>,
        at: &str,
        allowed: &[&str],
        what: &str,
        code: AutoCode,
    ) {
        for key in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
            let hint = close_hint(key, allowed.iter().copied())
                .unwrap_or_else(|| format!("{what} members are: {}", allowed.join(", ")));
            self.report(
                Finding::error(code, ptr(at, key), format!("unknown member `{key}` in {what}")).hint(hint),
            );
        }
    }

    fn program(&mut self, doc: &Json) -> Program {
        let Some(obj) = doc.as_object() else {
            self.report(
                Finding::error(
                    AutoCode::MalformedProgram,
                    "",
                    format!("an automation program is a JSON object, not {}", type_name(doc)),
                )
                .hint("write {\"trigger\": {\"event\": ...} (rules only), \"inputs\": {...}, \"steps\": [...], \"output\": {...}}"),
            );
            return Program::default();
        };
        self.unknown_members(obj, "", &TOP_MEMBERS, "the program", AutoCode::MalformedProgram);
        let mut program = Program::default();
        match obj.get("trigger") {
            None => {}
            Some(Json::Object(t)) => {
                self.unknown_members(t, "/trigger", &["event"], "a trigger", AutoCode::MalformedProgram);
                let event = match t.get("event") {
                    Some(Json::String(e)) if !e.is_empty() => Some(e.clone()),
                    _ => {
                        self.report(
                            Finding::error(
                                AutoCode::MalformedProgram,
                                "/trigger",
                                "a trigger is {\"event\": \"<event id>\"}",
                            )
                            .hint("list the event ids with pilotage_catalog (verb list, kind event)"),
                        );
                        None
                    }
                };
                program.trigger = Some(Trigger { event, path: "/trigger/event".into() });
            }
            Some(other) => {
                self.report(
                    Finding::error(
                        AutoCode::MalformedProgram,
                        "/trigger",
                        format!("`trigger` is an object {{\"event\": ...}}, not {}", type_name(other)),
                    )
                    .hint("remove `trigger` to run the steps now (mode \"immediate\")"),
                );
                program.trigger = Some(Trigger { event: None, path: "/trigger".into() });
            }
        }
        match obj.get("inputs") {
            None => {}
            Some(Json::Object(inputs)) => {
                let codes = (AutoCode::MalformedProgram, AutoCode::InvalidInputType);
                program.inputs = inputs::parse_inputs(inputs, &INPUT_TYPES, codes, &mut self.findings);
            }
            Some(other) => self.report(Finding::error(
                AutoCode::MalformedProgram,
                "/inputs",
                format!("`inputs` is an object of name → type, not {}", type_name(other)),
            )),
        }
        match obj.get("steps") {
            Some(Json::Array(steps)) => program.steps = self.steps(steps, "/steps"),
            Some(other) => self.report(Finding::error(
                AutoCode::MalformedProgram,
                "/steps",
                format!("`steps` is an array of steps, not {}", type_name(other)),
            )),
            None => self.report(
                Finding::error(AutoCode::MalformedProgram, "", "the program has no `steps`")
                    .hint("add \"steps\": [] (it may be empty)"),
            ),
        }
        match obj.get("output") {
            None => {}
            Some(o @ Json::Object(_)) => program.output = Some(o.clone()),
            Some(other) => self.report(Finding::error(
                AutoCode::MalformedProgram,
                "/output",
                format!("`output` is an object template, not {}", type_name(other)),
            )),
        }
        program
    }

    fn steps(&mut self, steps: &[Json], at: &str) -> Vec<Step> {
        steps.iter().enumerate().map(|(i, s)| self.step(s, &ptr(at, i))).collect()
    }

    fn step(&mut self, v: &Json, at: &str) -> Step {
        let Some(obj) = v.as_object() else {
            self.report(Finding::error(
                AutoCode::MalformedStep,
                at,
                format!("a step is an object, not {}", type_name(v)),
            ));
            return Step { id: None, path: at.to_owned(), body: Body::Unknown };
        };
        let id = match obj.get("id") {
            Some(Json::String(id)) if !id.is_empty() => Some(id.clone()),
            Some(_) => {
                self.report(Finding::error(
                    AutoCode::MalformedStep,
                    ptr(at, "id"),
                    "`id` is a non-empty string",
                ));
                None
            }
            None => {
                self.report(
                    Finding::error(AutoCode::MalformedStep, at, "the step has no `id`")
                        .hint("give every step a unique id of letters, digits, '_' and '-'"),
                );
                None
            }
        };
        if let Some(note) = obj.get("note").filter(|n| !n.is_string()) {
            self.report(Finding::error(
                AutoCode::MalformedStep,
                ptr(at, "note"),
                format!("`note` is a string, not {}", type_name(note)),
            ));
        }
        let kinds: Vec<&str> = KINDS.iter().copied().filter(|k| obj.contains_key(*k)).collect();
        let kind = match kinds.as_slice() {
            [one] => *one,
            [] => {
                self.report(
                    Finding::error(AutoCode::MalformedStep, at, "the step has no kind member")
                        .hint("a step has exactly one of `call`, `set`, `branch`, `loop`, `run`"),
                );
                return Step { id, path: at.to_owned(), body: Body::Unknown };
            }
            several => {
                self.report(
                    Finding::error(
                        AutoCode::MalformedStep,
                        at,
                        format!("the step has several kind members: {}", several.join(", ")),
                    )
                    .hint("a step has exactly one of `call`, `set`, `branch`, `loop`, `run`: split it into several steps"),
                );
                return Step { id, path: at.to_owned(), body: Body::Unknown };
            }
        };
        self.unknown_members(obj, at, members_of(kind), &format!("a {kind} step"), AutoCode::MalformedStep);
        let body = match kind {
            "call" | "run" => {
                let name = match obj.get(kind) {
                    Some(Json::String(s)) if !s.is_empty() => Some(s.clone()),
                    other => {
                        let what = if kind == "call" { "an action id" } else { "a program_ref" };
                        self.report(Finding::error(
                            AutoCode::MalformedStep,
                            ptr(at, kind),
                            format!(
                                "`{kind}` is {what} (a non-empty string), not {}",
                                other.map_or("missing", type_name)
                            ),
                        ));
                        None
                    }
                };
                let with = match obj.get("with") {
                    None => Map::new(),
                    Some(Json::Object(w)) => w.clone(),
                    Some(other) => {
                        self.report(Finding::error(
                            AutoCode::MalformedStep,
                            ptr(at, "with"),
                            format!("`with` is an object of arguments, not {}", type_name(other)),
                        ));
                        Map::new()
                    }
                };
                if kind == "call" {
                    Body::Call { action: name, with }
                } else {
                    Body::Run { routine: name, with }
                }
            }
            "set" => Body::Set { value: obj.get("set").cloned().unwrap_or(Json::Null) },
            "branch" => {
                let on = match obj.get("branch") {
                    Some(Json::String(s)) if matches!(classify(s), Text::Ref(_)) => Some(s.clone()),
                    other => {
                        self.report(
                            Finding::error(
                                AutoCode::MalformedStep,
                                ptr(at, "branch"),
                                format!(
                                    "`branch` is the reference whose value the arms test, not {}",
                                    other.map_or("missing".to_owned(), |o| o.to_string())
                                ),
                            )
                            .hint("write e.g. \"branch\": \"$.steps.temp.output.celsius\""),
                        );
                        None
                    }
                };
                let arms = match obj.get("arms") {
                    Some(Json::Array(arms)) if !arms.is_empty() => {
                        arms.iter().enumerate().map(|(i, a)| self.arm(a, &ptr(&ptr(at, "arms"), i))).collect()
                    }
                    _ => {
                        self.report(
                            Finding::error(AutoCode::MalformedArms, ptr(at, "arms"), "`arms` is a non-empty array of arms")
                                .hint("an arm is {\"label\": ..., \"equals\"|\"above\"|\"below\": ..., \"steps\": [...]}; the last arm has no test"),
                        );
                        Vec::new()
                    }
                };
                Body::Branch { on, arms }
            }
            "loop" => {
                let over = match obj.get("loop") {
                    Some(Json::String(s)) if matches!(classify(s), Text::Ref(_)) => {
                        Some(Json::String(s.clone()))
                    }
                    Some(l @ Json::Array(_)) => Some(l.clone()),
                    other => {
                        self.report(Finding::error(
                            AutoCode::MalformedStep,
                            ptr(at, "loop"),
                            format!(
                                "`loop` is a reference to a list, or a literal list, not {}",
                                other.map_or("missing".to_owned(), |o| o.to_string())
                            ),
                        ));
                        None
                    }
                };
                let var = match obj.get("as") {
                    Some(Json::String(s)) if is_name(s) => Some(s.clone()),
                    other => {
                        self.report(
                            Finding::error(
                                AutoCode::MalformedStep,
                                ptr(at, "as"),
                                format!(
                                    "`as` names the current item (a plain name), not {}",
                                    other.map_or("missing".to_owned(), |o| o.to_string())
                                ),
                            )
                            .hint("write e.g. \"as\": \"light\" and read the item as $.vars.light"),
                        );
                        None
                    }
                };
                let steps = self.nested_steps(obj, at);
                Body::Loop { over, var, steps }
            }
            _ => Body::Unknown,
        };
        Step { id, path: at.to_owned(), body }
    }

    fn nested_steps(&mut self, obj: &Map<String, Json>, at: &str) -> Vec<Step> {
        match obj.get("steps") {
            Some(Json::Array(steps)) => self.steps(steps, &ptr(at, "steps")),
            other => {
                self.report(Finding::error(
                    AutoCode::MalformedStep,
                    ptr(at, "steps"),
                    format!("`steps` is an array of steps, not {}", other.map_or("missing", type_name)),
                ));
                Vec::new()
            }
        }
    }

    fn arm(&mut self, v: &Json, at: &str) -> Arm {
        let Some(obj) = v.as_object() else {
            self.report(Finding::error(
                AutoCode::MalformedArms,
                at,
                format!("an arm is an object, not {}", type_name(v)),
            ));
            return Arm { label: None, test: Test::Default, steps: Vec::new(), path: at.to_owned() };
        };
        self.unknown_members(obj, at, &ARM_MEMBERS, "an arm", AutoCode::MalformedArms);
        let label = match obj.get("label") {
            Some(Json::String(l)) if !l.is_empty() => Some(l.clone()),
            _ => {
                self.report(Finding::error(
                    AutoCode::MalformedArms,
                    ptr(at, "label"),
                    "`label` is a non-empty string",
                ));
                None
            }
        };
        let tests: Vec<&str> =
            ["equals", "above", "below"].into_iter().filter(|t| obj.contains_key(*t)).collect();
        let test = match tests.as_slice() {
            [] => Test::Default,
            ["equals"] => Test::Equals(obj["equals"].clone()),
            [bound] => match obj[*bound].as_f64() {
                Some(n) if *bound == "above" => Test::Above(n),
                Some(n) => Test::Below(n),
                None => {
                    self.report(Finding::error(
                        AutoCode::MalformedArms,
                        ptr(at, bound),
                        format!("`{bound}` is a number, not {}", type_name(&obj[*bound])),
                    ));
                    Test::Default
                }
            },
            several => {
                self.report(
                    Finding::error(
                        AutoCode::MalformedArms,
                        at,
                        format!("the arm has several tests: {}", several.join(", ")),
                    )
                    .hint("an arm has at most one of `equals`, `above`, `below`"),
                );
                Test::Default
            }
        };
        let steps = match obj.get("steps") {
            Some(Json::Array(steps)) => self.steps(steps, &ptr(at, "steps")),
            other => {
                self.report(Finding::error(
                    AutoCode::MalformedArms,
                    ptr(at, "steps"),
                    format!("`steps` is an array of steps, not {}", other.map_or("missing", type_name)),
                ));
                Vec::new()
            }
        };
        Arm { label, test, steps, path: at.to_owned() }
    }
}
