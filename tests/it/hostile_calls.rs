//! Hostile calls through a real transport: many verified callers cannot make the server hold
//! unbounded worlds (sessionless callers' worlds are capped, least recently used first),
//! a program with thousands of errors gets a capped diagnostics list, and a reserved member of
//! the wrong JSON type is refused on its channel instead of being ignored.

use crate::{support, workflow};

use pilotage::engine::Limits;
use pilotage::transport::HttpOptions;
use serde_json::{json, Value};
use support::scenario::{profile_program, ARGUMENT, EXECUTE, VALIDATE};
use support::{Conn, HttpServer};

/// One stateless `tools/call` on behalf of the verified caller `who` (a token for its `sub`).
async fn call_as(url: &str, who: &str, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    support::stateless_request(url, "tools/call", params, json!({}), Some(&support::auth::bearer(who))).await
}

async fn fingerprint(url: &str, who: &str) -> Value {
    call_as(url, who, "world_fingerprint", json!({})).await["result"]["structuredContent"].clone()
}

async fn stateless_server(max_principals: usize) -> HttpServer {
    let server = pilotage::Server::builder()
        .name("test", "0")
        .language(workflow::Workflow::new)
        .principals(max_principals, std::time::Duration::from_secs(600))
        .authenticator(support::auth::authenticator())
        .build()
        .unwrap();
    HttpServer::start_with(&server, HttpOptions { stateless: true, ..HttpOptions::default() }).await
}

#[tokio::test]
async fn many_verified_callers_cannot_grow_the_worlds_without_bound() {
    let http = stateless_server(3).await;
    let seed = fingerprint(http.url(), "a").await;
    let added = call_as(http.url(), "a", "catalog_add_entry", json!({"id": "cap_mine"})).await;
    assert_eq!(added["result"]["isError"], false, "{added}");
    let changed = fingerprint(http.url(), "a").await;
    assert_ne!(changed, seed, "a's world changed");
    // Three other principals arrive: the table holds three, and a was the least recently used.
    for who in ["b", "c", "d"] {
        assert_eq!(fingerprint(http.url(), who).await, seed, "a new principal starts from the seed");
    }
    assert_eq!(fingerprint(http.url(), "a").await, seed, "a's world was forgotten to make room");

    // Within the cap, a principal's world is kept.
    let http = stateless_server(8).await;
    call_as(http.url(), "a", "catalog_add_entry", json!({"id": "cap_mine"})).await;
    let changed = fingerprint(http.url(), "a").await;
    for who in ["b", "c", "d"] {
        fingerprint(http.url(), who).await;
    }
    assert_eq!(fingerprint(http.url(), "a").await, changed);
}

/// `n` steps that each call an unknown capability: one error each.
fn many_errors(n: usize) -> Value {
    let steps: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("s{i}"), "kind": "call", "capability": format!("cap_nope_{i}"), "with": {}}))
        .collect();
    json!({"steps": steps})
}

#[tokio::test]
async fn a_program_with_thousands_of_errors_gets_a_capped_list() {
    let limits = Limits { max_diagnostics: 50, ..Limits::default() };
    let server = pilotage::Server::builder()
        .name("test", "0")
        .language(workflow::Workflow::new)
        .limits(limits)
        .build()
        .unwrap();
    let mut conn = Conn::duplex(&server);
    conn.initialize(true).await;
    let verdict = conn.call_ok(VALIDATE, json!({ARGUMENT: many_errors(2_000)})).await;
    let diagnostics = verdict["diagnostics"].as_array().unwrap();
    assert_eq!(verdict["valid"], false);
    assert_eq!(diagnostics.len(), 51, "the cap, then one diagnostic counting the rest");
    let last = &diagnostics[50];
    assert_eq!(last["code"], "constraint");
    assert_eq!(last["severity"], "error");
    let left_out = last["message"].as_str().unwrap();
    assert!(
        left_out.ends_with("left out: this server reports at most the first 50 per response"),
        "{left_out}"
    );
    // Below the cap nothing is left out.
    let verdict = conn.call_ok(VALIDATE, json!({ARGUMENT: many_errors(10)})).await;
    assert!(
        verdict["diagnostics"].as_array().unwrap().iter().all(|d| d["code"] != "constraint"),
        "{verdict}"
    );
}

