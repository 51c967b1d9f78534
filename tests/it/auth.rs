//! Verified callers on the HTTP edge, through Streamable HTTP on 127.0.0.1: refusals carry the
//! exact RFC 6750 challenge pointing at the RFC 9728 metadata, made-up credentials make no
//! world, a verified caller's claims reach the engine, a session cannot be borrowed, a run of
//! one caller is invisible to another, and without an authenticator sessionless requests are
//! their own worlds unless the builder makes them one shared anonymous caller.

use crate::{automation, kit, support, workflow};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pilotage::engine::{Caller, CatalogSnapshot, Engine};
use pilotage::transport::auth::ProtectedResource;
use pilotage::transport::HttpOptions;
use serde_json::{json, Value};
use support::auth::{bearer, claims, post, sign, token, Answer, AUDIENCE, ISSUER, SECRET};
use support::HttpServer;

const RESOURCE: &str = "https://mcp.test/mcp";
const METADATA: &str = "https://mcp.test/.well-known/oauth-protected-resource/mcp";
const HIDDEN: &str = "cap_delete_user";

/// The workflow engine, except that `cap_delete_user` is in the catalog only of a caller with
/// the claim `role: admin`.
struct Scoped(workflow::Workflow);

impl Engine for Scoped {
    fn language_spec(&self) -> &'static pilotage::engine::LanguageSpec {
        Engine::language_spec(&self.0)
    }
    fn catalog_snapshot(&self, caller: &Caller) -> Option<Arc<CatalogSnapshot>> {
        let all = Engine::catalog_snapshot(&self.0, caller)?;
        if caller.claim("role") == Some(&json!("admin")) {
            return Some(all);
        }
        let visible = all.entries().iter().filter(|e| e.id != HIDDEN).cloned().collect();
        Some(Arc::new(CatalogSnapshot::new(visible)))
    }
    fn validate_program(
        &self,
        request: &pilotage::engine::ValidateRequest,
    ) -> pilotage::engine::ValidationCore {
        Engine::validate_program(&self.0, request)
    }
    fn execute_program<'a>(
        &'a self,
        request: &'a pilotage::engine::ExecuteRequest,
        recorder: pilotage::engine::Recorder,
    ) -> futures::future::BoxFuture<'a, pilotage::engine::FinishCore> {
        Engine::execute_program(&self.0, request, recorder)
    }
    fn call_plain_tool(
        &self,
        name: &str,
        arguments: &Value,
        caller: &Caller,
    ) -> Option<Result<Value, pilotage::engine::PlainToolError>> {
        Engine::call_plain_tool(&self.0, name, arguments, caller)
    }
}

/// A verifying server of the scoped workflow engine; `made` counts the engines made.
fn server(made: Arc<AtomicUsize>) -> pilotage::Server {
    pilotage::Server::builder()
        .name("auth", "0")
        .engine(move || {
            made.fetch_add(1, Ordering::SeqCst);
            Arc::new(Scoped(workflow::Workflow::new())) as Arc<dyn Engine>
        })
        .authenticator(support::auth::authenticator())
        .protected_resource(ProtectedResource::new(RESOURCE).authorization_server(ISSUER).scope("mcp"))
        .build()
        .unwrap()
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": support::PROTOCOL, "capabilities": {}, "clientInfo": {"name": "auth", "version": "0"}}})
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// An MCP session opened with `token`.
struct Session {
    url: String,
    token: String,
    id: String,
}

impl Session {
    async fn open(url: &str, token: &str) -> Session {
        let auth = format!("Bearer {token}");
        let opened = post(url, &[("authorization", &auth)], &initialize(1)).await;
        assert_eq!(opened.status, 200, "{}", opened.body);
        let id = opened.session.expect("a session id");
        let session = Session { url: url.to_owned(), token: token.to_owned(), id };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.post_as(&session.token.clone(), &initialized).await.status, 202);
        session
    }

    async fn post_as(&self, token: &str, body: &Value) -> Answer {
        let auth = format!("Bearer {token}");
        let headers = [
            ("authorization", auth.as_str()),
            ("mcp-session-id", &self.id),
            ("mcp-protocol-version", support::PROTOCOL),
        ];
        post(&self.url, &headers, body).await
    }

    async fn call(&self, name: &str, arguments: Value) -> Answer {
        self.post_as(&self.token.clone(), &call(name, arguments)).await
    }
}

