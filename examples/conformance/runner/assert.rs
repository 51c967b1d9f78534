//! The checks every vector shares: the machine-readable `expected` members (isError, error
//! kind, JSON-RPC code, shape validation against the named `$defs`), the accounting that makes
//! every prose assertion bound to code, and the evidence the completeness gate reads.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::binding::Surface;
use super::vectors::Vector;
use crate::support::schemas;

/// Why a vector stopped before passing.
#[derive(Clone, Debug)]
pub enum Stop {
    /// Not constructible for this Language (the reason is printed).
    Skip(String),
    /// An assertion did not hold.
    Fail(String),
}

impl From<String> for Stop {
    fn from(s: String) -> Stop {
        Stop::Fail(s)
    }
}

impl From<&str> for Stop {
    fn from(s: &str) -> Stop {
        Stop::Fail(s.to_owned())
    }
}

/// The result of one vector's executor.
pub type R = Result<(), Stop>;

/// Fail with a message unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err($crate::runner::assert::Stop::Fail(format!($($msg)+)));
        }
    };
}

/// The errors of `value` against the official `$defs/<def>`, if any.
pub fn def_errors(value: &Value, def: &str) -> Option<String> {
    schemas::errors(&schemas::official_validator(def), value)
}

/// Fail unless `value` satisfies the official `$defs/<def>`.
pub fn validates(value: &Value, def: &str, what: &str) -> Result<(), Stop> {
    match def_errors(value, def) {
        None => Ok(()),
        Some(e) => Err(Stop::Fail(format!("{what} does not validate as $defs/{def}:\n{e}\nvalue: {value}"))),
    }
}

/// `result` of a JSON-RPC response.
pub fn result(response: &Value) -> Result<&Value, Stop> {
    response
        .get("result")
        .ok_or_else(|| Stop::Fail(format!("expected a result, got a JSON-RPC error: {response}")))
}

/// `result.isError` (absent: false).
pub fn is_error(response: &Value) -> bool {
    response["result"]["isError"].as_bool().unwrap_or(false)
}

/// `result.structuredContent` (`Null` when absent).
pub fn structured(response: &Value) -> &Value {
    &response["result"]["structuredContent"]
}

/// The request-error kind of a response (`None` unless it is a request error).
pub fn error_kind(response: &Value) -> Option<&str> {
    if is_error(response) {
        structured(response)["error"]["kind"].as_str()
    } else {
        None
    }
}

/// Check the machine-readable members of `expected` on one response.
pub fn check_expected(v: &Vector, response: &Value) -> Result<(), Stop> {
    let e = &v.expected;
    if let Some(code) = e.get("jsonrpc_error") {
        let got = &response["error"]["code"];
        ensure!(got == code, "expected a JSON-RPC error {code}, got: {response}");
        return Ok(());
    }
    let result = result(response)?;
    if let Some(expected) = e.get("isError").and_then(Value::as_bool) {
        let got = result.get("isError");
        ensure!(got.is_none_or(Value::is_boolean), "isError must be a boolean when present: {response}");
        ensure!(is_error(response) == expected, "expected isError {expected}: {response}");
    }
    if let Some(def) = e.get("structuredContent_validates").and_then(Value::as_str) {
        validates(structured(response), def, "structuredContent")?;
    }
    if let Some(kind) = e.get("error_kind").and_then(Value::as_str) {
        ensure!(is_error(response), "expected the request error {kind}, got isError false: {response}");
        ensure!(error_kind(response) == Some(kind), "expected the request-error kind {kind}: {response}");
    }
    Ok(())
}

/// Which prose assertions of a vector the executor bound, and how.
#[derive(Clone, Debug, Default)]
pub struct Prose {
    texts: Vec<String>,
    bound: Vec<bool>,
    pub notes: Vec<String>,
}

impl Prose {
    pub fn new(v: &Vector) -> Prose {
        Prose { texts: v.assertions.clone(), bound: vec![false; v.assertions.len()], notes: Vec::new() }
    }

    /// Assertion `i` holds iff `ok`.
    pub fn check(&mut self, i: usize, ok: bool, detail: impl std::fmt::Display) -> Result<(), Stop> {
        let text = self.texts.get(i).cloned().unwrap_or_else(|| format!("<no assertion #{i}>"));
        if i >= self.bound.len() {
            return Err(Stop::Fail(format!(
                "the executor checks assertion #{i}, which the vector does not have"
            )));
        }
        self.bound[i] = true;
        if ok {
            Ok(())
        } else {
            Err(Stop::Fail(format!("assertion \"{text}\" does not hold: {detail}")))
        }
    }

    /// Assertion `i` is bound to a statement rather than a measurement (printed as a note).
    pub fn justify(&mut self, i: usize, why: impl Into<String>) {
        if let Some(b) = self.bound.get_mut(i) {
            *b = true;
            self.notes.push(format!("#{i}: {}", why.into()));
        }
    }

