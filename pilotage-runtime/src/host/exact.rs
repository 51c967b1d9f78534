//! Exact requests: what a conformance runner, a debugger or a proxy needs beside the loop of
//! [`Language`](super::Language). [`Host::call_tool`] sends one `tools/call` with the caller's
//! arguments exactly as given (deliberately wrong ones included) and answers the
//! [`ToolAnswer`], which [`ToolAnswer::read`] and [`ToolAnswer::request_failure`] route as
//! Part III §7.1 says. The risk gate stays enforced: an exact call of a Language's execute tool
//! is always held until the Host's [`Approver`](super::Approver) grants it
//! ([`GateReason::Unvalidated`](super::GateReason::Unvalidated)), because no validation of the
//! loop vouches for its risk. The other loop duties (a validation before execute, its
//! `catalog_version`, a trace level of at least `summary`) are the caller's on this path.
//!
//! The discovery the requests are built from is readable too: [`Host::tools`],
//! [`Host::manifest_json`], [`Host::program_argument`], [`Host::accelerator`],
//! [`Host::instructions`].

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::carrier::{ToolAnswer, ToolInfo};
use super::connect::Host;
use super::discover::{program_argument, Discovered};
use super::error::{HostError, RequestFailure};
use super::gate::{decide_exact, Approval, GateDecision, Runnable};
use super::results::{structured, typed};
use super::run::Denial;
use crate::model::manifest::LanguageEntry;

impl ToolAnswer {
    /// The request error this answer carries (`isError: true`), read as
    /// [`RequestFailure::read`] does; an error result without a readable `error` object is an
    /// `internal` one. `None` for a successful result.
    pub fn request_failure(&self) -> Option<RequestFailure> {
        if !self.is_error {
            return None;
        }
        match structured(self.clone(), "the tool") {
            Err(HostError::Request(failure)) => Some(failure),
            _ => None,
        }
    }

    /// The `structuredContent` read as `T` (e.g. [`ValidateResponse`](crate::model::plan::ValidateResponse),
    /// [`ExecuteResponse`](crate::model::execution::ExecuteResponse)): a request error is
    /// [`HostError::Request`], a missing or non-object `structuredContent` or one that does not
    /// read as `T` is [`HostError::Malformed`]. Unknown members are ignored.
    pub fn read<T: DeserializeOwned>(&self, what: &str) -> Result<T, HostError> {
        typed(structured(self.clone(), what)?, what)
    }
}

impl Host {
    /// Every tool of the last discovery's `tools/list`.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.snapshot().tools.clone()
    }

    /// The last discovered manifest exactly as the server sent it (unknown members included;
    /// [`Host::manifest`] is its typed reading).
    pub fn manifest_json(&self) -> Value {
        self.snapshot().raw.clone()
    }

    /// The program argument `tool` declares for `language` in its `_meta` (Part III §5),
    /// e.g. `query` for `sql/sqlite-3`: never guessed.
    pub fn program_argument(&self, tool: &str, language: &str) -> Result<String, HostError> {
        let found = self.snapshot();
        program_argument(found.tool(tool)?, language)
    }

    /// One `tools/call` of `tool` with `arguments` exactly as given, within
    /// [`HostLimits::request_timeout`](super::HostLimits) (the execute timeout for an execute
    /// tool). The answer is returned whatever it says (`isError: true` included); a JSON-RPC
    /// error is [`HostError::Carrier`]. When `tool` is a Language's execute tool, the gate holds
    /// the request until the approver grants it: a denial is [`HostError::Denied`] and nothing
    /// is sent. A `not_found` answer marks the discovery stale, as on the loop's path.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolAnswer, HostError> {
        let found = self.current().await?;
        let mut timeout = self.limits().request_timeout;
        if let Some(entry) = executing(&found, tool, &arguments) {
            timeout = self.limits().execute_timeout;
            let runnable = runnable(&found, entry, tool, &arguments);
            if let GateDecision::NeedsApproval(request) = decide_exact(&entry.name, runnable) {
                if let Approval::Denied(reason) = self.approver().approve(&request).await {
                    return Err(HostError::Denied(Box::new(Denial { request: *request, reason })));
                }
            }
        }
        self.call(tool, arguments, timeout).await
    }
}

/// The Language whose execute tool `tool` is: the one the `language` argument names when the
/// tool is shared, else the first that binds it.
fn executing<'f>(
    found: &'f Discovered,
    tool: &str,
    arguments: &Map<String, Value>,
) -> Option<&'f LanguageEntry> {
    let mut bound = found.manifest.languages.iter().filter(|l| l.loop_tools.execute.as_deref() == Some(tool));
    let named = arguments.get("language").and_then(Value::as_str);
    let first = bound.clone().next();
    named.and_then(|n| bound.find(|l| l.name == n)).or(first)
}

/// What an exact execute request runs, for the approver: the declared program argument, else
/// the `program_ref`, else (neither present) the whole arguments object.
fn runnable(
    found: &Discovered,
    entry: &LanguageEntry,
    tool: &str,
    arguments: &Map<String, Value>,
) -> Runnable {
    let argument = found.tool(tool).ok().and_then(|t| program_argument(t, &entry.name).ok());
    if let Some(program) = argument.and_then(|a| arguments.get(&a)) {
        return Runnable::Program(program.clone());
    }
    match arguments.get("program_ref").and_then(Value::as_str) {
        Some(reference) => Runnable::Promoted(reference.to_owned()),
        None => Runnable::Program(Value::Object(arguments.clone())),
    }
}
