//! Trace identity and shape (Part II §5.7-§5.8, §6.5.6, §6.6) on `automation/v1`: loop and
//! nested-loop identities, the zero-iteration loop, branch decisions against plan labels,
//! control-flow entries without input or output, summary truncation, the partial-failure
//! prefix, the engine's closed statuses, and the fetch door with narration.

use crate::{kit, support, workflow};

use kit::{assert_request_error, decisions, entry, ids, Client, TempStore};
use serde_json::{json, Value};

fn server(store: &TempStore) -> pilotage::Server {
    kit::server_on(store.path(), None)
}

fn pair(took: &str, because: &str) -> (String, String) {
    (took.to_owned(), because.to_owned())
}

#[tokio::test]
async fn loop_and_nested_loop_identities() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let program = json!({
        "steps": [
            {"id": "rows", "loop": [1, 2], "as": "i", "steps": [
                {"id": "cols", "loop": [1, 2, 3, 4], "as": "j", "steps": [
                    {"id": "cell", "set": {"row": "$.vars.i", "col": "$.vars.j"}}
                ]},
                {"id": "row_done", "call": "counter_add", "with": {"by": "$.vars.i"}}
            ]}
        ]
    });
    let (plan, _) = c.plan(&program).await;
    let loops: Vec<(&str, Option<&str>)> =
        plan.steps.iter().map(|s| (s.id.as_str(), s.in_loop.as_deref())).collect();
    assert_eq!(
        loops,
        [("rows", None), ("cols", Some("rows")), ("cell", Some("cols")), ("row_done", Some("rows"))]
    );
    let r = c.run(&program, "immediate", json!({})).await;
    assert_eq!(
        ids(&r),
        [
            "rows",
            "cols#1",
            "cell#1#1",
            "cell#1#2",
            "cell#1#3",
            "cell#1#4",
            "row_done#1",
            "cols#2",
            "cell#2#1",
            "cell#2#2",
            "cell#2#3",
            "cell#2#4",
            "row_done#2"
        ]
    );
    assert_eq!(entry(&r, "cell#2#4")["output"], json!({"row": 2, "col": 4}));
    assert_eq!(
        decisions(&r, "rows"),
        [pair("continue", "item 1 of 2"), pair("continue", "item 2 of 2"), pair("exit", "all 2 items done")]
    );
    // The inner loop appears once per activation; its counter restarts.
    for activation in ["cols#1", "cols#2"] {
        let d = decisions(&r, activation);
        assert_eq!(d.len(), 5, "{activation}: {d:?}");
        assert_eq!(d[0], pair("continue", "item 1 of 4"));
        assert_eq!(d[4], pair("exit", "all 4 items done"));
        for e in r["trace"]["steps"].as_array().unwrap().iter().filter(|e| e["id"] == activation) {
            assert_eq!(e["decisions"][0]["at"], "cols", "the decision's `at` is the loop's program step id");
        }
    }
    // Control-flow entries carry neither input nor output.
    for id in ["rows", "cols#1", "cols#2"] {
        let e = entry(&r, id);
        assert!(e.get("input").is_none() && e.get("output").is_none() && e.get("calls").is_none(), "{e}");
    }
    assert_eq!(c.fingerprint().await["counter"], 3);
}

#[tokio::test]
async fn a_zero_iteration_loop_has_one_exit() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let program = json!({
        "inputs": {"rooms": "array"},
        "steps": [
            {"id": "each", "loop": "$.input.rooms", "as": "room", "steps": [
                {"id": "count", "call": "counter_add", "with": {"by": 1}}
            ]},
            {"id": "after", "set": "done"}
        ]
    });
    let empty = c.run(&program, "immediate", json!({"input": {"rooms": []}})).await;
    assert_eq!(empty["outcome"]["status"], "success");
    assert_eq!(ids(&empty), ["each", "after"]);
    assert_eq!(decisions(&empty, "each"), [pair("exit", "$.input.rooms is an empty list")]);
    assert_eq!(c.fingerprint().await["counter"], 0);
    let two = c.run(&program, "immediate", json!({"input": {"rooms": ["hall", "office"]}})).await;
    assert_eq!(ids(&two), ["each", "count#1", "count#2", "after"]);
    assert_eq!(decisions(&two, "each").len(), 3);
}

