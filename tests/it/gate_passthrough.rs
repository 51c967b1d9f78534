//! The `gate` example's passthrough, with rmcp's client as the host over the gate's stdio: the
//! host's cancellation reaches the server and stops its run, the server's own elicitation
//! reaches the host and its answer comes back, progress and list-changed notifications reach
//! the host, and a Streamable HTTP server that requires a bearer token is reached with it and
//! refuses plainly without it. And the stateless revision (MCP 2026-07-28): the gate asks the
//! person through the input-required result, approve and decline.
//!
//! The passthrough upstream is a plain MCP server (no Pilotage surface: nothing is gated) on a
//! loopback port, recording what reaches it.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig, ServerResult, Tool,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RequestContext,
    RunningService,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ClientHandler, ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

use crate::gate::{upstream, Lie};
use crate::support::example_binary;
use pilotage::testkit::TempStore;

/// The longest any step here waits for the other side.
const BOUND: Duration = Duration::from_secs(20);

/// What the plain upstream saw.
#[derive(Default)]
struct Seen {
    /// `slow` started.
    started: bool,
    /// `slow` was cancelled (its request's cancellation token fired).
    cancelled: bool,
    /// `slow` ran to its end.
    finished: bool,
    /// The answer the host gave to the server's own question.
    answer: Option<Value>,
}

/// A plain MCP server: `slow` (runs until cancelled, at most 15 s), `progress` (three progress
/// notifications, then done), `ask` (elicits a name from the host), `change` (says its tool
/// list changed).
#[derive(Clone)]
struct Plain(Arc<Mutex<Seen>>);

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "description": name, "inputSchema": {"type": "object"}}))
        .unwrap()
}

fn text(t: &str) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![rmcp::model::ContentBlock::text(t)]))
}

impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let mut config = ServerConfig::new(capabilities);
        config.server_info = Implementation::new("plain-upstream", "1");
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(["slow", "progress", "ask", "change"].map(tool).to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match &*request.name {
            "slow" => {
                self.0.lock().unwrap().started = true;
                tokio::select! {
                    () = context.ct.cancelled() => self.0.lock().unwrap().cancelled = true,
                    () = tokio::time::sleep(Duration::from_secs(15)) => self.0.lock().unwrap().finished = true,
                }
                Ok(text("slow done"))
            }
            "progress" => {
                let token = context
                    .meta
                    .get_progress_token()
                    .ok_or_else(|| ErrorData::invalid_params("progress needs a progress token", None))?;
                for n in 1..=3 {
                    let params: ProgressNotificationParam = serde_json::from_value(
                        json!({"progressToken": token, "progress": n, "total": 3, "message": format!("step {n}")}),
                    )
                    .unwrap();
                    context
                        .peer
                        .notify_progress(params)
                        .await
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                }
                Ok(text("progress done"))
            }
            "ask" => {
                let params: ElicitRequestParams = serde_json::from_value(json!({
                    "mode": "form",
                    "message": "The server's own question: your name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                }))
                .unwrap();
                let answer = context
                    .peer
                    .create_elicitation(params)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let answer = serde_json::to_value(&answer).unwrap();
                self.0.lock().unwrap().answer = Some(answer.clone());
                Ok(text(&answer.to_string()))
            }
            "change" => {
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(text("changed"))
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

/// The plain upstream on a loopback port; with `bearer`, a request without `Authorization:
/// Bearer <bearer>` gets HTTP 401.
struct PlainUpstream {
    url: String,
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PlainUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn plain(bearer: Option<&'static str>) -> PlainUpstream {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let handler = Plain(seen.clone());
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let mut app = axum::Router::new().nest_service("/mcp", service);
    if let Some(token) = bearer {
        app = app.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| async move {
                let expected = format!("Bearer {token}");
                let given = request.headers().get("authorization").and_then(|v| v.to_str().ok());
                if given == Some(expected.as_str()) {
                    next.run(request).await
                } else {
                    use axum::response::IntoResponse;
                    (
                        axum::http::StatusCode::UNAUTHORIZED,
                        "the upstream's refusal: a bearer token is required",
                    )
                        .into_response()
                }
            },
        ));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    PlainUpstream { url: format!("http://{addr}/mcp"), seen, task }
}

/// What the host saw and how it answers questions.
#[derive(Default)]
struct HostSaw {
    questions: Vec<String>,
    progress: Vec<(Value, f64)>,
    list_changed: usize,
}

/// rmcp's client as the host: declares elicitation (unless `answer` is `None`) and answers
/// every question with `answer`.
#[derive(Clone)]
struct Host {
    answer: Option<Value>,
    saw: Arc<Mutex<HostSaw>>,
}

impl ClientHandler for Host {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.answer.is_some() {
            capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        }
        let mut config = ClientConfig::new(capabilities, Implementation::new("gate-test-host", "1"));
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message =
            serde_json::to_value(&request).unwrap()["message"].as_str().unwrap_or_default().to_owned();
        self.saw.lock().unwrap().questions.push(message);
        let answer = self.answer.clone().unwrap_or(json!({"action": "decline"}));
        Ok(serde_json::from_value(answer).unwrap())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let token = serde_json::to_value(&params.progress_token).unwrap();
        self.saw.lock().unwrap().progress.push((token, params.progress));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.saw.lock().unwrap().list_changed += 1;
    }
}

/// The gate with `args`, spawned with its stdio as the host's channel (killed on drop).
fn spawn_gate(args: &[String]) -> tokio::process::Child {
    tokio::process::Command::new(example_binary("gate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the gate starts")
}

/// A host session through the gate, on the handshake revision.
async fn session(
    args: &[String],
    answer: Option<Value>,
) -> (RunningService<RoleClient, Host>, Arc<Mutex<HostSaw>>, tokio::process::Child) {
    let saw = Arc::new(Mutex::new(HostSaw::default()));
    let mut child = spawn_gate(args);
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let host = Host { answer, saw: saw.clone() };
    let running = tokio::time::timeout(BOUND, host.serve((stdout, stdin)))
        .await
        .expect("in time")
        .expect("initialized");
    (running, saw, child)
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    serde_json::from_value(json!({"name": name, "arguments": arguments})).unwrap()
}

fn endpoint(url: &str) -> Vec<String> {
    vec!["--endpoint".into(), url.to_owned()]
}

/// Poll `f` until it holds, at most [`BOUND`].
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "{what} within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_hosts_cancellation_reaches_the_server_and_stops_its_run() {
    let up = plain(None).await;
    let (host, _saw, _child) = session(&endpoint(&up.url), None).await;
    let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call("slow", json!({}))));
    let handle = host.send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    eventually("the slow call reaches the server", || up.seen.lock().unwrap().started).await;
    handle.cancel(Some("the person stopped it".into())).await.unwrap();
    eventually("the server's run is cancelled", || up.seen.lock().unwrap().cancelled).await;
    assert!(!up.seen.lock().unwrap().finished, "the run stopped, not finished");
    host.cancel().await.unwrap();
}

#[tokio::test]
async fn the_servers_own_elicitation_reaches_the_host_and_its_answer_comes_back() {
    let up = plain(None).await;
    let answer = json!({"action": "accept", "content": {"name": "Amira"}});
    let (host, saw, _child) = session(&endpoint(&up.url), Some(answer.clone())).await;
    let result = tokio::time::timeout(BOUND, host.call_tool(call("ask", json!({})))).await.unwrap().unwrap();
    assert_eq!(saw.lock().unwrap().questions, ["The server's own question: your name?"]);
    assert_eq!(up.seen.lock().unwrap().answer, Some(answer.clone()));
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), answer);
    host.cancel().await.unwrap();
}

#[tokio::test]
async fn progress_notifications_reach_the_host_under_its_own_token() {
    let up = plain(None).await;
    let (host, saw, _child) = session(&endpoint(&up.url), None).await;
    let request =
        ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call("progress", json!({}))));
    let handle = host.send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    let token = serde_json::to_value(&handle.progress_token).unwrap();
    let answer = tokio::time::timeout(BOUND, handle.await_response()).await.unwrap().unwrap();
    assert!(matches!(answer, ServerResult::CallToolResult(_)), "{answer:?}");
    eventually("three progress notifications", || saw.lock().unwrap().progress.len() == 3).await;
    assert_eq!(saw.lock().unwrap().progress, [(token.clone(), 1.0), (token.clone(), 2.0), (token, 3.0)]);
    host.cancel().await.unwrap();
}

#[tokio::test]
async fn list_changed_notifications_reach_the_host() {
    let up = plain(None).await;
    let (host, saw, _child) = session(&endpoint(&up.url), None).await;
    assert_eq!(saw.lock().unwrap().list_changed, 0);
    tokio::time::timeout(BOUND, host.call_tool(call("change", json!({})))).await.unwrap().unwrap();
    eventually("the list-changed notification", || saw.lock().unwrap().list_changed == 1).await;
    // And the gate learns the new list: the tools are listed again, unchanged through it.
    let tools = host.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(),
        ["slow", "progress", "ask", "change"]
    );
    host.cancel().await.unwrap();
}