#[tokio::test]
async fn reserved_members_of_the_wrong_type_are_refused() {
    let server =
        pilotage::Server::builder().name("test", "0").language(workflow::Workflow::new).build().unwrap();
    let mut conn = Conn::duplex(&server);
    conn.initialize(true).await;
    let program = profile_program("cap_read_user_profile");
    // `mode` does not apply to an immediate Language, whatever its type.
    for mode in [json!(5), json!(null), json!("immediate"), json!({"x": 1}), json!([])] {
        let refused =
            conn.call(EXECUTE, json!({ARGUMENT: program, "input": {"userId": "42"}, "mode": mode})).await;
        assert_eq!(refused.raw["result"]["isError"], true, "mode {mode}: {}", refused.raw);
        assert_eq!(refused.structured["error"]["kind"], "invalid_request", "mode {mode}");
    }
    // Members the schema types are refused on the carrier channel.
    for (member, value) in [("store", json!("yes")), ("trace_level", json!(3)), ("input", json!([1]))] {
        let refused = conn.call_carrier_error(EXECUTE, json!({ARGUMENT: program, member: value})).await;
        assert_eq!(refused["code"], -32602, "{member}: {refused}");
    }
    // A `program_ref` of the wrong type on a Language without promoted programs.
    let refused = conn.call(EXECUTE, json!({"program_ref": 7})).await;
    assert_eq!(refused.structured["error"]["kind"], "invalid_request", "{}", refused.raw);
}

/// The workflow engine, except that validating `{"sleep_ms": n}` blocks for `n` ms and ignores
/// its signal: the worst-behaved engine a flood can meet.
struct Sleepy(workflow::Workflow);

impl pilotage::engine::Engine for Sleepy {
    fn language_spec(&self) -> &'static pilotage::engine::LanguageSpec {
        pilotage::engine::Engine::language_spec(&self.0)
    }
    fn catalog_snapshot(
        &self,
        caller: &pilotage::engine::Caller,
    ) -> Option<std::sync::Arc<pilotage::engine::CatalogSnapshot>> {
        pilotage::engine::Engine::catalog_snapshot(&self.0, caller)
    }
    fn validate_program(
        &self,
        request: &pilotage::engine::ValidateRequest,
    ) -> pilotage::engine::ValidationCore {
        if let Some(ms) = request.program["sleep_ms"].as_u64() {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        pilotage::engine::Engine::validate_program(&self.0, request)
    }
    fn execute_program<'a>(
        &'a self,
        request: &'a pilotage::engine::ExecuteRequest,
        recorder: pilotage::engine::Recorder,
    ) -> futures::future::BoxFuture<'a, pilotage::engine::FinishCore> {
        pilotage::engine::Engine::execute_program(&self.0, request, recorder)
    }
    fn call_plain_tool(
        &self,
        name: &str,
        arguments: &Value,
        caller: &pilotage::engine::Caller,
    ) -> Option<Result<Value, pilotage::engine::PlainToolError>> {
        pilotage::engine::Engine::call_plain_tool(&self.0, name, arguments, caller)
    }
}

#[tokio::test]
async fn a_flood_past_the_engine_slots_is_refused_and_the_transport_keeps_answering() {
    let limits = Limits { validate_time: std::time::Duration::from_millis(400), ..Limits::default() };
    let server = pilotage::Server::builder()
        .name("test", "0")
        .engine(|| {
            std::sync::Arc::new(Sleepy(workflow::Workflow::new()))
                as std::sync::Arc<dyn pilotage::engine::Engine>
        })
        .limits(limits)
        .max_engine_calls(1)
        .build()
        .unwrap();
    let mut hog = Conn::duplex(&server);
    hog.initialize(true).await;
    let mut other = Conn::duplex(&server);
    other.initialize(true).await;
    let slow = tokio::spawn(async move { hog.call(VALIDATE, json!({ARGUMENT: {"sleep_ms": 1_500}})).await });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    // The only slot is held by a validator that ignores its deadline: the next call waits for
    // a slot until its own deadline, then is refused.
    let started = std::time::Instant::now();
    let refused = other.call(VALIDATE, json!({ARGUMENT: {"steps": []}})).await;
    assert_eq!(refused.structured["error"]["kind"], "bounds_exceeded", "{}", refused.raw);
    let message = refused.structured["error"]["message"].as_str().unwrap();
    assert!(message.contains("every engine slot of this server stayed busy"), "{message}");
    assert!(started.elapsed() < std::time::Duration::from_millis(1_000), "{:?}", started.elapsed());
    // The transport answers meanwhile: ping is not an engine call.
    let pinged = std::time::Instant::now();
    other.request("ping", json!({})).await;
    assert!(pinged.elapsed() < std::time::Duration::from_millis(200), "{:?}", pinged.elapsed());
    // The hog itself was answered at its own deadline, not when its validator returned.
    let timed_out = slow.await.unwrap();
    assert_eq!(timed_out.structured["error"]["kind"], "bounds_exceeded", "{}", timed_out.raw);
    // Once the validator returns, the slot is free again.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let fine = other.call_ok(VALIDATE, json!({ARGUMENT: {"steps": []}})).await;
    assert!(fine.get("valid").is_some(), "{fine}");
}
