//! `workflow/v1`: JSON workflow documents over a small in-process support desk (users,
//! tickets, an email outbox). The flagship pilotage engine.
//!
//! One [`Workflow`] is one MCP session's world. The files:
//!
//! - `program.rs`: the document's typed form, its structural parse and the reference grammar;
//! - `check.rs`: validation (names, arguments, references, the scope rule) and the plan;
//! - `interpret.rs`: execution, recording every step;
//! - `world.rs`: users, tickets, outbox and the capabilities over them;
//! - `catalog.rs`: the catalog entries and the caller's snapshot;
//! - `admin.rs`: the plain tools harnesses use to observe and change the world;
//! - `../../common/`: what the example engines share (the reference grammar, findings,
//!   declared inputs, the snapshot cache, the fingerprint digest, the test harness).
//!
//! The integration tests (`tests/it/main.rs`) include this module by path as `crate::workflow`. Its
//! unit tests (`tests.rs`) are declared by `../main.rs`, so they run once, in this example's
//! test target, and not again in every crate that includes the engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pilotage::prelude::*;

pub(crate) mod admin;
mod catalog;
mod check;
#[path = "../../common/digest.rs"]
mod digest;
mod interpret;
mod program;
#[path = "../../common/snapshot_cache.rs"]
mod snapshot_cache;
mod world;

use snapshot_cache::SnapshotCache;

/// The closed diagnostic-code set (the reserved `constraint`, `input_binding` and
/// `context_binding` are added by the derive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Codes)]
pub enum WfCode {
    MalformedProgram,
    UnknownMember,
    MalformedStep,
    UnknownStepKind,
    DuplicateStepId,
    InvalidInputType,
    UnknownCapability,
    NotCallable,
    MissingArgument,
    UnexpectedArgument,
    TypeMismatch,
    UnknownReference,
    OutOfScope,
    UnknownField,
    DuplicateArmLabel,
    MissingDefaultArm,
    UnreachableArm,
    UnusedInput,
}

/// Risk levels, least risky first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::RiskLevels)]
pub enum WfRisk {
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

/// Engine-defined failure statuses (step level; see the closed-sets guide).
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Statuses)]
pub enum WfStatus {
    #[status(side_effects = false)]
    NotFound,
    #[status(side_effects = false)]
    Conflict,
    #[status(side_effects = false)]
    Rejected,
    #[status(side_effects = false)]
    Unresolved,
}

/// Catalog entry kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::EntryKinds)]
pub enum WfKind {
    #[kind(callable)]
    Capability,
    Dataset,
}

/// The engine: one session's world, its cached catalog snapshot and the test-only fault switch.
pub struct Workflow {
    world: Mutex<world::World>,
    snapshot: SnapshotCache,
    validator_panic: AtomicBool,
}

impl Default for Workflow {
    fn default() -> Self {
        Self::new()
    }
}

impl Workflow {
    /// A fresh, deterministically seeded world.
    pub fn new() -> Self {
        Workflow {
            world: Mutex::new(world::World::seeded()),
            snapshot: SnapshotCache::default(),
            validator_panic: AtomicBool::new(false),
        }
    }

    pub(crate) fn world(&self) -> MutexGuard<'_, world::World> {
        self.world.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pilotage::language(
    name = "workflow/v1",
    title = "Workflow documents",
    program = "workflow",
    locator = "json-pointer",
    capabilities(guides, catalog(search, changed_since), validate, plan, execute, trace_fetch),
    execution = "immediate",
    trace = "full",
    retention = "session",
    trace_tool = "trace_run",
    guides = "examples/workflow/guides",
    codes = WfCode,
    risk = WfRisk,
    statuses = WfStatus,
    kinds = WfKind,
    catalog = catalog_snapshot,
)]
impl Workflow {
    /// A workflow is a JSON document {inputs, steps, output}; read the `core` guide first.
    /// Diagnostics carry JSON Pointers into the document; a valid result carries the plan.
    #[loop_tool(validate, name = "validate_workflow")]
    fn validate(&self, program: &Json, v: &mut Validation<WfCode, WfRisk>) {
        if self.validator_panic.load(Ordering::SeqCst) {
            panic!("injected validator fault (inject_fault validator_panic)");
        }
        check::validate(program, v);
    }

    /// Runs the workflow against this session's world. `input` binds the program's declared
    /// `inputs` exactly (every declared name, with its type; nothing else).
    #[loop_tool(execute, name = "run_workflow")]
    async fn run(&self, program: &Json, run: &mut Run<WfStatus>) -> Finish<WfStatus> {
        interpret::execute(&self.world, program, run)
    }

    /// Every session caller sees the same entries (all but the hidden admin entry), so one
    /// cached snapshot serves them; it is rebuilt after a catalog change.
    pub(crate) fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
        self.snapshot.get_or_build(|| self.world().catalog.snapshot())
    }

    #[plain_tool(
        name = "world_fingerprint",
        description = "Test harness tool (not part of Pilotage): a digest of this session's world (users, tickets, outbox, catalog) with the open-ticket and sent-email counts. Equal fingerprints mean an unchanged world.",
        read_only
    )]
    pub(crate) fn fingerprint(&self, _args: admin::NoArgs) -> Result<Json, String> {
        Ok(admin::fingerprint_of(&self.world()))
    }

    #[plain_tool(
        name = "catalog_add_entry",
        description = "Test harness tool (not part of Pilotage): add a capability to this session's catalog; it returns its input unchanged when called. Moves catalog_version."
    )]
    pub(crate) fn add_entry(&self, args: admin::AddEntry) -> Result<Json, String> {
        self.snapshot.change(&self.world, |w| admin::add_entry(w, args))
    }

    #[plain_tool(
        name = "catalog_remove_entry",
        description = "Test harness tool (not part of Pilotage): remove an entry from this session's catalog. Moves catalog_version."
    )]
    pub(crate) fn remove_entry(&self, args: admin::RemoveEntry) -> Result<Json, String> {
        self.snapshot.change(&self.world, |w| admin::remove_entry(w, args))
    }

    #[plain_tool(
        name = "catalog_update_entry",
        description = "Test harness tool (not part of Pilotage): change the description of an entry of this session's catalog. Moves catalog_version."
    )]
    pub(crate) fn update_entry(&self, args: admin::UpdateEntry) -> Result<Json, String> {
        self.snapshot.change(&self.world, |w| admin::update_entry(w, args))
    }

    #[plain_tool(
        name = "inject_fault",
        description = "TEST ONLY (not part of Pilotage): with validator_panic true, every later validation of this session panics, which the server reports as the `internal` request error (execute included: nothing runs). Set it false to recover."
    )]
    pub(crate) fn inject_fault(&self, args: admin::InjectFault) -> Result<Json, String> {
        let on = args.validator_panic;
        self.validator_panic.store(on, Ordering::SeqCst);
        Ok(json!({"validator_panic": on}))
    }
}