#[tokio::test]
async fn a_bearer_upstream_works_with_its_token_and_refuses_plainly_without() {
    let up = plain(Some("s3cret-token")).await;
    let token = TempStore::new("gate-bearer");
    std::fs::write(token.path(), "s3cret-token\n").unwrap();
    let mut args = endpoint(&up.url);
    args.extend(["--bearer-file".into(), token.path().display().to_string()]);
    let (host, _saw, _child) = session(&args, None).await;
    let tools = host.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    host.cancel().await.unwrap();

    // Without the token, the host's `initialize` is answered with the upstream's refusal.
    let saw = Arc::new(Mutex::new(HostSaw::default()));
    let mut child = spawn_gate(&endpoint(&up.url));
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let refused =
        tokio::time::timeout(BOUND, Host { answer: None, saw }.serve((stdout, stdin))).await.unwrap();
    let error = refused.err().expect("no session without the token").to_string();
    assert!(error.contains("gate: initializing the server"), "{error}");
    assert!(error.contains("401") || error.contains("Unauthorized") || error.contains("auth"), "{error}");
}

/// A host on the stateless revision (rmcp's client with `server/discover`), through the gate in
/// front of the recording automation server: `answer` answers each question.
async fn stateless(
    url: &str,
    answer: Option<Value>,
) -> (RunningService<RoleClient, Host>, Arc<Mutex<HostSaw>>, tokio::process::Child) {
    stateless_with(&endpoint(url), answer).await
}

/// A stateless host through the gate started with `args`.
async fn stateless_with(
    args: &[String],
    answer: Option<Value>,
) -> (RunningService<RoleClient, Host>, Arc<Mutex<HostSaw>>, tokio::process::Child) {
    let saw = Arc::new(Mutex::new(HostSaw::default()));
    let mut child = spawn_gate(args);
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let host = Host { answer, saw: saw.clone() };
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let running = tokio::time::timeout(BOUND, host.serve_with_lifecycle((stdout, stdin), lifecycle))
        .await
        .expect("in time")
        .expect("discovered");
    (running, saw, child)
}

fn automation_call(tool: &str, program: &Value) -> CallToolRequestParams {
    let mut arguments = json!({"automation": program, "context": crate::kit::ctx()});
    if tool == "run_automation" {
        arguments["mode"] = json!("immediate");
    }
    call(tool, arguments)
}

fn destructive() -> Value {
    json!({"steps": [{"id": "s", "call": "outbox_clear", "with": {}}]})
}

#[tokio::test]
async fn a_stateless_host_is_asked_through_the_input_required_result() {
    // The raw round: the execute's first answer is the question, with a state naming it.
    let up = upstream(Lie::Honest).await;
    let approve = json!({"action": "accept", "content": {"approve": true}});
    let (host, saw, _child) = stateless(&up.url, Some(approve)).await;
    assert_eq!(host.peer_info().map(|i| i.protocol_version.clone()), Some(ProtocolVersion::V_2026_07_28));
    let validated = host.call_tool(automation_call("validate_automation", &destructive())).await.unwrap();
    let version = validated.structured_content.unwrap()["catalog_version"].as_str().unwrap().to_owned();
    let first = host.peer().call_tool_once(automation_call("run_automation", &destructive())).await.unwrap();
    let CallToolResponse::InputRequired(question) = first else { panic!("asked first: {first:?}") };
    let wire = serde_json::to_value(&question).unwrap();
    assert_eq!(wire["resultType"], "input_required");
    assert_eq!(wire["inputRequests"]["approve"]["method"], "elicitation/create");
    let message = wire["inputRequests"]["approve"]["params"]["message"].as_str().unwrap();
    assert!(message.contains("Risk: destructive (from the plan"), "{message}");
    assert!(message.contains(pilotage::host::UNVERIFIED_CLAIMS), "{message}");
    assert!(wire["requestState"].as_str().is_some_and(|s| s.starts_with("gate-approval-")), "{wire}");
    assert_eq!(up.received.lock().unwrap().executes.len(), 0, "nothing sent while asking");

    // An answer sent with another call (a changed program) approves nothing, and closes nothing.
    let state = wire["requestState"].as_str().unwrap().to_owned();
    let answers = [("approve".to_owned(), json!({"action": "accept", "content": {"approve": true}}))];
    let mut other = automation_call(
        "run_automation",
        &json!({"steps": [{"id": "t", "call": "outbox_clear", "with": {}}]}),
    );
    other.request_state = Some(state.clone());
    other.input_responses = Some(answers.clone().into_iter().collect());
    let refused = host.peer().call_tool_once(other).await.unwrap();
    let CallToolResponse::Complete(refused) = refused else { panic!("{refused:?}") };
    let error = &refused.structured_content.unwrap()["error"];
    assert_eq!(error["kind"], "unsupported");
    assert!(error["message"].as_str().unwrap().contains("another call"), "{error}");

    // The host's retry of the same call with the approval runs it once, at the validation's
    // catalog version; the same answer again approves nothing (the question is closed).
    let mut retry = automation_call("run_automation", &destructive());
    retry.request_state = Some(state);
    retry.input_responses = Some(answers.into_iter().collect());
    let ran = host.peer().call_tool_once(retry.clone()).await.unwrap();
    let CallToolResponse::Complete(ran) = ran else { panic!("{ran:?}") };
    assert_eq!(ran.structured_content.unwrap()["outcome"]["ok"], true);
    let again = host.peer().call_tool_once(retry).await.unwrap();
    let CallToolResponse::Complete(again) = again else { panic!("{again:?}") };
    assert_eq!(again.is_error, Some(true));
    let received = up.received.lock().unwrap();
    assert_eq!(received.executes.len(), 1, "arrives once");
    assert_eq!(received.executes[0]["expected_catalog_version"], version);
    assert!(saw.lock().unwrap().questions.is_empty(), "the raw rounds asked nobody");
}

