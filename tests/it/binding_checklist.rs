//! The Part III §10.1 server checklist, one test per item, each through a real transport
//! (Streamable HTTP in-process, the stateless 2026-07-28 request path, or an example binary
//! over stdio), plus graceful degradation (§1.3).

use crate::{automation, support, workflow};

use pilotage::model::schema::any_value;
use serde_json::{json, Value};

use support::{assert_def, Conn, HttpServer, HttpStyle, ToolKind, EXT};

use support::STATELESS;

fn server() -> pilotage::Server {
    pilotage::Server::builder().name("checklist", "0").language(workflow::Workflow::new).build().unwrap()
}

async fn http() -> (HttpServer, Conn) {
    let http = HttpServer::start(&server()).await;
    let mut conn = http.connect(HttpStyle::Full);
    conn.initialize(true).await;
    (http, conn)
}

async fn calc() -> Conn {
    let mut conn = Conn::stdio("calc", &[]);
    conn.initialize(true).await;
    conn
}

/// One request on the stateless 2026-07-28 path (see `support::stateless_request`).
async fn stateless(url: &str, method: &str, params: Value, capabilities: Value) -> Value {
    support::stateless_request(url, method, params, capabilities, None).await
}

fn with_extension() -> Value {
    json!({"extensions": {EXT: {}}})
}

fn tool(tools: &[Value], name: &str) -> Value {
    tools.iter().find(|t| t["name"] == name).cloned().unwrap_or_else(|| panic!("no tool {name}"))
}

fn manifest_languages(conn_manifest: &Value) -> Vec<Value> {
    conn_manifest["languages"].as_array().cloned().unwrap()
}

/// 1. Extension declaration: on initialize (every handshake revision, HTTP and stdio) and on
/// `server/discover` (stateless 2026-07-28, client capabilities per request).
#[tokio::test]
async fn item_01_extension_declaration() {
    let http = HttpServer::start(&server()).await;
    for revision in ["2025-06-18", "2025-11-25"] {
        let mut conn = http.connect(HttpStyle::Plain);
        let response = conn
            .request(
                "initialize",
                json!({"protocolVersion": revision, "capabilities": with_extension(), "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        let result = &response["result"];
        assert_eq!(result["protocolVersion"], revision, "{result}");
        assert_eq!(
            result["capabilities"]["extensions"][EXT],
            json!({"version": "1.1"}),
            "{revision}: {result}"
        );
    }
    let mut stdio = Conn::stdio("calc", &[]);
    let init = stdio.initialize(true).await;
    assert_eq!(init["result"]["capabilities"]["extensions"][EXT], json!({"version": "1.1"}), "{init}");

    let discovered = stateless(http.url(), "server/discover", json!({}), with_extension()).await;
    let result = &discovered["result"];
    assert_eq!(result["capabilities"]["extensions"][EXT], json!({"version": "1.1"}), "{discovered}");
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!(STATELESS)), "{result}");
    assert_def(&result["_meta"][EXT], "InitializeMetaValue");
    // Per-request client capabilities: the stateless loop works without any session.
    let listed = stateless(http.url(), "tools/list", json!({}), with_extension()).await;
    assert!(listed["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "pilotage_manifest"));
    let manifest = stateless(
        http.url(),
        "tools/call",
        json!({"name": "pilotage_manifest", "arguments": {}}),
        with_extension(),
    )
    .await;
    assert_eq!(manifest["result"]["structuredContent"], result["_meta"][EXT]["manifest"], "{manifest}");
    // The discover result's manifest equals the handshake's.
    let mut conn = http.connect(HttpStyle::Plain);
    let init = conn.initialize(true).await;
    assert_eq!(init["result"]["_meta"][EXT], result["_meta"][EXT]);
}

/// 2. Fixed access tools with the Part III §4 schemas; `pilotage_catalog` exactly when a
/// Language declares `catalog`.
#[tokio::test]
async fn item_02_fixed_access_tools() {
    let (_http, mut conn) = http().await;
    let tools = conn.tools_list().await;
    let manifest = tool(&tools, "pilotage_manifest");
    assert_eq!(manifest["inputSchema"]["type"], "object");
    assert!(manifest["inputSchema"].get("required").is_none(), "{manifest}");
    assert_eq!(
        tool(&tools, "pilotage_get_guide")["inputSchema"],
        json!({
            "type": "object",
            "properties": {"language": {"type": "string"}, "id": {"type": "string"}, "topic": {"type": "string"}},
            "required": ["language"]
        })
    );
    assert_eq!(
        tool(&tools, "pilotage_catalog")["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "language": {"type": "string"},
                "verb": {"type": "string", "enum": ["list", "get", "changed_since"]},
                "kind": {"type": "string"},
                "tag": {"type": "string"},
                "q": {"type": "string"},
                "cursor": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1},
                "id": {"type": "string"},
                "catalog_version": {"type": "string"}
            },
            "required": ["language", "verb"]
        })
    );
    // calc/v1 declares no catalog: no pilotage_catalog.
    let mut calc = calc().await;
    let names: Vec<String> =
        calc.tools_list().await.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert!(
        names.contains(&"pilotage_manifest".to_owned()) && names.contains(&"pilotage_get_guide".to_owned())
    );
    assert!(!names.contains(&"pilotage_catalog".to_owned()), "{names:?}");
}

