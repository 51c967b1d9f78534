//! Asking the person, through the host, with MCP elicitation (`elicitation/create`, a form with
//! one boolean): the plan's steps and risk, or the entries, the program itself for a text
//! Language, and the statement that these are unverified claims of the server.

use std::fmt::Write;
use std::time::Duration;

// The statement every question carries (Part II §7.3, honest approval presentation) is the
// library's own.
use pilotage::host::UNVERIFIED_CLAIMS as UNVERIFIED;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Value};

use crate::evidence::{Evidence, Source};

/// The most plan steps (or entries) the question lists, and the most program characters it shows.
const LISTED: usize = 40;
const PROGRAM_CHARS: usize = 4000;

/// What the person (or the host) answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Accepted with `approve: true`.
    Approved,
    /// Declined, or accepted with `approve: false`.
    Declined,
    /// Cancelled (or the host cancelled the execute while asking).
    Cancelled,
    /// Not asked, or no answer: why.
    Unasked(String),
}

/// What the question is about.
pub struct Question<'a> {
    /// The upstream's `serverInfo.name`.
    pub server: &'a str,
    /// The Language's name.
    pub language: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The inline program, or `None` for a `program_ref` run.
    pub program: Option<&'a Value>,
    /// The promoted program's reference, for a `program_ref` run.
    pub program_ref: Option<&'a str>,
    /// What the risk was read from.
    pub evidence: &'a Evidence,
}

/// The question's text.
pub fn message(q: &Question<'_>) -> String {
    let e = q.evidence;
    let mut m =
        format!("The agent asks to run a program on `{}` ({}, tool `{}`).\n", q.server, q.language, q.tool);
    let _ = writeln!(m, "Risk: {} (from the {}).", e.risk.words(), from(e.source));
    if let Some(gap) = &e.gap {
        let _ = writeln!(m, "Why approval is needed: {gap}.");
    }
    if let Some(plan) = &e.plan {
        let _ = writeln!(m, "Plan ({} steps, max risk {}):", plan.steps.len(), plan.max_risk);
        for step in plan.steps.iter().take(LISTED) {
            let calls = step.calls.as_ref().map(|c| format!(" calls {c}")).unwrap_or_default();
            let hints = serde_json::to_string(&step.risk_hints).unwrap_or_default();
            let _ = writeln!(m, "  - {}{calls}: {} {hints}", step.id, step.risk);
        }
        if plan.steps.len() > LISTED {
            let _ = writeln!(m, "  ... and {} more steps", plan.steps.len() - LISTED);
        }
    }
    for entry in e.entries.iter().take(LISTED) {
        let _ = writeln!(
            m,
            "  - entry {} ({}): {} {}{}",
            text(&entry["id"]),
            text(&entry["kind"]),
            text(&entry["risk"]),
            entry["risk_hints"],
            entry["description"].as_str().map(|d| format!("; {d}")).unwrap_or_default()
        );
    }
    match (q.program, q.program_ref) {
        (Some(Value::String(program)), _) => {
            let shown: String = program.chars().take(PROGRAM_CHARS).collect();
            let cut = if shown.len() < program.len() { "\n[... cut]" } else { "" };
            let _ = writeln!(m, "Program:\n{shown}{cut}");
        }
        (Some(program), _) => {
            let full = serde_json::to_string_pretty(program).unwrap_or_default();
            let shown: String = full.chars().take(PROGRAM_CHARS).collect();
            let cut = if shown.len() < full.len() { "\n[... cut]" } else { "" };
            let _ = writeln!(m, "Program:\n{shown}{cut}");
        }
        (None, Some(id)) => {
            let _ = writeln!(m, "Promoted program: {id}");
        }
        (None, None) => {}
    }
    let _ = write!(m, "{UNVERIFIED}\nApprove to run it once.");
    m
}

fn from(source: Source) -> &'static str {
    match source {
        Source::Plan => "plan of the server's validation of this exact program",
        Source::References => {
            "catalog entries this program references, as the server's validation listed them"
        }
        Source::Promoted => "promoted entry's risk hints",
        Source::Missing => "nothing: the server gave no risk information",
    }
}

fn text(v: &Value) -> String {
    v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())
}

/// Ask the person through `host`, bounded by `timeout` and abandoned when `cancelled` completes
/// (the host cancelled the execute).
pub async fn ask(
    host: Option<&Peer<RoleServer>>,
    q: &Question<'_>,
    timeout: Duration,
    cancelled: impl std::future::Future<Output = ()>,
) -> Answer {
    let Some(host) = host else { return Answer::Unasked("no host".into()) };
    let can_ask = host.peer_info().is_some_and(|i| i.capabilities.elicitation.is_some());
    if !can_ask {
        return Answer::Unasked(
            "the host does not support elicitation, so the person could not be asked".into(),
        );
    }
    let params = match params(q) {
        Ok(params) => params,
        Err(e) => return Answer::Unasked(e),
    };
    let answer = tokio::select! {
        answer = tokio::time::timeout(timeout, host.create_elicitation(params)) => answer,
        () = cancelled => return Answer::Cancelled,
    };
    match answer {
        Err(_) => Answer::Unasked(format!("no answer within {} s", timeout.as_secs())),
        Ok(Err(e)) => Answer::Unasked(format!("the host could not ask: {e}")),
        Ok(Ok(result)) => read(&result),
    }
}

/// The elicitation that asks `q`: a form with one boolean, `approve`.
pub fn params(q: &Question<'_>) -> Result<ElicitRequestParams, String> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message(q),
        "requestedSchema": {
            "type": "object",
            "properties": { "approve": {
                "type": "boolean",
                "title": "Run this program",
                "description": "Yes runs the program once; no refuses it.",
            }},
            "required": ["approve"],
        },
    }))
    .map_err(|e| format!("the question could not be built: {e}"))
}

/// The person's answer in an elicitation result: only `accept` with `approve: true` approves.
pub fn read(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept if result.content.as_ref().is_some_and(|c| c["approve"] == true) => {
            Answer::Approved
        }
        ElicitationAction::Accept | ElicitationAction::Decline => Answer::Declined,
        ElicitationAction::Cancel => Answer::Cancelled,
        _ => Answer::Unasked("the host answered with an action the gate does not know".into()),
    }
}