#[tokio::test]
async fn branch_decisions_take_plan_labels_and_untaken_arms_are_absent() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let program = json!({
        "steps": [
            {"id": "temp", "call": "device_get", "with": {"device": "office_temp"}},
            {"id": "climate", "branch": "$.steps.temp.output.state.celsius", "arms": [
                {"label": "hot", "above": 25, "steps": [{"id": "cool", "call": "thermostat_set", "with": {"device": "office_thermostat", "celsius": 19}}]},
                {"label": "cold", "below": 18, "steps": [{"id": "heat", "call": "thermostat_set", "with": {"device": "office_thermostat", "celsius": 23}}]},
                {"label": "mild", "steps": [{"id": "note", "set": "nothing to do"}]}
            ]}
        ]
    });
    let (plan, _) = c.plan(&program).await;
    let arms: Vec<(String, String)> = plan
        .steps
        .iter()
        .filter_map(|s| s.arm.as_ref().map(|a| (s.id.clone(), format!("{}/{}", a.branch, a.label))))
        .collect();
    assert_eq!(
        arms,
        [
            ("cool".into(), "climate/hot".into()),
            ("heat".into(), "climate/cold".into()),
            ("note".into(), "climate/mild".into())
        ]
    );
    let mild = c.run(&program, "immediate", json!({})).await;
    assert_eq!(ids(&mild), ["temp", "climate", "note"]);
    assert_eq!(
        decisions(&mild, "climate"),
        [pair("mild", "$.steps.temp.output.state.celsius is 23.5: no earlier arm matches, default arm")]
    );
    // The same program after the reading changes would take another arm; here: the `above`
    // arm, with a threshold under the reading.
    let hot = json!({
        "steps": [
            {"id": "temp", "call": "device_get", "with": {"device": "office_temp"}},
            {"id": "climate", "branch": "$.steps.temp.output.state.celsius", "arms": [
                {"label": "hot", "above": 22, "steps": [{"id": "cool", "call": "thermostat_set", "with": {"device": "office_thermostat", "celsius": 19}}]},
                {"label": "mild", "steps": []}
            ]}
        ]
    });
    let r = c.run(&hot, "immediate", json!({})).await;
    assert_eq!(ids(&r), ["temp", "climate", "cool"]);
    assert_eq!(decisions(&r, "climate"), [pair("hot", "$.steps.temp.output.state.celsius is 23.5 > 22")]);
    assert_eq!(entry(&r, "climate")["decisions"][0]["at"], "climate");
}

#[tokio::test]
async fn summary_omits_inputs_and_truncates_long_outputs() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let program = json!({
        "steps": [
            {"id": "all", "call": "devices_list", "with": {}},
            {"id": "one", "call": "device_get", "with": {"device": "front_door"}},
            {"id": "each", "loop": [1], "as": "x", "steps": []}
        ]
    });
    let full = c.run(&program, "immediate", json!({"trace_level": "full"})).await;
    assert_eq!(full["trace"]["level"], "full");
    let long = entry(&full, "all")["output"].to_string();
    assert!(long.len() > 256, "the list is long enough to be truncated: {} bytes", long.len());
    let summary = c.run(&program, "immediate", json!({"trace_level": "summary"})).await;
    assert_eq!(summary["trace"]["level"], "summary");
    assert_eq!(ids(&summary), ["all", "one", "each"]);
    for e in summary["trace"]["steps"].as_array().unwrap() {
        assert!(e.get("input").is_none(), "summary omits inputs: {e}");
    }
    assert_eq!(
        entry(&summary, "all")["output"],
        json!({"truncated": true, "bytes": long.len(), "preview": long.chars().take(200).collect::<String>()})
    );
    assert_eq!(entry(&summary, "one")["output"], entry(&full, "one")["output"], "short outputs are kept");
    assert!(entry(&summary, "each").get("output").is_none());
    assert_eq!(entry(&summary, "each")["decisions"], entry(&full, "each")["decisions"]);
    // `none`: no trace, but run_id and outcome.
    let none = c.run(&program, "immediate", json!({"trace_level": "none"})).await;
    assert!(none.get("trace").is_none());
    assert_eq!(none["outcome"]["status"], "success");
    assert!(none["run_id"].as_str().unwrap().starts_with("run_"));
    // Rejected: an unknown trace level.
    let (plan, version) = c.plan(&program).await;
    let bad = c
        .execute_with(
            &plan,
            json!({"automation": program, "mode": "immediate", "context": kit::ctx(), "expected_catalog_version": version, "trace_level": "verbose"}),
        )
        .await;
    assert_request_error(&bad, "invalid_request");
}