#[tokio::test]
async fn refused_credentials_get_the_exact_challenge_and_a_valid_token_is_served() {
    let http = HttpServer::start(&server(Arc::default())).await;
    let other_secret = "another-secret-of-thirty-two-bytes-or-more";
    let cases = [
        ("malformed", "Bearer not-a-jwt".to_owned(), "the token is not a well-formed JWT"),
        (
            "bad signature",
            format!("Bearer {}", sign(&claims("alice", json!({})), other_secret)),
            "the token's signature does not verify",
        ),
        (
            "expired",
            format!("Bearer {}", sign(&claims("alice", json!({"exp": support::auth::now() - 3600})), SECRET)),
            "the token has expired",
        ),
        (
            "not yet valid",
            format!("Bearer {}", sign(&claims("alice", json!({"nbf": support::auth::now() + 3600})), SECRET)),
            "the token is not valid yet (nbf)",
        ),
        (
            "wrong issuer",
            format!("Bearer {}", sign(&claims("alice", json!({"iss": "https://evil.test"})), SECRET)),
            "the token's issuer is not https://issuer.test",
        ),
        (
            "wrong audience",
            format!("Bearer {}", sign(&claims("alice", json!({"aud": "someone-else"})), SECRET)),
            "the token's audience does not include pilotage-tests",
        ),
        (
            "no sub",
            format!(
                "Bearer {}",
                sign(&json!({"iss": ISSUER, "aud": AUDIENCE, "exp": support::auth::now() + 60}), SECRET)
            ),
            "the token has no sub claim naming its caller",
        ),
    ];
    for (case, authorization, description) in cases {
        let refused = post(http.url(), &[("authorization", &authorization)], &initialize(1)).await;
        assert_eq!(refused.status, 401, "{case}");
        assert_eq!(
            refused.www_authenticate.as_deref(),
            Some(format!("Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\", error_description=\"{description}\"").as_str()),
            "{case}"
        );
        assert_eq!(refused.session, None, "{case}");
        assert_eq!(
            refused.body,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": format!("Unauthorized: {description}")}}),
            "{case}"
        );
    }
    for (case, headers) in
        [("no credential", vec![]), ("another scheme", vec![("authorization", "Basic YWxpY2U6eA==")])]
    {
        let refused = post(http.url(), &headers, &initialize(1)).await;
        assert_eq!(refused.status, 401, "{case}");
        assert_eq!(
            refused.www_authenticate.as_deref(),
            Some(format!("Bearer resource_metadata=\"{METADATA}\"").as_str()),
            "{case}"
        );
    }
    let served = post(http.url(), &[("authorization", &bearer("alice"))], &initialize(7)).await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(served.www_authenticate, None);
    assert_eq!(served.body["id"], 7);
    assert_eq!(served.body["result"]["protocolVersion"], support::PROTOCOL);
}

/// Aborts the serving task on drop.
struct Serving(tokio::task::JoinHandle<std::io::Result<()>>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[tokio::test]
async fn the_protected_resource_metadata_is_served_at_both_well_known_paths() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = server(Arc::default());
    let _serving = Serving(tokio::spawn(async move {
        server.serve_listener(listener, HttpOptions::default(), std::future::pending()).await
    }));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let got = tokio::time::timeout(support::TIMEOUT, client.get(format!("http://{addr}{path}")).send())
            .await
            .expect("in time")
            .expect("GET");
        assert_eq!(got.status(), 200, "{path}");
        assert_eq!(got.headers()["content-type"], "application/json", "{path}");
        let document: Value = got.json().await.unwrap();
        assert_eq!(
            document,
            json!({
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp"],
            }),
            "{path}"
        );
    }
    let refused = post(&format!("http://{addr}/mcp"), &[], &initialize(1)).await;
    assert_eq!(
        refused.www_authenticate.as_deref(),
        Some(format!("Bearer resource_metadata=\"{METADATA}\"").as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_made_up_credentials_make_no_world() {
    let made = Arc::new(AtomicUsize::new(0));
    let http = HttpServer::start(&server(made.clone())).await;
    let before = made.load(Ordering::SeqCst);
    let started = Instant::now();
    let url = http.url().to_owned();
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let url = url.clone();
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                for i in (w..5_000).step_by(8) {
                    let made_up = match i % 4 {
                        0 => format!("Bearer user-{i}"),
                        1 => format!("Bearer {}.{}.{}", i, i * 7, i * 13),
                        2 => format!(
                            "Bearer {}",
                            sign(&claims(&format!("u{i}"), json!({})), "a-guessed-secret-a-guessed-secret!")
                        ),
                        _ => format!("Basic {i}"),
                    };
                    let body = call("world_fingerprint", json!({}));
                    let headers =
                        [("authorization", made_up.as_str()), ("mcp-protocol-version", support::STATELESS)];
                    statuses.push(post(&url, &headers, &body).await.status);
                }
                statuses
            })
        })
        .collect();
    let mut refused = 0;
    for worker in workers {
        let statuses =
            tokio::time::timeout(Duration::from_secs(120), worker).await.expect("in time").unwrap();
        assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
        refused += statuses.len();
    }
    assert_eq!(refused, 5_000);
    assert_eq!(made.load(Ordering::SeqCst), before, "no engine, hence no world, was made");
    assert!(started.elapsed() < Duration::from_secs(120), "{:?}", started.elapsed());
}