    /// Fail when an assertion was left unbound.
    pub fn complete(&self) -> Result<(), Stop> {
        match self.bound.iter().position(|b| !b) {
            None => Ok(()),
            Some(i) => Err(Stop::Fail(format!("assertion \"{}\" was not bound to a check", self.texts[i]))),
        }
    }
}

/// The base identifier of a trace entry id: the id without `#n` iteration suffixes and
/// without `call#n/` sub-program prefixes.
pub fn base_id(id: &str) -> &str {
    let last = id.rsplit('/').next().unwrap_or(id);
    last.split('#').next().unwrap_or(last)
}

/// Whether `id` carries a sub-program prefix.
pub fn prefixed(id: &str) -> bool {
    id.contains('/')
}

/// What was observed through the endpoint, for the completeness gate: closed-set members
/// exhibited as failures (rejected cases) and their accepted counterparts.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// (surface, member) → where it was exhibited.
    pub rejected: BTreeMap<(Surface, String), BTreeSet<String>>,
    /// (surface, member) → where an accepted counterpart passed.
    pub accepted: BTreeMap<(Surface, String), BTreeSet<String>>,
    /// Request-error kind → the operations it was returned by.
    pub kind_ops: BTreeMap<String, BTreeSet<String>>,
    /// Operations → where a non-error result of it was seen.
    pub ok_ops: BTreeMap<String, BTreeSet<String>>,
    /// Where a successful run was seen.
    pub success: BTreeSet<String>,
}

impl Evidence {
    pub fn reject(&mut self, surface: Surface, member: &str, source: &str) {
        self.rejected.entry((surface, member.to_owned())).or_default().insert(source.to_owned());
    }

    pub fn accept(&mut self, surface: Surface, member: &str, source: &str) {
        self.accepted.entry((surface, member.to_owned())).or_default().insert(source.to_owned());
    }

    /// Record everything a Pilotage tool response of operation `op` exhibits.
    pub fn observe(&mut self, op: &str, response: &Value, source: &str) {
        if response.get("result").is_none() {
            return;
        }
        if is_error(response) {
            if let Some(kind) = error_kind(response) {
                self.reject(Surface::Kind, kind, source);
                self.kind_ops.entry(kind.to_owned()).or_default().insert(op.to_owned());
            }
            return;
        }
        self.ok_ops.entry(op.to_owned()).or_default().insert(source.to_owned());
        let s = structured(response);
        for d in s["diagnostics"].as_array().into_iter().flatten() {
            if let Some(code) = d["code"].as_str() {
                self.reject(Surface::Code, code, source);
            }
        }
        let steps = s["trace"]["steps"].as_array().into_iter().flatten();
        for outcome in std::iter::once(&s["outcome"]).chain(steps.map(|t| &t["outcome"])) {
            match outcome["status"].as_str() {
                Some("success") => {
                    self.success.insert(source.to_owned());
                }
                Some(status) => {
                    self.reject(Surface::Status, status, source);
                    self.reject(Surface::Status, "success", source);
                }
                None => {}
            }
        }
    }

    /// Merge `other` into this.
    pub fn merge(&mut self, other: Evidence) {
        for (k, v) in other.rejected {
            self.rejected.entry(k).or_default().extend(v);
        }
        for (k, v) in other.accepted {
            self.accepted.entry(k).or_default().extend(v);
        }
        for (k, v) in other.kind_ops {
            self.kind_ops.entry(k).or_default().extend(v);
        }
        for (k, v) in other.ok_ops {
            self.ok_ops.entry(k).or_default().extend(v);
        }
        self.success.extend(other.success);
    }

    /// Where member `member` of `surface` was exhibited as a failure.
    pub fn rejected_by(&self, surface: Surface, member: &str) -> Vec<String> {
        self.rejected
            .get(&(surface, member.to_owned()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Where the accepted counterpart of `member` passed. Codes need an explicit paired case;
    /// a request-error kind's counterpart is a non-error result of an operation that returned
    /// it; a status's counterpart is a successful run (for `success` itself: a run that did
    /// not succeed is its rejected side, recorded by [`Evidence::observe`]).
    pub fn accepted_by(&self, surface: Surface, member: &str) -> Vec<String> {
        let mut out: BTreeSet<String> =
            self.accepted.get(&(surface, member.to_owned())).cloned().unwrap_or_default();
        match surface {
            Surface::Code => {}
            Surface::Kind => {
                for op in self.kind_ops.get(member).into_iter().flatten() {
                    out.extend(self.ok_ops.get(op).into_iter().flatten().cloned());
                }
            }
            Surface::Status => out.extend(self.success.iter().cloned()),
        }
        out.into_iter().collect()
    }
}
