//! The operations of the binding (Part III §4), one file each: [`learn`] (manifest and guides),
//! [`lookup`] (catalog), [`validate`], [`execute`], [`trace_fetch`], [`promote`], and the
//! [`plain`] tools beside the loop. Each owns its eligibility checks (request errors on their
//! channel) and its reply, calls engines through [`crate::engine`] and keeps state through
//! [`crate::state`]. The server only routes to them.

pub(crate) mod call;
pub(crate) mod execute;
pub(crate) mod learn;
pub(crate) mod lookup;
pub(crate) mod plain;
pub(crate) mod promote;
pub(crate) mod slots;
pub(crate) mod threads;
pub(crate) mod trace_fetch;
pub(crate) mod validate;
pub(crate) mod watch;

use std::sync::Arc;

use self::call::{CallEnd, EngineCall, Lane};
use self::slots::{LaneKind, Slots};
use self::threads::Work;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::engine::{CatalogSnapshot, Engine, LanguageSpec, Limits};
use crate::model::capabilities::{Capability, CapabilityDeclaration};
use crate::model::check::SchemaCheck;
use crate::model::errors::{ErrorKind, RequestError};
use crate::state::promotions::Promoted;
use crate::state::session::Session;
use crate::state::Stores;

/// The arguments of one `tools/call`.
pub(crate) type Args = Map<String, Value>;

/// The arguments of a validate or execute call with the members an engine receives (the
/// program, `input`, `context`) taken out once and shared, never copied: the engine request,
/// the re-validation and the run all hold the same values.
pub(crate) struct LoopArgs {
    /// The inline program (the Language's program argument), if given.
    pub program: Option<Arc<Value>>,
    pub input: Option<Arc<Value>>,
    pub context: Option<Arc<Value>>,
    /// Every other member, as sent.
    pub rest: Args,
}

impl LoopArgs {
    /// Takes the shared members out of `args`; `program_argument` names the program's member.
    pub fn take(mut args: Args, program_argument: &str) -> LoopArgs {
        let mut take = |name: &str| args.remove(name).map(Arc::new);
        let (program, input, context) = (take(program_argument), take("input"), take("context"));
        LoopArgs { program, input, context, rest: args }
    }
}

/// An operation's value or its request error.
pub(crate) type OpResult<T> = Result<T, RequestError>;

/// One hosted Language as the operations see it: its declaration, the effective capability map
/// (server defaults merged in), the bounds in force and the compiled context schema.
pub(crate) struct Hosted {
    pub spec: &'static LanguageSpec,
    pub effective: CapabilityDeclaration,
    pub limits: Limits,
    pub context_validator: Option<SchemaCheck>,
}

/// What an operation on one Language is handed: the Language, its index on the server, the
/// caller's session and the deployment's stores.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub lang: &'a Hosted,
    pub index: usize,
    pub session: &'a Arc<Session>,
    pub stores: &'a Stores,
    /// The server's engine slots, shared fairly between callers.
    pub slots: &'a Arc<Slots>,
}

