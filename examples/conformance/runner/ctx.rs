//! One vector's session: a fresh [`Host`] connection (connected and discovered by
//! `pilotage::host`), the manifest, the tool list and the program argument as the Host
//! discovered them, the Language under test, and the helpers every executor uses (calls by
//! abstract operation, placeholder binding, hooks). Every tool call goes through
//! [`Host::call_tool`] (exact arguments; execute requests pass the Host's risk gate, granted by
//! the runner's [`Grant`](super::client::Grant)), and every loop answer is also read with the
//! Host's typed readers, which must agree with the official schema.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Value};

use super::assert::{is_error, structured, Evidence, Prose, Stop};
use super::binding::{Binding, Bound, Observe, ToolHook};
use super::client::Connector;
use super::vectors::Vector;
use crate::support::schemas::{self, ToolKind};
use pilotage::host::{Host, HostError, ToolAnswer, ToolInfo};
use pilotage::model::execution::ExecuteResponse;
use pilotage::model::plan::ValidateResponse;
use pilotage::model::trace::TraceFetchResponse;

/// The session of one vector.
pub struct Ctx<'a> {
    pub host: Host,
    pub binding: &'a Binding,
    pub connector: &'a Connector,
    /// The `pilotage_manifest` result, as the Host's (re)discovery read it.
    pub manifest: Value,
    /// The Language's manifest entry.
    pub lang: Value,
    /// Its effective capability map (Language-level overriding Server-level).
    pub effective: Value,
    /// `tools/list`, as the Host discovered it.
    pub tools: Vec<Value>,
    /// The program-bearing argument, read from the validate tool's `_meta` declaration.
    pub argument: String,
    /// Responses the vector's machine-readable `expected` members apply to.
    pub primary: Vec<Value>,
    pub prose: Prose,
    pub evidence: Evidence,
    /// Where evidence comes from (the vector or case id).
    pub source: String,
    closed_sets: Option<String>,
}

/// A compiled advertised schema, cached by its text (servers advertise the same schemas to
/// every session).
fn compiled(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let key = schema.to_string();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(v.clone());
    }
    let v = Arc::new(jsonschema::validator_for(schema).map_err(|e| format!("does not compile: {e}"))?);
    cache.lock().unwrap_or_else(|p| p.into_inner()).insert(key, v.clone());
    Ok(v)
}

/// The Language entry named `language` and its effective capability map.
pub fn language_entry(manifest: &Value, language: &str) -> Option<(Value, Value)> {
    let lang = manifest["languages"].as_array()?.iter().find(|l| l["name"] == language)?.clone();
    let mut effective = manifest["capabilities"].as_object().cloned().unwrap_or_default();
    for (k, v) in lang["capabilities"].as_object().into_iter().flatten() {
        effective.insert(k.clone(), v.clone());
    }
    Some((lang, Value::Object(effective)))
}

/// Whether the capability map declares `what`: a capability (`catalog`) or a sub-feature
/// (`catalog.changed_since`).
pub fn declares(effective: &Value, what: &str) -> bool {
    match what.split_once('.') {
        None => match &effective[what] {
            Value::Bool(b) => *b,
            Value::Object(_) => true,
            _ => false,
        },
        Some((cap, sub)) => effective[cap][sub] == json!(true),
    }
}

/// A tool the Host discovered, as the `tools/list` entry the executors read.
fn tool_json(tool: &ToolInfo) -> Value {
    let mut out = json!({"name": tool.name, "inputSchema": tool.input_schema});
    let members = [
        ("description", tool.description.clone().map(Value::from)),
        ("outputSchema", tool.output_schema.clone()),
        ("annotations", tool.annotations.clone()),
        ("_meta", tool.meta.clone()),
    ];
    for (member, value) in members {
        if let Some(value) = value {
            out[member] = value;
        }
    }
    out
}

/// A Host's tool answer as the JSON-RPC response the executors read.
fn response_json(answer: &ToolAnswer) -> Value {
    let mut result = json!({"isError": answer.is_error});
    if let Some(s) = &answer.structured {
        result["structuredContent"] = s.clone();
    }
    json!({"jsonrpc": "2.0", "result": result})
}