/// 3. Manifest references bound to the fixed tool names.
#[tokio::test]
async fn item_03_manifest_references() {
    let (_http, mut conn) = http().await;
    let mut calc = calc().await;
    for conn in [&mut conn, &mut calc] {
        let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
        for l in manifest_languages(&manifest) {
            assert_eq!(l["guides"], "pilotage_get_guide", "{l}");
            let catalog = l["capabilities"].get("catalog").is_some_and(|c| c != &json!(false));
            if catalog {
                assert_eq!(l["catalog"], "pilotage_catalog", "{l}");
            } else {
                assert!(l.get("catalog").is_none(), "{l}");
            }
            assert!(l.get("guides_resource").is_none() && l.get("catalog_resource").is_none(), "{l}");
        }
    }
}

/// 4. Loop tools exactly per the effective capability map.
#[tokio::test]
async fn item_04_loop_tools() {
    let (_http, mut conn) = http().await;
    let mut calc = calc().await;
    for (conn, expected) in [
        (
            &mut conn,
            json!({"validate": "validate_workflow", "execute": "run_workflow", "trace": "trace_run"}),
        ),
        (&mut calc, json!({"validate": "validate_calc", "execute": "run_calc"})),
    ] {
        let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
        let tools = conn.tools_list().await;
        let l = &manifest_languages(&manifest)[0];
        assert_eq!(l["loop"], expected);
        let caps = &l["capabilities"];
        assert_eq!(l["loop"].get("execute").is_some(), caps.get("execute").is_some());
        assert_eq!(l["loop"].get("trace").is_some(), caps.get("trace_fetch").is_some());
        for name in l["loop"].as_object().unwrap().values() {
            assert!(tools.iter().any(|t| &t["name"] == name), "{name} is not listed");
        }
    }
    // The combined example: server-level defaults, per-Language overrides; the loop follows
    // each Language's effective map (Language-level value, else the server default).
    let mut combined = Conn::stdio("combined", &[]);
    combined.initialize(true).await;
    let manifest = combined.call_ok("pilotage_manifest", json!({})).await;
    let tools = combined.tools_list().await;
    let defaults = manifest["capabilities"].as_object().cloned().expect("server-level defaults");
    for l in manifest_languages(&manifest) {
        let mut effective = defaults.clone();
        for (k, v) in l["capabilities"].as_object().into_iter().flatten() {
            effective.insert(k.clone(), v.clone());
        }
        let on = |c: &str| effective.get(c).is_some_and(|v| v != &json!(false));
        assert!(l["loop"]["validate"].is_string(), "{l}");
        assert_eq!(l["loop"].get("execute").is_some(), on("execute"), "{l}");
        assert_eq!(l["loop"].get("trace").is_some(), on("trace_fetch"), "{l}");
        for name in l["loop"].as_object().unwrap().values() {
            assert!(tools.iter().any(|t| &t["name"] == name), "{name} is not listed");
        }
        // A sub-feature the effective map leaves out is refused.
        let language = l["name"].clone();
        let token = combined.call_ok("pilotage_catalog", json!({"language": language, "verb": "list"})).await;
        let delta = combined
            .call(
                "pilotage_catalog",
                json!({"language": language, "verb": "changed_since", "catalog_version": token["catalog_version"]}),
            )
            .await;
        let declared = effective["catalog"]["changed_since"] == json!(true);
        assert_eq!(!delta.is_error, declared, "{language}: changed_since declared {declared}: {}", delta.raw);
    }
}

