//! [`Conn`]: one async JSON-RPC API over every transport, with automatic result checks.

use std::collections::HashMap;
use std::sync::Arc;

use jsonschema::Validator;
use serde_json::{json, Value};

use super::http::{Http, HttpStyle};
use super::lines::Lines;
use super::schemas::{self, ToolKind};
use super::{EXT, PROTOCOL};

enum Transport {
    Lines(Box<Lines>),
    Http(Http),
}

/// One successful `tools/call` result.
#[derive(Clone, Debug)]
pub struct ToolCall {
    /// `result.isError` (absent counts as `false`).
    pub is_error: bool,
    /// `result.structuredContent` (`Null` when absent).
    pub structured: Value,
    /// The text of the one text content block.
    pub text: String,
    /// The whole JSON-RPC response.
    pub raw: Value,
}

/// A client connection to a Pilotage server.
pub struct Conn {
    transport: Transport,
    /// Which transport and style, for failure messages.
    pub label: String,
    next_id: u64,
    /// Tool entries from `tools/list`, by name.
    tools: Option<HashMap<String, Value>>,
    /// Pilotage tools and their kinds, from the latest manifest.
    kinds: Option<HashMap<String, ToolKind>>,
    /// Compiled advertised `outputSchema`s, by tool name.
    output_validators: HashMap<String, Arc<Validator>>,
    /// How many results of each Pilotage tool kind passed the schema checks.
    checked: HashMap<ToolKind, usize>,
}

impl Conn {
    /// `server` served in-process over `tokio::io::duplex` with `serve_lines`.
    pub fn duplex(server: &pilotage::Server) -> Conn {
        Conn::new(Transport::Lines(Box::new(Lines::duplex(server))), "duplex".to_owned())
    }

    /// `handler` (a server's own, or one wrapping it) served in-process over
    /// `tokio::io::duplex` with `serve_lines`.
    pub fn duplex_handler(handler: impl rmcp::ServerHandler) -> Conn {
        Conn::new(Transport::Lines(Box::new(Lines::duplex_handler(handler))), "duplex".to_owned())
    }

    /// The example binary `name` (built if needed), spawned with `args`, over stdin/stdout.
    pub fn stdio(example: &str, args: &[&str]) -> Conn {
        Conn::stdio_env(example, args, &[])
    }