#[tokio::test]
async fn a_failing_step_ends_the_run_with_the_trace_so_far() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let program = |device: &str| {
        json!({
            "steps": [
                {"id": "on", "call": "light_set", "with": {"device": "hall_light", "on": true}},
                {"id": "check", "call": "device_get", "with": {"device": device}},
                {"id": "count", "call": "counter_add", "with": {"by": 1}}
            ]
        })
    };
    let failed = c.run(&program("cellar_light"), "immediate", json!({})).await;
    assert_eq!(
        failed["outcome"],
        json!({"ok": false, "status": "partial", "error": "step 'check' failed: no device 'cellar_light' (earlier steps changed the building)"})
    );
    assert_eq!(ids(&failed), ["on", "check"], "the trace so far: the later step is absent");
    assert_eq!(entry(&failed, "on")["outcome"]["status"], "success");
    assert_eq!(
        entry(&failed, "check")["outcome"],
        json!({"ok": false, "status": "not_found", "error": "no device 'cellar_light'"})
    );
    assert_eq!(entry(&failed, "check")["output"], Value::Null);
    assert!(failed.get("output").is_none());
    let fp = c.fingerprint().await;
    assert_eq!(
        (fp["lights_on"].clone(), fp["counter"].clone()),
        (json!(1), json!(0)),
        "the effect before the failure stays"
    );
    let ok = c.run(&program("front_door"), "immediate", json!({})).await;
    assert_eq!(ok["outcome"]["status"], "success");
    assert_eq!(ids(&ok), ["on", "check", "count"]);
}

/// Engine statuses: each with the `ok` value and side-effect behaviour the closed-sets guide
/// documents.
#[tokio::test]
async fn engine_statuses() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let before = c.fingerprint().await;
    let door = json!({"steps": [{"id": "open", "call": "door_unlock", "with": {"device": "front_door"}}]});
    c.conn.call_ok("inject_fault", json!({"lockdown": true})).await;
    let denied = c.run(&door, "immediate", json!({})).await;
    assert_eq!(
        denied["outcome"],
        json!({"ok": false, "status": "denied", "error": "step 'open' failed: the building is in lockdown: doors stay locked"})
    );
    assert_eq!(c.fingerprint().await, before, "denied: no side effects");
    c.conn.call_ok("inject_fault", json!({"lockdown": false})).await;
    let opened = c.run(&door, "immediate", json!({})).await;
    assert_eq!(opened["outcome"]["status"], "success");

    let light =
        json!({"steps": [{"id": "on", "call": "light_set", "with": {"device": "hall_light", "on": true}}]});
    c.conn.call_ok("inject_fault", json!({"offline": ["hall_light"]})).await;
    let timeout = c.run(&light, "immediate", json!({})).await;
    assert_eq!(
        timeout["outcome"],
        json!({"ok": false, "status": "timeout", "error": "step 'on' failed: device 'hall_light' did not answer in time"})
    );
    c.conn.call_ok("inject_fault", json!({"offline": []})).await;

    let wrong_kind = json!({"steps": [{"id": "on", "call": "light_set", "with": {"device": "office_thermostat", "on": true}}]});
    let rejected = c.run(&wrong_kind, "immediate", json!({})).await;
    assert_eq!(rejected["outcome"]["status"], "rejected");
    assert_eq!(entry(&rejected, "on")["outcome"]["status"], "rejected");

    let unresolved = json!({
        "steps": [
            {"id": "get", "call": "device_get", "with": {"device": "hall_light"}},
            {"id": "use", "set": "$.steps.get.output.state.colour"}
        ]
    });
    let error = c.run(&unresolved, "immediate", json!({})).await;
    assert_eq!(error["outcome"]["status"], "error");
    assert_eq!(entry(&error, "use")["outcome"]["status"], "error");

    let manifest_statuses =
        c.conn.call_ok("pilotage_get_guide", json!({"language": kit::LANGUAGE, "id": "closed-sets"})).await;
    let body = manifest_statuses["guide"]["body"].as_str().unwrap();
    for (status, line) in [
        ("denied", "| `denied` | false | no |"),
        ("timeout", "| `timeout` | false | yes |"),
        ("rejected", "| `rejected` | false | no |"),
        ("error", "| `error` | false | yes |"),
        ("partial", "| `partial` | false | yes |"),
        ("mode_mismatch", "| `mode_mismatch` | false | no |"),
    ] {
        assert!(body.contains(line), "the closed-sets guide documents {status}");
    }
}

