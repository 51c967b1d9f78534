//! Request construction (Part III §4.4, §5, §10.2 item 4): every loop request is formed only
//! from the manifest (the tool names), the tool's `inputSchema` (which reserved members it
//! declares), its Pilotage program declaration (the argument name) and the reserved-name
//! table. No argument name is guessed: a member the tool does not declare is never sent.

use serde_json::{Map, Value};

use super::discover::{declares, program_argument, Discovered};
use super::error::HostError;
use super::gate::Runnable;
use crate::model::capabilities::{Capability, SubFeature};
use crate::model::manifest::LanguageEntry;

/// What a validate request carries beside the program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValidateOptions {
    /// The validation context (`context`), for a Language with a context schema.
    pub context: Option<Value>,
}

/// The trace a Run answers with: never below `summary` (Part II §7.1, a program not yet
/// verified through the loop may not ask for `none`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceDetail {
    /// `summary`.
    Summary,
    /// `full`.
    Full,
}

impl TraceDetail {
    fn wire(self) -> &'static str {
        match self {
            TraceDetail::Summary => "summary",
            TraceDetail::Full => "full",
        }
    }
}

/// `immediate` or `deploy`, for a Language with `execution: "both"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionMode {
    /// `immediate`.
    Immediate,
    /// `deploy`.
    Deploy,
}

/// What an execute request carries beside the runnable and the catalog token.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExecuteOptions {
    /// The program input (`input`).
    pub input: Option<Value>,
    /// The execution context (`context`).
    pub context: Option<Value>,
    /// The trace level; default the Language's ceiling.
    pub trace: Option<TraceDetail>,
    /// `store`: keep (or forbid keeping) the Run record for a later trace fetch.
    pub store: Option<bool>,
    /// The idempotency key, for a Language declaring `execute.idempotency`. Without one the
    /// Host makes a fresh key for every execute request; one given is refused if it was used
    /// with another runnable or input.
    pub idempotency_key: Option<String>,
    /// The mode of a Language with `execution: "both"` (default `immediate`).
    pub mode: Option<ExecutionMode>,
}

/// The validate tool's name and arguments.
pub(crate) fn validate_request(
    found: &Discovered,
    entry: &LanguageEntry,
    program: &Value,
    options: &ValidateOptions,
) -> Result<(String, Map<String, Value>), HostError> {
    let tool = found.tool(&entry.loop_tools.validate)?;
    let mut arguments = Map::new();
    arguments.insert(program_argument(tool, &entry.name)?, program.clone());
    if let Some(context) = &options.context {
        // Reserved on every validate tool (Part III §4.4 rule 10: the server must let it reach
        // validation), so it is sent even when the schema does not list it.
        arguments.insert("context".into(), context.clone());
    }
    Ok((tool.name.clone(), arguments))
}

/// The execute tool's name and arguments.
pub(crate) fn execute_request(
    found: &Discovered,
    entry: &LanguageEntry,
    runnable: &Runnable,
    expected_catalog_version: Option<&str>,
    idempotency_key: Option<&str>,
    options: &ExecuteOptions,
) -> Result<(String, Map<String, Value>), HostError> {
    let name = entry
        .loop_tools
        .execute
        .as_deref()
        .ok_or_else(|| HostError::Unsupported(format!("{} does not declare execute", entry.name)))?;
    let tool = found.tool(name)?;
    let mut arguments = Map::new();
    let mut put = |member: &str, value: Value| -> Result<(), HostError> {
        if !declares(tool, member) {
            return Err(HostError::Unsupported(format!("the tool {name} does not declare `{member}`")));
        }
        arguments.insert(member.to_owned(), value);
        Ok(())
    };
    match runnable {
        Runnable::Program(program) => {
            let argument = program_argument(tool, &entry.name)?;
            put(&argument, program.clone())?;
        }
        Runnable::Promoted(reference) => put("program_ref", Value::from(reference.as_str()))?,
    }
    let ceiling =
        if entry.trace.as_deref() == Some("full") { TraceDetail::Full } else { TraceDetail::Summary };
    put("trace_level", Value::from(options.trace.unwrap_or(ceiling).wire()))?;
    if let Some(version) = expected_catalog_version {
        put("expected_catalog_version", Value::from(version))?;
    }
    if let Some(key) = idempotency_key {
        put("idempotency_key", Value::from(key))?;
    }
    if let Some(input) = &options.input {
        put("input", input.clone())?;
    }
    if let Some(context) = &options.context {
        put("context", context.clone())?;
    }
    if let Some(store) = options.store {
        put("store", Value::from(store))?;
    }
    if entry.execution.as_deref() == Some("both") {
        let mode = match options.mode.unwrap_or(ExecutionMode::Immediate) {
            ExecutionMode::Immediate => "immediate",
            ExecutionMode::Deploy => "deploy",
        };
        put("mode", Value::from(mode))?;
    } else if options.mode.is_some() {
        return Err(HostError::Unsupported(format!("{} has a single execution mode", entry.name)));
    }
    Ok((name.to_owned(), arguments))
}

/// Whether the Language takes idempotency keys (`execute.idempotency`).
pub(crate) fn idempotent(entry: &LanguageEntry) -> bool {
    entry.capabilities.declares(Capability::Execute)
        && entry.capabilities.declares_sub(SubFeature::Idempotency)
}
