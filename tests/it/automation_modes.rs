//! Execution modes (Part II §6.5.7, Part III §4.4 `mode`) on the `automation/v1` engine, over
//! duplex, Streamable HTTP and the example binary over stdio: an immediate run, a deploy that
//! installs a rule which a later event fires, the `mode` request rules, the engine's own mode
//! rule (`mode_mismatch`), and `test_run` (accepted here, refused where undeclared).

use crate::{kit, support, workflow};

use kit::{assert_request_error, ctx, ids, Client, TempStore, ARG, EXECUTE};
use serde_json::{json, Value};
use support::{Conn, HttpServer, HttpStyle};

/// The core guide's immediate example: every light of a room on.
fn lights_on() -> Value {
    json!({
        "inputs": {"room": "string"},
        "steps": [
            {"id": "lights", "call": "devices_list", "with": {"room": "$.input.room", "kind": "light"}},
            {"id": "each", "loop": "$.steps.lights.output.devices", "as": "light", "steps": [
                {"id": "on", "call": "light_set", "with": {"device": "$.vars.light.device", "on": true, "level": 80}}
            ]}
        ],
        "output": {"room": "$.input.room", "lights": "$.steps.lights.output.devices"}
    })
}

/// The core guide's rule: on motion, the hall light goes on when the motion is in the hall,
/// and the counter counts every motion.
fn motion_rule() -> Value {
    json!({
        "trigger": {"event": "motion"},
        "steps": [
            {"id": "where", "branch": "$.event.room", "arms": [
                {"label": "hall", "equals": "hall", "steps": [
                    {"id": "hall_on", "call": "light_set", "with": {"device": "hall_light", "on": true}}
                ]},
                {"label": "elsewhere", "steps": []}
            ]},
            {"id": "count", "call": "counter_add", "with": {"by": 1}}
        ]
    })
}

fn server(store: &TempStore) -> pilotage::Server {
    kit::server_on(store.path(), None)
}

#[tokio::test]
async fn immediate_run_evaluates_now() {
    let store = TempStore::new("modes");
    let mut c = Client::duplex(&server(&store)).await;
    let before = c.fingerprint().await;
    assert_eq!(before["lights_on"], 0);
    let r = c.run(&lights_on(), "immediate", json!({"input": {"room": "office"}})).await;
    assert_eq!(r["outcome"], json!({"ok": true, "status": "success", "error": null}));
    assert_eq!(
        r["output"],
        json!({"room": "office", "lights": [{"device": "office_light", "kind": "light", "room": "office"}]})
    );
    assert_eq!(ids(&r), ["lights", "each", "on#1"]);
    assert_eq!(
        kit::decisions(&r, "each"),
        [
            ("continue".to_owned(), "item 1 of 1".to_owned()),
            ("exit".to_owned(), "all 1 items done".to_owned())
        ]
    );
    let on = kit::entry(&r, "on#1");
    assert_eq!(on["calls"], "light_set");
    assert_eq!(on["input"], json!({"device": "office_light", "on": true, "level": 80}));
    assert_eq!(on["output"], json!({"device": "office_light", "on": true, "level": 80}));
    let after = c.fingerprint().await;
    assert_eq!(after["lights_on"], 1);
    assert_ne!(after["fingerprint"], before["fingerprint"]);
}

