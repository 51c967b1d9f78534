//! The in-process harness of the engine-level tests: validate and execute one program straight
//! through [`Engine`] as the runtime would (no server, no transport), read diagnostics, and
//! check the guides (their fenced code blocks, the closed-sets tables).
//!
//! Each engine's `tests.rs` includes it with
//! `#[path = "../../common/engine_harness.rs"] mod harness;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use std::sync::Arc;

use pilotage::engine::ValidateRequest;
use pilotage::engine::{Caller, Engine, LanguageSpec};
use pilotage::engine::{ExecuteRequest, FinishCore, Recorder};
use pilotage::model::declaration::ExecutionMode;
use pilotage::model::diagnostic::{Diagnostic, Locator};
use pilotage::model::plan::{Plan, ValidateResponse};
use pilotage::model::trace::TraceStep;
use pilotage::testkit::{derive, Derivation};
use serde_json::Value as Json;

/// A typed plain tool's arguments, from JSON, as the generated code reads them.
pub fn args<T: serde::de::DeserializeOwned>(json: Json) -> T {
    serde_json::from_value(json).expect("the arguments fit the tool's parameter type")
}

/// The caller of every request.
pub fn caller() -> Caller {
    Caller::new("test-caller")
}

/// Validate `program` with `context` against the caller's snapshot: the response the validate
/// tool would send, plan included.
pub fn validate<E: Engine>(engine: &E, program: &Json, context: Option<&Json>) -> ValidateResponse {
    let snapshot = engine.catalog_snapshot(&caller());
    let request = ValidateRequest {
        program: Arc::new(program.clone()),
        context: context.cloned().map(Arc::new),
        catalog: snapshot.clone(),
        caller: caller(),
    };
    let core = engine.validate_program(&request);
    derive(
        core,
        Vec::new(),
        &Derivation {
            codes: &engine.language_spec().sets.codes,
            plan: true,
            catalog_version: snapshot.map(|s| s.version().to_owned()),
        },
    )
}

/// One finished run.
pub struct Ran {
    pub finish: FinishCore,
    pub steps: Vec<TraceStep>,
    /// The input findings of a run refused before any step.
    pub refused: Vec<Diagnostic>,
    /// The plan of the validation that preceded the run.
    pub plan: Option<Plan>,
}

impl Ran {
    pub fn status(&self) -> &str {
        self.finish.outcome.status()
    }
    pub fn ids(&self) -> Vec<&str> {
        self.steps.iter().map(|s| s.id.as_str()).collect()
    }
    pub fn step(&self, id: &str) -> &TraceStep {
        self.steps
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no trace entry {id}: {:?}", self.ids()))
    }
    /// The pointers into `input` of the findings that refused the run (all `input_binding`).
    pub fn input_binding_paths(&self) -> Vec<String> {
        self.refused
            .iter()
            .map(|d| {
                assert_eq!(d.code, "input_binding");
                pointer(d)
            })
            .collect()
    }
}

/// Validate `program` (it must be valid), then run it with `input` and `context` in `mode` (a
/// side-effect-free test run when `test_run`).
pub fn execute<E: Engine>(
    engine: &E,
    program: &Json,
    input: Option<Json>,
    context: Option<&Json>,
    mode: ExecutionMode,
    test_run: bool,
) -> Ran {
    let verdict = validate(engine, program, context);
    assert!(verdict.valid, "program must be valid to run: {:#?}", verdict.diagnostics);
    let request = ExecuteRequest {
        run_id: "run_test".to_owned(),
        program: Arc::new(program.clone()),
        input: input.map(Arc::new),
        context: context.cloned().map(Arc::new),
        catalog: engine.catalog_snapshot(&caller()),
        caller: caller(),
        mode,
        test_run,
        promoted: Default::default(),
    };
    let recorder = Recorder::new(10_000);
    let finish = futures::executor::block_on(engine.execute_program(&request, recorder.clone()));
    Ran { finish, steps: recorder.steps(), refused: recorder.input_findings(), plan: verdict.plan }
}

/// The JSON Pointer of a diagnostic (the debug form of any other locator).
pub fn pointer(d: &Diagnostic) -> String {
    match &d.path {
        Locator::Pointer(p) => p.clone(),
        other => format!("{other:?}"),
    }
}

/// `(code, pointer)` of every diagnostic.
pub fn codes(v: &ValidateResponse) -> Vec<(String, String)> {
    v.diagnostics.iter().map(|d| (d.code.clone(), pointer(d))).collect()
}

/// Whether a diagnostic `code` points at `path`.
pub fn has(v: &ValidateResponse, code: &str, path: &str) -> bool {
    v.diagnostics.iter().any(|d| d.code == code && pointer(d) == path)
}

/// Every guide the Language of `E` serves (embedded by the macro), as `(id, body)`.
pub fn guides<E: Engine + Default>() -> Vec<(&'static str, &'static str)> {
    E::default().language_spec().guides.iter().map(|g| (g.id, g.body)).collect()
}

/// The body of the guide `id` of the Language of `E`.
pub fn guide<E: Engine + Default>(id: &str) -> &'static str {
    guides::<E>().into_iter().find(|(g, _)| *g == id).map(|(_, b)| b).expect("guide exists")
}

/// The fenced code blocks of `lang` (```` ```json ````, ```` ```sql ````, ...) in `text`.
pub fn fenced_blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let open = format!("```{lang}");
    for line in text.lines() {
        match (&mut current, line.trim()) {
            (None, l) if l == open => current = Some(String::new()),
            (Some(_), "```") => out.extend(current.take()),
            (Some(buf), _) => {
                buf.push_str(line);
                buf.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// Assert that the closed-sets guide `text` has a row for every code and status of `spec`, for
/// every risk level with its hints, and for every entry kind with whether it is callable.
pub fn assert_closed_sets_listed(spec: &LanguageSpec, text: &str) {
    for code in &spec.sets.codes {
        assert!(text.contains(&format!("| `{code}` |")), "closed-sets guide lacks code {code}");
    }
    for s in &spec.sets.statuses {
        assert!(text.contains(&format!("| `{}` |", s.name)), "closed-sets guide lacks status {}", s.name);
    }
    for r in &spec.sets.risks {
        let h = r.hints;
        let row = format!(
            "| `{}` | `{{\"readOnly\": {}, \"destructive\": {}, \"openWorld\": {}}}` |",
            r.name, h.read_only, h.destructive, h.open_world
        );
        assert!(text.contains(&row), "closed-sets guide lacks risk row {row}");
    }
    for k in &spec.sets.kinds {
        let row = format!("| `{}` | {}", k.name, if k.callable { "yes" } else { "no" });
        assert!(text.contains(&row), "closed-sets guide lacks kind row {row}");
    }
}