/// The Host's typed reading of a loop answer that passed the official schema: a request error
/// reads as a [`RequestFailure`](pilotage::host::RequestFailure) of the same kind (an unknown
/// one as `internal`), a validate or execute result as the Host's response type. A
/// disagreement is a FAIL of the Host, not of the server.
fn typed_reading(name: &str, op: &str, answer: &ToolAnswer) -> Result<(), Stop> {
    if answer.is_error {
        let failure = answer.request_failure();
        let wire = answer.structured.as_ref().and_then(|s| s["error"]["kind"].as_str()).unwrap_or_default();
        ensure!(
            failure.as_ref().is_some_and(|f| f.wire_kind == wire),
            "the Host reads the request error of {name} as {failure:?}, the server sent kind {wire:?}"
        );
        return Ok(());
    }
    let read = match op {
        "validate" => answer.read::<ValidateResponse>(name).map(drop),
        "execute" => answer.read::<ExecuteResponse>(name).map(drop),
        "trace_fetch" => answer.read::<TraceFetchResponse>(name).map(drop),
        "discover" => answer.read::<Value>(name).and_then(pilotage::host::check_manifest).map(drop),
        _ => Ok(()),
    };
    read.map_err(|e| Stop::Fail(format!("the Host cannot read the answer of {name}: {e}")))
}

