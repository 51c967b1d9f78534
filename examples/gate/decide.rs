//! The risk rule of Part II §7.3 is `pilotage::host`'s ([`decide`], [`decide_promoted`]): this
//! module gives it what the gate saw, typed, and reads its verdict as the gate's [`Risk`].
//! What the library cannot read (a validation or an entry that is not the official shape) is
//! [`Risk::Unknown`].

use pilotage::host::{decide, decide_promoted, GateDecision, GateReason};
use pilotage::model::catalog::CatalogEntry;
use pilotage::model::plan::ValidateResponse;
use serde::Deserialize;
use serde_json::Value;

/// What the gate knows of a program's risk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Risk {
    /// Neither `destructive` nor `openWorld`.
    Safe,
    /// `destructive` or `openWorld` (or both).
    Risky {
        /// `destructive` is true.
        destructive: bool,
        /// `openWorld` is true.
        open_world: bool,
    },
    /// No risk information, or information the gate cannot read: treated as risky (fail
    /// closed), and never pre-approved by a policy.
    Unknown,
}

/// What of a validation decides: the plan (a Language that declares one: references the server
/// may send anyway are not looked at) or the references' entries (one that does not: a plan
/// sent anyway is not looked at).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decides {
    /// The plan.
    Plan,
    /// The references' catalog entries.
    References,
}

impl Risk {
    /// The library's verdict on an inline program: `validation` is the validate response as
    /// received, of which only what `decides` is read, `entries` the catalog entries of its
    /// references (as looked up).
    pub fn of_validation(
        language: &str,
        program: &Value,
        validation: &Value,
        decides: Decides,
        entries: &[Value],
    ) -> Risk {
        match ValidateResponse::deserialize(validation) {
            Ok(mut validation) => Risk::of_response(language, program, &mut validation, decides, entries),
            Err(_) => Risk::Unknown,
        }
    }

    /// [`Risk::of_validation`] of a validate response read already (of which what does not
    /// decide is taken out: the references for [`Decides::Plan`], the plan otherwise).
    pub fn of_response(
        language: &str,
        program: &Value,
        validation: &mut ValidateResponse,
        decides: Decides,
        entries: &[Value],
    ) -> Risk {
        match decides {
            Decides::Plan => validation.references = None,
            Decides::References => validation.plan = None,
        }
        let entries: Vec<CatalogEntry> =
            entries.iter().filter_map(|e| serde_json::from_value(e.clone()).ok()).collect();
        Risk::of(&decide(language, program, validation, &entries))
    }

    /// The library's verdict on a `program_ref` run, from its promoted entry.
    pub fn of_promoted(language: &str, program_ref: &str, entry: &Value) -> Risk {
        let entry: Option<CatalogEntry> = serde_json::from_value(entry.clone()).ok();
        Risk::of(&decide_promoted(language, program_ref, entry.as_ref()))
    }

    fn of(decision: &GateDecision) -> Risk {
        match decision {
            GateDecision::Clear => Risk::Safe,
            GateDecision::NeedsApproval(request) => {
                let unread = request
                    .reasons
                    .iter()
                    .any(|r| matches!(r, GateReason::UnknownEntry(_) | GateReason::NoRiskInformation));
                match request.risk {
                    Some(h) if !unread && (h.destructive || h.open_world) => {
                        Risk::Risky { destructive: h.destructive, open_world: h.open_world }
                    }
                    _ => Risk::Unknown,
                }
            }
        }
    }

    /// Whether an execute of this risk needs approval (Part II §7.3).
    pub fn needs_approval(self) -> bool {
        self != Risk::Safe
    }

    /// The hints in words, for the question, the refusal and the audit line.
    pub fn words(self) -> &'static str {
        match self {
            Risk::Safe => "safe",
            Risk::Risky { destructive: true, open_world: true } => "destructive and openWorld",
            Risk::Risky { destructive: true, .. } => "destructive",
            Risk::Risky { .. } => "openWorld",
            Risk::Unknown => "unknown (no risk information: treated as risky)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Decides, Risk};
    use serde_json::{json, Value};

    const SAFE: &str = r#"{"readOnly": true, "destructive": false, "openWorld": false}"#;
    const GONE: &str = r#"{"readOnly": false, "destructive": true, "openWorld": false}"#;
    const OUT: &str = r#"{"readOnly": true, "destructive": false, "openWorld": true}"#;

    fn hints(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    fn planned(max: &str, steps: &[&str]) -> Value {
        let steps: Vec<Value> = steps
            .iter()
            .enumerate()
            .map(|(i, h)| json!({"id": format!("s{i}"), "risk": "r", "risk_hints": hints(h)}))
            .collect();
        json!({"valid": true, "diagnostics": [], "plan": {"steps": steps, "max_risk": "r", "max_risk_hints": hints(max)}})
    }

    fn entry(id: &str, h: &str) -> Value {
        json!({"id": id, "kind": "action", "name": id, "risk": "r", "risk_hints": hints(h)})
    }

    #[test]
    fn the_librarys_verdicts_read_as_the_gates_risk() {
        let p = json!({});
        assert_eq!(Risk::of_validation("l/1", &p, &planned(SAFE, &[SAFE]), Decides::Plan, &[]), Risk::Safe);
        let gone = Risk::Risky { destructive: true, open_world: false };
        assert_eq!(Risk::of_validation("l/1", &p, &planned(GONE, &[GONE]), Decides::Plan, &[]), gone);
        assert_eq!(
            Risk::of_validation("l/1", &p, &planned(SAFE, &[SAFE, GONE]), Decides::Plan, &[]),
            gone,
            "understated"
        );
        let refs = json!({"valid": true, "diagnostics": [], "references": ["a", "b"]});
        let both = Risk::Risky { destructive: true, open_world: true };
        assert_eq!(
            Risk::of_validation("l/1", &p, &refs, Decides::References, &[entry("a", GONE), entry("b", OUT)]),
            both
        );
        assert_eq!(
            Risk::of_validation("l/1", &p, &refs, Decides::References, &[entry("a", SAFE)]),
            Risk::Unknown,
            "b is missing"
        );
        let bare = json!({"valid": true, "diagnostics": []});
        assert_eq!(
            Risk::of_validation("l/1", &p, &bare, Decides::References, &[]),
            Risk::Unknown,
            "no plan, no references"
        );
        assert_eq!(
            Risk::of_validation("l/1", &p, &json!({"valid": true}), Decides::Plan, &[]),
            Risk::Unknown,
            "not a response"
        );
        assert_eq!(
            Risk::of_promoted("l/1", "p", &entry("p", OUT)),
            Risk::Risky { destructive: false, open_world: true }
        );
        assert_eq!(Risk::of_promoted("l/1", "p", &entry("p", SAFE)), Risk::Safe);
        assert_eq!(Risk::of_promoted("l/1", "p", &json!({"id": "p"})), Risk::Unknown);
        assert!(!Risk::Safe.needs_approval());
        assert!(Risk::Unknown.needs_approval());
        assert!(both.needs_approval());
    }
}