impl Ctx<'_> {
    /// The caller's engine instance of this Language.
    pub fn engine(&self) -> Arc<dyn Engine> {
        self.session.engines[self.index].clone()
    }

    /// Whether this Language has a promote tool (`promoted` kind and `plan`): without one,
    /// no caller holds promotions and the store is not asked.
    pub fn promotes(&self) -> bool {
        self.lang.spec.sets.promoted.is_some() && self.lang.effective.declares(Capability::Plan)
    }

    /// The caller's promotions of this Language, oldest first: one store read per operation.
    pub async fn promotions(&self) -> OpResult<Vec<Arc<Promoted>>> {
        if !self.promotes() {
            return Ok(Vec::new());
        }
        self.session.promoted_all(self.index).await.map_err(store_failed)
    }

    /// The caller's snapshot for a catalog-bearing Language (`None` without `catalog`). One
    /// operation takes it once, so drift check, validation and promotion baseline all see the
    /// same catalog.
    pub async fn snapshot(&self) -> OpResult<Option<Arc<CatalogSnapshot>>> {
        let promoted = self.promotions().await?;
        self.snapshot_given(&promoted).await
    }

    /// [`Ctx::snapshot`] with the caller's promotions already read.
    pub async fn snapshot_given(&self, promoted: &[Arc<Promoted>]) -> OpResult<Option<Arc<CatalogSnapshot>>> {
        if !self.lang.effective.declares(Capability::Catalog) {
            return Ok(None);
        }
        self.snapshot_of(promoted, LaneKind::Engine, false).await.map(|(s, _)| Some(s))
    }

    /// [`Ctx::snapshot_given`] for an execute, whose Run may confirm it when `may_defer`: the
    /// snapshot, and whether the engine deferred proving it current to the Run
    /// ([`crate::engine::confirm`]).
    pub async fn snapshot_for_run(
        &self,
        promoted: &[Arc<Promoted>],
        may_defer: bool,
    ) -> OpResult<Option<(Arc<CatalogSnapshot>, bool)>> {
        if !self.lang.effective.declares(Capability::Catalog) {
            return Ok(None);
        }
        self.snapshot_of(promoted, LaneKind::Engine, may_defer).await.map(Some)
    }

    /// For an execute's first attempt: the snapshot this session answered last for the same
    /// promoted programs, with the engine's version it was merged from, which the Run's engine
    /// call checks before it begins (one engine call instead of a snapshot call and a Run);
    /// `None` without `catalog` or without such a snapshot.
    pub fn last_snapshot(&self, promoted: &[Arc<Promoted>]) -> Option<(String, Arc<CatalogSnapshot>)> {
        if !self.lang.effective.declares(Capability::Catalog) {
            return None;
        }
        self.session.last_snapshot(self.index, promoted)
    }

    /// The time bound of taking the engine's catalog snapshot: a snapshot is part of a
    /// validation, a run or a lookup, so bounded like the shorter of a validation and a tool call.
    pub fn snapshot_time(&self) -> std::time::Duration {
        self.lang.limits.validate_time.min(self.lang.limits.tool_time)
    }

    /// The caller's current snapshot (catalog-bearing Languages).
    pub async fn snapshot_now(&self) -> OpResult<Arc<CatalogSnapshot>> {
        let promoted = self.promotions().await?;
        self.snapshot_of(&promoted, LaneKind::Engine, false).await.map(|(s, _)| s)
    }

    /// [`Ctx::snapshot_now`] for a catalog look-up, which a flood of runs cannot starve: it
    /// takes a free engine slot, else waits in the look-up lane.
    pub async fn snapshot_to_look_up(&self) -> OpResult<Arc<CatalogSnapshot>> {
        let promoted = self.promotions().await?;
        self.snapshot_of(&promoted, LaneKind::Lookup, false).await.map(|(s, _)| s)
    }

    /// Who this operation's engine calls are made for, and in which lane of slots.
    pub fn lane(&self, kind: LaneKind) -> Lane {
        Lane { slots: self.slots.clone(), caller: Arc::from(self.session.caller.id.to_string()), kind }
    }

    /// The engine's snapshot, an engine call like any other, plus the caller's promoted
    /// programs `promoted`, remembered for `changed_since`; with whether the engine deferred
    /// proving it current to the Run it is taken `for_run`.
    async fn snapshot_of(
        &self,
        promoted: &[Arc<Promoted>],
        kind: LaneKind,
        for_run: bool,
    ) -> OpResult<(Arc<CatalogSnapshot>, bool)> {
        let (engine, caller) = (self.engine(), self.session.caller.clone());
        let limits = &self.lang.limits;
        let call = EngineCall::new(Work::Snapshot, limits, self.snapshot_time(), self.lane(kind));
        let take = move || crate::engine::confirm::snapshot(&*engine, &caller, for_run);
        let (engine_snapshot, deferred) = match call.run(take).await {
            Ok((found, deferred)) => (found.ok_or_else(no_snapshot)?, deferred),
            Err(end) => return Err(call_failed(self, "the catalog snapshot", &call, end)),
        };
        let snapshot =
            self.session.snapshot(self.index, engine_snapshot, promoted).await.map_err(store_failed)?;
        Ok((snapshot, deferred))
    }

    /// An engine call bounded like a tool: `tool_time` and the Language's byte bounds.
    pub fn tool_call(&self) -> EngineCall {
        EngineCall::new(
            Work::Tool,
            &self.lang.limits,
            self.lang.limits.tool_time,
            self.lane(LaneKind::Engine),
        )
    }
}