    /// [`Conn::stdio`] with each `(variable, value)` of `env` set, or removed when `None`.
    pub fn stdio_env(example: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Conn {
        Conn::new(Transport::Lines(Box::new(Lines::stdio(example, args, env))), format!("stdio:{example}"))
    }

    /// What the spawned example wrote to stderr so far (empty on other transports).
    pub fn stderr(&self) -> String {
        match &self.transport {
            Transport::Lines(l) => l.stderr(),
            Transport::Http(_) => String::new(),
        }
    }

    /// A Streamable HTTP client for the endpoint `url` (for example an external server).
    pub fn http(url: &str, style: HttpStyle) -> Conn {
        Conn::from_http(Http::new(url, style, None), format!("http-{style:?}"))
    }

    pub(crate) fn from_http(http: Http, label: String) -> Conn {
        Conn::new(Transport::Http(http), label)
    }

    fn new(transport: Transport, label: String) -> Conn {
        Conn {
            transport,
            label,
            next_id: 0,
            tools: None,
            kinds: None,
            output_validators: HashMap::new(),
            checked: HashMap::new(),
        }
    }

    /// The `mcp-session-id` the HTTP server issued (`None` on other transports).
    pub fn session_id(&self) -> Option<&str> {
        match &self.transport {
            Transport::Http(h) => h.session.as_deref(),
            Transport::Lines(_) => None,
        }
    }

    /// HTTP status of the last response (`None` on other transports).
    pub fn last_http_status(&self) -> Option<u16> {
        match &self.transport {
            Transport::Http(h) => h.last_status,
            Transport::Lines(_) => None,
        }
    }

    /// Content type (without parameters) of the last HTTP response.
    pub fn last_content_type(&self) -> Option<&str> {
        match &self.transport {
            Transport::Http(h) => h.last_content_type.as_deref(),
            Transport::Lines(_) => None,
        }
    }

    /// The HTTP client style, if this is an HTTP connection.
    pub fn http_style(&self) -> Option<HttpStyle> {
        match &self.transport {
            Transport::Http(h) => Some(h.style),
            Transport::Lines(_) => None,
        }
    }

    /// Server messages received over a line transport that were not awaited responses.
    pub fn unsolicited(&self) -> &[Value] {
        match &self.transport {
            Transport::Lines(l) => &l.others,
            Transport::Http(_) => &[],
        }
    }

    /// Send `body` exactly as given and return the JSON-RPC response it draws (for example a
    /// `-32700` error object for `{ not json`). On a line transport `body` must be one line.
    pub async fn raw(&mut self, body: &str) -> Value {
        match &mut self.transport {
            Transport::Lines(l) => {
                l.send(body).await;
                l.receive(None).await
            }
            Transport::Http(h) => {
                h.post(body).await.unwrap_or_else(|| panic!("{}: no response body for {body}", self.label))
            }
        }
    }

    async fn exchange(&mut self, message: &Value) -> Value {
        let text = message.to_string();
        let reply = self.exchange_text(&text, message).await;
        if std::env::var_os("PILOTAGE_TEST_TRANSCRIPT").is_some() {
            eprintln!("{} >>> {text}\n{} <<< {reply}", self.label, self.label);
        }
        reply
    }

    async fn exchange_text(&mut self, text: &str, message: &Value) -> Value {
        match &mut self.transport {
            Transport::Lines(l) => {
                l.send(text).await;
                l.receive(Some(&message["id"])).await
            }
            Transport::Http(h) => h
                .post(text)
                .await
                .unwrap_or_else(|| panic!("{}: HTTP 202 without a response to request {text}", self.label)),
        }
    }

    /// A request without the automatic checks.
    async fn send(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        let response = self.exchange(&message).await;
        assert_eq!(response["jsonrpc"], "2.0", "{}: not a JSON-RPC 2.0 response: {response}", self.label);
        assert_eq!(response["id"], json!(id), "{}: response to the wrong id: {response}", self.label);
        assert!(
            response.get("result").is_some() != response.get("error").is_some(),
            "{}: a response needs exactly one of result and error: {response}",
            self.label
        );
        response
    }

    /// Send a JSON-RPC request (`params` omitted when `Null`) and return the whole response
    /// object. A `tools/call` that gets a `result` is checked automatically (see
    /// [`Conn::check_tool_result`]).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
        let response = self.send(method, params).await;
        if method == "tools/call" {
            // A task (MCP Tasks) is checked when its result comes, through `tasks/get`.
            let result = response.get("result").filter(|r| r["resultType"] != "task");
            if let (Some(name), Some(result)) = (name, result) {
                self.check_tool_result(&name, result).await;
                if name == "pilotage_manifest" && result["isError"] != json!(true) {
                    self.kinds = Some(ToolKind::from_manifest(&result["structuredContent"]));
                }
            }
        }
        response
    }

    /// Send a request over a line transport without awaiting its response (see
    /// [`Conn::finish`]); returns its id.
    pub async fn start(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        match &mut self.transport {
            Transport::Lines(l) => l.send(&message.to_string()).await,
            Transport::Http(_) => panic!("{}: Conn::start needs a line transport", self.label),
        }
        self.next_id
    }

    /// The response to the request [`Conn::start`]ed with `id` (messages before it are kept in
    /// [`Conn::unsolicited`]).
    pub async fn finish(&mut self, id: u64) -> Value {
        match &mut self.transport {
            Transport::Lines(l) => l.receive(Some(&json!(id))).await,
            Transport::Http(_) => panic!("{}: Conn::finish needs a line transport", self.label),
        }
    }

