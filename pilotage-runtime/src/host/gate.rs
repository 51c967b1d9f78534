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
    /// An execute request formed by the caller with exact arguments
    /// ([`Host::call_tool`](super::Host::call_tool)), outside the loop: no validation ties any
    /// risk information to it, so it always needs approval.
    Unvalidated,
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
/// risky; an empty list is no risk information), else approval for every execution.
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
    // An empty list names nothing whose risk could be read: no risk information (fail closed),
    // the rule the gate proxy keeps too.
    let Some(references) = validation.references.as_ref().filter(|r| !r.is_empty()) else {
        return without_risk(language, runnable, GateReason::NoRiskInformation);
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
        None => without_risk(language, runnable, GateReason::UnknownEntry(program_ref.to_owned())),
    }
}

/// The gate for an execute request with exact arguments: always held (no validation of the
/// loop vouches for its risk).
pub(crate) fn decide_exact(language: &str, runnable: Runnable) -> GateDecision {
    without_risk(language, runnable, GateReason::Unvalidated)
}

/// Approval needed for want of any risk information, for `reason`.
fn without_risk(language: &str, runnable: Runnable, reason: GateReason) -> GateDecision {
    GateDecision::NeedsApproval(Box::new(request(language, runnable, None, Vec::new(), None, vec![reason])))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, hints: RiskHints) -> CatalogEntry {
        let value =
            serde_json::json!({"id": id, "kind": "table", "name": id, "risk": "r", "risk_hints": hints});
        serde_json::from_value(value).unwrap()
    }

    fn validation(references: Option<&[&str]>) -> ValidateResponse {
        let references = references.map(|r| r.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        serde_json::from_value(
            serde_json::json!({"valid": true, "diagnostics": [], "references": references}),
        )
        .unwrap()
    }

    #[test]
    fn without_a_plan_the_references_entries_decide_and_a_missing_one_is_risky() {
        let program = Value::from("SELECT 1");
        let read = entry("a", RiskHints::READ_ONLY);
        let wide = entry("b", RiskHints::new(true, false, true));
        assert_eq!(
            decide("l/1", &program, &validation(Some(&["a"])), std::slice::from_ref(&read)),
            GateDecision::Clear
        );
        let GateDecision::NeedsApproval(both) =
            decide("l/1", &program, &validation(Some(&["a", "b"])), &[read.clone(), wide])
        else {
            panic!("an openWorld entry needs approval")
        };
        assert_eq!(both.reasons, [GateReason::OpenWorld]);
        assert_eq!(both.entries.len(), 2);
        assert_eq!(both.program_text(), Some("SELECT 1"));
        let GateDecision::NeedsApproval(missing) =
            decide("l/1", &program, &validation(Some(&["a", "zz"])), &[read])
        else {
            panic!("an entry that could not be looked up is risky")
        };
        assert_eq!(missing.reasons, [GateReason::UnknownEntry("zz".into())]);
        let GateDecision::NeedsApproval(none) = decide("l/1", &program, &validation(None), &[]) else {
            panic!()
        };
        assert_eq!((none.reasons.as_slice(), none.risk), ([GateReason::NoRiskInformation].as_slice(), None));
        let GateDecision::NeedsApproval(empty) = decide("l/1", &program, &validation(Some(&[])), &[]) else {
            panic!("an empty references list is no risk information")
        };
        assert_eq!(empty.reasons, [GateReason::NoRiskInformation]);
    }

    #[test]
    fn a_plan_understating_its_maximum_is_judged_by_its_steps() {
        let plan = serde_json::json!({"valid": true, "diagnostics": [], "plan": {"max_risk": "safe",
            "max_risk_hints": {"readOnly": true, "destructive": false, "openWorld": false},
            "steps": [{"id": "s", "risk": "x", "risk_hints": {"readOnly": false, "destructive": true, "openWorld": false}}]}});
        let validation: ValidateResponse = serde_json::from_value(plan).unwrap();
        let GateDecision::NeedsApproval(request) = decide("l/1", &Value::Null, &validation, &[]) else {
            panic!()
        };
        assert_eq!(request.reasons, [GateReason::Destructive]);
        let GateDecision::NeedsApproval(unknown) = decide_promoted("l/1", "p", None) else { panic!() };
        assert_eq!(unknown.reasons, [GateReason::UnknownEntry("p".into())]);
    }
}
