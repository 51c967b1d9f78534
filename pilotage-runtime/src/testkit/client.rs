//! [`Client`]: an MCP client of a [`Server`] served in process over a duplex pipe, speaking the
//! same newline-delimited JSON-RPC a stdio host speaks, so every call takes the real request
//! path (frame checks, rmcp, routing, structural check, engine call, envelope).

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};
use tokio::task::JoinHandle;

use super::ran::{check_correspondence, Ran};
use crate::model::errors::RequestError;
use crate::model::manifest::{CATALOG_TOOL, EXTENSION_ID, GUIDE_TOOL, MANIFEST_TOOL};
use crate::model::plan::ValidateResponse;
use crate::model::trace::TraceFetchResponse;
use crate::server::Server;

/// How long one request may wait for its response before the test fails.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The MCP revision the client negotiates.
const PROTOCOL: &str = "2025-11-25";

/// One `tools/call` result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// `isError` (absent counts as `false`).
    pub is_error: bool,
    /// `structuredContent` (`Null` when absent).
    pub structured: Value,
    /// The text of the first content block.
    pub text: String,
}

impl ToolResult {
    /// `structuredContent` as `T` when `isError` is false, else the request error.
    ///
    /// # Panics
    /// When the content has neither shape (the runtime's own output check rules that out).
    pub fn parse<T: DeserializeOwned>(self) -> Result<T, RequestError> {
        let shape = if self.is_error { "a request error" } else { std::any::type_name::<T>() };
        let fail = |e: serde_json::Error| -> ! {
            panic!("structuredContent is not {shape} ({e}): {}", self.structured)
        };
        if self.is_error {
            Err(serde_json::from_value(self.structured.clone()).unwrap_or_else(|e| fail(e)))
        } else {
            Ok(serde_json::from_value(self.structured.clone()).unwrap_or_else(|e| fail(e)))
        }
    }
}

/// The tools of the Language a [`Client`] addresses, from the manifest.
#[derive(Clone, Debug, Default)]
struct Selected {
    name: String,
    argument: String,
    validate: String,
    execute: Option<String>,
    trace: Option<String>,
}

/// An initialized MCP session with a [`Server`] in this process, declaring the Pilotage
/// extension. It addresses one Language at a time (the first of the manifest until
/// [`Client::select`]). Dropping it ends the session.
///
/// Every method panics, with the exchange in the message, when the server breaks the protocol
/// (no answer within a minute, a reply that is not JSON-RPC): those are test failures. What a
/// client legitimately receives (a request error, an invalid program, a failed run) is a value.
pub struct Client {
    reader: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    serving: JoinHandle<()>,
    next_id: u64,
    manifest: Value,
    /// `(language, program argument)` of every Language served.
    arguments: Vec<(String, String)>,
    selected: Selected,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

impl Client {
    /// Serve `server` over an in-process pipe, `initialize` (with the Pilotage extension) and
    /// read the manifest. Needs a Tokio runtime.
    pub async fn connect(server: &Server) -> Client {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(theirs);
        let served = server.clone();
        let serving = tokio::spawn(async move {
            let _ = served.serve_lines(server_read, server_write).await;
        });
        let (read, writer) = tokio::io::split(ours);
        let reader = BufReader::new(read).lines();
        let mut client = Client {
            reader,
            writer,
            serving,
            next_id: 0,
            manifest: Value::Null,
            arguments: Vec::new(),
            selected: Selected::default(),
        };
        client.initialize().await;
        client.arguments = client.program_arguments().await;
        client.manifest = client.call(MANIFEST_TOOL, json!({})).await.structured;
        let first = client.manifest["languages"][0]["name"].as_str().unwrap_or_default().to_owned();
        client.select(&first);
        client
    }

