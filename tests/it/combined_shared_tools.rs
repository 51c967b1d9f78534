//! Shared loop tools (Part III §4.3) through the real endpoint (Streamable HTTP, in-process):
//! `sql/sqlite-3` and a variant Language, `sql/sqlite-3-mirror` (the same grammar over a second,
//! independent database, program argument `mirror_query`), share one validate tool
//! (`validate_sql`) and one execute tool (`run_sql`). The variant is a hand-written
//! `pilotage::engine::Engine` delegating to the sql engine with its own declaration.

use crate::{sql, support};

use std::sync::{Arc, OnceLock};

use pilotage::engine::CatalogSnapshot;
use pilotage::engine::{Caller, Engine, LanguageSpec, LoopTools};
use pilotage::engine::{ExecuteRequest, FinishCore, Recorder};
use pilotage::engine::{ValidateRequest, ValidationCore};
use pilotage::model::capabilities::{Capability, CapabilityDeclaration, SubFeature};
use pilotage::model::declaration::Retention;
use pilotage::model::guide::GuideSource;
use pilotage::model::schema::any_value;
use serde_json::{json, Value};
use support::{Conn, HttpServer, HttpStyle};

/// The variant: sql's behaviour under another name, program argument and guide ids.
struct Mirror(sql::Sql);

fn mirror_spec() -> &'static LanguageSpec {
    static SPEC: OnceLock<LanguageSpec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let base = sql::Sql::demo().language_spec().clone();
        let guides = base
            .guides
            .iter()
            .map(|g| GuideSource {
                id: Box::leak(g.id.replacen("sql-", "mirror-", 1).into_boxed_str()),
                ..g.clone()
            })
            .collect();
        LanguageSpec {
            name: "sql/sqlite-3-mirror",
            title: "SQL over a second SQLite database",
            program_argument: "mirror_query",
            capabilities: CapabilityDeclaration::new()
                .with(Capability::Guides)
                .with(Capability::Validate)
                .with(Capability::Plan)
                .with(Capability::Execute)
                .with_sub(SubFeature::Search),
            retention: Some(Retention::None),
            tools: LoopTools {
                validate: base.tools.validate.clone(),
                execute: base.tools.execute.clone(),
                trace: None,
            },
            guides,
            plain_tools: Vec::new(),
            ..base
        }
    })
}

impl Engine for Mirror {
    fn language_spec(&self) -> &'static LanguageSpec {
        mirror_spec()
    }
    fn catalog_snapshot(&self, caller: &Caller) -> Option<Arc<CatalogSnapshot>> {
        // The trait method, not `Sql`'s own (crate-visible for its unit tests) `catalog_snapshot`.
        Engine::catalog_snapshot(&self.0, caller)
    }
    fn validate_program(&self, request: &ValidateRequest) -> ValidationCore {
        self.0.validate_program(request)
    }
    fn execute_program<'a>(
        &'a self,
        request: &'a ExecuteRequest,
        recorder: Recorder,
    ) -> futures::future::BoxFuture<'a, FinishCore> {
        self.0.execute_program(request, recorder)
    }
    fn call_plain_tool(
        &self,
        _name: &str,
        _arguments: &Value,
        _caller: &Caller,
    ) -> Option<Result<Value, pilotage::engine::PlainToolError>> {
        None
    }
}

fn server() -> pilotage::Server {
    pilotage::Server::builder()
        .name("shared-tools", "0")
        .language(sql::Sql::demo)
        .language(|| Mirror(sql::Sql::demo()))
        .build()
        .unwrap()
}

async fn session() -> (HttpServer, Conn) {
    let http = HttpServer::start(&server()).await;
    let mut conn = http.connect(HttpStyle::Full);
    conn.initialize(true).await;
    (http, conn)
}

