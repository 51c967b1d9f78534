//! Resource bounds around every engine call (Part II §10.1).

use std::time::Duration;

/// Resource bounds around every engine call (Part II §10.1).
///
/// Exceeded during validation: the `bounds_exceeded` request error. Exceeded during execution:
/// an `ok: false` outcome with status `partial` and the trace so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock bound of one validation.
    pub validate_time: Duration,
    /// Wall-clock bound of one execution.
    pub execute_time: Duration,
    /// Maximum steps one execution may record.
    pub max_steps: usize,
    /// Maximum size of a program, in bytes of its JSON (or text) form.
    pub max_program_bytes: usize,
    /// Maximum nesting depth of a JSON program (arrays and objects).
    pub max_depth: usize,
    /// Run each validation on the blocking pool, so the time bound holds even against a
    /// validator that never returns (default). `false` validates inline on the request's task,
    /// which saves a thread hand-off per request (see `benches/overhead.rs`) but bounds time
    /// only after the fact: choose it only for validators whose work is bounded by the program's
    /// size and depth, which the runtime checks first either way.
    pub isolate_validation: bool,
}

impl Default for Limits {
    /// 2 s to validate, 10 s to execute, 10 000 steps, 1 MiB programs, depth 64, isolated
    /// validation.
    fn default() -> Self {
        Limits {
            validate_time: Duration::from_secs(2),
            execute_time: Duration::from_secs(10),
            max_steps: 10_000,
            max_program_bytes: 1 << 20,
            max_depth: 64,
            isolate_validation: true,
        }
    }
}