#[tokio::test]
async fn the_fetch_door_returns_the_stored_envelope_with_narration() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let program = json!({
        "steps": [
            {"id": "on", "call": "light_set", "with": {"device": "hall_light", "on": true}},
            {"id": "check", "call": "device_get", "with": {"device": "hall_light"}}
        ],
        "output": {"state": "$.steps.check.output.state"}
    });
    let full = c.run(&program, "immediate", json!({"store": true})).await;
    let run_id = full["run_id"].as_str().unwrap().to_owned();
    let fetched = c.fetch(json!({"run_id": run_id})).await;
    assert!(!fetched.is_error, "{}", fetched.raw);
    let f = &fetched.structured;
    let mut envelope = f.clone();
    envelope.as_object_mut().unwrap().remove("narration");
    assert_eq!(envelope, full, "the fetch door returns the envelope that rode the execute response");
    assert_eq!(
        f["narration"],
        format!(
            "Run {run_id} succeeded. It recorded 2 trace entries: 2 calls (light_set, device_get), 0 branch decisions and 0 loop activations. \
             (Narration is interpretation; the trace envelope is the record.)"
        )
    );
    // Recorded at the declared ceiling (full), whatever the inline level was; a fetch at
    // summary gives what the inline summary gave.
    let summary = c.run(&program, "immediate", json!({"store": true, "trace_level": "summary"})).await;
    let at_full = c.fetch(json!({"run_id": summary["run_id"]})).await.structured;
    assert_eq!(at_full["trace"]["level"], "full");
    assert_eq!(entry(&at_full, "on")["input"], json!({"device": "hall_light", "on": true}));
    let at_summary = c.fetch(json!({"run_id": summary["run_id"], "trace_level": "summary"})).await.structured;
    assert_eq!(at_summary["trace"], summary["trace"]);
    // Stored with trace_level none: no inline trace, still fetchable.
    let silent = c.run(&program, "immediate", json!({"store": true, "trace_level": "none"})).await;
    assert!(silent.get("trace").is_none());
    let later = c.fetch(json!({"run_id": silent["run_id"]})).await.structured;
    assert_eq!(kit::ids(&later), ["on", "check"]);

    // A question: the prose answers it from the facts; the facts do not change.
    let failing = json!({
        "steps": [
            {"id": "on", "call": "light_set", "with": {"device": "hall_light", "on": true}},
            {"id": "check", "call": "device_get", "with": {"device": "cellar_light"}}
        ]
    });
    let failed = c.run(&failing, "immediate", json!({"store": true})).await;
    assert_eq!(failed["outcome"]["status"], "partial");
    let plain = c.fetch(json!({"run_id": failed["run_id"]})).await.structured;
    let asked = c.fetch(json!({"run_id": failed["run_id"], "question": "Why did it fail?"})).await.structured;
    let answer = asked["narration"].as_str().unwrap();
    assert!(
        answer.contains(
            "You asked: \"Why did it fail?\". The first failing entry is 'check' with status not_found: no device 'cellar_light'."
        ),
        "{answer}"
    );
    assert_ne!(asked["narration"], plain["narration"]);
    let facts = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("narration");
        v
    };
    assert_eq!(facts(&asked), facts(&plain), "the question changes the prose, never the facts");

    // Rejected: `none` on the fetch door; an unknown run; a refused run is never retained;
    // a run with store: false is not retained.
    assert_request_error(&c.fetch(json!({"run_id": run_id, "trace_level": "none"})).await, "invalid_request");
    let unknown = c.fetch(json!({"run_id": "run_0000000000000000"})).await;
    assert_request_error(&unknown, "not_found");
    let refused = c
        .run(
            &json!({"inputs": {"n": "integer"}, "steps": [{"id": "s", "set": "$.input.n"}]}),
            "immediate",
            json!({"store": true}),
        )
        .await;
    assert_eq!(refused["outcome"]["status"], "validation_error");
    let not_retained = c.fetch(json!({"run_id": refused["run_id"]})).await;
    assert_eq!(
        not_retained.raw["result"], unknown.raw["result"],
        "a refused run is indistinguishable from an unknown one"
    );
    let unstored = c.run(&json!({"steps": []}), "immediate", json!({"store": false})).await;
    let not_stored = c.fetch(json!({"run_id": unstored["run_id"]})).await;
    assert_eq!(not_stored.raw["result"], unknown.raw["result"]);
    // Another stdio-like session of the same deployment is the same (ambient) principal
    // (Part III §8.4), so the durable record is its record too; a foreign principal's fetch is
    // indistinguishable from an unknown run (automation_restart, carrier).
    let server2 = kit::server_on(store.path(), None);
    let mut same_deployment = Client::duplex(&server2).await;
    let again = same_deployment.fetch(json!({"run_id": run_id})).await;
    assert!(!again.is_error, "{}", again.raw);
    assert_eq!(again.structured["run_id"], run_id);
}

