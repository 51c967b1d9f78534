//! What an execute is gated on (Part II §7.3): the plan of the validation of that exact
//! program, the catalog entries of the server-provided `references` where the Language
//! declares no plan, or the promoted entry's `risk_hints` for a `program_ref` run. Whatever is
//! missing or unreadable is [`Risk::Unknown`].

use std::sync::Arc;

use pilotage::model::diagnostic::Severity;
use pilotage::model::plan::{Plan, ValidateResponse};
use pilotage::model::risk::RiskHints;
use rmcp::model::ErrorData;
use serde::Deserialize;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::decide::{Decides, Risk};
use crate::proxy::Inner;
use crate::recent::Recent;
use crate::surface::Language;

/// The most references whose entries the gate looks up for one program; more is unknown risk.
const MAX_REFERENCES: usize = 64;

/// Where the risk came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The validation's plan (`max_risk_hints`).
    Plan,
    /// The catalog entries of the validation's server-provided `references`.
    References,
    /// The promoted entry named by `program_ref`.
    Promoted,
    /// Nowhere: no plan, no references, no entry.
    Missing,
}

impl Source {
    /// The name in audit lines.
    pub fn name(self) -> &'static str {
        match self {
            Source::Plan => "plan",
            Source::References => "references",
            Source::Promoted => "promoted_entry",
            Source::Missing => "missing",
        }
    }
}

/// What the gate decides on.
#[derive(Clone, Debug)]
pub struct Evidence {
    /// The risk, by the rule in `decide`.
    pub risk: Risk,
    /// Where it came from.
    pub source: Source,
    /// The plan the risk came from (when [`Source::Plan`] and it is the official shape).
    pub plan: Option<Plan>,
    /// The catalog entries the risk came from (references or the promoted entry).
    pub entries: Vec<Value>,
    /// The catalog version the execute is forwarded with.
    pub catalog_version: Option<String>,
    /// Why the risk is unknown, in words, when it is.
    pub gap: Option<String>,
    /// Whether the validation stands with an error-severity diagnostic (or did not answer).
    pub invalid: bool,
    /// Whether the gate validated the program itself (it saw no validation of it).
    pub validated_here: bool,
}

impl Evidence {
    /// No risk information, for the reason `gap`.
    pub fn missing(gap: impl Into<String>) -> Evidence {
        Evidence {
            risk: Risk::Unknown,
            source: Source::Missing,
            plan: None,
            entries: Vec::new(),
            catalog_version: None,
            gap: Some(gap.into()),
            invalid: false,
            validated_here: false,
        }
    }
}

/// The evidence for an inline `program` of `language` with `context`.
pub async fn inline(
    inner: &Inner,
    language: &Language,
    argument: &str,
    program: &Value,
    context: &Value,
) -> Result<Evidence, ErrorData> {
    let (response, validated_here) = match inner.validations.get(&key(&language.name, program, context)) {
        // Judged when it was kept, for a Language that declares a plan.
        Some(seen) => match (&seen.judged, language.plan) {
            (Some(judged), true) => return Ok(judged.evidence.clone()),
            _ => (serde_json::from_str(seen.response.get()).unwrap_or(Value::Null), false),
        },
        None => {
            let Some(validate) = &language.validate else {
                return Ok(Evidence::missing("the Language has no validate tool"));
            };
            let mut arguments = json!({ argument: program });
            if !context.is_null() {
                arguments["context"] = context.clone();
            }
            let result = inner.call(validate, arguments).await?;
            match result.structured_content {
                Some(response) if result.is_error != Some(true) => (response, true),
                _ => {
                    let mut e = Evidence::missing("the gate's own validation of the program was refused");
                    e.invalid = true;
                    return Ok(e);
                }
            }
        }
    };
    if language.plan {
        return Ok(of_plan(language, program, &response, validated_here));
    }
    let mut evidence = references(inner, language, program, &response).await?;
    finish(&mut evidence, &response, validated_here);
    Ok(evidence)
}

/// The evidence of `response`, the validation of `program` in a Language that declares a plan:
/// the plan decides; references a server may send anyway are not looked at. A response of
/// another shape than the official one is unknown risk (the library's rule cannot read it).
fn of_plan(language: &Language, program: &Value, response: &Value, validated_here: bool) -> Evidence {
    if let Ok(typed) = ValidateResponse::deserialize(response) {
        return of_typed_plan(language, program, typed, validated_here);
    }
    let mut evidence = match response.get("plan").filter(|p| p.is_object()) {
        Some(plan) => planned(Risk::Unknown, Plan::deserialize(plan).ok()),
        None => unplanned(),
    };
    finish(&mut evidence, response, validated_here);
    evidence
}

