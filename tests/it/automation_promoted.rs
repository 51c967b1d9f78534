//! Promoted programs (Part II §3.5, §5.4, §6.5.1-§6.5.5, §5.8.3) on `automation/v1`: the
//! runtime's `promote_automation`, the entry in the catalog with honest risk, runs by
//! `program_ref` with the token of the lookup, `promotion_drift` after a load-bearing change
//! (and not after an informative one), `input_binding` against the entry's `input_schema`,
//! runnable selection, and sub-programs: expanded here, opaque on a tiny test Language.

use crate::kit;

use kit::{assert_request_error, ctx, ids, Client, TempStore, ARG, LANGUAGE, PROMOTE};
use pilotage::model::plan::Plan;
use pilotage::model::risk::RiskHints;
use serde_json::{json, Value};

fn server(store: &TempStore) -> pilotage::Server {
    kit::server_on(store.path(), None)
}

/// Every light of a room on; returns the lights.
fn room_lights() -> Value {
    json!({
        "inputs": {"room": "string"},
        "steps": [
            {"id": "lights", "call": "devices_list", "with": {"room": "$.input.room", "kind": "light"}},
            {"id": "each", "loop": "$.steps.lights.output.devices", "as": "light", "steps": [
                {"id": "on", "call": "light_set", "with": {"device": "$.vars.light.device", "on": true}}
            ]}
        ],
        "output": {"lit": "$.steps.lights.output.devices"}
    })
}

fn room_schema() -> Value {
    json!({"type": "object", "properties": {"room": {"type": "string"}}, "required": ["room"], "additionalProperties": false})
}

/// Promote `body` and return its program_ref and the promote response.
async fn promote(c: &mut Client, body: &Value, name: &str, input_schema: Option<Value>) -> (String, Value) {
    let mut args = json!({ARG: body, "name": name, "context": ctx()});
    if let Some(s) = input_schema {
        args["input_schema"] = s;
    }
    let r = c.conn.call(PROMOTE, args).await;
    assert!(!r.is_error, "promotion failed: {}", r.raw);
    (r.structured["program_ref"].as_str().unwrap().to_owned(), r.structured)
}

/// Look the promoted entry up (the promoted-program loop) and run it with the token of the
/// lookup. The trace is checked against the body's plan (the promoted body is the validated
/// program).
async fn run_ref(c: &mut Client, body_plan: &Plan, reference: &str, input: Option<Value>) -> Value {
    let got = c.get(reference).await;
    assert!(!got.is_error, "{}", got.raw);
    let mut args = json!({
        "program_ref": reference,
        "mode": "immediate",
        "context": ctx(),
        "expected_catalog_version": got.structured["catalog_version"],
    });
    if let Some(i) = input {
        args["input"] = i;
    }
    let call = c.execute_with(body_plan, args).await;
    assert!(!call.is_error, "{}", call.raw);
    call.structured
}

#[tokio::test]
async fn a_promoted_program_runs_by_reference() {
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let (body_plan, _) = c.plan(&room_lights()).await;
    let (reference, promoted) = promote(&mut c, &room_lights(), "Room lights on", Some(room_schema())).await;
    assert!(reference.starts_with("prog_"), "{reference}");

    // The promoted entry in the catalog: kind routine, the declared input_schema, risk at
    // least as restrictive as the body's aggregate.
    let got = c.get(&reference).await;
    let entry = &got.structured["entry"];
    assert_eq!(entry, &promoted["entry"]);
    assert_eq!(entry["kind"], "routine");
    assert_eq!(entry["input_schema"], room_schema());
    assert_eq!(entry["risk"], "write");
    assert_eq!(entry["risk_hints"], json!({"readOnly": false, "destructive": false, "openWorld": false}));
    assert_eq!(entry["languages"], json!([LANGUAGE]));
    let declared: RiskHints = serde_json::from_value(entry["risk_hints"].clone()).unwrap();
    assert!(declared.covers(&body_plan.max_risk_hints), "{declared:?} vs {:?}", body_plan.max_risk_hints);
    let listed = c
        .conn
        .call_ok("pilotage_catalog", json!({"language": LANGUAGE, "verb": "list", "kind": "routine"}))
        .await;
    assert_eq!(listed["items"], json!([entry]));

    let before = c.fingerprint().await;
    let r = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "kitchen"}))).await;
    assert_eq!(r["outcome"], json!({"ok": true, "status": "success", "error": null}));
    assert_eq!(
        r["output"],
        json!({"lit": [{"device": "kitchen_light", "kind": "light", "room": "kitchen"}]})
    );
    assert_eq!(ids(&r), ["lights", "each", "on#1"]);
    assert_eq!(c.fingerprint().await["lights_on"], before["lights_on"].as_u64().unwrap() + 1);

    // Rejected: an unknown reference (indistinguishable from an unauthorized one).
    let unknown = c
        .conn
        .call(kit::EXECUTE, json!({"program_ref": "prog_0000", "mode": "immediate", "context": ctx()}))
        .await;
    assert_request_error(&unknown, "not_found");
    assert_eq!(unknown.structured["error"]["message"], "unknown program_ref 'prog_0000'");
}

