//! The official conformance vectors, run in-process by the conformance runner
//! (`examples/conformance`, which reaches every server through `pilotage::host`) against every
//! example engine, over Streamable HTTP (in-process server; sessionful, answering SSE, and
//! stateless, MCP 2026-07-28, answering JSON) and over stdio (the example binaries as child
//! processes). Each run must have zero FAIL; over the union of engines, every server-target
//! vector must PASS somewhere, except an explicit, shrinking allow-list.
//!
//! `cargo test --test it conformance:: -- --nocapture` prints the per-vector tables.

use crate::{automation, bindings, calc, runner, sql, support, workflow};
use pilotage::testkit::TempStore;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::FutureExt;
use pilotage::host::Host;
use pilotage::transport::HttpOptions;
use runner::binding::{Binding, Observe};
use runner::client::{Client, Connector};
use runner::{Report, Verdict};
use support::{Conn, HttpServer, HttpStyle};

/// Server-target vectors no example engine reaches, each with the reason. It may only
/// shrink: an entry that some engine reaches fails the union test. Empty since automation/v1
/// (context_schema, promoted programs, execution "both", idempotency) joined workflow/v1,
/// sql/sqlite-3 and calc/v1.
const NOT_YET_REACHED: [(&str, &str); 0] = [];

fn binding(language: &str) -> Binding {
    bindings::for_language(language).unwrap_or_else(|| panic!("no binding for {language}"))
}

fn workflow_server() -> pilotage::Server {
    pilotage::Server::builder().name("conformance", "0").language(workflow::Workflow::new).build().unwrap()
}

fn sql_server() -> pilotage::Server {
    pilotage::Server::builder().name("conformance", "0").language(sql::Sql::factory(None)).build().unwrap()
}

/// automation/v1 keeps runs for an hour ("PT1H") in a durable run store.
fn automation_server(store: &TempStore) -> pilotage::Server {
    let runs = store.open();
    pilotage::Server::builder()
        .name("conformance", "0")
        .language(automation::Automation::new)
        .state(Arc::new(runs))
        .build()
        .unwrap()
}

/// A connector spawning the example binary `name` over stdio (built once by the support
/// layer), through the Host.
pub(crate) fn stdio(name: &'static str) -> Connector {
    stdio_with(name, Vec::new())
}

pub(crate) fn stdio_with(name: &'static str, args: Vec<String>) -> Connector {
    let program = support::example_binary(name).display().to_string();
    let raw_args = args.clone();
    Connector::new(
        format!("stdio {name}"),
        move |grant| Host::command(program.clone(), args.clone()).approver(grant).connect().boxed(),
        move || {
            let args: Vec<&str> = raw_args.iter().map(String::as_str).collect();
            Client::from(Conn::stdio(name, &args))
        },
    )
}

/// A connector to `server` over sessionful Streamable HTTP, through the Host.
pub(crate) async fn http(server: &pilotage::Server) -> Connector {
    let http = HttpServer::start(server).await;
    let url = http.url().to_owned();
    Connector::new(
        "http (sessionful)",
        move |grant| Host::http(url.clone()).approver(grant).connect().boxed(),
        move || Client::from(http.connect(HttpStyle::Full)),
    )
}

/// A connector to `server` served statelessly (MCP 2026-07-28, JSON answers), through the
/// Host speaking the stateless revision.
pub(crate) async fn stateless(server: &pilotage::Server) -> Connector {
    let http =
        HttpServer::start_with(server, HttpOptions { stateless: true, ..HttpOptions::default() }).await;
    let url = http.url().to_owned();
    Connector::new(
        "http (stateless)",
        move |grant| Host::http(url.clone()).stateless().approver(grant).connect().boxed(),
        move || Client::from(http.connect(HttpStyle::Plain)),
    )
    .stateless()
}

/// Print the table and fail on any FAIL; every execute request a vector sent passed the
/// Host's gate (each was held and granted by the runner's approver).
fn assert_no_fail(report: &Report, connector: &Connector) {
    assert!(connector.granted() > 0, "no execute request went through the Host's gate");
    println!("{}", report.table());
    let failed: Vec<String> = report
        .rows
        .iter()
        .filter_map(|r| match &r.verdict {
            Verdict::Fail(why) => Some(format!("FAIL {} {why}", r.id)),
            _ => None,
        })
        .collect();
    assert!(failed.is_empty(), "{} over {}:\n{}", report.language, report.transport, failed.join("\n"));
    // Every server-target vector was attempted, and every SKIP states a reason.
    let server_vectors = runner::vectors::all().iter().filter(|v| v.is_server()).count();
    assert!(report.rows.len() >= server_vectors, "{}", report.summary());
    for r in &report.rows {
        if let Verdict::Skip(why) = &r.verdict {
            assert!(!why.trim().is_empty(), "SKIP {} without a reason", r.id);
        }
    }
}