/// The request error for an engine call that ended without a value.
pub(crate) fn call_failed(ctx: &Ctx<'_>, what: &str, call: &EngineCall, end: CallEnd) -> RequestError {
    match end {
        CallEnd::Busy(full, waited) => RequestError::new(ErrorKind::BoundsExceeded, full.why(what, waited)),
        CallEnd::TimedOut => timed_out(what, call.time),
        CallEnd::Panicked => {
            tracing::error!(language = ctx.lang.spec.name, "{what} failed: the engine panicked");
            RequestError::internal(format!("{what} failed in the engine"))
        }
    }
}

/// The request error for `what`, an engine call's work that outlasted its time bound `time`.
pub(crate) fn timed_out(what: &str, time: std::time::Duration) -> RequestError {
    RequestError::new(ErrorKind::BoundsExceeded, format!("{what} exceeded its time bound of {time:?}"))
}

/// The request error for a state store that failed: logged, reported without its details.
pub(crate) fn store_failed(e: crate::state::StoreError) -> RequestError {
    tracing::error!(error = %e, "the state store failed");
    RequestError::internal("the server's state store is unavailable; retry later")
}

pub(crate) fn no_snapshot() -> RequestError {
    RequestError::internal("the engine returned no catalog snapshot")
}

/// A result on its channel: `structuredContent`, one short text summary, and whether it is a
/// request error (`isError: true`).
#[derive(Default)]
pub(crate) struct Reply {
    pub structured: Value,
    pub text: String,
    pub is_error: bool,
    /// How long the request waited for engine slots (and its engine for its own resources):
    /// reported in the result's `_meta` from a millisecond on (set by the router).
    pub queued: std::time::Duration,
}

impl Reply {
    /// A value on the result channel.
    pub fn value<T: Serialize>(v: &T, text: impl Into<String>) -> Reply {
        Reply {
            structured: serde_json::to_value(v).unwrap_or(Value::Null),
            text: text.into(),
            ..Reply::default()
        }
    }

    /// `ok` summarised by `text` and turned into its value by `into` (a response that moves
    /// its values into place), or the request error.
    pub fn moved<T>(r: OpResult<T>, text: impl FnOnce(&T) -> String, into: impl FnOnce(T) -> Value) -> Reply {
        match r {
            Ok(v) => {
                let text = text(&v);
                Reply { structured: into(v), text, ..Reply::default() }
            }
            Err(e) => Reply::error(e),
        }
    }

    /// A request error.
    pub fn error(e: RequestError) -> Reply {
        Reply {
            text: e.error.message.clone(),
            structured: serde_json::to_value(&e).unwrap_or(Value::Null),
            is_error: true,
            ..Reply::default()
        }
    }

    /// `ok` summarised by `text`, or the request error.
    pub fn of<T: Serialize>(r: OpResult<T>, text: impl FnOnce(&T) -> String) -> Reply {
        Reply::moved(r, text, |v| serde_json::to_value(&v).unwrap_or(Value::Null))
    }
}

/// A string argument.
pub(crate) fn str_arg<'a>(args: &'a Args, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// The hosted Language named by the `language` argument (guide and catalog tools).
pub(crate) fn by_name<'h>(langs: &'h [Hosted], args: &Args) -> OpResult<(usize, &'h Hosted)> {
    let name = str_arg(args, "language").unwrap_or_default();
    langs.iter().enumerate().find(|(_, l)| l.spec.name == name).ok_or_else(|| {
        let names: Vec<&str> = langs.iter().map(|l| l.spec.name).collect();
        RequestError::not_found(format!("unknown language '{name}'; languages: {}", names.join(", ")))
    })
}