/// A reference of another caller is unknown here (each caller promotes into its own catalog),
/// byte for byte the same as a reference that never existed. Over HTTP without an
/// authenticator every MCP session is its own caller; over stdio every session is the
/// deployment's ambient caller (Part III §8.4), so its promotions are the same caller's.
#[tokio::test]
async fn a_reference_of_another_caller_is_not_found() {
    let store = TempStore::new("promoted");
    let server = server(&store);
    let http = crate::support::HttpServer::start(&server).await;
    let session = || crate::support::Conn::http(http.url(), crate::support::HttpStyle::Full);
    let mut a = Client::new(session()).await;
    let (reference, _) = promote(&mut a, &room_lights(), "Room lights on", Some(room_schema())).await;
    let mut b = Client::new(session()).await;
    let args =
        |r: &str| json!({"program_ref": r, "mode": "immediate", "context": ctx(), "input": {"room": "hall"}});
    let foreign = b.conn.call(kit::EXECUTE, args(&reference)).await;
    assert_request_error(&foreign, "not_found");
    let never = b.conn.call(kit::EXECUTE, args("prog_ffff")).await;
    let redact = |v: &Value| v.to_string().replace(&reference, "REF").replace("prog_ffff", "REF");
    assert_eq!(redact(&foreign.raw["result"]), redact(&never.raw["result"]));
    assert_request_error(&b.get(&reference).await, "not_found");

    // Two stdio-like sessions are one ambient caller: the promotion is theirs, durably.
    let mut c = Client::duplex(&server).await;
    let (ambient, _) = promote(&mut c, &room_lights(), "Room lights on", Some(room_schema())).await;
    let mut d = Client::duplex(&kit::server_on(store.path(), None)).await;
    let ran = d.conn.call(kit::EXECUTE, args(&ambient)).await;
    assert!(
        !ran.is_error,
        "the ambient caller's promotion runs in its next session, after a restart: {}",
        ran.raw
    );
    assert_eq!(ran.structured["outcome"]["status"], "success", "{}", ran.raw);
}

#[tokio::test]
async fn promotion_drift_follows_load_bearing_fields_only() {
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let (body_plan, _) = c.plan(&room_lights()).await;
    let (reference, _) = promote(&mut c, &room_lights(), "Room lights on", Some(room_schema())).await;
    let v1 = c.get(&reference).await.structured["catalog_version"].clone();

    // Informative fields (description, name) move catalog_version but not the baseline.
    c.conn
        .call_ok(
            "catalog_update_entry",
            json!({"id": "light_set", "description": "Switches lights.", "name": "Lights"}),
        )
        .await;
    let stale = c
        .conn
        .call(
            kit::EXECUTE,
            json!({"program_ref": reference, "mode": "immediate", "context": ctx(), "input": {"room": "hall"}, "expected_catalog_version": v1}),
        )
        .await;
    assert_eq!(
        stale.structured["outcome"],
        json!({"ok": false, "status": "catalog_drift", "error": "catalog version mismatch"})
    );
    assert!(stale.structured.get("trace").is_none());
    let r = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall"}))).await;
    assert_eq!(r["outcome"]["status"], "success", "{r}");

    // A load-bearing field (risk) of a called entry: the reference is no longer runnable.
    let before = c.fingerprint().await;
    c.conn.call_ok("catalog_update_entry", json!({"id": "light_set", "risk": "destructive"})).await;
    let drifted = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall"}))).await;
    assert_eq!(
        drifted,
        json!({
            "run_id": drifted["run_id"],
            "outcome": {
                "ok": false,
                "status": "promotion_drift",
                "error": "referenced entries changed since promotion: light_set; promote the program again"
            }
        })
    );
    assert_eq!(c.fingerprint().await, before, "a refused run has no side effects");
    // Terminal for the reference: the same request keeps failing.
    let again = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall"}))).await;
    assert_eq!(again["outcome"]["status"], "promotion_drift");

    // Promoting again mints a new reference with a new baseline (and the body's new risk).
    let (second, promoted) = promote(&mut c, &room_lights(), "Room lights on", Some(room_schema())).await;
    assert_ne!(second, reference);
    assert_eq!(promoted["entry"]["risk"], "destructive");
    assert_eq!(
        promoted["entry"]["risk_hints"],
        json!({"readOnly": false, "destructive": true, "openWorld": false})
    );
    let (new_plan, _) = c.plan(&room_lights()).await;
    let r = run_ref(&mut c, &new_plan, &second, Some(json!({"room": "hall"}))).await;
    assert_eq!(r["outcome"]["status"], "success", "{r}");
}

