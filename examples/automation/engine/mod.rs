//! `automation/v1`: automation programs over a small in-process smart building (lights, a
//! thermostat, a door, sensors, a notification outbox, a counter). A program either runs now
//! (`mode: "immediate"`) or is installed as a rule that later events fire (`mode: "deploy"`).
//!
//! One [`Automation`] is one MCP session's world. The files:
//!
//! - `program.rs`: the program's typed form, its structural parse and the reference grammar;
//! - `check.rs`: validation (names, arguments, references, the scope rule) and the plan;
//! - `interpret.rs`: execution, installation, test runs and rule firing, recording every step;
//! - `world.rs`: devices, outbox, counter, rules, the catalog and the actions over them;
//! - `admin.rs`: the plain tools harnesses use to observe and change the world;
//! - `narrate.rs`: the prose the trace fetch door adds beside the facts;
//! - `../../common/`: what the example engines share (the reference grammar, findings,
//!   declared inputs, the snapshot cache, the fingerprint digest, the test harness).
//!
//! The integration tests (`tests/it/main.rs`) include this module by path as `crate::automation`. Its
//! unit tests (`tests.rs`) are declared by `../main.rs`, so they run once, in this example's
//! test target, and not again in every crate that includes the engine.

use std::sync::{Arc, Mutex, MutexGuard};

use pilotage::prelude::*;

mod admin;
mod check;
#[path = "../../common/digest.rs"]
mod digest;
mod interpret;
mod narrate;
mod program;
#[path = "../../common/snapshot_cache.rs"]
mod snapshot_cache;
mod world;

use snapshot_cache::SnapshotCache;

/// Bounds the engine applies itself (beside the runtime's `Limits`).
#[allow(unused_imports)]
pub use interpret::{MAX_EXPANSION, MAX_ITERATIONS};

/// The closed diagnostic-code set (the reserved `constraint`, `input_binding` and
/// `context_binding` are added by the derive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Codes)]
pub enum AutoCode {
    MalformedProgram,
    MalformedStep,
    MalformedArms,
    DuplicateStepId,
    InvalidInputType,
    UnknownAction,
    UnknownRoutine,
    UnknownEvent,
    NotCallable,
    MissingArgument,
    UnexpectedArgument,
    TypeMismatch,
    UnknownReference,
    OutOfScope,
    UnusedInput,
}

/// Risk levels, least risky first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::RiskLevels)]
pub enum AutoRisk {
    #[risk(read_only)]
    Safe,
    #[risk(write)]
    Write,
    #[risk(destructive)]
    Destructive,
    #[risk(open_world)]
    External,
    /// The maximum of a plan that both destroys and reaches outside (`max_risk` only).
    #[allow(dead_code)]
    #[risk(destructive, open_world)]
    DestructiveExternal,
}

/// Engine-defined failure statuses (run and step level; see the closed-sets guide).
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Statuses)]
pub enum AutoStatus {
    #[status(side_effects = false)]
    NotFound,
    #[status(side_effects = false)]
    Denied,
    #[status(side_effects = false)]
    Rejected,
    #[status(side_effects = false)]
    Stale,
    #[status(side_effects = false)]
    ModeMismatch,
    #[status(side_effects = true)]
    Timeout,
}

/// Catalog entry kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::EntryKinds)]
pub enum AutoKind {
    /// What a `call` step invokes.
    #[kind(callable)]
    Action,
    /// What a rule's `trigger` names (not callable).
    Event,
    /// A promoted program, invoked by a `run` step or by `program_ref`.
    #[kind(promoted)]
    Routine,
}

/// The engine: one session's world and its cached catalog snapshot.
pub struct Automation {
    world: Mutex<world::World>,
    snapshot: SnapshotCache,
}

impl Default for Automation {
    fn default() -> Self {
        Self::new()
    }
}

impl Automation {
    /// A fresh, deterministically seeded world.
    pub fn new() -> Self {
        Automation { world: Mutex::new(world::World::seeded()), snapshot: SnapshotCache::default() }
    }