    async fn initialize(&mut self) {
        let params = json!({
            "protocolVersion": PROTOCOL,
            "capabilities": {"extensions": {EXTENSION_ID: {}}},
            "clientInfo": {"name": "pilotage-testkit", "version": env!("CARGO_PKG_VERSION")},
        });
        if let Err(e) = self.request("initialize", params).await {
            panic!("initialize failed: {e}");
        }
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    }

    /// Address the Language `name` from now on.
    ///
    /// # Panics
    /// When the manifest has no such Language.
    pub fn select(&mut self, name: &str) {
        let languages = self.manifest["languages"].as_array().cloned().unwrap_or_default();
        let Some(language) = languages.iter().find(|l| l["name"] == name) else {
            let hosted: Vec<&Value> = languages.iter().map(|l| &l["name"]).collect();
            panic!("the server hosts no Language {name:?}; it hosts {hosted:?}");
        };
        let tool = |stage: &str| language["loop"][stage].as_str().map(str::to_owned);
        let argument =
            self.arguments.iter().find(|(l, _)| l == name).map(|(_, a)| a.clone()).unwrap_or_default();
        self.selected = Selected {
            name: name.to_owned(),
            argument,
            validate: tool("validate").unwrap_or_default(),
            execute: tool("execute"),
            trace: tool("trace"),
        };
    }

    /// The program argument of every Language, from the `_meta` declarations of `tools/list`
    /// (Part III §4.3): `(language, argument)`.
    async fn program_arguments(&mut self) -> Vec<(String, String)> {
        let listed =
            self.request("tools/list", Value::Null).await.unwrap_or_else(|e| panic!("tools/list: {e}"));
        let mut found = Vec::new();
        for tool in listed["tools"].as_array().into_iter().flatten() {
            let declaration = &tool["_meta"][EXTENSION_ID];
            let one = std::slice::from_ref(declaration);
            let each = declaration["languages"].as_array().map_or(one, Vec::as_slice);
            for d in each {
                if let (Some(l), Some(a)) = (d["language"].as_str(), d["argument"].as_str()) {
                    found.push((l.to_owned(), a.to_owned()));
                }
            }
        }
        found
    }

    /// The manifest (the `pilotage_manifest` result).
    pub fn manifest(&self) -> &Value {
        &self.manifest
    }

    /// The name of the Language addressed.
    pub fn language(&self) -> &str {
        &self.selected.name
    }

    /// `{"<program argument>": program}`: the arguments of a validate or execute call, to which
    /// a test adds members (`input`, `context`, `trace_level`, ...).
    pub fn args(&self, program: &Value) -> Value {
        json!({ self.selected.argument.as_str(): program })
    }

    async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let written = async {
            self.writer.write_all(line.as_bytes()).await?;
            self.writer.flush().await
        };
        if let Err(e) = written.await {
            panic!("cannot write to the server ({e}): {message}");
        }
    }