/// Deploy installs (the trace and output describe installation); the body runs only when
/// `emit_event` fires it, once per event, with the payload as `$.event`.
async fn deploy_then_fire(c: &mut Client) {
    let before = c.fingerprint().await;
    let r = c.run(&motion_rule(), "deploy", json!({})).await;
    assert_eq!(r["outcome"], json!({"ok": true, "status": "success", "error": null}));
    assert_eq!(r["output"], json!({"rule_id": "rule_1", "event": "motion"}));
    assert_eq!(ids(&r), ["install"]);
    let install = kit::entry(&r, "install");
    assert_eq!(install["input"], json!({"trigger": {"event": "motion"}, "input": {}}));
    assert_eq!(install["output"], json!({"rule_id": "rule_1", "event": "motion"}));
    assert!(install.get("calls").is_none(), "installation invokes no catalog entry: {install}");
    let installed = c.fingerprint().await;
    assert_eq!(installed["rules"], json!(["rule_1"]));
    assert_eq!(
        (installed["counter"].clone(), installed["lights_on"].clone()),
        (json!(0), json!(0)),
        "nothing fired yet"
    );
    assert_ne!(installed["fingerprint"], before["fingerprint"]);

    let fired = c.conn.call_ok("emit_event", json!({"event": "motion", "payload": {"room": "hall"}})).await;
    assert_eq!(
        fired,
        json!({"event": "motion", "fired": [{
            "rule_id": "rule_1",
            "outcome": {"ok": true, "status": "success", "error": null},
            "steps": ["where", "hall_on", "count"]
        }]})
    );
    let after = c.fingerprint().await;
    assert_eq!(
        (after["counter"].clone(), after["lights_on"].clone(), after["firings"].clone()),
        (json!(1), json!(1), json!(1))
    );

    let fired =
        c.conn.call_ok("emit_event", json!({"event": "motion", "payload": {"room": "kitchen"}})).await;
    assert_eq!(fired["fired"][0]["steps"], json!(["where", "count"]));
    assert_eq!(c.fingerprint().await["counter"], 2);
    // Another event fires nothing; a payload that does not fit the event is refused.
    let none = c
        .conn
        .call_ok("emit_event", json!({"event": "door_opened", "payload": {"device": "front_door"}}))
        .await;
    assert_eq!(none, json!({"event": "door_opened", "fired": []}));
    let bad = c.conn.call("emit_event", json!({"event": "motion", "payload": {}})).await;
    assert!(bad.is_error, "{}", bad.raw);
    assert_eq!(c.fingerprint().await["counter"], 2);
}

#[tokio::test]
async fn deploy_installs_and_a_later_event_fires_the_rule_over_http() {
    let store = TempStore::new("modes");
    let http = HttpServer::start(&server(&store)).await;
    let mut c = Client::new(http.connect(HttpStyle::Plain)).await;
    deploy_then_fire(&mut c).await;
}

#[tokio::test]
async fn deploy_installs_and_a_later_event_fires_the_rule_over_stdio() {
    let store = TempStore::new("modes-stdio");
    let path = store.path().to_str().unwrap().to_owned();
    let mut c = Client::new(Conn::stdio("automation", &["--store", &path])).await;
    deploy_then_fire(&mut c).await;
}

/// A rule's `input` binds at installation and is kept for every firing.
#[tokio::test]
async fn a_rule_keeps_the_input_bound_at_installation() {
    let store = TempStore::new("modes");
    let mut c = Client::duplex(&server(&store)).await;
    let rule = json!({
        "trigger": {"event": "temperature"},
        "inputs": {"step": "integer", "limit": "number"},
        "steps": [{"id": "hot", "branch": "$.event.celsius", "arms": [
            {"label": "over", "above": "$$ignored", "steps": []},
            {"label": "rest", "steps": []}
        ]}]
    });
    // `above` takes a number: the rule is refused by validation before anything is installed.
    let v = c.validate(&rule).await;
    assert_eq!(v["valid"], false, "{v}");
    let rule = json!({
        "trigger": {"event": "temperature"},
        "inputs": {"step": "integer"},
        "steps": [{"id": "hot", "branch": "$.event.celsius", "arms": [
            {"label": "over", "above": 25, "steps": [{"id": "bump", "call": "counter_add", "with": {"by": "$.input.step"}}]},
            {"label": "rest", "steps": []}
        ]}]
    });
    let r = c.run(&rule, "deploy", json!({"input": {"step": 5}})).await;
    assert_eq!(r["output"], json!({"rule_id": "rule_1", "event": "temperature"}));
    assert_eq!(
        kit::entry(&r, "install")["input"],
        json!({"trigger": {"event": "temperature"}, "input": {"step": 5}})
    );
    let fired = c
        .conn
        .call_ok(
            "emit_event",
            json!({"event": "temperature", "payload": {"sensor": "office_temp", "celsius": 27}}),
        )
        .await;
    assert_eq!(fired["fired"][0]["steps"], json!(["hot", "bump"]));
    let fired = c
        .conn
        .call_ok(
            "emit_event",
            json!({"event": "temperature", "payload": {"sensor": "office_temp", "celsius": 20}}),
        )
        .await;
    assert_eq!(fired["fired"][0]["steps"], json!(["hot"]));
    assert_eq!(c.fingerprint().await["counter"], 5);
    // Refused: the installation input must bind the declared inputs.
    let (plan, version) = c.plan(&rule).await;
    let call = c
        .execute_with(
            &plan,
            json!({ARG: rule, "mode": "deploy", "context": ctx(), "expected_catalog_version": version, "input": {"step": "5"}}),
        )
        .await;
    assert!(!call.is_error);
    assert_eq!(call.structured["outcome"]["status"], "validation_error");
    assert_eq!(call.structured["diagnostics"][0]["code"], "input_binding");
    assert_eq!(call.structured["diagnostics"][0]["path"], "/step");
    assert_eq!(c.fingerprint().await["rules"], json!(["rule_1"]), "a refused deploy installs nothing");
}