    fn world(&self) -> MutexGuard<'_, world::World> {
        self.world.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pilotage::language(
    name = "automation/v1",
    title = "Building automation programs and rules",
    program = "automation",
    locator = "json-pointer",
    capabilities(
        guides,
        catalog(search),
        validate,
        plan,
        execute(test_run, idempotency),
        trace_fetch(narrate),
    ),
    execution = "both",
    trace = "full",
    retention = "PT1H",
    trace_subprogram = "expanded",
    context_schema = "examples/automation/context.schema.json",
    guides = "examples/automation/guides",
    codes = AutoCode,
    risk = AutoRisk,
    statuses = AutoStatus,
    kinds = AutoKind,
    catalog = catalog_snapshot,
    narrate = narrate_run,
    tasks,
)]
impl Automation {
    /// An automation program is a JSON object {trigger?, inputs?, steps, output?}; read the
    /// `core` guide first. `context` ({"timezone": ...}) is required. Diagnostics carry JSON
    /// Pointers into the program; a valid result carries the plan of the steps (for a rule:
    /// of its body, what it does when it fires).
    #[loop_tool(validate, name = "validate_automation")]
    fn validate(&self, program: &Json, v: &mut Validation<AutoCode, AutoRisk>) {
        check::validate(program, v);
    }

    /// `mode` is required: "immediate" runs the steps now (a program without `trigger`);
    /// "deploy" installs a program with a `trigger` as a rule that `emit_event` fires later
    /// (output: {rule_id, event}). `test_run: true` evaluates the steps against a copy of the
    /// building, without effects. `input` binds the program's declared `inputs` exactly.
    #[loop_tool(execute, name = "run_automation")]
    fn run(&self, program: &Json, run: &mut Run<AutoStatus>) -> Finish<AutoStatus> {
        interpret::execute(&self.world, program, run)
    }

    /// Runs are kept for one hour in the run store, for the caller that ran them (the MCP
    /// session; on stateless HTTP, the verified caller, its bearer token's `sub`).
    #[loop_tool(trace, name = "trace_automation")]
    fn trace(&self) {}

    /// Every caller of the session sees the same entries, so one cached snapshot serves them;
    /// it is rebuilt after a catalog change.
    fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
        self.snapshot.get_or_build(|| CatalogSnapshot::new(self.world().entries()))
    }

    fn narrate_run(
        &self,
        run: &pilotage::model::trace::TraceFetchResponse,
        question: Option<&str>,
    ) -> Option<String> {
        Some(narrate::narrate(run, question))
    }

    #[plain_tool(
        name = "world_fingerprint",
        description = "Test harness tool (not part of Pilotage): a digest of this session's building (devices, outbox, counter, installed rules, firings) with a few counters. Equal fingerprints mean an unchanged building. The catalog and injected faults are not part of it.",
        read_only
    )]
    fn fingerprint(&self, _args: admin::NoArgs) -> Result<Json, String> {
        Ok(admin::fingerprint_of(&self.world()))
    }

    #[plain_tool(
        name = "emit_event",
        description = "Test harness tool (not part of Pilotage): an event happens in the building. Every installed rule whose trigger names this event fires now, in installation order, against the live building (effects happen), with the payload as $.event. Returns what each rule did."
    )]
    fn emit_event(&self, args: admin::EmitEvent, caller: &Caller) -> Result<Json, String> {
        let snapshot = self.catalog_snapshot(caller);
        admin::emit(&self.world, &snapshot, args, caller)
    }

    #[plain_tool(
        name = "catalog_add_entry",
        description = "Test harness tool (not part of Pilotage): add an action to this session's catalog; it returns its arguments unchanged when called. Moves catalog_version."
    )]
    fn add_entry(&self, args: admin::AddEntry) -> Result<Json, String> {
        self.snapshot.change(&self.world, |w| admin::add_entry(w, args))
    }

    #[plain_tool(
        name = "catalog_remove_entry",
        description = "Test harness tool (not part of Pilotage): remove an entry from this session's catalog. Moves catalog_version."
    )]
    fn remove_entry(&self, args: admin::RemoveEntry) -> Result<Json, String> {
        self.snapshot.change(&self.world, |w| admin::remove_entry(w, args))
    }

    #[plain_tool(
        name = "catalog_update_entry",
        description = "Test harness tool (not part of Pilotage): change fields of an entry of this session's catalog. `name` and `description` are informative; `risk` and `input_schema` are load-bearing (a promoted program that calls the entry then refuses to run: promotion_drift). Moves catalog_version."
    )]
    fn update_entry(&self, args: admin::UpdateEntry) -> Result<Json, String> {
        self.snapshot.change(&self.world, |w| admin::update_entry(w, args))
    }

    #[plain_tool(
        name = "inject_fault",
        description = "TEST ONLY (not part of Pilotage): `offline` lists devices that stop answering (actions on them fail with timeout); `lockdown` true makes door_unlock fail with denied. Each given member replaces the current setting; returns the faults in force."
    )]
    fn inject_fault(&self, args: admin::InjectFault) -> Result<Json, String> {
        admin::inject_fault(&mut self.world(), args)
    }
}