async fn fingerprint(url: &str, authorization: Option<&str>) -> Value {
    let params = json!({"name": "world_fingerprint", "arguments": {}});
    support::stateless_request(url, "tools/call", params, json!({}), authorization).await["result"]
        ["structuredContent"]
        .clone()
}

async fn add_entry(url: &str, authorization: Option<&str>) {
    let params = json!({"name": "catalog_add_entry", "arguments": {"id": "cap_mine"}});
    let added = support::stateless_request(url, "tools/call", params, json!({}), authorization).await;
    assert_eq!(added["result"]["isError"], false, "{added}");
}

#[tokio::test]
async fn sessionless_requests_share_the_anonymous_world_only_when_the_builder_says_so() {
    let shared = pilotage::Server::builder()
        .language(workflow::Workflow::new)
        .anonymous_sessionless()
        .build()
        .unwrap();
    let http = HttpServer::start(&shared).await;
    let seed = fingerprint(http.url(), None).await;
    add_entry(http.url(), None).await;
    assert_ne!(
        fingerprint(http.url(), None).await,
        seed,
        "the second anonymous request sees the first's change"
    );

    let own = pilotage::Server::builder().language(workflow::Workflow::new).build().unwrap();
    let http = HttpServer::start(&own).await;
    add_entry(http.url(), None).await;
    assert_eq!(fingerprint(http.url(), None).await, seed, "each sessionless request is a world of its own");
    // A made-up Authorization value does not name a world either.
    add_entry(http.url(), Some("Bearer alice")).await;
    assert_eq!(fingerprint(http.url(), Some("Bearer alice")).await, seed);

    // Verified sessionless callers each keep a world of their own.
    let http = HttpServer::start(&server(Arc::default())).await;
    add_entry(http.url(), Some(&bearer("alice"))).await;
    let alices = fingerprint(http.url(), Some(&bearer("alice"))).await;
    assert_ne!(alices, seed);
    assert_eq!(fingerprint(http.url(), Some(&bearer("bob"))).await, seed);
}

#[tokio::test]
async fn another_callers_run_is_indistinguishable_from_a_run_that_never_existed() {
    let http = HttpServer::start(&server(Arc::default())).await;
    let alice = Session::open(http.url(), &token("alice")).await;
    let program = support::scenario::profile_program("cap_read_user_profile");
    let ran = alice
        .call("run_workflow", json!({"workflow": program, "input": {"userId": "42"}, "store": true}))
        .await;
    let run_id = ran.body["result"]["structuredContent"]["run_id"].as_str().expect("a run id").to_owned();
    let mine = alice.call("trace_run", json!({"run_id": run_id})).await;
    assert_eq!(mine.body["result"]["isError"], false, "{}", mine.body);
    let bob = Session::open(http.url(), &token("bob")).await;
    let foreign = bob.call("trace_run", json!({"run_id": run_id})).await;
    let never = bob.call("trace_run", json!({"run_id": "run_0000000000000000"})).await;
    assert_eq!(foreign.body["result"]["isError"], true, "{}", foreign.body);
    assert_eq!(foreign.body.to_string(), never.body.to_string());
}

#[tokio::test]
async fn a_session_belongs_to_the_caller_of_its_initialize() {
    let http = HttpServer::start(&server(Arc::default())).await;
    let alice = Session::open(http.url(), &token("alice")).await;
    let borrowed = alice.post_as(&token("bob"), &call("world_fingerprint", json!({}))).await;
    assert_eq!(borrowed.status, 403);
    assert_eq!(
        borrowed.body,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "Forbidden: this MCP session belongs to another caller"}})
    );
    // A fresh token of alice's (other claims, same sub) is still alice.
    let again = alice
        .post_as(
            &sign(&claims("alice", json!({"role": "viewer"})), SECRET),
            &call("world_fingerprint", json!({})),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["result"]["isError"], false, "{}", again.body);
}

async fn catalog_ids(session: &Session) -> Vec<String> {
    let listed = session.call("pilotage_catalog", json!({"language": "workflow/v1", "verb": "list"})).await;
    let items = listed.body["result"]["structuredContent"]["items"].as_array().cloned().unwrap_or_default();
    items.iter().filter_map(|e| e["id"].as_str().map(str::to_owned)).collect()
}

