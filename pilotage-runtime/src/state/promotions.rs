//! Promoted programs (Part II §3.5, §5.4, §6.5.2): a valid program stored immutably and exposed
//! as a catalog entry of the Language's promoted kind, runnable by `program_ref`.
//!
//! The runtime does all of it for every engine whose entry kinds mark one kind `promoted`: the
//! reference is a digest of the body and its baseline (so it can never name another body), the
//! entry's risk is the body plan's maximum (never safer than its body), the baseline records
//! every referenced entry's load-bearing fields, and a run compares them before anything
//! executes (`promotion_drift`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::engine::catalog::CatalogSnapshot;
use crate::engine::run::SubProgram;
use crate::model::catalog::CatalogEntry;
use crate::model::check::{SchemaCheck, MAX_FAULTS};
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::model::plan::Plan;

/// One promoted program.
pub struct Promoted {
    /// Its catalog entry (id = the `program_ref`).
    pub entry: CatalogEntry,
    /// The immutable body.
    pub body: Arc<Value>,
    /// Load-bearing fields of every referenced entry at promotion time (`null`: absent).
    pub baseline: BTreeMap<String, Value>,
    input: SchemaCheck,
}

/// The fields of an entry a promoted program depends on (Part II §5.4): never `revision`,
/// `name`, `description` or `tags`.
pub fn load_bearing(entry: Option<&CatalogEntry>) -> Value {
    match entry {
        None => Value::Null,
        Some(e) => json!({
            "kind": e.kind,
            "input_schema": e.input_schema,
            "output_schema": e.output_schema,
            "risk": e.risk,
            "risk_hints": e.risk_hints,
            "languages": e.languages,
        }),
    }
}

/// What the promote tool was given.
pub struct Promotion<'a> {
    /// Entry kind (the Language's promoted kind).
    pub kind: &'static str,
    /// The program body (already validated, with its plan).
    pub body: &'a Value,
    /// Its plan.
    pub plan: &'a Plan,
    /// Human name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// The declared input schema (default `{"type":"object"}`).
    pub input_schema: Option<Value>,
    /// The Language.
    pub language: &'static str,
}

impl Promoted {
    /// Promote against the caller's current `snapshot`.
    pub fn new(p: Promotion<'_>, snapshot: &CatalogSnapshot) -> Result<Promoted, String> {
        let input_schema = p.input_schema.unwrap_or_else(|| json!({"type": "object"}));
        if !input_schema.is_object() {
            return Err("`input_schema` must be a JSON Schema object".into());
        }
        let input = SchemaCheck::new(&input_schema).map_err(|e| format!("`input_schema` {e}"))?;
        let baseline: BTreeMap<String, Value> = p
            .plan
            .steps
            .iter()
            .filter_map(|s| s.calls.clone())
            .map(|id| {
                let fields = load_bearing(snapshot.get(&id));
                (id, fields)
            })
            .collect();
        let reference = crate::model::digest::token(
            "prog_",
            crate::model::digest::canonical(&json!({"body": p.body, "baseline": baseline, "input_schema": input_schema, "language": p.language})).as_bytes(),
        );
        let mut entry = CatalogEntry {
            id: reference,
            kind: p.kind.to_owned(),
            name: p.name,
            description: p.description,
            input_schema: Some(input_schema),
            output_schema: None,
            risk: p.plan.max_risk.clone(),
            risk_hints: p.plan.max_risk_hints,
            tags: vec!["promoted".into()],
            languages: Some(vec![p.language.to_owned()]),
            revision: None,
        };
        entry.revision = Some(entry.id.clone());
        Ok(Promoted { entry, body: Arc::new(p.body.clone()), baseline, input })
    }

    /// What a store keeps of it: the entry, the body and the baseline.
    pub fn record(&self) -> Value {
        json!({"entry": self.entry, "body": *self.body, "baseline": self.baseline})
    }

    /// A promotion as a store kept it (see [`Promoted::record`]).
    pub fn from_record(record: Value) -> Result<Promoted, String> {
        #[derive(serde::Deserialize)]
        struct Kept {
            entry: CatalogEntry,
            body: Value,
            baseline: BTreeMap<String, Value>,
        }
        let kept: Kept = serde_json::from_value(record).map_err(|e| format!("unreadable promotion: {e}"))?;
        let schema = kept.entry.input_schema.clone().unwrap_or_else(|| json!({"type": "object"}));
        let input = SchemaCheck::new(&schema).map_err(|e| format!("unreadable promotion schema: it {e}"))?;
        Ok(Promoted { entry: kept.entry, body: Arc::new(kept.body), baseline: kept.baseline, input })
    }

    /// The referenced entries whose load-bearing fields no longer match the baseline.
    pub fn drift(&self, snapshot: &CatalogSnapshot) -> Vec<String> {
        self.baseline
            .iter()
            .filter(|(id, fields)| load_bearing(snapshot.get(id)) != **fields)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// `input_binding` findings of `input` against the entry's `input_schema`.
    pub fn bind_input(&self, input: Option<&Value>) -> Vec<Diagnostic> {
        let empty = json!({});
        let input = input.unwrap_or(&empty);
        self.input
            .faults(input, MAX_FAULTS)
            .into_iter()
            .map(|f| Diagnostic::new(Severity::Error, "input_binding", f.path, f.message))
            .collect()
    }
}

/// The bodies a run may call as sub-programs, each with the referenced entries that have
/// drifted from its baseline against `snapshot` (empty: still runnable).
pub(crate) fn bodies(
    promoted: &[Arc<Promoted>],
    snapshot: Option<&CatalogSnapshot>,
) -> BTreeMap<String, SubProgram> {
    promoted
        .iter()
        .map(|p| {
            let drifted = snapshot.map(|s| p.drift(s)).unwrap_or_default();
            (p.entry.id.clone(), SubProgram { body: p.body.clone(), drifted })
        })
        .collect()
}

/// The engine's snapshot plus the promoted entries.
pub(crate) fn merge(engine: Arc<CatalogSnapshot>, promoted: &[Arc<Promoted>]) -> Arc<CatalogSnapshot> {
    if promoted.is_empty() {
        return engine;
    }
    let mut entries = engine.entries().to_vec();
    entries.extend(promoted.iter().map(|p| p.entry.clone()));
    Arc::new(CatalogSnapshot::new(entries))
}