#[tokio::test]
async fn a_stateless_host_approves_and_declines_through_its_elicitation_handler() {
    for (answer, arrived) in [
        (json!({"action": "accept", "content": {"approve": true}}), 1),
        (json!({"action": "decline"}), 0),
        (json!({"action": "accept", "content": {"approve": false}}), 0),
        (json!({"action": "cancel"}), 0),
    ] {
        let up = upstream(Lie::Honest).await;
        let (host, saw, _child) = stateless(&up.url, Some(answer.clone())).await;
        // rmcp's `call_tool` drives the input-required rounds through the host's handler.
        let result = host.call_tool(automation_call("run_automation", &destructive())).await.unwrap();
        let asked = saw.lock().unwrap().questions.clone();
        assert_eq!(asked.len(), 1, "{answer}");
        assert!(asked[0].contains("s calls outbox_clear: destructive"), "{}", asked[0]);
        let out = result.structured_content.unwrap();
        let executes = up.received.lock().unwrap().executes.clone();
        assert_eq!(executes.len(), arrived, "{answer}");
        if arrived == 1 {
            assert_eq!(out["outcome"]["ok"], true, "{out}");
            assert!(executes[0]["expected_catalog_version"].as_str().is_some_and(|v| v.starts_with("cv_")));
        } else {
            assert_eq!(out["error"]["kind"], "unsupported", "{out}");
            let message = out["error"]["message"].as_str().unwrap();
            assert!(message.contains("Nothing was sent to the server"), "{message}");
        }
        host.cancel().await.unwrap();
    }

    // A stateless host that declares no elicitation is not asked: refused plainly.
    let up = upstream(Lie::Honest).await;
    let (host, _saw, _child) = stateless(&up.url, None).await;
    let result = host.call_tool(automation_call("run_automation", &destructive())).await.unwrap();
    let message = result.structured_content.unwrap()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("the host does not support elicitation"), "{message}");
    assert_eq!(up.received.lock().unwrap().executes.len(), 0);
}

/// A stateless host in front of a server the gate spawns (the automation binary over stdio):
/// every call takes the rmcp proxy's path (the fast path waits for a handshake), so a safe
/// program runs and a destructive one is asked through the input-required rounds.
#[tokio::test]
async fn a_stateless_host_in_front_of_a_spawned_server() {
    let store = TempStore::new("gate-stateless-spawned");
    let args = vec![
        "--".into(),
        example_binary("automation").display().to_string(),
        "--store".into(),
        store.path().display().to_string(),
    ];
    let answer = json!({"action": "accept", "content": {"approve": true}});
    let (host, saw, _child) = stateless_with(&args, Some(answer)).await;
    let safe = json!({"steps": [{"id": "s", "call": "wait", "with": {"ms": 0}}]});
    let validated = host.call_tool(automation_call("validate_automation", &safe)).await.unwrap();
    assert_eq!(validated.structured_content.unwrap()["valid"], true);
    let ran = host.call_tool(automation_call("run_automation", &safe)).await.unwrap();
    assert_eq!(ran.structured_content.unwrap()["outcome"]["ok"], true);
    assert!(saw.lock().unwrap().questions.is_empty(), "a safe program is not asked about");
    let ran = host.call_tool(automation_call("run_automation", &destructive())).await.unwrap();
    let out = ran.structured_content.unwrap();
    assert_eq!(out["outcome"]["ok"], true, "approved through the rounds: {out}");
    assert_eq!(saw.lock().unwrap().questions.len(), 1);
    host.cancel().await.unwrap();
}