/// [`of_plan`] of a validation the server wrote as `text`, read in one pass.
fn of_plan_text(language: &Language, program: &Value, text: &RawValue) -> Evidence {
    match serde_json::from_str::<ValidateResponse>(text.get()) {
        Ok(typed) => of_typed_plan(language, program, typed, false),
        Err(_) => of_plan(language, program, &serde_json::from_str(text.get()).unwrap_or(Value::Null), false),
    }
}

/// [`of_plan`] of a response of the official shape.
fn of_typed_plan(
    language: &Language,
    program: &Value,
    mut response: ValidateResponse,
    validated_here: bool,
) -> Evidence {
    let catalog_version = response.catalog_version.take();
    let invalid = !response.valid || response.diagnostics.iter().any(|d| d.severity == Severity::Error);
    let mut evidence = if response.plan.is_some() {
        let risk = Risk::of_response(&language.name, program, &mut response, Decides::Plan, &[]);
        planned(risk, response.plan.take())
    } else {
        unplanned()
    };
    finish_with(&mut evidence, catalog_version, invalid, validated_here);
    evidence
}

/// The evidence of a validation's `plan`, of `risk`.
fn planned(risk: Risk, plan: Option<Plan>) -> Evidence {
    Evidence {
        risk,
        source: Source::Plan,
        plan,
        entries: Vec::new(),
        catalog_version: None,
        gap: None,
        invalid: false,
        validated_here: false,
    }
}

fn unplanned() -> Evidence {
    Evidence::missing("the Language declares a plan, but the validation returned none")
}

/// What every validation's evidence carries besides its risk: the catalog version, whether the
/// validation stands with an error, whether the gate ran it, and why the risk is unknown.
fn finish(evidence: &mut Evidence, response: &Value, validated_here: bool) {
    let catalog_version = response["catalog_version"].as_str().map(str::to_owned);
    let invalid = response["valid"] != Value::Bool(true)
        || response["diagnostics"].as_array().into_iter().flatten().any(|d| d["severity"] == "error");
    finish_with(evidence, catalog_version, invalid, validated_here);
}

/// [`finish`] with the response's catalog version and invalidity read already.
fn finish_with(
    evidence: &mut Evidence,
    catalog_version: Option<String>,
    invalid: bool,
    validated_here: bool,
) {
    if evidence.risk == Risk::Unknown && evidence.gap.is_none() {
        evidence.gap = Some("the risk hints are missing or unreadable".into());
    }
    evidence.catalog_version = catalog_version;
    evidence.invalid = invalid;
    evidence.validated_here = validated_here;
}

/// The aggregate of the server-provided `references`' catalog entries (a Language without a
/// plan). A plan the server may have sent anyway is not looked at. An empty list is no risk
/// information (Part II §7.3, fail closed): the program names nothing whose risk could be read.
async fn references(
    inner: &Inner,
    language: &Language,
    program: &Value,
    response: &Value,
) -> Result<Evidence, ErrorData> {
    let Some(ids) = response["references"].as_array().filter(|ids| !ids.is_empty()) else {
        return Ok(Evidence::missing(
            "the Language declares no plan and the validation returned no references",
        ));
    };
    if ids.len() > MAX_REFERENCES {
        return Ok(Evidence::missing(format!("more than {MAX_REFERENCES} references")));
    }
    let mut entries = Vec::new();
    for id in ids {
        // An entry not found is left out: the library's rule reads it as unknown risk.
        if let Some((entry, _)) = entry(inner, language, id.as_str().unwrap_or_default()).await? {
            entries.push(entry);
        }
    }
    Ok(Evidence {
        risk: Risk::of_validation(&language.name, program, response, Decides::References, &entries),
        source: Source::References,
        plan: None,
        entries,
        catalog_version: None,
        gap: None,
        invalid: false,
        validated_here: false,
    })
}

/// The evidence for a `program_ref` run: the promoted entry, looked up now, and the catalog
/// version of that lookup (Part II §7.4).
pub async fn promoted(inner: &Inner, language: &Language, id: &str) -> Result<Evidence, ErrorData> {
    let Some((entry, version)) = entry(inner, language, id).await? else {
        return Ok(Evidence::missing(format!("the promoted entry `{id}` could not be looked up")));
    };
    Ok(Evidence {
        risk: Risk::of_promoted(&language.name, id, &entry),
        source: Source::Promoted,
        plan: None,
        entries: vec![entry],
        catalog_version: version,
        gap: None,
        invalid: false,
        validated_here: false,
    })
}

/// A catalog `get` of `id`: the entry and the catalog version, or `None` when the Language
/// has no catalog or the lookup failed.
async fn entry(
    inner: &Inner,
    language: &Language,
    id: &str,
) -> Result<Option<(Value, Option<String>)>, ErrorData> {
    let Some(catalog) = &language.catalog else { return Ok(None) };
    let result = inner.call(catalog, json!({ "language": language.name, "verb": "get", "id": id })).await?;
    Ok(match result.structured_content {
        Some(got) if result.is_error != Some(true) && got["entry"].is_object() => {
            let version = got["catalog_version"].as_str().map(str::to_owned);
            Some((got["entry"].clone(), version))
        }
        _ => None,
    })
}

