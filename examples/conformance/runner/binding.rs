//! What a Language binding supplies: a concrete program for every `<placeholder>` of the
//! vectors, the hooks to observe and perturb the engine's world, and the paired cases the
//! completeness gate needs for every closed-set member the vectors do not reach.
//!
//! A binding never waives anything: every item it cannot construct is an `Err` with the
//! reason, which the runner prints as the SKIP reason (Part IV §4.2: a statement of
//! non-constructibility on the record).

use serde_json::Value;

/// A bound item, or why this Language cannot construct it.
pub type Bound<T> = Result<T, &'static str>;

/// A program with the `input` it runs with (`None`: the request carries no `input`).
#[derive(Clone, Debug)]
pub struct Program {
    pub program: Value,
    pub input: Option<Value>,
}

/// One `tools/call` of a plain (non-Pilotage) tool of the engine.
#[derive(Clone, Debug)]
pub struct ToolHook {
    pub tool: &'static str,
    pub args: Value,
}

impl ToolHook {
    pub fn new(tool: &'static str, args: Value) -> ToolHook {
        ToolHook { tool, args }
    }
}

/// How the runner observes the engine's externally visible state.
#[derive(Clone, Debug)]
pub enum Observe {
    /// Call this tool; equal `structuredContent` means an unchanged world.
    Tool(ToolHook),
    /// The Language has no state any request could change; the reason says why, and every
    /// "no side effects" assertion is bound to it.
    Stateless(&'static str),
}

/// How to provoke a fault in the server's own machinery (the `internal` request error).
#[derive(Clone, Debug)]
pub struct Fault {
    /// Switch the fault on.
    pub on: ToolHook,
    /// Switch it off again.
    pub off: ToolHook,
}

/// A program whose step identifier uses a reserved character.
#[derive(Clone, Debug)]
pub struct ReservedChar {
    pub program: Value,
    /// The offending identifier.
    pub id: &'static str,
}

/// A valid program whose loop runs zero times.
#[derive(Clone, Debug)]
pub struct ZeroLoop {
    pub program: Value,
    /// The loop's step identifier.
    pub loop_id: &'static str,
    /// The identifiers of the loop body's steps.
    pub body: Vec<&'static str>,
}

/// A valid branching program whose taken arm is known.
#[derive(Clone, Debug)]
pub struct Branching {
    pub program: Value,
    /// The branch step's identifier.
    pub branch: &'static str,
    /// The label of the arm it takes.
    pub took: &'static str,
}

/// An entry that exists but is invisible to the session caller.
#[derive(Clone, Debug)]
pub struct Invisible {
    pub id: &'static str,
    /// A program naming a near miss of the entry (the validator must not hint at it).
    pub near_miss: Value,
}

/// Promoted programs (Part II §3.5): how to promote one and make it drift.
#[derive(Clone, Debug)]
pub struct Promotion {
    /// The promote tool (for the pilotage runtime: `promote_<family>`).
    pub tool: &'static str,
    /// Extra arguments of the promote call besides the program (e.g. `name`, `input_schema`).
    pub args: Value,
    /// The valid program to promote.
    pub program: Value,
    /// An input that satisfies the promoted entry's `input_schema`.
    pub input: Value,
    /// An input that violates it.
    pub bad_input: Value,
    /// Changes a load-bearing field of an entry the promoted program references.
    pub drift: ToolHook,
}

/// Which validator tier the Language's diagnostics come from (Part IV §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Findings are classified natively; `constraint` may never be needed.
    Native,
    /// Findings are classified from an existing validator's messages.
    Adapted,
}

/// A closed-set surface the completeness gate checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Surface {
    /// A diagnostic code.
    Code,
    /// A run or step outcome status.
    Status,
    /// A request-error kind.
    Kind,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Code => "code",
            Surface::Status => "status",
            Surface::Kind => "kind",
        }
    }
}

/// The loop operation a case drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaseOp {
    Validate,
    Execute,
}

/// A paired case for one closed-set member: `bad` must exhibit the member on its channel;
/// `good` is the same request corrected, and must be accepted without it. Arguments use the
/// abstract name `program` for the program-bearing member.
///
/// Order: promote the binding's program when `promote` (every `"<promoted-ref>"` string in
/// the arguments becomes its reference), send `good`, run the `setup` hooks, send `bad`.
#[derive(Clone, Debug)]
pub struct Case {
    pub surface: Surface,
    pub member: &'static str,
    pub op: CaseOp,
    pub bad: Value,
    pub good: Value,
    pub setup: Vec<ToolHook>,
    pub promote: bool,
}

impl Case {
    pub fn new(surface: Surface, member: &'static str, op: CaseOp, bad: Value, good: Value) -> Case {
        Case { surface, member, op, bad, good, setup: Vec::new(), promote: false }
    }

    /// A diagnostic-code case on the validate tool.
    pub fn code(member: &'static str, bad: Value, good: Value) -> Case {
        Case::new(
            Surface::Code,
            member,
            CaseOp::Validate,
            serde_json::json!({"program": bad}),
            serde_json::json!({"program": good}),
        )
    }

    /// Run `hook` after the good request, before the bad one.
    pub fn after_good(mut self, hook: ToolHook) -> Case {
        self.setup.push(hook);
        self
    }

    /// Promote the binding's program first.
    pub fn promoted(mut self) -> Case {
        self.promote = true;
        self
    }
}

/// Everything the runner needs to drive the vectors against one Language.
#[derive(Clone, Debug)]
pub struct Binding {
    /// The Language identifier.
    pub language: &'static str,
    /// The program-bearing argument (cross-checked against the tools' `_meta` declaration).
    pub argument: &'static str,
    pub tier: Tier,
    /// The `context` sent with every loop request when the Language requires one.
    pub context: Option<Value>,
    /// The `mode` sent with every execute request when the Language executes in mode `both`.
    pub mode: &'static str,
    /// `<valid-program>` with `<input>`: valid at the seeded catalog; running it has effects
    /// where the Language can have any, so "no side effects" checks are not vacuous.
    pub valid: Program,
    /// `<different-input>` for the same program.
    pub different_input: Bound<Value>,
    /// `<invalid-program>`: invalid, and with effects were it run.
    pub invalid: Value,
    /// `<program-with-unknown-name>`.
    pub unknown_name: Bound<Value>,
    /// `<warning-program>`: only warning-severity diagnostics.
    pub warnings_only: Bound<Value>,
    /// `<program-with-reserved-char-id>`.
    pub reserved_char: Bound<ReservedChar>,
    /// `<pathological-program>`: beyond a validation bound (nesting deeper than 64).
    pub pathological: Value,
    /// `<unclassifiable-invalid-program>` (`Err`: native tier, say why).
    pub unclassifiable: Bound<Value>,
    /// `<branching-program>`.
    pub branching: Bound<Branching>,
    /// `<zero-iteration-loop-program>`.
    pub zero_loop: Bound<ZeroLoop>,
    /// `<mid-run-failing-program>`: the second step fails deterministically.
    pub mid_run_failing: Bound<Value>,
    /// `<cleanly-failing-program>`: valid, fails with the reserved `error` status.
    pub cleanly_failing: Bound<Value>,
    pub promotion: Bound<Promotion>,
    /// `<invisible-entry-id>`.
    pub invisible: Bound<Invisible>,
    pub observe: Observe,
    /// Changes one visible entry's defined field (moves `catalog_version`).
    pub perturb_catalog: Bound<ToolHook>,
    pub fault: Bound<Fault>,
    /// Paired cases for closed-set members the vectors do not reach.
    pub cases: Vec<Case>,
}