#[tokio::test]
async fn a_verified_callers_claims_reach_the_engine() {
    let http = HttpServer::start(&server(Arc::default())).await;
    let admin = Session::open(http.url(), &sign(&claims("root", json!({"role": "admin"})), SECRET)).await;
    let user = Session::open(http.url(), &token("alice")).await;
    assert!(catalog_ids(&admin).await.contains(&HIDDEN.to_owned()));
    let seen = catalog_ids(&user).await;
    assert!(seen.contains(&"cap_read_user_profile".to_owned()), "{seen:?}");
    assert!(!seen.contains(&HIDDEN.to_owned()), "{seen:?}");
    // Sessionless requests carry their claims too.
    let params = json!({"name": "pilotage_catalog", "arguments": {"language": "workflow/v1", "verb": "get", "id": HIDDEN}});
    let admin_token = format!("Bearer {}", sign(&claims("root2", json!({"role": "admin"})), SECRET));
    let got =
        support::stateless_request(http.url(), "tools/call", params.clone(), json!({}), Some(&admin_token))
            .await;
    assert_eq!(got["result"]["isError"], false, "{got}");
    let hidden =
        support::stateless_request(http.url(), "tools/call", params, json!({}), Some(&bearer("alice2")))
            .await;
    assert_eq!(hidden["result"]["isError"], true, "{hidden}");
}

#[test]
fn a_stateless_build_needs_verified_callers_or_an_explicit_anonymous_one() {
    let store = kit::TempStore::new("auth-build");
    let builder = || {
        let runs = pilotage::state::SqliteState::open(store.path()).unwrap();
        pilotage::Server::builder()
            .language(automation::Automation::new)
            .state(Arc::new(runs))
            .stateless(true)
    };
    let refused = builder().build().err().expect("refused");
    assert_eq!(
        refused.problems,
        ["a stateless deployment has no MCP session to tell callers apart: verify each request's caller with ServerBuilder::authenticator, or call ServerBuilder::anonymous_sessionless() to serve every sessionless request as one shared anonymous caller who sees every other's runs"]
    );
    assert!(builder().anonymous_sessionless().build().is_ok());
    assert!(builder().authenticator(support::auth::authenticator()).build().is_ok());
}

/// A token's `kid` is the caller's to fill: a refusal names at most 64 characters of it, and
/// no challenge carries more than 200 characters of description (before: a 200 KB `kid`, a
/// 200 KB `WWW-Authenticate`).
#[tokio::test]
async fn a_huge_kid_is_not_reflected_whole() {
    // The JWKS of one HMAC key, `hs-1`: base64url of 0123456789abcdef0123456789abcdef.
    let jwks =
        r#"{"keys": [{"kty": "oct", "kid": "hs-1", "k": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}]}"#;
    let authenticator = pilotage::transport::jwt::JwtAuthenticator::from_jwks(jwks)
        .unwrap()
        .issuer(ISSUER)
        .audience(AUDIENCE);
    let server = pilotage::Server::builder()
        .name("auth", "0")
        .language(workflow::Workflow::new)
        .authenticator(authenticator)
        .protected_resource(ProtectedResource::new(RESOURCE).authorization_server(ISSUER).scope("mcp"))
        .build()
        .unwrap();
    let http = HttpServer::start(&server).await;
    let signed = |kid: &str| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some(kid.to_owned());
        let key = jsonwebtoken::EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef").unwrap();
        format!("Bearer {}", jsonwebtoken::encode(&header, &claims("alice", json!({})), &key).unwrap())
    };
    let kid = "k".repeat(200_000);
    let refused = post(http.url(), &[("authorization", &signed(&kid))], &initialize(1)).await;
    assert_eq!(refused.status, 401);
    let description = format!("no key has the token's kid {}...", "k".repeat(64));
    assert_eq!(
        refused.www_authenticate.as_deref(),
        Some(format!("Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\", error_description=\"{description}\"").as_str())
    );
    assert_eq!(refused.body["error"]["message"], format!("Unauthorized: {description}"));
    // A short unknown kid is named whole; the known one is served.
    let refused = post(http.url(), &[("authorization", &signed("hs-2"))], &initialize(1)).await;
    assert_eq!(refused.body["error"]["message"], "Unauthorized: no key has the token's kid hs-2");
    let served = post(http.url(), &[("authorization", &signed("hs-1"))], &initialize(7)).await;
    assert_eq!(served.status, 200, "{}", served.body);
}