    /// Read server messages over a line transport until one satisfies `wanted` (kept, with
    /// the others, in [`Conn::unsolicited`]).
    pub async fn message_where(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        match &mut self.transport {
            Transport::Lines(l) => l.receive_where(wanted).await,
            Transport::Http(_) => panic!("{}: Conn::message_where needs a line transport", self.label),
        }
    }

    /// Send a JSON-RPC notification (`params` omitted when `Null`).
    pub async fn notify(&mut self, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        let text = message.to_string();
        match &mut self.transport {
            Transport::Lines(l) => l.send(&text).await,
            Transport::Http(h) => {
                if let Some(reply) = h.post(&text).await {
                    panic!("{}: a notification drew a response: {reply}", self.label);
                }
            }
        }
    }

    /// `initialize` on protocol 2025-11-25, declaring the Pilotage extension iff
    /// `with_extension`, then `notifications/initialized`. Returns the whole response.
    pub async fn initialize(&mut self, with_extension: bool) -> Value {
        let capabilities = if with_extension { json!({"extensions": {EXT: {}}}) } else { json!({}) };
        let response = self
            .send(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "pilotage-tests", "version": "0"}
                }),
            )
            .await;
        let result =
            response.get("result").unwrap_or_else(|| panic!("{}: initialize failed: {response}", self.label));
        if let Transport::Http(h) = &mut self.transport {
            h.protocol = result["protocolVersion"].as_str().map(str::to_owned);
        }
        if let Some(manifest) = result.pointer(&format!("/_meta/{}/manifest", EXT.replace('/', "~1"))) {
            self.kinds = Some(ToolKind::from_manifest(manifest));
        }
        self.notify("notifications/initialized", Value::Null).await;
        response
    }

    /// `tools/list`: the `result.tools` array (remembered for the automatic checks).
    pub async fn tools_list(&mut self) -> Vec<Value> {
        let response = self.send("tools/list", Value::Null).await;
        let tools = response["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: tools/list has no result.tools: {response}", self.label))
            .clone();
        assert!(
            response["result"].get("nextCursor").is_none(),
            "{}: tools/list is paginated; the client does not follow cursors: {response}",
            self.label
        );
        let mut by_name = HashMap::new();
        for tool in &tools {
            let name = tool["name"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: a tool without a name: {tool}", self.label));
            assert!(
                by_name.insert(name.to_owned(), tool.clone()).is_none(),
                "{}: tool {name} listed twice",
                self.label
            );
        }
        self.tools = Some(by_name);
        self.output_validators.clear();
        tools
    }

    /// `tools/call` that must get a JSON-RPC `result` (any `isError`).
    pub async fn call(&mut self, name: &str, args: Value) -> ToolCall {
        let raw = self.request("tools/call", json!({"name": name, "arguments": args})).await;
        let result = raw
            .get("result")
            .unwrap_or_else(|| panic!("{}: tools/call {name} got a JSON-RPC error: {raw}", self.label));
        ToolCall {
            is_error: result["isError"].as_bool().unwrap_or(false),
            structured: result.get("structuredContent").cloned().unwrap_or(Value::Null),
            text: result["content"][0]["text"].as_str().unwrap_or_default().to_owned(),
            raw: raw.clone(),
        }
    }

    /// `tools/call` that must succeed (`isError` false); returns its `structuredContent`.
    pub async fn call_ok(&mut self, name: &str, args: Value) -> Value {
        let call = self.call(name, args).await;
        assert!(!call.is_error, "{}: {name} returned isError: true: {}", self.label, call.raw);
        call.structured
    }

    /// `tools/call` that must get a JSON-RPC error; returns the `error` object.
    pub async fn call_carrier_error(&mut self, name: &str, args: Value) -> Value {
        let raw = self.request("tools/call", json!({"name": name, "arguments": args})).await;
        raw.get("error")
            .unwrap_or_else(|| {
                panic!("{}: tools/call {name} should be a JSON-RPC error but got: {raw}", self.label)
            })
            .clone()
    }

    /// The checks every `tools/call` result gets: exactly one text content block; for a
    /// Pilotage tool a `structuredContent` object that satisfies the tool's advertised
    /// `outputSchema` and the official `$defs/<Kind>ToolOutput`. Panics on a violation.
    pub async fn check_tool_result(&mut self, name: &str, result: &Value) {
        let label = self.label.clone();
        let content = result["content"]
            .as_array()
            .unwrap_or_else(|| panic!("{label}: tool `{name}`: result has no content array: {result}"));
        assert!(
            content.len() == 1 && content[0]["type"] == "text" && content[0]["text"].is_string(),
            "{label}: tool `{name}`: result must have exactly one text content block: {result}"
        );
        assert!(
            result.get("isError").is_none_or(Value::is_boolean),
            "{label}: tool `{name}`: isError is not a boolean: {result}"
        );
        let Some(kind) = self.kind_of(name).await else {
            return;
        };
        let structured = result.get("structuredContent").unwrap_or_else(|| {
            panic!("{label}: Pilotage tool `{name}` returned no structuredContent: {result}")
        });
        assert!(
            structured.is_object(),
            "{label}: tool `{name}`: structuredContent is not an object: {structured}"
        );
        let advertised = self.output_validator(name).await;
        if let Some(e) = schemas::errors(&advertised, structured) {
            panic!("{label}: tool `{name}`: structuredContent violates the tool's advertised outputSchema:\n{e}\nvalue: {structured:#}");
        }
        let def = kind.output_def();
        if let Some(e) = schemas::errors(&schemas::official_validator(def), structured) {
            panic!("{label}: tool `{name}`: structuredContent violates the official $defs/{def}:\n{e}\nvalue: {structured:#}");
        }
        *self.checked.entry(kind).or_default() += 1;
    }

    /// The Pilotage kind of tool `name`, learning the manifest first when needed.
    async fn kind_of(&mut self, name: &str) -> Option<ToolKind> {
        if let Some(kind) = ToolKind::fixed(name) {
            return Some(kind);
        }
        if self.kinds.is_none() {
            let response =
                self.send("tools/call", json!({"name": "pilotage_manifest", "arguments": {}})).await;
            let manifest = &response["result"]["structuredContent"];
            schemas::assert_def(manifest, "Manifest");
            self.kinds = Some(ToolKind::from_manifest(manifest));
        }
        self.kinds.as_ref().and_then(|k| k.get(name).copied())
    }

    /// The compiled advertised `outputSchema` of `name`, listing the tools first when needed.
    async fn output_validator(&mut self, name: &str) -> Arc<Validator> {
        if let Some(v) = self.output_validators.get(name) {
            return v.clone();
        }
        if self.tools.is_none() {
            self.tools_list().await;
        }
        let label = &self.label;
        let tool = self
            .tools
            .as_ref()
            .and_then(|t| t.get(name))
            .unwrap_or_else(|| panic!("{label}: Pilotage tool `{name}` is not in tools/list"));
        let schema = tool
            .get("outputSchema")
            .unwrap_or_else(|| panic!("{label}: Pilotage tool `{name}` advertises no outputSchema: {tool}"));
        let validator = schemas::compile(schema, &format!("{label}: the outputSchema of `{name}`"));
        self.output_validators.insert(name.to_owned(), validator.clone());
        validator
    }

    /// How many `tools/call` results of Pilotage tools of `kind` passed the automatic schema
    /// checks on this connection.
    pub fn schema_checked(&self, kind: ToolKind) -> usize {
        self.checked.get(&kind).copied().unwrap_or(0)
    }

    /// The remembered `tools/list` entry of `name`.
    pub fn tool(&self, name: &str) -> Option<&Value> {
        self.tools.as_ref().and_then(|t| t.get(name))
    }
}