#[tokio::test]
async fn promotion_drift_on_an_input_schema_change() {
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let (body_plan, _) = c.plan(&room_lights()).await;
    let (reference, _) = promote(&mut c, &room_lights(), "Room lights on", Some(room_schema())).await;
    c.conn
        .call_ok(
            "catalog_update_entry",
            json!({"id": "devices_list", "input_schema": {"type": "object", "properties": {"room": {"type": "string"}}, "additionalProperties": false}}),
        )
        .await;
    let drifted = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall"}))).await;
    assert_eq!(drifted["outcome"]["status"], "promotion_drift");
    assert_eq!(
        drifted["outcome"]["error"],
        "referenced entries changed since promotion: devices_list; promote the program again"
    );
}

#[tokio::test]
async fn input_is_bound_against_the_promoted_entry_input_schema() {
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let (body_plan, _) = c.plan(&room_lights()).await;
    let (reference, _) = promote(&mut c, &room_lights(), "Room lights on", Some(room_schema())).await;
    let before = c.fingerprint().await;
    let wrong_type = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": 5}))).await;
    assert_eq!(
        wrong_type["outcome"],
        json!({"ok": false, "status": "validation_error", "error": "the input or context failed binding"})
    );
    let d = &wrong_type["diagnostics"];
    assert_eq!(d.as_array().unwrap().len(), 1, "{d}");
    assert_eq!(
        (d[0]["severity"].clone(), d[0]["code"].clone(), d[0]["path"].clone()),
        (json!("error"), json!("input_binding"), json!("/room"))
    );
    assert!(wrong_type.get("trace").is_none());
    let missing = run_ref(&mut c, &body_plan, &reference, None).await;
    assert_eq!(missing["diagnostics"][0]["code"], "input_binding");
    assert_eq!(missing["diagnostics"][0]["path"], "");
    let extra = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall", "floor": 2}))).await;
    assert_eq!(extra["diagnostics"][0]["code"], "input_binding");
    assert_eq!(extra["diagnostics"][0]["path"], "");
    assert_eq!(c.fingerprint().await, before, "refused runs have no side effects");
    let ok = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall"}))).await;
    assert_eq!(ok["outcome"]["status"], "success");
}

#[tokio::test]
async fn both_or_neither_runnable_is_invalid_request() {
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let (reference, _) = promote(&mut c, &room_lights(), "Room lights on", Some(room_schema())).await;
    let both = c
        .conn
        .call(kit::EXECUTE, json!({ARG: room_lights(), "program_ref": reference, "mode": "immediate", "context": ctx(), "input": {"room": "hall"}}))
        .await;
    assert_request_error(&both, "invalid_request");
    assert_eq!(
        both.structured["error"]["message"],
        "supply exactly one of `automation` and `program_ref`, not both"
    );
    let neither = c
        .conn
        .call(kit::EXECUTE, json!({"mode": "immediate", "context": ctx(), "input": {"room": "hall"}}))
        .await;
    assert_request_error(&neither, "invalid_request");
    assert_eq!(
        neither.structured["error"]["message"],
        "supply exactly one runnable: `automation` (an inline program) or `program_ref`"
    );
    assert_eq!(c.fingerprint().await["lights_on"], 0);
}

fn count_body() -> Value {
    json!({
        "steps": [{"id": "body", "call": "counter_add", "with": {"by": 1}}],
        "output": {"counter": "$.steps.body.output.counter"}
    })
}

