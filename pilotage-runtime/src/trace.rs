//! Traces (Part II §5.8), run records and the trace fetch door (Part II §6.6).

use std::collections::HashMap;
use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::errors::RequestError;
use crate::execute::Outcome;
use crate::language::TraceLevel;

/// Deserialize an optional "any" member so that a present `null` stays `Some(Value::Null)`:
/// absent and `null` are different facts in a trace.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One control-flow decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// The branch or loop step.
    pub at: String,
    /// The arm label, or `continue`/`exit`.
    pub took: String,
    /// The evaluated reason.
    pub because: String,
}

/// One executed step, in flat execution order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceStep {
    /// Iteration- and expansion-qualified identifier.
    pub id: String,
    /// The invoked entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<String>,
    /// Step input (full level, non-control-flow steps).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub input: Option<Value>,
    /// Step output (full; truncated form at summary).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub output: Option<Value>,
    /// Step outcome.
    pub outcome: Outcome,
    /// Duration in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_ms: Option<u64>,
    /// Decisions of a branch or loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Vec<Decision>>,
}

impl TraceStep {
    /// Whether this is a control-flow entry (it carries decisions).
    pub fn is_control_flow(&self) -> bool {
        self.decisions.is_some()
    }
}

/// A trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trace {
    /// The Run.
    pub run_id: String,
    /// Effective level.
    pub level: TraceLevelWire,
    /// Flat execution log.
    pub steps: Vec<TraceStep>,
    /// Informative statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Value>,
}

/// The wire form of [`TraceLevel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceLevelWire {
    /// `summary`
    Summary,
    /// `full`
    Full,
}

impl From<TraceLevel> for TraceLevelWire {
    fn from(l: TraceLevel) -> Self {
        match l {
            TraceLevel::Summary => TraceLevelWire::Summary,
            TraceLevel::Full => TraceLevelWire::Full,
        }
    }
}

/// Outputs whose JSON form exceeds this many bytes are truncated in summary traces.
pub const SUMMARY_OUTPUT_BYTES: usize = 256;

/// The documented summary truncation: an output whose JSON text is at most
/// [`SUMMARY_OUTPUT_BYTES`] bytes is kept as is; a longer one becomes
/// `{"truncated": true, "bytes": N, "preview": "<first 200 characters of its JSON text>"}`.
pub fn truncate_output(v: &Value) -> Value {
    let text = v.to_string();
    if text.len() <= SUMMARY_OUTPUT_BYTES {
        return v.clone();
    }
    let preview: String = text.chars().take(200).collect();
    serde_json::json!({"truncated": true, "bytes": text.len(), "preview": preview})
}

/// The steps as they appear at `level`: summary omits inputs and truncates outputs;
/// control-flow entries never carry input or output.
pub fn render_steps(steps: &[TraceStep], level: TraceLevel) -> Vec<TraceStep> {
    steps
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if s.is_control_flow() {
                s.input = None;
                s.output = None;
            } else if level == TraceLevel::Summary {
                s.input = None;
                s.output = s.output.as_ref().map(truncate_output);
            }
            s
        })
        .collect()
}

/// A stored Run: the trace envelope as recorded, at the Language's ceiling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The Run.
    pub run_id: String,
    /// The caller that ran it (fetches by others are `not_found`).
    pub owner: String,
    /// The Language.
    pub language: String,
    /// Outcome.
    pub outcome: Outcome,
    /// Output, where retained.
    #[serde(default, deserialize_with = "present")]
    pub output: Option<Value>,
    /// Level recorded.
    pub level: TraceLevel,
    /// Steps at the recorded level.
    pub steps: Vec<TraceStep>,
    /// Statistics.
    pub stats: Option<Value>,
}

impl Serialize for TraceLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
impl<'de> Deserialize<'de> for TraceLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TraceLevel::parse(&s).ok_or_else(|| serde::de::Error::custom("unknown trace level"))
    }
}

/// Where run records live. Implementations must make `put` durable before returning when
/// they claim [`RunStore::durable`].
pub trait RunStore: Send + Sync + 'static {
    /// Store a record, retrievable for at least `keep_for`.
    fn put(&self, record: RunRecord, keep_for: std::time::Duration) -> Result<(), String>;
    /// The record `run_id`, if retained and still within retention.
    fn get(&self, run_id: &str) -> Option<RunRecord>;
    /// Whether records survive a restart (required by ISO 8601 duration retention).
    fn durable(&self) -> bool;
    /// Record the response of the first Run under idempotency `key` (scoped by the caller),
    /// so a replay after a restart returns it. The default keeps nothing.
    fn put_replay(
        &self,
        key: &str,
        fingerprint: &str,
        response: &Value,
        keep_for: std::time::Duration,
    ) -> Result<(), String> {
        let _ = (key, fingerprint, response, keep_for);
        Ok(())
    }
    /// The fingerprint and response recorded under `key`, within its window.
    fn get_replay(&self, key: &str) -> Option<(String, Value)> {
        let _ = key;
        None
    }
}

/// An in-memory store: the right store for `"session"` retention (one per session, so
/// records live exactly as long as the session).
#[derive(Default)]
pub struct MemoryRunStore {
    runs: Mutex<HashMap<String, RunRecord>>,
}

impl RunStore for MemoryRunStore {
    fn put(&self, record: RunRecord, _keep_for: std::time::Duration) -> Result<(), String> {
        let mut runs = self.runs.lock().map_err(|_| "run store poisoned".to_owned())?;
        runs.insert(record.run_id.clone(), record);
        Ok(())
    }
    fn get(&self, run_id: &str) -> Option<RunRecord> {
        self.runs.lock().ok()?.get(run_id).cloned()
    }
    fn durable(&self) -> bool {
        false
    }
}

/// The trace fetch response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceFetchResponse {
    /// The Run.
    pub run_id: String,
    /// Its outcome.
    pub outcome: Outcome,
    /// Output, where retained.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub output: Option<Value>,
    /// The trace at min(requested, recorded).
    pub trace: Trace,
    /// Optional prose (only with `trace_fetch.narrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub narration: Option<String>,
}

/// The one `not_found` every unfetchable Run gets: unknown, expired, unstored and foreign Runs
/// are indistinguishable, byte for byte.
pub fn run_not_found() -> RequestError {
    RequestError::not_found("unknown run: it may have expired or was never retained")
}

/// Fetch a record for `caller` at `requested` level (absent: as recorded).
pub fn fetch(
    record: Option<RunRecord>,
    caller: &str,
    requested: Option<TraceLevel>,
) -> Result<TraceFetchResponse, RequestError> {
    let record = match record {
        Some(r) if r.owner == caller => r,
        _ => return Err(run_not_found()),
    };
    let level = requested.map_or(record.level, |r| r.min(record.level));
    Ok(TraceFetchResponse {
        run_id: record.run_id.clone(),
        outcome: record.outcome,
        output: record.output,
        trace: Trace {
            run_id: record.run_id,
            level: level.into(),
            steps: render_steps(&record.steps, level),
            stats: record.stats,
        },
        narration: None,
    })
}