/// 5. Reserved argument names: present with their reserved meaning (typed only).
#[tokio::test]
async fn item_05_reserved_names() {
    let (_http, mut conn) = http().await;
    let tools = conn.tools_list().await;
    let typed = |t: &Value, name: &str, ty: &str| {
        assert_eq!(t["inputSchema"]["properties"][name], json!({"type": ty}), "{}: {name}", t["name"]);
    };
    let execute = tool(&tools, "run_workflow");
    for (name, ty) in [
        ("trace_level", "string"),
        ("expected_catalog_version", "string"),
        ("store", "boolean"),
        ("input", "object"),
    ] {
        typed(&execute, name, ty);
    }
    assert!(execute["inputSchema"]["properties"].get("context").is_some());
    let validate = tool(&tools, "validate_workflow");
    assert_eq!(validate["inputSchema"]["required"], json!(["workflow"]));
    assert!(validate["inputSchema"]["properties"].get("context").is_some());
    let trace = tool(&tools, "trace_run");
    typed(&trace, "run_id", "string");
    typed(&trace, "trace_level", "string");
    assert_eq!(trace["inputSchema"]["required"], json!(["run_id"]));
    // Undeclared sub-features leave their reserved names out rather than reuse them.
    for name in ["idempotency_key", "test_run", "mode", "program_ref", "question"] {
        assert!(execute["inputSchema"]["properties"].get(name).is_none(), "{name}");
        assert!(trace["inputSchema"]["properties"].get(name).is_none(), "{name}");
    }
    // A Language without a catalog has no expected_catalog_version.
    let mut calc = calc().await;
    let run_calc = tool(&calc.tools_list().await, "run_calc");
    typed(&run_calc, "trace_level", "string");
    assert!(run_calc["inputSchema"]["properties"].get("expected_catalog_version").is_none());
}

/// 6. Permissive loop schemas: no `additionalProperties: false`, reserved members typed only,
/// no runnable required on execute, value faults routed to Pilotage channels.
#[tokio::test]
async fn item_06_permissive_loop_schemas() {
    let (_http, mut conn) = http().await;
    let tools = conn.tools_list().await;
    for name in ["validate_workflow", "run_workflow", "trace_run"] {
        let schema = &tool(&tools, name)["inputSchema"];
        assert_ne!(schema["additionalProperties"], json!(false), "{name}");
        for (member, s) in schema["properties"].as_object().unwrap() {
            // Typed only, or unconstrained (any JSON value, spelled portably).
            let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
            let typed_only = keys.iter().all(|k| *k == "type" || *k == "description");
            assert!(typed_only || *s == any_value(), "{name}.{member}: {s}");
        }
    }
    let execute = &tool(&tools, "run_workflow")["inputSchema"];
    assert!(execute.get("required").is_none_or(|r| !r.as_array().unwrap().contains(&json!("workflow"))));
    assert_eq!(execute["properties"]["workflow"], any_value());
    assert_eq!(execute["properties"]["context"], any_value());
    let unknown_level =
        conn.call("run_workflow", json!({"workflow": {"steps": []}, "trace_level": "verbose"})).await;
    assert!(unknown_level.is_error && unknown_level.structured["error"]["kind"] == "invalid_request");
    let undeclared = conn.call("run_workflow", json!({"workflow": {"steps": []}, "mode": "immediate"})).await;
    assert!(undeclared.is_error && undeclared.structured["error"]["kind"] == "invalid_request");
    // Only structural faults are carrier errors.
    let wrong_type =
        conn.call_carrier_error("run_workflow", json!({"workflow": {"steps": []}, "trace_level": 3})).await;
    assert_eq!(wrong_type["code"], -32602);
}