/// `trace_subprogram: "expanded"`: a promoted program's entries are inserted with the calling
/// entry's iteration-qualified id and `/` as prefix, recursively; the call itself is one plan
/// step with the promoted entry's risk, and one trace entry with its outcome.
#[tokio::test]
async fn expanded_subprograms_are_prefixed_with_the_calling_entry() {
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let (count, promoted) = promote(&mut c, &count_body(), "Count one", None).await;

    let program = json!({"steps": [{"id": "call1", "run": count}], "output": {"after": "$.steps.call1.output.counter"}});
    let (plan, _) = c.plan(&program).await;
    let step = &plan.steps[0];
    assert_eq!((step.id.as_str(), step.calls.as_deref()), ("call1", Some(count.as_str())));
    assert_eq!(step.risk, promoted["entry"]["risk"].as_str().unwrap());
    assert_eq!(serde_json::to_value(step.risk_hints).unwrap(), promoted["entry"]["risk_hints"]);
    assert_eq!(plan.steps.len(), 1, "the promoted program's steps are not in the caller's plan");
    let r = c.run(&program, "immediate", json!({})).await;
    assert_eq!(ids(&r), ["call1", "call1/body"], "the calling entry is reached first");
    let call1 = kit::entry(&r, "call1");
    assert_eq!(call1["calls"], count);
    assert_eq!(call1["output"], json!({"counter": 1}));
    assert_eq!(kit::entry(&r, "call1/body")["calls"], "counter_add");
    assert_eq!(r["output"], json!({"after": 1}));

    // Inside a loop: call1#2/body#3.
    let each_body = json!({
        "inputs": {"items": "array"},
        "steps": [{"id": "each", "loop": "$.input.items", "as": "x", "steps": [
            {"id": "body", "call": "counter_add", "with": {"by": "$.vars.x"}}
        ]}]
    });
    let schema = json!({"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]});
    let (each, _) = promote(&mut c, &each_body, "Add each", Some(schema)).await;
    let looped = json!({"steps": [{"id": "outer", "loop": [1, 2], "as": "i", "steps": [
        {"id": "call1", "run": each, "with": {"items": [1, 1, 1]}}
    ]}]});
    let r = c.run(&looped, "immediate", json!({})).await;
    assert_eq!(
        ids(&r),
        [
            "outer",
            "call1#1",
            "call1#1/each",
            "call1#1/body#1",
            "call1#1/body#2",
            "call1#1/body#3",
            "call1#2",
            "call1#2/each",
            "call1#2/body#1",
            "call1#2/body#2",
            "call1#2/body#3"
        ]
    );
    assert_eq!(c.fingerprint().await["counter"], 7);

    // Nested expansion: one prefix per level.
    let nest_body = json!({"steps": [{"id": "inner", "run": count}]});
    let (nest, _) = promote(&mut c, &nest_body, "Nested count", None).await;
    let r = c.run(&json!({"steps": [{"id": "call1", "run": nest}]}), "immediate", json!({})).await;
    assert_eq!(ids(&r), ["call1", "call1/inner", "call1/inner/body"]);

    // Rejected: `run` on an action, `call` on a promoted program.
    let v =
        c.validate(&json!({"steps": [{"id": "a", "run": "counter_add"}, {"id": "b", "call": count}]})).await;
    assert_eq!(v["valid"], false);
    let found: Vec<(Value, Value)> =
        v["diagnostics"].as_array().unwrap().iter().map(|d| (d["code"].clone(), d["path"].clone())).collect();
    assert_eq!(
        found,
        [(json!("not_callable"), json!("/steps/0/run")), (json!("not_callable"), json!("/steps/1/call"))]
    );
}

/// The engine's expansion-depth bound: promoted programs calling promoted programs more than
/// four levels deep stop the run (`partial`).
#[tokio::test]
async fn expansion_depth_is_bounded() {
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let mut levels = vec![promote(&mut c, &count_body(), "Level 0", None).await.0];
    for level in 1..=4 {
        let body = json!({"steps": [{"id": format!("l{level}"), "run": levels[level - 1]}]});
        levels.push(promote(&mut c, &body, &format!("Level {level}"), None).await.0);
    }
    let r = c.run(&json!({"steps": [{"id": "top", "run": levels[4]}]}), "immediate", json!({})).await;
    assert_eq!(r["outcome"]["status"], "partial", "{r}");
    assert_eq!(ids(&r), ["top", "top/l4", "top/l4/l3", "top/l4/l3/l2", "top/l4/l3/l2/l1"]);
    assert_eq!(
        kit::entry(&r, "top")["outcome"]["status"],
        "partial",
        "the calling entries carry the outcome"
    );
    assert_eq!(
        kit::entry(&r, "top/l4/l3/l2/l1")["outcome"]["error"],
        "promoted programs call each other more than 4 levels deep (the expansion bound)"
    );
    assert_eq!(c.fingerprint().await["counter"], 0);
    // Four levels run.
    let r = c.run(&json!({"steps": [{"id": "top", "run": levels[3]}]}), "immediate", json!({})).await;
    assert_eq!(r["outcome"]["status"], "success", "{r}");
    assert_eq!(ids(&r), ["top", "top/l3", "top/l3/l2", "top/l3/l2/l1", "top/l3/l2/l1/body"]);
    assert_eq!(c.fingerprint().await["counter"], 1);
}

mod opaque {
    //! `opaque/v1`: a tiny test-only Language whose promoted programs are opaque sub-programs.
    use std::sync::Arc;

    use pilotage::prelude::*;

    #[derive(Clone, Copy, Debug, pilotage::Codes)]
    pub enum TickCode {
        MalformedStep,
        UnknownRoutine,
    }

    #[derive(Clone, Copy, Debug, pilotage::RiskLevels)]
    pub enum TickRisk {
        #[risk(write)]
        Write,
    }

    #[allow(dead_code)]
    #[derive(Clone, Copy, Debug, pilotage::EntryKinds)]
    pub enum TickKind {
        #[kind(promoted)]
        Routine,
    }

    pub struct Tick;

    fn ticks_in(program: &Json) -> usize {
        program["steps"].as_array().map_or(0, |s| s.iter().filter(|x| x.get("tick").is_some()).count())
    }

    #[pilotage::language(
        name = "opaque/v1",
        title = "Tick programs (test only)",
        program = "ticks",
        locator = "json-pointer",
        capabilities(guides, catalog, validate, plan, execute),
        execution = "immediate",
        trace = "full",
        retention = "none",
        trace_subprogram = "opaque",
        guides = "examples/automation/testdata/opaque-guides",
        codes = TickCode,
        risk = TickRisk,
        kinds = TickKind,
        catalog = catalog_snapshot,
    )]
    impl Tick {
        fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
            Arc::new(CatalogSnapshot::new(Vec::new()))
        }

        #[loop_tool(validate, name = "validate_ticks")]
        fn validate(&self, program: &Json, v: &mut Validation<TickCode, TickRisk>) {
            let steps = program.get("steps").and_then(Json::as_array).cloned().unwrap_or_default();
            let snapshot = v.snapshot();
            for (i, s) in steps.iter().enumerate() {
                let id = s["id"].as_str().unwrap_or_default().to_owned();
                match (s.get("tick"), s.get("run").and_then(Json::as_str)) {
                    (Some(_), None) => {
                        v.step(id, TickRisk::Write);
                    }
                    (None, Some(r)) if snapshot.as_ref().and_then(|c| c.get(r)).is_some() => {
                        v.step(id, TickRisk::Write).calls(r);
                    }
                    (None, Some(_)) => {
                        v.error(
                            TickCode::UnknownRoutine,
                            format!("/steps/{i}/run"),
                            "no such promoted program",
                        );
                    }
                    _ => {
                        v.error(TickCode::MalformedStep, format!("/steps/{i}"), "a step ticks or runs");
                    }
                }
            }
        }

        #[loop_tool(execute, name = "run_ticks")]
        fn run(&self, program: &Json, run: &mut Run) -> Finish {
            for s in program["steps"].as_array().cloned().unwrap_or_default() {
                let id = s["id"].as_str().unwrap_or_default();
                match s.get("run").and_then(Json::as_str) {
                    None => run.step(id).input(json!({})).output(json!({"ticks": 1})).succeeded(),
                    Some(r) => {
                        let n = run.promoted(r).map_or(0, |b| ticks_in(&b));
                        run.step(id).calls(r).input(json!({})).output(json!({"ticks": n})).succeeded();
                    }
                }
            }
            Finish::done()
        }
    }
}