/// Run the vectors of `language` through `connector` and require zero FAIL.
async fn conform(connector: Connector, language: &str) {
    let report = runner::run(&connector, &binding(language), &connector.label.clone(), None).await;
    assert_no_fail(&report, &connector);
}

fn calc_server() -> pilotage::Server {
    pilotage::Server::builder().name("conformance", "0").language(|| calc::Calc).build().unwrap()
}

#[tokio::test]
async fn workflow_over_http() {
    conform(http(&workflow_server()).await, "workflow/v1").await;
}

#[tokio::test]
async fn workflow_over_stdio() {
    conform(stdio("workflow"), "workflow/v1").await;
}

#[tokio::test]
async fn sql_over_http() {
    conform(http(&sql_server()).await, "sql/sqlite-3").await;
}

#[tokio::test]
async fn sql_over_stdio() {
    conform(stdio("sql"), "sql/sqlite-3").await;
}

#[tokio::test]
async fn automation_over_http() {
    let store = TempStore::new("http");
    conform(http(&automation_server(&store)).await, "automation/v1").await;
}

/// A stateless deployment (MCP 2026-07-28) of automation/v1 (retention "PT1H", a durable
/// store; workflow/v1 and sql/sqlite-3 keep runs for the session, which a stateless deployment
/// may not declare, Part III §8.1). Its verified callers each have a world of their own, as a
/// real deployment's would: the runner's Host for each vector presents a bearer token of its
/// own ([`token_per_host`]), so no vector sees another's runs, catalog changes or injected
/// device faults (with one shared anonymous world, 4 vectors failed on exactly that).
#[tokio::test]
async fn automation_over_http_stateless() {
    let store = TempStore::new("stateless");
    let server = pilotage::Server::builder()
        .name("conformance", "0")
        .language(automation::Automation::new)
        .state(Arc::new(store.open()))
        .stateless(true)
        .authenticator(TokenIsCaller)
        .build()
        .unwrap();
    conform(token_per_host(&server).await, "automation/v1").await;
}

/// A test deployment's authenticator: a request's bearer token is its caller's id, and a
/// request without one is the caller `anonymous` (the raw carrier vectors send none).
struct TokenIsCaller;

impl pilotage::transport::auth::Authenticator for TokenIsCaller {
    fn authenticate(
        &self,
        parts: &axum::http::request::Parts,
    ) -> Result<pilotage::engine::Caller, pilotage::transport::auth::AuthRefusal> {
        let token = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        Ok(pilotage::engine::Caller::new(token.unwrap_or("anonymous")))
    }
}

/// [`stateless`], each Host presenting a bearer token (so being a caller) of its own.
async fn token_per_host(server: &pilotage::Server) -> Connector {
    let http =
        HttpServer::start_with(server, HttpOptions { stateless: true, ..HttpOptions::default() }).await;
    let url = http.url().to_owned();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    Connector::new(
        "http (stateless, a caller per Host)",
        move |grant| {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Host::http(url.clone()).stateless().bearer(format!("host-{n}")).approver(grant).connect().boxed()
        },
        move || Client::from(http.connect(HttpStyle::Plain)),
    )
    .stateless()
}

#[tokio::test]
async fn automation_over_stdio() {
    let store = TempStore::new("stdio");
    let args = vec!["--store".to_owned(), store.path().display().to_string()];
    conform(stdio_with("automation", args), "automation/v1").await;
}

/// Both Languages of the `combined` example (one manifest, server-level default capabilities
/// with per-Language overrides, shared access tools), each against its own binding.
#[tokio::test]
async fn combined_over_stdio() {
    for language in ["workflow/v1", "sql/sqlite-3"] {
        conform(stdio("combined"), language).await;
    }
}

#[tokio::test]
async fn calc_over_http() {
    conform(http(&calc_server()).await, "calc/v1").await;
}

/// calc/v1 as a stateless deployment (see `automation_over_http_stateless`).
#[tokio::test]
async fn calc_over_http_stateless() {
    let server = pilotage::Server::builder()
        .name("conformance", "0")
        .language(|| calc::Calc)
        .stateless(true)
        .anonymous_sessionless()
        .build()
        .unwrap();
    conform(stateless(&server).await, "calc/v1").await;
}

#[tokio::test]
async fn calc_over_stdio() {
    conform(stdio("calc"), "calc/v1").await;
}

/// `sql/postgres` over Streamable HTTP, on a throwaway schema of the test PostgreSQL, the
/// caller acting as the fixture's writer role.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_http_sse() {
    if !pilotage::state::suite::postgres_or_skip("conformance::postgres_over_http_sse") {
        return;
    }
    let f = crate::postgres_loop::Fixture::new("conf_http").await;
    let server = f.server(Some(&f.writer));
    conform(http(&server).await, "sql/postgres").await;
}