/// 7. Program declarations under the full registered `_meta` key.
#[tokio::test]
async fn item_07_program_declarations() {
    let (_http, mut conn) = http().await;
    let tools = conn.tools_list().await;
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        assert!(t["_meta"].get("pilotage").is_none(), "{name} uses a shorthand key");
        let declaration = &t["_meta"][EXT];
        match name {
            "validate_workflow" | "run_workflow" => {
                assert_eq!(
                    declaration,
                    &json!({"argument": "workflow", "language": "workflow/v1"}),
                    "{name}"
                );
                assert_def(declaration, "ProgramDeclaration");
            }
            _ => assert!(declaration.is_null(), "{name} accepts no program: {t}"),
        }
    }
}

/// 8. Every Pilotage tool returns its result in `structuredContent` (checked against the
/// advertised `outputSchema` and the official union by the client).
#[tokio::test]
async fn item_08_result_envelope() {
    let (_http, mut conn) = http().await;
    conn.call_ok("pilotage_manifest", json!({})).await;
    conn.call_ok("pilotage_get_guide", json!({"language": "workflow/v1"})).await;
    conn.call_ok("pilotage_catalog", json!({"language": "workflow/v1", "verb": "list"})).await;
    conn.call_ok("validate_workflow", json!({"workflow": {"steps": []}})).await;
    let run = conn.call_ok("run_workflow", json!({"workflow": {"steps": []}, "store": true})).await;
    conn.call_ok("trace_run", json!({"run_id": run["run_id"]})).await;
    let error = conn.call("trace_run", json!({"run_id": "run_unknown"})).await;
    assert!(error.is_error && error.structured.is_object());
    for kind in
        [ToolKind::Manifest, ToolKind::Guide, ToolKind::Catalog, ToolKind::Validate, ToolKind::Execute]
    {
        assert_eq!(conn.schema_checked(kind), 1, "{kind:?}");
    }
    assert_eq!(conn.schema_checked(ToolKind::Trace), 2);
}

/// 9. Error mapping: findings and failed runs are results (`isError: false`), request errors
/// carry a closed kind (`isError: true`), unknown tools are carrier errors.
#[tokio::test]
async fn item_09_error_mapping() {
    let (_http, mut conn) = http().await;
    let invalid = conn.call("validate_workflow", json!({"workflow": {"steps": 3}})).await;
    assert!(!invalid.is_error && invalid.structured["valid"] == false, "{}", invalid.raw);
    let program = json!({"steps": [{"id": "p", "kind": "call", "capability": "cap_read_user_profile", "with": {"user_id": "99"}}]});
    let failed = conn.call("run_workflow", json!({"workflow": program})).await;
    assert!(!failed.is_error && failed.structured["outcome"]["ok"] == false, "{}", failed.raw);
    let refused = conn.call("run_workflow", json!({"workflow": {"steps": 3}})).await;
    assert!(!refused.is_error && refused.structured["outcome"]["status"] == "validation_error");
    let kinds = ["not_found", "invalid_request", "unknown_baseline", "bounds_exceeded"];
    let errors = [
        conn.call("pilotage_get_guide", json!({"language": "nope/v1"})).await,
        conn.call("pilotage_catalog", json!({"language": "workflow/v1", "verb": "get"})).await,
        conn.call(
            "pilotage_catalog",
            json!({"language": "workflow/v1", "verb": "changed_since", "catalog_version": "cv_x"}),
        )
        .await,
        conn.call("validate_workflow", json!({"workflow": (0..80).fold(json!(1), |v, _| json!([v]))})).await,
    ];
    for (e, kind) in errors.iter().zip(kinds) {
        assert!(e.is_error, "{}", e.raw);
        assert_def(&e.structured, "RequestError");
        assert_eq!(e.structured["error"]["kind"], kind, "{}", e.raw);
    }
    assert_eq!(conn.call_carrier_error("no_such_tool", json!({})).await["code"], -32602);
}

