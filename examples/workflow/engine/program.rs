//! The `workflow/v1` document: its typed form, the structural parse (which reports shape
//! findings with JSON Pointers), and the reference grammar.
//!
//! The parse is tolerant: a malformed member is reported and left out, so validation can go on
//! to report every other finding in one pass. Execution only ever parses validated programs.

use serde_json::{Map, Value as Json};

use super::WfCode;

#[path = "../../common/findings.rs"]
mod findings;
#[allow(dead_code)] // `integer` is no workflow/v1 input type
#[path = "../../common/inputs.rs"]
mod inputs;
#[path = "../../common/references.rs"]
mod references;

pub use findings::{has_errors, type_name};
pub use inputs::{Input, InputType};
pub use references::{
    begin_hints, classify, close, close_hint, hints_left, is_name, is_step_id, ptr, references, resolve,
    resolve_text, short,
};

/// One finding, before it is handed to the runtime.
pub type Finding = findings::Finding<WfCode>;

/// The input types this Language accepts, in the order messages list them.
const INPUT_TYPES: [InputType; 5] =
    [InputType::String, InputType::Number, InputType::Boolean, InputType::Object, InputType::Array];

/// A whole program.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub inputs: Vec<Input>,
    pub steps: Vec<Step>,
    /// The `output` template and its pointer.
    pub output: Option<(String, Json)>,
}

/// One step.
#[derive(Clone, Debug)]
pub struct Step {
    /// `None` when missing or not a string (already reported).
    pub id: Option<String>,
    /// Pointer of the step object, e.g. `/steps/0`.
    pub path: String,
    pub body: Body,
}

/// What a step does. Members that failed the structural parse are `None` (already reported).
#[derive(Clone, Debug)]
pub enum Body {
    Call {
        capability: Option<String>,
        /// The `with` object (empty when absent or malformed) and whether it was present.
        with: Map<String, Json>,
        with_present: bool,
    },
    Set {
        value: Option<Json>,
    },
    Branch {
        on: Option<String>,
        arms: Vec<Arm>,
    },
    Loop {
        over: Option<String>,
        var: Option<String>,
        steps: Vec<Step>,
    },
    /// Unknown or missing kind.
    Unknown,
}

/// One branch arm.
#[derive(Clone, Debug)]
pub struct Arm {
    pub label: Option<String>,
    /// `Some` when `equals` is present (even when it is `null`): absent means the default arm.
    pub equals: Option<Json>,
    pub steps: Vec<Step>,
    pub path: String,
}

/// The step kinds.
pub const KINDS: [&str; 4] = ["call", "set", "branch", "loop"];
const TOP_MEMBERS: [&str; 3] = ["inputs", "steps", "output"];
const ARM_MEMBERS: [&str; 3] = ["label", "equals", "steps"];

fn members_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "call" => &["id", "kind", "note", "capability", "with"],
        "set" => &["id", "kind", "note", "value"],
        "branch" => &["id", "kind", "note", "on", "arms"],
        "loop" => &["id", "kind", "note", "over", "as", "steps"],
        _ => &["id", "kind", "note"],
    }
}

/// `a string`, `an integer`, `null`: a type name with its article.
pub fn article(ty: &str) -> String {
    match ty {
        "integer" | "object" | "array" => format!("an {ty}"),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// References: the shared grammar (`examples/common/references.rs`), without roots of its own

/// `workflow/v1` adds no roots to the shared reference grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRoot {}

impl references::OwnRoots for NoRoot {
    const NAMES: &'static [(&'static str, Self)] = &[];
    const FORMS: &'static str =
        "references are $.input.<name>, $.steps.<id>.output[.<member>...] or $.vars.<name>[.<member>...]";
}