/// RUNTIME BUG (reported): the SQLite run store round-trips `Option<Value>` through serde, so
/// a step whose `input` or `output` is JSON `null` (a `set` step's input, a failed step's
/// output) loses the member: the fetched envelope differs from the inline one, and a `full`
/// trace lacks a member Part II §5.8 requires at `full`.
#[tokio::test]
async fn the_stored_envelope_keeps_null_inputs_and_outputs() {
    let store = TempStore::new("trace");
    let mut c = Client::duplex(&server(&store)).await;
    let program = json!({
        "steps": [
            {"id": "note", "set": "hello"},
            {"id": "check", "call": "device_get", "with": {"device": "cellar_light"}}
        ]
    });
    let r = c.run(&program, "immediate", json!({"store": true})).await;
    assert_eq!(entry(&r, "note")["input"], Value::Null);
    assert!(entry(&r, "note").get("input").is_some());
    assert!(entry(&r, "check").get("output").is_some());
    let fetched = c.fetch(json!({"run_id": r["run_id"]})).await.structured;
    assert_eq!(fetched["trace"], r["trace"]);
}

#[tokio::test]
async fn question_on_a_language_without_narrate_is_invalid_request() {
    let server =
        pilotage::Server::builder().name("wf", "0").language(workflow::Workflow::new).build().unwrap();
    let mut c = Client::duplex(&server).await;
    let args = json!({"workflow": support::scenario::profile_program("cap_read_user_profile"), "input": {"userId": "42"}, "store": true});
    let plan =
        kit::plan_of(&c.conn.call_ok("validate_workflow", json!({"workflow": args["workflow"]})).await);
    let r = c.conn.call_ok("run_workflow", args).await;
    kit::check_run(&plan, &r, false);
    let run_id = r["run_id"].clone();
    let asked = c.conn.call("trace_run", json!({"run_id": run_id, "question": "why?"})).await;
    assert_request_error(&asked, "invalid_request");
    assert_eq!(
        asked.structured["error"]["message"],
        "workflow/v1 does not declare trace_fetch.narrate: omit `question`; the trace envelope carries the facts"
    );
    let plain = c.conn.call("trace_run", json!({"run_id": run_id})).await;
    assert!(!plain.is_error);
    assert!(plain.structured.get("narration").is_none(), "no narration without trace_fetch.narrate");
}