    /// Send the JSON-RPC request `method` (`params` omitted when `Null`): its `result`, or its
    /// `error` object.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(&message).await;
        loop {
            let line = match tokio::time::timeout(TIMEOUT, self.reader.next_line()).await {
                Ok(Ok(Some(line))) => line,
                Ok(Ok(None)) => panic!("the server closed the session while answering {message}"),
                Ok(Err(e)) => panic!("cannot read from the server ({e}) while answering {message}"),
                Err(_) => panic!("no answer within {TIMEOUT:?} to {message}"),
            };
            let reply: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line}"));
            if reply.get("method").is_some() || reply["id"] != json!(id) {
                continue; // a notification or a server request: not the awaited answer
            }
            return match (reply.get("result"), reply.get("error")) {
                (Some(result), None) => Ok(result.clone()),
                (None, Some(error)) => Err(error.clone()),
                _ => panic!("a JSON-RPC response needs exactly one of result and error: {reply}"),
            };
        }
    }

    /// `tools/call` `name` with `args`.
    ///
    /// # Panics
    /// When the call draws a JSON-RPC error (an unknown tool, arguments that do not fit the
    /// tool's `inputSchema`): use [`Client::request`] to test those.
    pub async fn call(&mut self, name: &str, args: Value) -> ToolResult {
        let result = match self.request("tools/call", json!({"name": name, "arguments": args})).await {
            Ok(result) => result,
            Err(error) => panic!("tools/call {name} drew the JSON-RPC error {error}"),
        };
        ToolResult {
            is_error: result["isError"] == json!(true),
            structured: result.get("structuredContent").cloned().unwrap_or(Value::Null),
            text: result["content"][0]["text"].as_str().unwrap_or_default().to_owned(),
        }
    }

    /// Validate `program`.
    pub async fn validate(&mut self, program: &Value) -> Result<ValidateResponse, RequestError> {
        let args = self.args(program);
        self.validate_args(args).await
    }

    /// The validate tool with `args` exactly.
    pub async fn validate_args(&mut self, args: Value) -> Result<ValidateResponse, RequestError> {
        let tool = self.selected.validate.clone();
        self.call(&tool, args).await.parse()
    }

    /// Execute `program` (see [`Client::execute_args`]).
    pub async fn execute(&mut self, program: &Value) -> Result<Ran, RequestError> {
        let args = self.args(program);
        self.execute_args(args).await
    }

    /// The execute tool with `args` exactly. When `args` carry the program itself, the same
    /// program and `context` are validated first, and the plan is kept in [`Ran::plan`]; in
    /// debug builds the trace of every started immediate run or test run is then checked
    /// against that plan (Part II §5.8.4, see [`check_correspondence`]) and a violation fails
    /// the test.
    ///
    /// # Panics
    /// When the Language declares no execute tool, or (debug builds) on a correspondence
    /// violation.
    pub async fn execute_args(&mut self, args: Value) -> Result<Ran, RequestError> {
        let tool = self.selected.execute.clone().unwrap_or_else(|| {
            panic!("Language {} declares no execute tool", self.selected.name);
        });
        let plan = match args.get(&self.selected.argument) {
            Some(program) => {
                let mut validation = json!({ self.selected.argument.as_str(): program });
                if let Some(context) = args.get("context") {
                    validation["context"] = context.clone();
                }
                self.validate_args(validation).await.ok().and_then(|v| v.plan)
            }
            None => None,
        };
        let deploy = args["mode"] == "deploy" && args["test_run"] != json!(true);
        let ran = Ran::new(self.call(&tool, args).await.parse()?, plan);
        if cfg!(debug_assertions) && !deploy {
            check_correspondence(&ran);
        }
        Ok(ran)
    }

    /// Fetch the stored trace of `run_id`.
    pub async fn trace(&mut self, run_id: &str) -> Result<TraceFetchResponse, RequestError> {
        self.trace_args(json!({"run_id": run_id})).await
    }

    /// The trace tool with `args` exactly (`run_id`, `trace_level`, `question`).
    ///
    /// # Panics
    /// When the Language declares no trace tool.
    pub async fn trace_args(&mut self, args: Value) -> Result<TraceFetchResponse, RequestError> {
        let tool = self.selected.trace.clone().unwrap_or_else(|| {
            panic!("Language {} declares no trace tool", self.selected.name);
        });
        self.call(&tool, args).await.parse()
    }

    /// `pilotage_catalog` with `args` (the `language` member is added): the list, get or
    /// changes answer as JSON.
    pub async fn catalog(&mut self, mut args: Value) -> Result<Value, RequestError> {
        args["language"] = json!(self.selected.name);
        self.call(CATALOG_TOOL, args).await.parse()
    }

    /// `pilotage_get_guide` for the guide `id`: the `guide` object with its body.
    pub async fn guide(&mut self, id: &str) -> Result<Value, RequestError> {
        let args = json!({"language": self.selected.name, "id": id});
        self.call(GUIDE_TOOL, args).await.parse::<Value>().map(|v| v["guide"].clone())
    }
}