/// What a reference starts from.
pub type Root = references::Root<NoRoot>;
/// A parsed reference.
pub type Ref = references::Ref<NoRoot>;
/// A string value in a template: a reference, or a literal string.
pub type Text<'a> = references::Text<'a, NoRoot>;

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

    fn unknown_members(&mut self, obj: &Map<String, Json>, at: &str, allowed: &[&str], what: &str) {
        for key in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
            let elsewhere =
                KINDS.iter().find(|k| members_of(k).contains(&key.as_str()) && what.ends_with("step"));
            let hint = match elsewhere {
                Some(kind) => Some(format!("`{key}` belongs to {kind} steps")),
                None => close_hint(key, allowed.iter().copied()),
            }
            .unwrap_or_else(|| format!("{what} members are: {}", allowed.join(", ")));
            self.report(
                Finding::error(
                    WfCode::UnknownMember,
                    ptr(at, key),
                    format!("unknown member `{key}` in {what}"),
                )
                .hint(hint),
            );
        }
    }

    fn program(&mut self, doc: &Json) -> Program {
        let Some(obj) = doc.as_object() else {
            self.report(
                Finding::error(
                    WfCode::MalformedProgram,
                    "",
                    format!("a workflow program is a JSON object, not {}", type_name(doc)),
                )
                .hint("write {\"inputs\": {...}, \"steps\": [...], \"output\": {...}}"),
            );
            return Program::default();
        };
        self.unknown_members(obj, "", &TOP_MEMBERS, "the program");
        let mut program = Program::default();
        match obj.get("inputs") {
            None => {}
            Some(Json::Object(inputs)) => {
                let codes = (WfCode::MalformedProgram, WfCode::InvalidInputType);
                program.inputs = inputs::parse_inputs(inputs, &INPUT_TYPES, codes, &mut self.findings);
            }
            Some(other) => self.report(
                Finding::error(
                    WfCode::MalformedProgram,
                    "/inputs",
                    format!("`inputs` is an object of name → type, not {}", type_name(other)),
                )
                .hint("for example {\"userId\": \"string\"}"),
            ),
        }
        match obj.get("steps") {
            None => self.report(
                Finding::error(WfCode::MalformedProgram, "", "the program has no `steps`")
                    .hint("add \"steps\": [ ... ] (an array of steps, possibly empty)"),
            ),
            Some(steps @ Json::Array(_)) => program.steps = self.steps(steps, "/steps"),
            Some(other) => self.report(
                Finding::error(
                    WfCode::MalformedProgram,
                    "/steps",
                    format!("`steps` is an array of steps, not {}", type_name(other)),
                )
                .hint("write \"steps\": [ {\"id\": ..., \"kind\": ...}, ... ]"),
            ),
        }
        match obj.get("output") {
            None => {}
            Some(out @ Json::Object(_)) => program.output = Some(("/output".to_owned(), out.clone())),
            Some(other) => self.report(
                Finding::error(
                    WfCode::MalformedProgram,
                    "/output",
                    format!("`output` is an object of name → value, not {}", type_name(other)),
                )
                .hint("for example {\"name\": \"$.steps.profile.output.name\"}"),
            ),
        }
        program
    }

    fn steps(&mut self, v: &Json, at: &str) -> Vec<Step> {
        let Some(items) = v.as_array() else {
            self.report(
                Finding::error(
                    WfCode::MalformedStep,
                    at,
                    format!("a step list is an array, not {}", type_name(v)),
                )
                .hint("write [ {\"id\": ..., \"kind\": ...}, ... ]"),
            );
            return Vec::new();
        };
        items.iter().enumerate().map(|(i, s)| self.step(s, &ptr(at, i))).collect()
    }

    fn step(&mut self, v: &Json, at: &str) -> Step {
        let Some(obj) = v.as_object() else {
            self.report(
                Finding::error(
                    WfCode::MalformedStep,
                    at,
                    format!("a step is an object, not {}", type_name(v)),
                )
                .hint("write {\"id\": \"...\", \"kind\": \"call\", ...}"),
            );
            return Step { id: None, path: at.to_owned(), body: Body::Unknown };
        };
        let id = match obj.get("id") {
            Some(Json::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Json::String(_)) => {
                self.report(
                    Finding::error(WfCode::MalformedStep, ptr(at, "id"), "the step id is empty")
                        .hint("give the step a unique id"),
                );
                None
            }
            Some(other) => {
                self.report(Finding::error(
                    WfCode::MalformedStep,
                    ptr(at, "id"),
                    format!("a step id is a string, not {}", type_name(other)),
                ));
                None
            }
            None => {
                self.report(
                    Finding::error(WfCode::MalformedStep, at, "the step has no `id`")
                        .hint("add \"id\": \"<unique name>\""),
                );
                None
            }
        };
        if let Some(note) = obj.get("note").filter(|n| !n.is_string()) {
            self.report(Finding::error(
                WfCode::MalformedStep,
                ptr(at, "note"),
                format!("`note` is a string, not {}", type_name(note)),
            ));
        }
        let kind = match obj.get("kind") {
            Some(Json::String(k)) => k.as_str(),
            Some(other) => {
                self.report(Finding::error(
                    WfCode::MalformedStep,
                    ptr(at, "kind"),
                    format!("`kind` is a string, not {}", type_name(other)),
                ));
                ""
            }
            None => {
                let guess = KINDS.iter().find(|k| members_of(k)[3..].iter().any(|m| obj.contains_key(*m)));
                let hint = match guess {
                    Some(k) => format!("add \"kind\": \"{k}\""),
                    None => format!("add \"kind\": one of {}", KINDS.join(", ")),
                };
                self.report(Finding::error(WfCode::MalformedStep, at, "the step has no `kind`").hint(hint));
                ""
            }
        };
        if !kind.is_empty() && !KINDS.contains(&kind) {
            let hint =
                close_hint(kind, KINDS).unwrap_or_else(|| format!("step kinds are: {}", KINDS.join(", ")));
            self.report(
                Finding::error(
                    WfCode::UnknownStepKind,
                    ptr(at, "kind"),
                    format!("unknown step kind '{kind}'"),
                )
                .hint(hint),
            );
        }
        let body = if KINDS.contains(&kind) {
            self.unknown_members(obj, at, members_of(kind), &format!("a {kind} step"));
            self.body(kind, obj, at)
        } else {
            Body::Unknown
        };
        Step { id, path: at.to_owned(), body }
    }

    fn string_member(
        &mut self,
        obj: &Map<String, Json>,
        at: &str,
        key: &str,
        what: &str,
        example: &str,
    ) -> Option<String> {
        match obj.get(key) {
            Some(Json::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(other) => {
                self.report(
                    Finding::error(
                        WfCode::MalformedStep,
                        ptr(at, key),
                        format!("`{key}` is {what}, not {}", describe(other)),
                    )
                    .hint(format!("for example \"{key}\": {example}")),
                );
                None
            }
            None => {
                self.report(
                    Finding::error(WfCode::MalformedStep, at, format!("the step has no `{key}`"))
                        .hint(format!("add \"{key}\": {example}")),
                );
                None
            }
        }
    }

    fn body(&mut self, kind: &str, obj: &Map<String, Json>, at: &str) -> Body {
        match kind {
            "call" => {
                let capability = self.string_member(
                    obj,
                    at,
                    "capability",
                    "a catalog entry id",
                    "\"cap_read_user_profile\"",
                );
                let (with, with_present) = match obj.get("with") {
                    None => (Map::new(), false),
                    Some(Json::Object(m)) => (m.clone(), true),
                    Some(other) => {
                        self.report(
                            Finding::error(
                                WfCode::MalformedStep,
                                ptr(at, "with"),
                                format!("`with` is an object of argument → value, not {}", type_name(other)),
                            )
                            .hint("for example \"with\": {\"user_id\": \"$.input.userId\"}"),
                        );
                        (Map::new(), false)
                    }
                };
                Body::Call { capability, with, with_present }
            }
            "set" => {
                let value = obj.get("value").cloned();
                if value.is_none() {
                    self.report(
                        Finding::error(WfCode::MalformedStep, at, "the set step has no `value`")
                            .hint("add \"value\": <any JSON, may contain references>"),
                    );
                }
                Body::Set { value }
            }
            "branch" => {
                let on = self.reference_member(obj, at, "on", "\"$.steps.profile.output.tier\"");
                let arms = match obj.get("arms") {
                    Some(Json::Array(a)) if !a.is_empty() => a
                        .iter()
                        .enumerate()
                        .map(|(i, arm)| self.arm(arm, &ptr(&ptr(at, "arms"), i)))
                        .collect(),
                    other => {
                        let (path, message) = match other {
                            None => (at.to_owned(), "the branch has no `arms`".to_owned()),
                            Some(Json::Array(_)) => (ptr(at, "arms"), "the branch has no arms".to_owned()),
                            Some(v) => (ptr(at, "arms"), format!("`arms` is an array, not {}", type_name(v))),
                        };
                        self.report(
                            Finding::error(WfCode::MalformedStep, path, message)
                                .hint("write \"arms\": [{\"label\": \"gold\", \"equals\": \"gold\", \"steps\": [...]}, {\"label\": \"other\", \"steps\": []}]"),
                        );
                        Vec::new()
                    }
                };
                Body::Branch { on, arms }
            }
            _ => {
                let over = self.reference_member(obj, at, "over", "\"$.steps.tickets.output.tickets\"");
                let var = self.string_member(obj, at, "as", "a variable name", "\"ticket\"");
                let var = match var {
                    Some(v) if !is_name(&v) => {
                        self.report(
                            Finding::error(
                                WfCode::MalformedStep,
                                ptr(at, "as"),
                                format!("'{v}' is not a usable variable name"),
                            )
                            .hint("variable names use letters, digits and '_' and do not start with a digit"),
                        );
                        None
                    }
                    v => v,
                };
                let steps = match obj.get("steps") {
                    Some(s) => self.steps(s, &ptr(at, "steps")),
                    None => {
                        self.report(
                            Finding::error(WfCode::MalformedStep, at, "the loop has no `steps`")
                                .hint("add \"steps\": [ ... ] (the body, run once per item)"),
                        );
                        Vec::new()
                    }
                };
                Body::Loop { over, var, steps }
            }
        }
    }

    /// A member that must be a reference string.
    fn reference_member(
        &mut self,
        obj: &Map<String, Json>,
        at: &str,
        key: &str,
        example: &str,
    ) -> Option<String> {
        let s = self.string_member(obj, at, key, "a reference", example)?;
        if let Text::Literal(_) = classify(&s) {
            self.report(
                Finding::error(
                    WfCode::MalformedStep,
                    ptr(at, key),
                    format!("`{key}` must be a reference, not the literal '{s}'"),
                )
                .hint(format!("for example \"{key}\": {example}")),
            );
            return None;
        }
        Some(s)
    }

    fn arm(&mut self, v: &Json, at: &str) -> Arm {
        let Some(obj) = v.as_object() else {
            self.report(
                Finding::error(
                    WfCode::MalformedStep,
                    at,
                    format!("an arm is an object, not {}", type_name(v)),
                )
                .hint("write {\"label\": \"...\", \"equals\": <value>, \"steps\": [...]}"),
            );
            return Arm { label: None, equals: None, steps: Vec::new(), path: at.to_owned() };
        };
        self.unknown_members(obj, at, &ARM_MEMBERS, "an arm");
        let label = self.string_member(obj, at, "label", "a non-empty string", "\"gold\"");
        let steps = match obj.get("steps") {
            Some(s) => self.steps(s, &ptr(at, "steps")),
            None => {
                self.report(
                    Finding::error(WfCode::MalformedStep, at, "the arm has no `steps`")
                        .hint("add \"steps\": [ ... ] (may be empty)"),
                );
                Vec::new()
            }
        };
        Arm { label, equals: obj.get("equals").cloned(), steps, path: at.to_owned() }
    }
}

fn describe(v: &Json) -> String {
    match v {
        Json::String(s) if s.is_empty() => "empty".to_owned(),
        other => type_name(other).to_owned(),
    }
}