/// `sql/postgres` over stdio: the `postgres` example binary, as its README starts it.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_stdio() {
    if !pilotage::state::suite::postgres_or_skip("conformance::postgres_over_stdio") {
        return;
    }
    let f = crate::postgres_loop::Fixture::new("conf_stdio").await;
    let args: Vec<String> = [
        "--database-url",
        &pilotage::state::suite::test_postgres_url(),
        "--schema",
        &f.schema,
        "--default-role",
        &f.writer,
        "--admin-tools",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    conform(stdio_with("postgres", args), "sql/postgres").await;
}

/// Over the union of the example engines, every server-target vector passes on some engine,
/// except the explicit allow-list, which may only shrink.
#[tokio::test]
async fn every_server_vector_is_reached_by_some_engine() {
    let server = workflow_server();
    let sql = sql_server();
    let store = TempStore::new("union");
    let automation = automation_server(&store);
    let reports = vec![
        runner::run(&http(&automation).await, &binding("automation/v1"), "http", None).await,
        runner::run(&http(&server).await, &binding("workflow/v1"), "http", None).await,
        runner::run(&http(&sql).await, &binding("sql/sqlite-3"), "http", None).await,
        runner::run(&stdio("calc"), &binding("calc/v1"), "stdio", None).await,
    ];
    let mut skipped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for v in runner::vectors::all().iter().filter(|v| v.is_server()) {
        let mut reasons = Vec::new();
        let mut passed = false;
        for r in &reports {
            match r.verdict(&v.id) {
                Some(Verdict::Pass(_)) => passed = true,
                Some(Verdict::Skip(why)) => reasons.push(format!("{}: {why}", r.language)),
                Some(Verdict::Fail(why)) => panic!("{} FAILS on {}: {why}", v.id, r.language),
                None => panic!("{} was not run against {}", v.id, r.language),
            }
        }
        if !passed {
            skipped.insert(v.id.clone(), reasons);
        }
    }
    println!("Server-target vectors SKIP on every engine:");
    for (id, reasons) in &skipped {
        let allowed =
            NOT_YET_REACHED.iter().find(|(a, _)| a == id).map(|(_, why)| *why).unwrap_or("NOT ALLOWED");
        println!("  {id} [{allowed}]");
        for r in reasons {
            println!("      {r}");
        }
    }
    let unexpected: Vec<&String> =
        skipped.keys().filter(|id| !NOT_YET_REACHED.iter().any(|(a, _)| a == *id)).collect();
    assert!(unexpected.is_empty(), "server-target vectors no engine reaches: {unexpected:?}");
    let stale: Vec<&str> =
        NOT_YET_REACHED.iter().map(|(a, _)| *a).filter(|a| !skipped.contains_key(*a)).collect();
    assert!(stale.is_empty(), "allow-listed vectors that an engine now reaches (remove them): {stale:?}");
    for (id, _) in NOT_YET_REACHED {
        assert!(
            runner::vectors::get(id).is_some_and(|v| v.is_server()),
            "{id} is not a server-target vector"
        );
    }
}

/// The runner is not a rubber stamp: a binding that misstates the engine's behaviour FAILs
/// the vectors it misstates.
#[tokio::test]
async fn a_wrong_binding_fails() {
    let server = workflow_server();
    let connector = http(&server).await;
    let mut wrong = binding("workflow/v1");
    if let Ok(b) = &mut wrong.branching {
        b.took = "other";
    }
    wrong.cleanly_failing = wrong.mid_run_failing.clone();
    if let Ok(i) = &mut wrong.invisible {
        i.id = "cap_list_users";
    }
    wrong.valid.program = wrong.invalid.clone();
    wrong.observe = Observe::Stateless("a wrong claim");
    let report = runner::run(&connector, &wrong, "http", None).await;
    println!("{}", report.table());
    for id in [
        "PIL-TRACE-BRANCH-DECISION-G",
        "PIL-EXECUTE-ENGINE-ERROR-B",
        "PIL-AUTHZ-INVISIBLE-ENTRY-B",
        "PIL-VALIDATE-GOOD-G",
        "PIL-EXECUTE-SUCCESS-G",
        "PIL-TRACE-FETCH-RETAINED-G",
    ] {
        assert!(
            matches!(report.verdict(id), Some(Verdict::Fail(_))),
            "{id} should FAIL: {:?}",
            report.verdict(id)
        );
    }
    // A stateless claim about a stateful engine is not accepted as proof of no side effects.
    for id in ["PIL-VALIDATE-SIDE-EFFECT-FREE-G", "PIL-EXECUTE-GUARD-B", "PIL-DISCOVER-MANIFEST-G"] {
        assert!(
            matches!(report.verdict(id), Some(Verdict::Fail(_))),
            "{id} should FAIL: {:?}",
            report.verdict(id)
        );
    }
}