#[tokio::test]
async fn mode_is_required_and_closed_on_a_both_language() {
    let store = TempStore::new("modes");
    let mut c = Client::duplex(&server(&store)).await;
    let program = json!({"steps": [{"id": "count", "call": "counter_add", "with": {"by": 1}}]});
    let (plan, _) = c.plan(&program).await;
    let missing = c.execute_with(&plan, json!({ARG: program, "context": ctx()})).await;
    assert_request_error(&missing, "invalid_request");
    assert_eq!(
        missing.structured["error"]["message"],
        "automation/v1 executes in mode \"both\": `mode` (immediate or deploy) is required"
    );
    let unknown = c.execute_with(&plan, json!({ARG: program, "context": ctx(), "mode": "later"})).await;
    assert_request_error(&unknown, "invalid_request");
    assert_eq!(unknown.structured["error"]["message"], "unknown mode 'later': use immediate or deploy");
    assert!(missing.structured.get("run_id").is_none() && unknown.structured.get("run_id").is_none());
    assert_eq!(c.fingerprint().await["counter"], 0, "refused requests ran nothing");
    let ok = c.execute_with(&plan, json!({ARG: program, "context": ctx(), "mode": "immediate"})).await;
    assert_eq!(ok.structured["outcome"]["status"], "success", "{}", ok.raw);
    assert_eq!(c.fingerprint().await["counter"], 1);
}

fn workflow_server() -> pilotage::Server {
    pilotage::Server::builder().name("wf", "0").language(workflow::Workflow::new).build().unwrap()
}

fn workflow_args(extra: Value) -> Value {
    let mut args = json!({"workflow": support::scenario::profile_program("cap_read_user_profile"), "input": {"userId": "42"}});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        args[k] = v;
    }
    args
}

#[tokio::test]
async fn mode_and_test_run_on_a_language_that_declares_neither() {
    let mut c = Client::duplex(&workflow_server()).await;
    let with_mode = c.conn.call("run_workflow", workflow_args(json!({"mode": "immediate"}))).await;
    assert_request_error(&with_mode, "invalid_request");
    assert_eq!(
        with_mode.structured["error"]["message"],
        "`mode` applies only to a Language with execution \"both\"; workflow/v1 is immediate"
    );
    let with_test_run = c.conn.call("run_workflow", workflow_args(json!({"test_run": false}))).await;
    assert_request_error(&with_test_run, "invalid_request");
    assert_eq!(
        with_test_run.structured["error"]["message"],
        "workflow/v1 does not declare execute.test_run: omit `test_run`"
    );
    let plan = kit::plan_of(
        &c.conn.call_ok("validate_workflow", json!({"workflow": workflow_args(json!({}))["workflow"]})).await,
    );
    let plain = c.conn.call("run_workflow", workflow_args(json!({}))).await;
    assert!(!plain.is_error, "{}", plain.raw);
    kit::check_run(&plan, &plain.structured, false);
    assert_eq!(plain.structured["outcome"]["status"], "success");
    assert_eq!(plain.structured["output"], json!({"name": "Amira Hassan", "tier": "gold"}));
}

