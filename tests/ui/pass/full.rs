//! A Language with every capability, sub-feature and optional key.

use std::sync::Arc;

use pilotage::model::closed_sets::RiskLevel;
use pilotage::engine::{ExecuteRequest, Recorder};
use pilotage::engine::Engine;
use pilotage::model::declaration::{ExecutionMode, Retention};
use pilotage::prelude::*;
use pilotage::engine::ValidateRequest;

#[derive(Clone, Copy, Debug, pilotage::Codes)]
enum WfCode {
    UnknownCapability,
    #[code(rename = "bad_ref")]
    BadReference,
    MalformedStep,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum WfRisk {
    #[risk(read_only)]
    Safe,
    #[risk(write, open_world)]
    Write,
    #[risk(destructive)]
    Destructive,
    #[risk(destructive, open_world)]
    DestructiveOpen,
}

#[derive(Clone, Copy, pilotage::Statuses)]
enum WfStatus {
    #[status(side_effects = true)]
    Timeout,
    #[status(side_effects = false, rename = "denied_by_policy")]
    Denied,
}

#[derive(Clone, Copy, pilotage::EntryKinds)]
enum WfKind {
    #[kind(callable)]
    Capability,
    Dataset,
    #[kind(promoted)]
    Program,
}

struct Workflow {
    snapshot: Arc<CatalogSnapshot>,
}

#[pilotage::language(
    name = "workflow/v1",
    title = "Workflow documents",
    program = "workflow",
    locator = "json-pointer",
    capabilities(
        guides(topic_fetch),
        catalog(search, changed_since),
        validate,
        plan,
        execute(test_run, idempotency),
        trace_fetch(narrate),
    ),
    execution = "both",
    trace = "full",
    retention = "PT1H",
    trace_subprogram = "opaque",
    promotion_authority = "caller",
    context_schema = "../../../../tests/ui/schemas/context.json",
    guides = "../../../../tests/ui/guides/full",
    codes = WfCode,
    risk = WfRisk,
    statuses = WfStatus,
    kinds = WfKind,
    catalog = catalog_snapshot,
    narrate = narrate_run,
)]
impl Workflow {
    fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
        self.snapshot.clone()
    }

    fn narrate_run(&self, run: &pilotage::model::trace::TraceFetchResponse, question: Option<&str>) -> Option<String> {
        Some(format!("run {} ended {}; asked: {}", run.run_id, run.outcome.status(), question.unwrap_or("nothing")))
    }

    /// Checks a workflow document.
    ///
    /// Every step calls one catalog entry.
    #[loop_tool(validate, name = "validate_workflow", inline)]
    fn validate(&self, program: &Json, v: &mut Validation<WfCode, WfRisk>) {
        let Some(steps) = program.get("steps").and_then(Json::as_array) else {
            v.error(WfCode::MalformedStep, "", "expected a `steps` array");
            return;
        };
        for (i, step) in steps.iter().enumerate() {
            let call = step.get("call").and_then(Json::as_str).unwrap_or_default();
            match v.catalog().and_then(|c| c.get(call)).is_some() {
                true => {
                    v.step(format!("s{i}"), WfRisk::Write).calls(call);
                }
                false => {
                    v.error(WfCode::UnknownCapability, format!("/steps/{i}/call"), "unknown entry");
                }
            }
        }
    }

    /// Runs a workflow.
    #[loop_tool(execute, name = "run_workflow")]
    async fn run(&self, program: &Json, run: &mut Run<WfStatus>) -> Finish<WfStatus> {
        if run.is_test_run() {
            return Finish::done();
        }
        match program.get("fail") {
            Some(_) => Finish::failed(WfStatus::Timeout, "took too long"),
            None => Finish::output(json!({"ran": true})),
        }
    }

    #[loop_tool(trace, name = "trace_run")]
    fn trace(&self) {}

    #[plain_tool(name = "world_fingerprint", description = "Fingerprint of this session's world.", read_only)]
    fn fingerprint(&self, args: &Json) -> Result<Json, String> {
        Ok(json!({ "args": args.clone() }))
    }

    /// Who is calling.
    #[pilotage::plain_tool(name = "whoami", input_schema = r#"{"type": "object", "properties": {}}"#)]
    fn whoami(&self, _args: &Json, caller: &Caller) -> Result<Json, String> {
        Ok(json!(caller.id.to_string()))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let snapshot = Arc::new(CatalogSnapshot::new(vec![CatalogEntry::new(
        "echo",
        WfKind::Capability,
        "Echo",
        WfRisk::Safe,
    )]));
    let engine = Workflow { snapshot };
    let me = Caller::new("me");
    let spec = engine.language_spec();
    assert_eq!(spec.title, "Workflow documents");
    assert_eq!(spec.locator.as_str(), "json-pointer");
    assert_eq!(spec.execution, Some(ExecutionMode::Both));
    assert_eq!(spec.trace.map(|t| t.as_str()), Some("full"));
    assert_eq!(
        spec.retention,
        Some(Retention::Duration { iso: "PT1H", length: std::time::Duration::from_secs(3600) })
    );
    assert!(spec.trace_subprogram.is_some() && spec.promotion_authority.is_some());
    assert_eq!(spec.context_schema.as_ref().unwrap()["required"], json!(["tenant"]));
    let caps = serde_json::to_value(&spec.capabilities).unwrap();
    assert_eq!(
        caps,
        json!({
            "guides": {"topic_fetch": true},
            "catalog": {"search": true, "changed_since": true},
            "validate": true,
            "plan": true,
            "execute": {"test_run": true, "idempotency": true},
            "trace_fetch": {"narrate": true},
        })
    );
    assert!(spec.capabilities.rule_violations().is_empty());
    assert_eq!(spec.tools.validate.doc, "Checks a workflow document.\n\nEvery step calls one catalog entry.");
    assert!(spec.tools.validate.inline && !spec.tools.execute.as_ref().unwrap().inline);
    assert_eq!(spec.tools.execute.as_ref().unwrap().name, "run_workflow");
    assert_eq!(spec.tools.trace.as_ref().unwrap().name, "trace_run");
    assert_eq!(spec.tools.trace.as_ref().unwrap().doc, "");
    let ids: Vec<&str> = spec.guides.iter().map(|g| g.id).collect();
    assert_eq!(ids, ["core", "examples", "reference"]);
    assert_eq!(spec.guides[1].title, "Worked examples: #1 and #2");
    assert_eq!(spec.guides[1].topics, ["hello"]);
    assert!(spec.guides[0].topic_section("calls").is_some());
    assert_eq!(
        spec.sets.codes,
        ["unknown_capability", "bad_ref", "malformed_step", "constraint", "input_binding", "context_binding"]
    );
    let risks: Vec<(&str, usize)> = spec.sets.risks.iter().map(|r| (r.name, r.hints.open_world as usize)).collect();
    assert_eq!(risks, [("safe", 0), ("write", 1), ("destructive", 0), ("destructive_open", 1)]);
    assert_eq!(spec.sets.status("timeout").map(|s| (s.ok, s.side_effects)), Some((false, true)));
    assert_eq!(spec.sets.status("denied_by_policy").map(|s| s.side_effects), Some(false));
    assert_eq!(spec.sets.kinds.iter().filter(|k| k.callable).count(), 2);
    assert_eq!(spec.sets.promoted, Some("program"));
    assert_eq!(spec.plain_tools.len(), 2);
    assert!(spec.plain_tools[0].read_only && !spec.plain_tools[1].read_only);
    assert_eq!(spec.plain_tools[1].description, "Who is calling.");
    assert_eq!(spec.plain_tools[1].input_schema["properties"], json!({}));
    assert_eq!(WfRisk::Destructive.rank(), 2);
    assert!(std::ptr::eq(spec, engine.language_spec()));

    let catalog = Engine::catalog_snapshot(&engine, &me);
    assert_eq!(catalog.as_ref().map(|c| c.entries().len()), Some(1));
    let core = engine.validate_program(&ValidateRequest {
        program: Arc::new(json!({"steps": [{"call": "echo"}, {"call": "nope"}]})),
        context: None,
        catalog,
        caller: me.clone(),
    });
    assert_eq!(core.steps.len(), 1);
    assert_eq!(core.diagnostics[0].code, "unknown_capability");

    let request = |program: Json| ExecuteRequest {
        run_id: "r1".into(),
        program: Arc::new(program),
        input: None,
        context: None,
        catalog: None,
        caller: Caller::new("me"),
        mode: ExecutionMode::Immediate,
        test_run: false,
        promoted: Default::default(),
    };
    let ok = engine.execute_program(&request(json!({})), Recorder::new(10)).await;
    assert!(ok.outcome.ok());
    assert_eq!(ok.output, Some(json!({"ran": true})));
    let failed = engine.execute_program(&request(json!({"fail": 1})), Recorder::new(10)).await;
    assert_eq!(failed.outcome.status(), "timeout");

    assert_eq!(
        engine.call_plain_tool("world_fingerprint", &json!({"a": 1}), &me),
        Some(Ok(json!({"args": {"a": 1}})))
    );
    assert_eq!(engine.call_plain_tool("whoami", &json!({}), &me), Some(Ok(json!("me"))));
    assert_eq!(engine.call_plain_tool("trace_run", &json!({}), &me), None);
}
