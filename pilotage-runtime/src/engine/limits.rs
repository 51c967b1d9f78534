//! Resource bounds around every engine call (Part II §10.1).

use std::time::Duration;

/// Resource bounds around every engine call (Part II §10.1).
///
/// Exceeded during validation: the `bounds_exceeded` request error. Exceeded during execution:
/// an `ok: false` outcome with status `partial` and the trace so far. Every bound stops the
/// work, not only the answer: the engine's [`Validation`](super::Validation) and
/// [`Run`](super::Run) become inert once a time or byte bound fires (see
/// [`Signal`](super::Signal) and [`Budget`](super::Budget)).
///
/// Per Language, with [`ServerBuilder::limits`](crate::ServerBuilder::limits) after its
/// `language`; every field has a default, so set only what differs:
///
/// ```
/// use std::time::Duration;
/// use pilotage::prelude::*;
///
/// let limits = Limits { execute_time: Duration::from_secs(60), max_steps: 100_000, ..Limits::default() };
/// assert_eq!(limits.validate_time, Limits::default().validate_time);
/// // Server::builder().language(|| MyEngine).limits(limits)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock bound of one validation.
    pub validate_time: Duration,
    /// Wall-clock bound of one execution.
    pub execute_time: Duration,
    /// Wall-clock bound of every other engine call: a catalog snapshot, a narration, a plain
    /// tool (admin SQL included).
    pub tool_time: Duration,
    /// Maximum steps one execution may record.
    pub max_steps: usize,
    /// Maximum size of a program, in bytes of its JSON (or text) form.
    pub max_program_bytes: usize,
    /// Maximum nesting depth of a JSON program (arrays and objects).
    pub max_depth: usize,
    /// Bytes one engine call may make the server hold: trace entries (step ids, inputs,
    /// outputs), diagnostics and plan steps, and what the engine charges to
    /// [`Budget`](super::Budget) for the values it builds, values counted as the memory they
    /// take ([`value_memory`](super::memory::value_memory)), not as their JSON text. Past it a
    /// run ends `partial`, a validation with `bounds_exceeded`. A process holds at most about
    /// twice this per engine slot at once (`docs/limits.md`).
    pub max_run_bytes: usize,
    /// Runs one session keeps per Language under `"session"` retention; the oldest are evicted
    /// past it.
    pub max_retained_runs: usize,
    /// Bytes of run records one session keeps per Language under `"session"` retention; the
    /// oldest are evicted past it.
    pub max_retained_bytes: usize,
    /// Most promoted programs one caller keeps per Language; a promotion past it is refused
    /// with `bounds_exceeded` (promotions are immutable and durable: nothing is evicted).
    pub max_promotions: usize,
    /// How long an idempotency key is remembered when the Language's retention is not an ISO
    /// 8601 duration (under a duration, the key lives exactly as long as the Run's record).
    pub idempotency_window: Duration,
    /// Longest an execute waits for the state store to keep a started Run's record and its
    /// idempotency key (retries included); past it the caller is told the Run's record was not
    /// kept (`internal`), never `success` with an id that does not resolve.
    pub store_time: Duration,
    /// Diagnostics one validate response carries; past it the rest are counted and a last
    /// `constraint` diagnostic says how many were left out.
    pub max_diagnostics: usize,
    /// Valid verdicts one session keeps per Language, so that execute's re-validation of a
    /// program it has judged valid with the same context against the same `catalog_version`
    /// (validate then execute, or a repeated run) is a look-up instead of an engine call
    /// (Part IV §6); the oldest are forgotten past it. 0 (the default) keeps none and hashes
    /// nothing. Raise it only for a validator whose verdict depends on nothing but the
    /// program, the context, the caller and the catalog snapshot (and whose cost is worth a
    /// SHA-256 of the program per validate and execute).
    pub revalidation_cache: usize,
    /// Tasks one caller may have running at once in one process (a Language that declares
    /// `tasks`; MCP Tasks, beyond Pilotage 1.1); a task-augmented execute past it is refused
    /// with `bounds_exceeded`.
    pub max_live_tasks: usize,
    /// How long a task's record (its status, then its result) is kept from its creation.
    pub task_ttl: Duration,
}

impl Default for Limits {
    /// 2 s to validate, 10 s to execute, 10 s for any other engine call, 10 000 steps, 1 MiB
    /// programs, depth 64, 16 MiB per engine call, 1 000 diagnostics, 1 000 retained runs and
    /// 16 MiB of them per session and Language, 256 promoted programs per caller and Language,
    /// idempotency keys for 24 h, 10 s to keep a Run's record, no revalidation cache, 8 running
    /// tasks per caller and task records for 1 h.
    fn default() -> Self {
        Limits {
            validate_time: Duration::from_secs(2),
            execute_time: Duration::from_secs(10),
            tool_time: Duration::from_secs(10),
            max_steps: 10_000,
            max_program_bytes: 1 << 20,
            max_depth: 64,
            max_run_bytes: 16 << 20,
            max_diagnostics: 1_000,
            max_retained_runs: 1_000,
            idempotency_window: Duration::from_secs(24 * 3600),
            store_time: Duration::from_secs(10),
            max_retained_bytes: 16 << 20,
            max_promotions: 256,
            revalidation_cache: 0,
            max_live_tasks: 8,
            task_ttl: Duration::from_secs(3600),
        }
    }
}