/// The engine's own mode rule: validation does not know the mode, so a program in the wrong
/// mode is a started run that does nothing, with `mode_mismatch` (ok false, no side effects).
#[tokio::test]
async fn a_program_in_the_wrong_mode_is_not_run() {
    let store = TempStore::new("modes");
    let mut c = Client::duplex(&server(&store)).await;
    let before = c.fingerprint().await;
    let rule_now = c.run(&motion_rule(), "immediate", json!({})).await;
    assert_eq!(rule_now["outcome"]["status"], "mode_mismatch");
    assert_eq!(rule_now["outcome"]["ok"], false);
    assert_eq!(
        rule_now["outcome"]["error"],
        "this program has a `trigger`, so it is a rule: execute it with mode \"deploy\" to install it (add test_run: true to try its body now without effects), or remove `trigger` to run the steps now"
    );
    assert_eq!(rule_now["trace"]["steps"], json!([]));
    assert!(rule_now.get("output").is_none());
    let deploy_plain = c.run(&lights_on(), "deploy", json!({"input": {"room": "hall"}})).await;
    assert_eq!(deploy_plain["outcome"]["status"], "mode_mismatch");
    assert!(deploy_plain["outcome"]["error"]
        .as_str()
        .unwrap()
        .starts_with("mode \"deploy\" installs a rule, and a rule needs a `trigger`"));
    assert_eq!(c.fingerprint().await, before, "nothing ran, nothing was installed");
}

/// `test_run` evaluates the body against the current state, without side effects, with an
/// ordinary trace that corresponds to the body plan (checked by the client on every run).
#[tokio::test]
async fn test_run_evaluates_without_side_effects() {
    let store = TempStore::new("modes");
    let mut c = Client::duplex(&server(&store)).await;
    let before = c.fingerprint().await;
    let tried = c.run(&motion_rule(), "deploy", json!({"test_run": true})).await;
    assert_eq!(tried["outcome"], json!({"ok": true, "status": "success", "error": null}));
    // The sample payload is {"room": "hall"} (the event's `examples`).
    assert_eq!(ids(&tried), ["where", "hall_on", "count"]);
    assert_eq!(kit::decisions(&tried, "where"), [("hall".to_owned(), "$.event.room == \"hall\"".to_owned())]);
    assert_eq!(kit::entry(&tried, "count")["output"], json!({"counter": 1}));
    assert!(tried.get("output").is_none(), "the rule has no `output`");
    let immediate =
        c.run(&lights_on(), "immediate", json!({"test_run": true, "input": {"room": "hall"}})).await;
    assert_eq!(immediate["outcome"]["status"], "success");
    assert_eq!(ids(&immediate), ["lights", "each", "on#1"]);
    assert_eq!(c.fingerprint().await, before, "test runs change nothing");
    // The same deploy without test_run does install.
    let installed = c.run(&motion_rule(), "deploy", json!({"test_run": false})).await;
    assert_eq!(installed["output"]["rule_id"], "rule_1");
    assert_ne!(c.fingerprint().await, before);
}

#[tokio::test]
async fn execute_tool_declares_the_reserved_members() {
    let store = TempStore::new("modes");
    let mut c = Client::duplex(&server(&store)).await;
    c.conn.tools_list().await;
    let tool = c.conn.tool(EXECUTE).unwrap().clone();
    let props = &tool["inputSchema"]["properties"];
    for (member, ty) in [
        ("mode", "string"),
        ("test_run", "boolean"),
        ("idempotency_key", "string"),
        ("program_ref", "string"),
        ("expected_catalog_version", "string"),
        ("trace_level", "string"),
        ("store", "boolean"),
    ] {
        assert_eq!(props[member], json!({"type": ty}), "{member}: {tool}");
    }
    assert!(tool["inputSchema"].get("required").is_none(), "no runnable is required: {tool}");
    let manifest = c.conn.call_ok("pilotage_manifest", json!({})).await;
    let lang = &manifest["languages"][0];
    assert_eq!(lang["execution"], "both");
    assert_eq!(lang["retention"], "PT1H");
    assert_eq!(lang["trace_subprogram"], "expanded");
    assert_eq!(lang["context_schema"]["required"], json!(["timezone"]));
    assert_eq!(
        lang["capabilities"],
        json!({"guides": true, "catalog": {"search": true}, "validate": true, "plan": true,
               "execute": {"test_run": true, "idempotency": true}, "trace_fetch": {"narrate": true}})
    );
    assert_eq!(
        lang["loop"],
        json!({"validate": "validate_automation", "execute": "run_automation", "trace": "trace_automation"})
    );
}