/// 10. Retention bound to the MCP session: a run stored in HTTP session A is `not_found` from
/// session B, indistinguishable from an unknown run; over stdio the session is the process.
#[tokio::test]
async fn item_10_session_binding() {
    let http = HttpServer::start(&server()).await;
    let mut a = http.connect(HttpStyle::Plain);
    a.initialize(true).await;
    let run = a.call_ok("run_workflow", json!({"workflow": {"steps": []}, "store": true})).await;
    let run_id = run["run_id"].clone();
    a.call_ok("trace_run", json!({"run_id": run_id})).await;
    let mut b = http.connect(HttpStyle::Plain);
    b.initialize(true).await;
    assert_ne!(a.session_id(), b.session_id());
    let foreign = b.call("trace_run", json!({"run_id": run_id})).await;
    let unknown = b.call("trace_run", json!({"run_id": "run_0000000000000000"})).await;
    assert!(foreign.is_error && foreign.structured["error"]["kind"] == "not_found", "{}", foreign.raw);
    assert_eq!(foreign.raw["result"], unknown.raw["result"]);
    // Session A still has it.
    a.call_ok("trace_run", json!({"run_id": run_id})).await;

    let mut one = Conn::stdio("workflow", &[]);
    one.initialize(true).await;
    let run = one.call_ok("run_workflow", json!({"workflow": {"steps": []}, "store": true})).await;
    one.call_ok("trace_run", json!({"run_id": run["run_id"]})).await;
    let mut other = Conn::stdio("workflow", &[]);
    other.initialize(true).await;
    let gone = other.call("trace_run", json!({"run_id": run["run_id"]})).await;
    assert_eq!(gone.structured["error"]["kind"], "not_found");
}