/// `trace_subprogram: "opaque"`: the call is one trace entry; the promoted program's steps do
/// not appear.
#[tokio::test]
async fn opaque_subprograms_are_one_entry() {
    let server = pilotage::Server::builder().name("opaque", "0").language(|| opaque::Tick).build().unwrap();
    let mut c = Client::duplex(&server).await;
    let manifest = c.conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(manifest["languages"][0]["trace_subprogram"], "opaque");
    let body = json!({"steps": [{"id": "t1", "tick": true}, {"id": "t2", "tick": true}, {"id": "t3", "tick": true}]});
    let promoted = c.conn.call_ok("promote_opaque", json!({"ticks": body, "name": "Three ticks"})).await;
    let reference = promoted["program_ref"].as_str().unwrap().to_owned();
    let program = json!({"steps": [{"id": "first", "tick": true}, {"id": "call1", "run": reference}]});
    let v = c.conn.call_ok("validate_ticks", json!({"ticks": program})).await;
    let plan = kit::plan_of(&v);
    let call = c
        .conn
        .call("run_ticks", json!({"ticks": program, "expected_catalog_version": v["catalog_version"]}))
        .await;
    assert!(!call.is_error, "{}", call.raw);
    kit::check_run(&plan, &call.structured, false);
    assert_eq!(ids(&call.structured), ["first", "call1"]);
    assert_eq!(kit::entry(&call.structured, "call1")["calls"], reference);
    assert_eq!(kit::entry(&call.structured, "call1")["output"], json!({"ticks": 3}));
    // By reference: the body's own steps, unprefixed.
    let body_plan = kit::plan_of(&c.conn.call_ok("validate_ticks", json!({"ticks": body})).await);
    let by_ref = c.conn.call("run_ticks", json!({"program_ref": reference})).await;
    kit::check_run(&body_plan, &by_ref.structured, false);
    assert_eq!(ids(&by_ref.structured), ["t1", "t2", "t3"]);
    // Retention "none": `store: true` cannot be honoured.
    let unsupported = c.conn.call("run_ticks", json!({"ticks": program, "store": true})).await;
    assert_request_error(&unsupported, "unsupported");
    // Rejected: an unknown reference is a diagnostic of the inline program.
    let v = c
        .conn
        .call_ok("validate_ticks", json!({"ticks": {"steps": [{"id": "x", "run": "prog_none"}]}}))
        .await;
    assert_eq!(v["diagnostics"][0]["code"], "unknown_routine");
}

