//! The Host risk gate (Part II §7.3): policy the library enforces, never the Model. [`decide`]
//! says whether a Run needs approval and builds the [`GateRequest`] an [`Approver`] answers;
//! [`Language::execute`](super::Language::execute) transmits nothing the gate holds until
//! the Approver says [`Approval::Granted`].

use serde_json::Value;

use crate::model::catalog::CatalogEntry;
use crate::model::plan::{Plan, ValidateResponse};
use crate::model::risk::RiskHints;

/// What every approval request says (Part II §7.3, honest approval presentation).
pub const UNVERIFIED_CLAIMS: &str = "Unverified server claims: the plan, every description of it and of the catalog \
     entries, and every risk label and hint shown here were written by the server. Nothing has checked that they \
     describe what the Run will do.";

/// Why a Run needs approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateReason {
    /// The risk hints say `destructive`.
    Destructive,
    /// The risk hints say `openWorld`.
    OpenWorld,
    /// A referenced entry whose risk the Host could not read (treated as risky).
    UnknownEntry(String),
    /// Neither a plan nor a server-provided reference list: approval for every execution.
    NoRiskInformation,
}

/// What a Run executes.
#[derive(Clone, Debug, PartialEq)]
pub enum Runnable {
    /// An inline program.
    Program(Value),
    /// A promoted program, by reference.
    Promoted(String),
}

/// What an [`Approver`] is asked: everything a person needs to decide, and the statement that
/// it is the server's unverified word.
#[derive(Clone, Debug, PartialEq)]
pub struct GateRequest {
    /// The Language.
    pub language: String,
    /// What would run.
    pub runnable: Runnable,
    /// The plan, when the validation returned one.
    pub plan: Option<Plan>,
    /// The catalog entries the risk was read from (the references', or the promoted entry).
    pub entries: Vec<CatalogEntry>,
    /// The risk hints the gate judged (`None`: no risk information at all).
    pub risk: Option<RiskHints>,
    /// Why approval is needed.
    pub reasons: Vec<GateReason>,
    /// [`UNVERIFIED_CLAIMS`].
    pub unverified_claims: &'static str,
}

impl GateRequest {
    /// The program text of a text-valued Language (a program that is a JSON string), to show
    /// beside the plan.
    pub fn program_text(&self) -> Option<&str> {
        match &self.runnable {
            Runnable::Program(Value::String(text)) => Some(text),
            _ => None,
        }
    }
}

/// The gate's answer for one Run.
#[derive(Clone, Debug, PartialEq)]
pub enum GateDecision {
    /// Nothing risky: execute may be transmitted.
    Clear,
    /// Execute may be transmitted only after an [`Approver`] grants this request.
    NeedsApproval(Box<GateRequest>),
}

/// An approver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Execute may be transmitted.
    Granted,
    /// It may not; the reason is shown to the caller.
    Denied(String),
}

/// Approval from outside the Model: a person at a terminal, a policy, a ticket.
///
/// ```
/// use pilotage_runtime::host::{Approval, Approver, GateRequest};
/// struct Never;
/// #[pilotage_runtime::host::async_trait]
/// impl Approver for Never {
///     async fn approve(&self, request: &GateRequest) -> Approval {
///         Approval::Denied(format!("{} reason(s); refused by policy", request.reasons.len()))
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// Grant or deny `request`.
    async fn approve(&self, request: &GateRequest) -> Approval;
}

/// The approver of a Host built without one: denies everything (absent approval is no
/// approval).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoApprover;

#[async_trait::async_trait]
impl Approver for NoApprover {
    async fn approve(&self, _request: &GateRequest) -> Approval {
        Approval::Denied("no approver is configured: a risky Run needs one".into())
    }
}

/// The gate for an inline program: the plan's `max_risk_hints` (joined with its steps'
/// hints, so an understated maximum does not hide a step), else the aggregate of the
/// server-provided `references`' entries among `entries` (a reference without its entry is
/// risky), else approval for every execution.
///
/// ```
/// use pilotage_runtime::host::{decide, GateDecision, GateReason};
/// use pilotage_runtime::model::plan::ValidateResponse;
/// let verdict: ValidateResponse = serde_json::from_value(serde_json::json!({"valid": true, "diagnostics": []})).unwrap();
/// let GateDecision::NeedsApproval(request) = decide("l/1", &serde_json::json!({}), &verdict, &[]) else { panic!() };
/// assert_eq!(request.reasons, [GateReason::NoRiskInformation]);
/// ```
pub fn decide(
    language: &str,
    program: &Value,
    validation: &ValidateResponse,
    entries: &[CatalogEntry],
) -> GateDecision {
    let runnable = Runnable::Program(program.clone());
    if let Some(plan) = &validation.plan {
        let steps = plan.steps.iter().map(|s| s.risk_hints);
        let risk = RiskHints::aggregate(std::iter::once(plan.max_risk_hints).chain(steps));
        let request = request(language, runnable, Some(plan.clone()), Vec::new(), Some(risk), Vec::new());
        return judged(request);
    }
    let Some(references) = &validation.references else {
        let reasons = vec![GateReason::NoRiskInformation];
        return GateDecision::NeedsApproval(Box::new(request(
            language,
            runnable,
            None,
            Vec::new(),
            None,
            reasons,
        )));
    };
    let mut found = Vec::new();
    let mut reasons = Vec::new();
    for reference in references {
        match entries.iter().find(|e| &e.id == reference) {
            Some(entry) => found.push(entry.clone()),
            None => reasons.push(GateReason::UnknownEntry(reference.clone())),
        }
    }
    let risk = RiskHints::aggregate(found.iter().map(|e| e.risk_hints));
    judged(request(language, runnable, None, found, Some(risk), reasons))
}

/// The gate for a promoted program: its entry's `risk_hints` (no entry: risky).
pub fn decide_promoted(language: &str, program_ref: &str, entry: Option<&CatalogEntry>) -> GateDecision {
    let runnable = Runnable::Promoted(program_ref.to_owned());
    match entry {
        Some(entry) => {
            judged(request(language, runnable, None, vec![entry.clone()], Some(entry.risk_hints), Vec::new()))
        }
        None => {
            let reasons = vec![GateReason::UnknownEntry(program_ref.to_owned())];
            GateDecision::NeedsApproval(Box::new(request(
                language,
                runnable,
                None,
                Vec::new(),
                None,
                reasons,
            )))
        }
    }
}

fn request(
    language: &str,
    runnable: Runnable,
    plan: Option<Plan>,
    entries: Vec<CatalogEntry>,
    risk: Option<RiskHints>,
    reasons: Vec<GateReason>,
) -> GateRequest {
    GateRequest {
        language: language.to_owned(),
        runnable,
        plan,
        entries,
        risk,
        reasons,
        unverified_claims: UNVERIFIED_CLAIMS,
    }
}

/// Adds the reasons `request.risk` gives (hints that say both `readOnly` and `destructive`
/// count as destructive); clear only without any reason.
fn judged(mut request: GateRequest) -> GateDecision {
    if let Some(risk) = request.risk {
        if risk.destructive {
            request.reasons.push(GateReason::Destructive);
        }
        if risk.open_world {
            request.reasons.push(GateReason::OpenWorld);
        }
    }
    if request.reasons.is_empty() {
        GateDecision::Clear
    } else {
        GateDecision::NeedsApproval(Box::new(request))
    }
}