/// 11. Stateless restriction: a stateless deployment refuses `"session"` retention at build
/// time; on the stateless request path a session-retention Language cannot store.
#[tokio::test]
async fn item_11_stateless_restriction() {
    let refused = pilotage::Server::builder().language(workflow::Workflow::new).stateless(true).build();
    let Err(e) = refused else { panic!("a stateless deployment accepted retention \"session\"") };
    assert!(e.problems.iter().any(|p| p.contains("workflow/v1") && p.contains("session")), "{e}");
    let http = HttpServer::start(&server()).await;
    let stored = stateless(
        http.url(),
        "tools/call",
        json!({"name": "run_workflow", "arguments": {"workflow": {"steps": []}, "store": true}}),
        with_extension(),
    )
    .await;
    assert_eq!(stored["result"]["isError"], true, "{stored}");
    assert_eq!(stored["result"]["structuredContent"]["error"]["kind"], "unsupported", "{stored}");

    // A Language with a duration retention is servable statelessly: its manifest says so,
    // and a stored run is fetchable by a later sessionless request of the same (here the
    // explicitly shared anonymous) caller.
    let file = std::env::temp_dir().join(format!("pilotage-checklist-{}.sqlite", std::process::id()));
    let runs = pilotage::state::SqliteState::open(&file).expect("the run store opens");
    let server = pilotage::Server::builder()
        .language(automation::Automation::new)
        .state(std::sync::Arc::new(runs))
        .stateless(true)
        .anonymous_sessionless()
        .build()
        .expect("a stateless deployment of a PT1H Language builds");
    let retention = &server.manifest()["languages"][0]["retention"];
    assert!(retention != "session", "{retention}");
    let options = pilotage::transport::HttpOptions {
        stateless: true,
        allowed_hosts: None,
        ..pilotage::transport::HttpOptions::default()
    };
    let http = HttpServer::start_with(&server, options).await;
    let run = stateless(
        http.url(),
        "tools/call",
        json!({"name": "run_automation", "arguments": {
            "automation": {"steps": [{"id": "s", "set": 1}]},
            "mode": "immediate",
            "context": {"timezone": "Europe/Paris"},
            "store": true
        }}),
        with_extension(),
    )
    .await;
    let run_id = run["result"]["structuredContent"]["run_id"].clone();
    assert_eq!(run["result"]["structuredContent"]["outcome"]["ok"], true, "{run}");
    let fetched = stateless(
        http.url(),
        "tools/call",
        json!({"name": "trace_automation", "arguments": {"run_id": run_id}}),
        with_extension(),
    )
    .await;
    assert_eq!(fetched["result"]["isError"], false, "{fetched}");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

/// 12. Resource equality: this server exposes no resources (the tools are the only surface),
/// so the item holds vacuously; check that nothing claims otherwise.
#[tokio::test]
async fn item_12_resource_equality_no_resources() {
    let http = HttpServer::start(&server()).await;
    let mut conn = http.connect(HttpStyle::Plain);
    let init = conn.initialize(true).await;
    assert!(init["result"]["capabilities"].get("resources").is_none(), "{init}");
    let listed = conn.request("resources/list", Value::Null).await;
    assert!(listed.get("error").is_some(), "resources/list answered: {listed}");
    let discovered = stateless(http.url(), "server/discover", json!({}), with_extension()).await;
    assert!(discovered["result"]["capabilities"].get("resources").is_none(), "{discovered}");
    assert!(discovered["result"]["_meta"][EXT].get("manifest_uri").is_none());
}

/// 13. Cold-start signposts: welcome text (initialize and server/discover), entry-point
/// description, stage descriptions naming their Language.
#[tokio::test]
async fn item_13_cold_start_signposts() {
    let http = HttpServer::start(&server()).await;
    let mut conn = http.connect(HttpStyle::Plain);
    let init = conn.initialize(true).await;
    let discovered = stateless(http.url(), "server/discover", json!({}), with_extension()).await;
    for instructions in [&init["result"]["instructions"], &discovered["result"]["instructions"]] {
        let text = instructions.as_str().unwrap_or_default();
        assert!(text.contains("Pilotage") && text.contains("pilotage_manifest"), "{text:?}");
    }
    let tools = conn.tools_list().await;
    let description = |name: &str| tool(&tools, name)["description"].as_str().unwrap().to_owned();
    assert!(description("pilotage_manifest").to_lowercase().contains("call this first"));
    assert!(description("pilotage_get_guide").to_lowercase().contains("learn stage"));
    assert!(description("pilotage_catalog").to_lowercase().contains("lookup stage"));
    for (name, stage) in
        [("validate_workflow", "validate"), ("run_workflow", "execute"), ("trace_run", "trace")]
    {
        let d = description(name).to_lowercase();
        assert!(d.contains(stage) && d.contains("workflow/v1"), "{name}: {d}");
    }
    let mut calc = calc().await;
    let calc_tools = calc.tools_list().await;
    for (name, stage) in [("validate_calc", "validate"), ("run_calc", "execute")] {
        let d = tool(&calc_tools, name)["description"].as_str().unwrap().to_lowercase();
        assert!(d.contains(stage) && d.contains("calc/v1"), "{name}: {d}");
    }
}

/// §1.3: a client that did not declare the extension sees the same core behaviour: the same
/// initialize result, tool list and results.
#[tokio::test]
async fn graceful_degradation() {
    let http = HttpServer::start(&server()).await;
    let mut aware = http.connect(HttpStyle::Plain);
    let mut plain = http.connect(HttpStyle::Plain);
    let a = aware.initialize(true).await;
    let p = plain.initialize(false).await;
    assert_eq!(a["result"], p["result"], "initialize must not depend on the client's extension declaration");
    assert_eq!(aware.tools_list().await, plain.tools_list().await);
    assert_eq!(
        aware.request("ping", Value::Null).await["result"],
        plain.request("ping", Value::Null).await["result"]
    );
    let program = json!({"steps": [{"id": "p", "kind": "call", "capability": "cap_read_user_profile", "with": {"user_id": "42"}}]});
    for (tool, args) in [
        ("pilotage_manifest", json!({})),
        ("pilotage_get_guide", json!({"language": "workflow/v1", "id": "core"})),
        ("pilotage_catalog", json!({"language": "workflow/v1", "verb": "list"})),
        ("validate_workflow", json!({"workflow": program})),
        ("world_fingerprint", json!({})),
    ] {
        let x = aware.call(tool, args.clone()).await;
        let y = plain.call(tool, args).await;
        assert_eq!(x.raw["result"], y.raw["result"], "{tool}");
    }
    let mut x = aware.call_ok("run_workflow", json!({"workflow": program, "trace_level": "summary"})).await;
    let mut y = plain.call_ok("run_workflow", json!({"workflow": program, "trace_level": "summary"})).await;
    for v in [&mut x, &mut y] {
        v["run_id"] = Value::Null;
        v["trace"]["run_id"] = Value::Null;
        for s in v["trace"]["steps"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("t_ms");
        }
    }
    assert_eq!(x, y);
    // The stateless path without the extension in the per-request capabilities also serves
    // the same tools.
    let without = stateless(http.url(), "tools/list", json!({}), json!({})).await;
    let with = stateless(http.url(), "tools/list", json!({}), with_extension()).await;
    assert_eq!(without["result"]["tools"], with["result"]["tools"]);
}