/// A 1.3 KB `input_schema` whose `xs` is a chain of `$defs` applying the next twice, 24 deep,
/// ending in `minLength`: 2^24 measures of the text if nothing stopped it.
fn doubling_schema() -> Value {
    let mut defs = serde_json::Map::new();
    for level in 0..24 {
        let next = json!({"$ref": format!("#/$defs/d{}", level + 1)});
        defs.insert(format!("d{level}"), json!({"allOf": [next.clone(), next]}));
    }
    defs.insert("d24".into(), json!({"minLength": 1}));
    json!({"type": "object", "properties": {"room": {"type": "string"}, "xs": {"$ref": "#/$defs/d0"}},
        "required": ["room"], "$defs": defs})
}

#[tokio::test]
async fn a_hostile_input_schema_ends_at_its_work_bound() {
    let schema = doubling_schema();
    assert!(schema.to_string().len() < 1_700, "{}", schema.to_string().len());
    let store = TempStore::new("promoted");
    let mut c = Client::duplex(&server(&store)).await;
    let (body_plan, _) = c.plan(&room_lights()).await;
    let (reference, _) = promote(&mut c, &room_lights(), "Room lights on", Some(schema)).await;
    let before = c.fingerprint().await;
    let xs = "x".repeat(8_000);
    let refused = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall", "xs": xs}))).await;
    assert_eq!(
        refused["outcome"],
        json!({"ok": false, "status": "validation_error", "error": "the input or context failed binding"})
    );
    assert_eq!(
        refused["diagnostics"],
        json!([{"severity": "error", "code": "input_binding", "path": "",
            "message": "the check exceeded its work bound (1000000 units: subschemas, keywords and the values they read) on this instance"}])
    );
    assert_eq!(c.fingerprint().await, before, "a refused run has no side effects");
    // Without `xs` the chain is never entered: the run goes ahead.
    let ok = run_ref(&mut c, &body_plan, &reference, Some(json!({"room": "hall"}))).await;
    assert_eq!(ok["outcome"]["status"], "success");
}