impl<'a> Ctx<'a> {
    /// Connect and discover through the Host (the extension declared on `initialize`, or,
    /// stateless, in every request), then discover again from `pilotage_manifest` (the
    /// authoritative source; the first discovery may have read the initialize accelerator).
    pub async fn open(
        connector: &'a Connector,
        binding: &'a Binding,
        v: &Vector,
        source: &str,
    ) -> Result<Ctx<'a>, Stop> {
        let host = connector.host().await.map_err(|e| Stop::Fail(format!("the Host cannot connect: {e}")))?;
        host.rediscover().await.map_err(|e| Stop::Fail(format!("pilotage_manifest failed: {e}")))?;
        let manifest = host.manifest_json();
        super::assert::validates(&manifest, "Manifest", "the pilotage_manifest result")?;
        let tools: Vec<Value> = host.tools().iter().map(tool_json).collect();
        let Some((lang, effective)) = language_entry(&manifest, binding.language) else {
            return Err(Stop::Fail(format!(
                "Language {} is not in the manifest: {manifest}",
                binding.language
            )));
        };
        let validate = lang["loop"]["validate"].as_str().unwrap_or_default();
        let argument =
            host.program_argument(validate, binding.language).map_err(|e| Stop::Fail(e.to_string()))?;
        ensure!(
            argument == binding.argument,
            "the server declares program argument `{argument}`, the binding expects `{}`",
            binding.argument
        );
        Ok(Ctx {
            host,
            binding,
            connector,
            manifest,
            lang,
            effective,
            tools,
            argument,
            primary: Vec::new(),
            prose: Prose::new(v),
            evidence: Evidence::default(),
            source: source.to_owned(),
            closed_sets: None,
        })
    }

    /// One `tools/call` of `name` with `args` exactly as given, through [`Host::call_tool`];
    /// the answer as a JSON-RPC response (`result` with `isError` and `structuredContent`, or
    /// the carrier's `error`), the shape every executor reads.
    pub async fn tool_call(&self, name: &str, args: Value) -> Result<Value, Stop> {
        Ok(self.exchange(name, args).await?.0)
    }

    /// As [`Ctx::tool_call`], with the Host's answer (`None` for a carrier error).
    async fn exchange(&self, name: &str, args: Value) -> Result<(Value, Option<ToolAnswer>), Stop> {
        let Value::Object(arguments) = args else {
            return Err(Stop::Fail(format!("the arguments of {name} are not an object: {args}")));
        };
        match self.host.call_tool(name, arguments).await {
            Ok(answer) => Ok((response_json(&answer), Some(answer))),
            Err(HostError::Carrier { code, message }) => {
                Ok((json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}}), None))
            }
            Err(e) => Err(Stop::Fail(format!("{name} through the Host: {e}"))),
        }
    }

    /// The Language identifier.
    pub fn name(&self) -> &'static str {
        self.binding.language
    }

    /// Whether the Language declares `what` (see [`declares`]).
    pub fn declares(&self, what: &str) -> bool {
        declares(&self.effective, what)
    }

    /// The `tools/list` entry of `name`.
    pub fn tool(&self, name: &str) -> Option<&Value> {
        self.tools.iter().find(|t| t["name"] == name)
    }

    /// The tool that binds abstract operation `op`.
    pub fn tool_name(&self, op: &str) -> Result<String, Stop> {
        let name = match op {
            "discover" => Some("pilotage_manifest"),
            "learn" => Some("pilotage_get_guide"),
            "lookup" => Some("pilotage_catalog"),
            "validate" => self.lang["loop"]["validate"].as_str(),
            "execute" => self.lang["loop"]["execute"].as_str(),
            "trace_fetch" => self.lang["loop"]["trace"].as_str(),
            other => return Err(Stop::Fail(format!("unknown operation {other}"))),
        };
        name.map(str::to_owned).ok_or_else(|| {
            Stop::Fail(format!("{} has no loop tool for {op} in its manifest entry", self.name()))
        })
    }

    /// `args` with the abstract `program` member renamed to the declared argument, plus the
    /// members a generic client always sends for this Language: `context` when the Language
    /// requires one, `mode` on execute when it executes in mode `both` (each unless present
    /// or listed in `leave_out`).
    pub fn prepare(&self, op: &str, args: &Value, leave_out: &[&str]) -> Value {
        let mut out = Map::new();
        for (k, v) in args.as_object().into_iter().flatten() {
            let key = if k == "program" { self.argument.clone() } else { k.clone() };
            out.insert(key, v.clone());
        }
        let loop_op = op == "validate" || op == "execute";
        if loop_op && self.lang.get("context_schema").is_some() && !leave_out.contains(&"context") {
            if let Some(c) = &self.binding.context {
                out.entry("context").or_insert_with(|| c.clone());
            }
        }
        if op == "execute" && self.lang["execution"] == "both" && !leave_out.contains(&"mode") {
            out.entry("mode").or_insert_with(|| json!(self.binding.mode));
        }
        Value::Object(out)
    }

    /// `tools/call` of the tool bound to `op` with `args` prepared (see [`Ctx::prepare`]);
    /// the whole JSON-RPC response, its result envelope checked.
    pub async fn call(&mut self, op: &str, args: Value) -> Result<Value, Stop> {
        self.call_leaving(op, args, &[]).await
    }

    /// As [`Ctx::call`], without adding the members listed in `leave_out`.
    pub async fn call_leaving(&mut self, op: &str, args: Value, leave_out: &[&str]) -> Result<Value, Stop> {
        let name = self.tool_name(op)?;
        let args = self.prepare(op, &args, leave_out);
        let (response, answer) = self.exchange(&name, args).await?;
        self.check_envelope(&name, op, &response)?;
        if let Some(answer) = &answer {
            typed_reading(&name, op, answer)?;
        }
        let source = self.source.clone();
        self.evidence.observe(op, &response, &source);
        Ok(response)
    }

    /// As [`Ctx::call`], requiring `isError: false`; the `structuredContent`.
    pub async fn call_ok(&mut self, op: &str, args: Value) -> Result<Value, Stop> {
        let response = self.call(op, args.clone()).await?;
        ensure!(!is_error(&response), "{op} {args} returned a request error: {response}");
        Ok(structured(&response).clone())
    }

    /// The Part III §6 envelope of a Pilotage tool result: `structuredContent` is an object
    /// that satisfies the tool's advertised `outputSchema` and the official
    /// `$defs/<Kind>ToolOutput`; `isError` is a boolean when present.
    fn check_envelope(&self, name: &str, op: &str, response: &Value) -> Result<(), Stop> {
        let Some(result) = response.get("result") else {
            return Ok(());
        };
        ensure!(
            result.get("isError").is_none_or(Value::is_boolean),
            "{name}: isError is not a boolean: {result}"
        );
        let s = &result["structuredContent"];
        ensure!(s.is_object(), "{name}: a Pilotage tool result needs an object structuredContent: {result}");
        let kind = match op {
            "discover" => ToolKind::Manifest,
            "learn" => ToolKind::Guide,
            "lookup" => ToolKind::Catalog,
            "validate" => ToolKind::Validate,
            "execute" => ToolKind::Execute,
            _ => ToolKind::Trace,
        };
        super::assert::validates(s, kind.output_def(), &format!("the structuredContent of {name}"))?;
        if let Some(schema) = self.tool(name).and_then(|t| t.get("outputSchema")) {
            let validator =
                compiled(schema).map_err(|e| Stop::Fail(format!("the outputSchema of {name} {e}")))?;
            if let Some(e) = schemas::errors(&validator, s) {
                return Err(Stop::Fail(format!(
                    "{name}: structuredContent violates the advertised outputSchema:\n{e}"
                )));
            }
        }
        Ok(())
    }

    /// A plain tool call (a hook); its `structuredContent`.
    pub async fn hook(&mut self, hook: &ToolHook) -> Result<Value, Stop> {
        let response = self.tool_call(hook.tool, hook.args.clone()).await?;
        ensure!(
            response.get("result").is_some() && !is_error(&response),
            "hook {} {} failed: {response}",
            hook.tool,
            hook.args
        );
        Ok(structured(&response).clone())
    }

    /// The observable state (`None` for a stateless Language).
    pub async fn observe(&mut self) -> Result<Option<Value>, Stop> {
        match self.binding.observe.clone() {
            Observe::Tool(h) => self.hook(&h).await.map(Some),
            Observe::Stateless(_) => Ok(None),
        }
    }

    /// Bind prose assertion `i` ("no side effects ...") to `before` == the state now.
    pub async fn unchanged(&mut self, i: usize, before: &Option<Value>) -> Result<(), Stop> {
        match (before, self.binding.observe.clone()) {
            (Some(b), _) => {
                let after = self.observe().await?;
                self.prose.check(i, after.as_ref() == Some(b), format!("the world changed: {b} → {after:?}"))
            }
            (None, Observe::Stateless(why)) => {
                self.verify_stateless().await?;
                self.prose.justify(i, format!("stateless Language: {why}"));
                Ok(())
            }
            (None, Observe::Tool(_)) => Err(Stop::Fail("no observation taken before the action".into())),
        }
    }

    /// Check a binding's claim that the Language has no state: the execute tool is annotated
    /// read-only, and (with `plan`) the plan of `<valid-program>` is read-only.
    pub async fn verify_stateless(&mut self) -> Result<(), Stop> {
        if let Some(execute) = self.lang["loop"]["execute"].as_str() {
            let read_only = self.tool(execute).map(|t| t["annotations"]["readOnlyHint"].clone());
            ensure!(
                read_only == Some(json!(true)),
                "the binding claims {} has no state, but `{execute}` is not annotated readOnlyHint: true",
                self.name()
            );
        }
        if self.declares("plan") {
            let program = self.binding.valid.program.clone();
            let verdict = self.call_ok("validate", json!({"program": program})).await?;
            ensure!(
                verdict["plan"]["max_risk_hints"]["readOnly"] == true,
                "the binding claims {} has no state, but the plan of <valid-program> is not read-only: {verdict}",
                self.name()
            );
        }
        Ok(())
    }

    /// The current `catalog_version`.
    pub async fn catalog_version(&mut self) -> Result<String, Stop> {
        let list = self.call_ok("lookup", json!({"language": self.name(), "verb": "list"})).await?;
        list["catalog_version"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| Stop::Fail(format!("a list without catalog_version: {list}")))
    }

    /// The guide index entries.
    pub async fn guide_index(&mut self) -> Result<Vec<Value>, Stop> {
        let index = self.call_ok("learn", json!({"language": self.name()})).await?;
        Ok(index["guides"].as_array().cloned().unwrap_or_default())
    }

    /// The body of the closed-sets guide (the guide whose topics contain `closed-sets`).
    pub async fn closed_sets(&mut self) -> Result<String, Stop> {
        if let Some(s) = &self.closed_sets {
            return Ok(s.clone());
        }
        let index = self.guide_index().await?;
        let guide = index
            .iter()
            .find(|g| g["topics"].as_array().is_some_and(|t| t.iter().any(|t| t == "closed-sets")))
            .ok_or_else(|| Stop::Fail(format!("{} has no closed-sets guide", self.name())))?;
        let id = guide["id"].clone();
        let fetched = self.call_ok("learn", json!({"language": self.name(), "id": id})).await?;
        let body = fetched["guide"]["body"].as_str().unwrap_or_default().to_owned();
        self.closed_sets = Some(body.clone());
        Ok(body)
    }

    /// Whether the closed-sets guide enumerates `member` (as a `code` span).
    pub async fn enumerated(&mut self, member: &str) -> Result<bool, Stop> {
        Ok(self.closed_sets().await?.contains(&format!("`{member}`")))
    }

    /// Run a bound item, or SKIP with the binding's reason.
    pub fn bound<T: Clone>(&self, item: &Bound<T>, what: &str) -> Result<T, Stop> {
        item.clone()
            .map_err(|why| Stop::Skip(format!("{what} is not constructible for {}: {why}", self.name())))
    }

    /// SKIP unless the Language declares `what`.
    pub fn require(&self, what: &str) -> Result<(), Stop> {
        if self.declares(what) {
            Ok(())
        } else {
            Err(Stop::Skip(format!("requires {what}, not declared by {}", self.name())))
        }
    }

    /// The vector's action arguments with every `<placeholder>` bound: `dynamic` first, then
    /// the binding. A placeholder bound to nothing (`<input>` of a program without input)
    /// drops its member.
    pub fn action(&self, v: &Vector, dynamic: &[(&str, Value)]) -> Result<Value, Stop> {
        let mut out = Map::new();
        for (k, value) in v.arguments.as_object().into_iter().flatten() {
            let bound = match value.as_str().filter(|s| s.starts_with('<') && s.ends_with('>')) {
                None => Some(value.clone()),
                Some(p) => match dynamic.iter().find(|(n, _)| *n == p) {
                    Some((_, val)) => Some(val.clone()),
                    None => self.placeholder(p)?,
                },
            };
            if let Some(b) = bound {
                out.insert(k.clone(), b);
            }
        }
        Ok(Value::Object(out))
    }

    fn placeholder(&self, p: &str) -> Result<Option<Value>, Stop> {
        let b = self.binding;
        Ok(match p {
            "<lang>" => Some(json!(b.language)),
            "<valid-program>" => Some(b.valid.program.clone()),
            "<input>" => b.valid.input.clone(),
            "<different-input>" => Some(self.bound(&b.different_input, "<different-input>")?),
            "<invalid-program>" => Some(b.invalid.clone()),
            "<any-program>" => Some(b.valid.program.clone()),
            "<program-with-unknown-name>" => Some(self.bound(&b.unknown_name, p)?),
            "<warning-program>" => Some(self.bound(&b.warnings_only, p)?),
            "<program-with-reserved-char-id>" => Some(self.bound(&b.reserved_char, p)?.program),
            "<pathological-program>" => Some(b.pathological.clone()),
            "<unclassifiable-invalid-program>" => Some(self.bound(&b.unclassifiable, p)?),
            "<branching-program>" => Some(self.bound(&b.branching, p)?.program),
            "<zero-iteration-loop-program>" => Some(self.bound(&b.zero_loop, p)?.program),
            "<mid-run-failing-program>" => Some(self.bound(&b.mid_run_failing, p)?),
            "<cleanly-failing-program>" => Some(self.bound(&b.cleanly_failing, p)?),
            "<invisible-entry-id>" => Some(json!(self.bound(&b.invisible, p)?.id)),
            "<schema-violating-input>" => Some(self.bound(&b.promotion, p)?.bad_input),
            other => return Err(Stop::Fail(format!("placeholder {other} is not bound by the runner"))),
        })
    }
}