fn error_kind(call: &support::ToolCall) -> &str {
    assert!(call.is_error, "expected a request error: {}", call.raw);
    call.structured["error"]["kind"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn shared_tools_declare_languages_and_require_no_program() {
    let (_http, mut conn) = session().await;
    let tools = conn.tools_list().await;
    let tool = |name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool {name}")).clone()
    };
    let declaration = json!({"languages": [
        {"argument": "query", "language": "sql/sqlite-3"},
        {"argument": "mirror_query", "language": "sql/sqlite-3-mirror"}
    ]});
    for name in ["validate_sql", "run_sql"] {
        let t = tool(name);
        assert_eq!(t["_meta"][support::EXT], declaration, "{name}");
        let input = &t["inputSchema"];
        assert_eq!(input["properties"]["query"], any_value(), "{name}");
        assert_eq!(input["properties"]["mirror_query"], any_value(), "{name}");
        let required: Vec<&Value> =
            input["required"].as_array().map(|r| r.iter().collect()).unwrap_or_default();
        assert!(
            !required.contains(&&json!("query")) && !required.contains(&&json!("mirror_query")),
            "{name}: a shared tool requires none of its program arguments: {input}"
        );
    }
    assert_eq!(tools.iter().filter(|t| t["name"] == "validate_sql").count(), 1);
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    let loops: Vec<&Value> = manifest["languages"].as_array().unwrap().iter().map(|l| &l["loop"]).collect();
    assert_eq!(
        loops,
        [
            &json!({"validate": "validate_sql", "execute": "run_sql", "trace": "trace_sql"}),
            &json!({"validate": "validate_sql", "execute": "run_sql"})
        ]
    );
}

#[tokio::test]
async fn both_or_neither_program_argument_is_invalid_request() {
    let (_http, mut conn) = session().await;
    for tool in ["validate_sql", "run_sql"] {
        let both = conn.call(tool, json!({"query": "SELECT 1", "mirror_query": "SELECT 1"})).await;
        assert_eq!(error_kind(&both), "invalid_request", "{tool}: both");
        let neither = conn.call(tool, json!({})).await;
        assert_eq!(error_kind(&neither), "invalid_request", "{tool}: neither");
        let other_members_only = conn.call(tool, json!({"context": {}})).await;
        assert_eq!(error_kind(&other_members_only), "invalid_request", "{tool}: no program argument");
    }
}

#[tokio::test]
async fn each_program_argument_selects_its_language() {
    let (_http, mut conn) = session().await;
    let sql_cv = conn.call_ok("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "list"})).await
        ["catalog_version"]
        .clone();

    let v = conn.call_ok("validate_sql", json!({"query": "SELECT * FROM custmers"})).await;
    assert_eq!(v["diagnostics"][0]["code"], "unknown_table");
    let v = conn.call_ok("validate_sql", json!({"mirror_query": "DELETE FROM orders"})).await;
    assert_eq!(v["valid"], json!(true));
    assert_eq!(v["plan"]["max_risk"], "destructive");

    // Each Language runs on its own database: the mirror's delete is not seen by sql.
    let mirror = conn.call_ok("run_sql", json!({"mirror_query": "DELETE FROM orders"})).await;
    assert_eq!(mirror["output"], json!({"changes": 4}));
    assert_eq!(mirror["trace"]["steps"][1]["calls"], "orders");
    let counted = conn
        .call_ok(
            "run_sql",
            json!({"query": "SELECT count(*) FROM orders", "expected_catalog_version": sql_cv}),
        )
        .await;
    assert_eq!(counted["output"]["rows"], json!([[4]]));
    let mirrored = conn.call_ok("run_sql", json!({"mirror_query": "SELECT count(*) FROM orders"})).await;
    assert_eq!(mirrored["output"]["rows"], json!([[0]]));

    // Selection happens before the per-Language checks: the mirror retains no runs.
    let stored = conn.call("run_sql", json!({"mirror_query": "SELECT 1", "store": true})).await;
    assert_eq!(error_kind(&stored), "unsupported");
    let kept = conn.call_ok("run_sql", json!({"query": "SELECT 1", "store": true})).await;
    let fetched = conn.call_ok("trace_sql", json!({"run_id": kept["run_id"]})).await;
    assert_eq!(fetched["output"], json!({"columns": ["1"], "rows": [[1]]}));
    let guides = conn.call_ok("pilotage_get_guide", json!({"language": "sql/sqlite-3-mirror"})).await;
    let ids: Vec<&str> =
        guides["guides"].as_array().unwrap().iter().map(|g| g["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["mirror-closed-sets", "mirror-core", "mirror-examples"]);
}