impl Evidence {
    /// The members of an audit line that come from the evidence (`risk` to `entries`), as JSON
    /// text without the braces.
    pub fn audit_members(&self) -> String {
        #[derive(Serialize)]
        struct Members<'a> {
            risk: &'static str,
            risk_from: &'static str,
            gap: &'a Option<String>,
            validated_by_gate: bool,
            catalog_version: &'a Option<String>,
            plan: Option<PlanSummary<'a>>,
            entries: Vec<EntrySummary<'a>>,
        }
        #[derive(Serialize)]
        struct PlanSummary<'a> {
            max_risk: &'a str,
            max_risk_hints: &'a RiskHints,
            steps: usize,
        }
        #[derive(Serialize)]
        struct EntrySummary<'a> {
            id: &'a Value,
            risk_hints: &'a Value,
        }
        let members = Members {
            risk: self.risk.words(),
            risk_from: self.source.name(),
            gap: &self.gap,
            validated_by_gate: self.validated_here,
            catalog_version: &self.catalog_version,
            plan: self.plan.as_ref().map(|p| PlanSummary {
                max_risk: &p.max_risk,
                max_risk_hints: &p.max_risk_hints,
                steps: p.steps.len(),
            }),
            entries: self
                .entries
                .iter()
                .map(|e| EntrySummary { id: &e["id"], risk_hints: &e["risk_hints"] })
                .collect(),
        };
        let text = serde_json::to_string(&members).unwrap_or_else(|_| "{}".into());
        text[1..text.len() - 1].to_owned()
    }
}

/// SHA-256 of the program as JSON text (or of the promoted reference), in hex.
pub fn digest(program: Option<&Value>, program_ref: Option<&str>) -> String {
    match (program, program_ref) {
        (Some(p), _) => sha256_hex(p.to_string().as_bytes()),
        (None, Some(id)) => sha256_hex(id.as_bytes()),
        (None, None) => sha256_hex(b""),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    digest.iter().flat_map(|b| [HEX[usize::from(b >> 4)] as char, HEX[usize::from(b & 15)] as char]).collect()
}

/// How many validations the gate keeps, and the largest program (with its context) kept.
const KEPT: usize = 32;
const KEPT_BYTES: usize = 1 << 20;

/// A validation the host's model ran, as kept.
pub struct Kept {
    /// The validate result's `structuredContent`, as the server wrote it.
    pub response: Box<RawValue>,
    /// In a Language that declares a plan: what the validation gives an execute of the same
    /// program, judged once when kept (the fast path's execute reads it instead of judging).
    pub judged: Option<Judged>,
}

/// The evidence of a kept validation, with the parts of an audit line that come from it.
pub struct Judged {
    /// The evidence (from the plan).
    pub evidence: Evidence,
    /// The program's digest.
    pub digest: String,
    /// [`Evidence::audit_members`].
    pub members: String,
}

/// The validations the host's model ran, newest last, keyed by the exact program: the
/// Language, the program and the context as JSON text. Bounded: [`KEPT`] entries of at most
/// [`KEPT_BYTES`]; a program not kept is validated again by the gate at execute time.
pub struct Validations(Recent<String, Arc<Kept>>);

impl Default for Validations {
    fn default() -> Self {
        Validations(Recent::new(KEPT))
    }
}

/// The key of one program: exact, so that any change (a byte of the program or the context)
/// is another program.
pub fn key(language: &str, program: &Value, context: &Value) -> String {
    key_text(language, &program.to_string(), &context.to_string())
}

/// [`key`] of the program and the context written as `program` and `context` already: the
/// array `[language, program, context]` as JSON text.
pub fn key_text(language: &str, program: &str, context: &str) -> String {
    let language = Value::from(language);
    format!("[{language},{program},{context}]")
}

impl Validations {
    /// Keep `response` (a validate result's `structuredContent`) of `program` with `context`
    /// in `language`.
    pub fn keep(&self, language: &Language, program: &Value, context: &Value, response: Box<RawValue>) {
        // The key written around the program's text, which the digest is of: one writing.
        let program_text = program.to_string();
        let key = key_text(&language.name, &program_text, &context.to_string());
        if key.len() > KEPT_BYTES {
            return;
        }
        let judged = language.plan.then(|| {
            let evidence = of_plan_text(language, program, &response);
            Judged {
                digest: sha256_hex(program_text.as_bytes()),
                members: evidence.audit_members(),
                evidence,
            }
        });
        self.0.keep(key, Arc::new(Kept { response, judged }));
    }

    /// The latest validation kept for `key`.
    pub fn get(&self, key: &str) -> Option<Arc<Kept>> {
        self.0.find(|k| k == key)
    }
}
