//! A `tools/call` through the gate: a validate call is forwarded and its result kept; an
//! execute call is gated (Part II §7.3); any other tool is forwarded unchanged.
//!
//! A refused execute is never transmitted. The model receives a request error (Part III §7.1:
//! `isError: true`, `structuredContent.error`) of kind `unsupported`, with a message that says
//! who refused and why: not a diagnostic (`valid: false` would tell the model to fix the
//! program) and not an outcome (`ok: false` would claim a Run that never existed).

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolResult, ClientRequest, ErrorData, InputRequiredResult, InputResponses,
    ServerResult,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::ask::{self, Answer, Question};
use crate::evidence::{self, key, Evidence};
use crate::proxy::{stateless, Inner, OWN_CALL_TIMEOUT};
use crate::rounds::{self, Pending};
use crate::surface::{ProgramTool, Surface};

/// The upstream's surface, learned now when not known (at the first call, and after the
/// server said its tool list changed).
async fn surface(inner: &Inner) -> Result<Arc<Surface>, ErrorData> {
    let mut known = inner.surface.lock().await;
    if let Some(surface) = &*known {
        return Ok(surface.clone());
    }
    inner.surface_stale.store(false, std::sync::atomic::Ordering::Release);
    let peer = &inner.upstream()?.peer;
    let tools = tokio::time::timeout(OWN_CALL_TIMEOUT, peer.list_all_tools())
        .await
        .map_err(|_| ErrorData::internal_error("gate: the server did not list its tools in time", None))?
        .map_err(|e| ErrorData::internal_error(format!("gate: listing the server's tools: {e}"), None))?;
    let manifest = match inner.call("pilotage_manifest", json!({})).await {
        Ok(result) if result.is_error != Some(true) => result.structured_content.unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let surface = Arc::new(Surface::new(&tools, &manifest));
    *known = Some(surface.clone());
    Ok(surface)
}

/// What the gate does with one execute.
enum Verdict {
    /// Forward it, with this catalog version (when the tool takes one).
    Forward(Option<String>),
    /// Answer the model with this refusal; nothing is transmitted.
    Refuse(CallToolResult),
    /// Ask a stateless host first: this input-required result carries the question.
    Ask(InputRequiredResult),
}

/// Serve one `tools/call` from the host.
pub async fn call(
    inner: &Arc<Inner>,
    mut call: CallToolRequest,
    context: RequestContext<RoleServer>,
) -> Result<ServerResult, ErrorData> {
    let surface = surface(inner).await?;
    let name = call.params.name.to_string();
    let Some(tool) = surface.programs.get(&name) else {
        return inner.forward(ClientRequest::CallToolRequest(call), context).await;
    };
    let arguments = Value::Object(call.params.arguments.clone().unwrap_or_default());
    if tool.validates {
        let result = inner.forward(ClientRequest::CallToolRequest(call), context).await?;
        keep(inner, &surface, tool, &arguments, &result);
        return Ok(result);
    }
    // The answer to a question the gate asked a stateless host is the gate's, never the server's.
    let state = call.params.request_state.take();
    let responses = call.params.input_responses.take();
    let verdict = match state {
        Some(state) => answered(inner, tool, &name, &arguments, &state, responses.as_ref()),
        None => gate(inner, &surface, tool, &name, &arguments, &context).await?,
    };
    match verdict {
        Verdict::Forward(catalog_version) => {
            let args = call.params.arguments.as_mut().filter(|_| tool.takes_version);
            if let (Some(version), Some(args)) = (catalog_version, args) {
                args.insert("expected_catalog_version".into(), Value::String(version));
            }
            inner.forward(ClientRequest::CallToolRequest(call), context).await
        }
        Verdict::Refuse(refusal) => Ok(ServerResult::CallToolResult(refusal)),
        Verdict::Ask(question) => Ok(ServerResult::InputRequiredResult(question)),
    }
}

/// The retry of a stateless host that carries the answer to the question `state` names.
fn answered(
    inner: &Inner,
    program_tool: &ProgramTool,
    tool: &str,
    arguments: &Value,
    state: &str,
    responses: Option<&InputResponses>,
) -> Verdict {
    match inner.rounds.answered(state, &rounds::call_digest(tool, arguments)) {
        Ok(p) => {
            let (decision, by) = person(rounds::read(responses));
            let q = Question {
                server: &p.server,
                language: &p.language,
                tool: &p.tool,
                program: p.program.as_ref(),
                program_ref: p.program_ref.as_deref(),
                evidence: &p.evidence,
            };
            conclude(inner, &q, decision, by)
        }
        Err(why) => {
            let server = inner.upstream().map(|c| c.info.server_info.name.clone()).unwrap_or_default();
            let evidence = Evidence::missing(why);
            let program = arguments.get(&program_tool.argument);
            let program_ref = arguments["program_ref"].as_str();
            let q =
                Question { server: &server, language: "", tool, program, program_ref, evidence: &evidence };
            conclude(inner, &q, "unasked", why.to_owned())
        }
    }
}

/// The decision and who made it, from the person's answer.
fn person(answer: Answer) -> (&'static str, String) {
    let by = "the person, through the host (elicitation)".to_owned();
    match answer {
        Answer::Approved => ("approved", by),
        Answer::Declined => ("declined", by),
        Answer::Cancelled => ("cancelled", by),
        Answer::Unasked(why) => ("unasked", why),
    }
}

/// Keep a validate result for the program it judged.
fn keep(inner: &Inner, surface: &Surface, tool: &ProgramTool, arguments: &Value, result: &ServerResult) {
    let ServerResult::CallToolResult(result) = result else { return };
    let (Some(response), false) = (&result.structured_content, result.is_error == Some(true)) else { return };
    let Some(language) = surface.language_of(tool, arguments) else { return };
    let program = &arguments[tool.argument.as_str()];
    let Ok(response) = serde_json::value::to_raw_value(response) else { return };
    inner.validations.keep(language, program, &arguments["context"], response);
}

/// The decision on one execute.
async fn gate(
    inner: &Inner,
    surface: &Surface,
    tool: &ProgramTool,
    name: &str,
    arguments: &Value,
    context: &RequestContext<RoleServer>,
) -> Result<Verdict, ErrorData> {
    let server = inner.upstream()?.info.server_info.name.clone();
    let present = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    let program = present(arguments.get(&tool.argument));
    let program_ref = present(arguments.get("program_ref"));
    let id = program_ref.as_ref().and_then(Value::as_str).map(str::to_owned);
    let (language, evidence) = match surface.language_of(tool, arguments) {
        None => (String::new(), Evidence::missing("the manifest declares no Language for this tool")),
        Some(language) => {
            let evidence = match (&program, &program_ref) {
                (Some(program), None) => {
                    evidence::inline(inner, language, &tool.argument, program, &arguments["context"]).await?
                }
                (None, Some(Value::String(id))) => evidence::promoted(inner, language, id).await?,
                _ => {
                    let message =
                        format!("give exactly one of `{}` and `program_ref` (a string)", tool.argument);
                    return Ok(Verdict::Refuse(refusal("invalid_request", &message)));
                }
            };
            (language.name.clone(), evidence)
        }
    };
    let q = Question {
        server: &server,
        language: &language,
        tool: name,
        program: program.as_ref(),
        program_ref: id.as_deref(),
        evidence: &evidence,
    };
    let (decision, by) = if let Some(settled) = settled(inner, &q) {
        settled
    } else if stateless(&context.meta) {
        // No server-to-client request on this revision: the question is the call's result.
        let can_ask = context.meta.client_capabilities().is_some_and(|c| c.elicitation.is_some());
        let asked: Result<(), String> = match (can_ask, ask::params(&q)) {
            (false, _) => {
                Err("the host does not support elicitation, so the person could not be asked".to_owned())
            }
            (true, Err(e)) => Err(e),
            (true, Ok(params)) => {
                let pending = Pending {
                    call: rounds::call_digest(name, arguments),
                    server: server.clone(),
                    language: language.clone(),
                    tool: name.to_owned(),
                    program: program.clone(),
                    program_ref: id.clone(),
                    evidence,
                };
                return Ok(match inner.rounds.ask(pending, params) {
                    Ok(question) => Verdict::Ask(question),
                    Err(why) => Verdict::Refuse(refusal("internal", &why)),
                });
            }
        };
        ("unasked", asked.err().unwrap_or_default())
    } else {
        person(ask::ask(inner.host(), &q, inner.ask_timeout, context.ct.cancelled()).await)
    };
    Ok(conclude(inner, &q, decision, by))
}

/// The decision on `q` that needs nobody to be asked, and who made it: refused (the validation
/// stands with an error), safe (no approval needed), or approved by the policy; `None` when
/// the person must be asked.
fn settled(inner: &Inner, q: &Question<'_>) -> Option<(&'static str, String)> {
    let evidence = q.evidence;
    if evidence.invalid {
        Some((
            "refused_invalid",
            "the gate: the validation stands with error-severity diagnostics".to_owned(),
        ))
    } else if !evidence.risk.needs_approval() {
        Some(("safe", "nobody: no approval needed".to_owned()))
    } else if inner.policy.approves(q.server, q.language, evidence.risk) {
        Some(("approved", format!("policy {}", inner.policy.file())))
    } else {
        None
    }
}

/// The fast path's decision on an execute of `name` with `arguments` (each member's text as
/// the host wrote it; the splice decides it without rmcp, on its own thread): the catalog
/// version to forward it with, when the decision is made from what the gate already holds (the
/// surface, the kept validation of this exact inline program in a Language with a plan) and
/// lets it through (safe, or approved by the policy), its audit line written. `None` leaves the
/// call to [`call`], which asks the person, validates, looks entries up or refuses; nothing is
/// written then.
pub fn settled_forward(
    inner: &Inner,
    surface: &Surface,
    tool: &ProgramTool,
    name: &str,
    arguments: &HashMap<&str, &RawValue>,
) -> Option<Option<String>> {
    let text = |member: &str| arguments.get(member).map(|raw| raw.get()).filter(|t| *t != "null");
    let named = text("language").and_then(|l| serde_json::from_str::<String>(l).ok());
    let language = surface.language_named(tool, named.as_deref())?;
    let program = text(&tool.argument)?;
    if text("program_ref").is_some() {
        return None;
    }
    let context = text("context").unwrap_or("null");
    // The judgment made when the validation of this exact program was kept (a Language that
    // declares a plan, now as then). Its key is the program's and context's canonical text: the
    // text as written matches it when the host wrote them so (as serde_json and most peers do);
    // otherwise they are read and written canonically.
    let kept =
        inner.validations.get(&evidence::key_text(&language.name, program, context)).or_else(|| {
            let program: Value = serde_json::from_str(program).ok()?;
            let context: Value = serde_json::from_str(context).ok()?;
            inner.validations.get(&key(&language.name, &program, &context))
        })?;
    let judged = kept.judged.as_ref().filter(|_| language.plan)?;
    let server = &inner.upstream().ok()?.info.server_info.name;
    // No question is asked here; the program's digest was made when its validation was kept.
    let q = Question {
        server,
        language: &language.name,
        tool: name,
        program: None,
        program_ref: None,
        evidence: &judged.evidence,
    };
    let (decision, by) = settled(inner, &q).filter(|(decision, _)| *decision != "refused_invalid")?;
    match answer(inner, &q, decision, by, &judged.digest, &judged.members) {
        Verdict::Forward(version) => Some(version),
        Verdict::Refuse(_) | Verdict::Ask(_) => None,
    }
}

/// Write the audit line of `decision` (made by `by`) on `q`, and answer.
fn conclude(inner: &Inner, q: &Question<'_>, decision: &str, by: String) -> Verdict {
    let digest = evidence::digest(q.program, q.program_ref);
    answer(inner, q, decision, by, &digest, &q.evidence.audit_members())
}

/// [`conclude`] with the program's `digest` and the evidence's audit `members` made already.
fn answer(
    inner: &Inner,
    q: &Question<'_>,
    decision: &str,
    by: String,
    digest: &str,
    members: &str,
) -> Verdict {
    let evidence = q.evidence;
    /// The members of an audit line that come from the question and the decision.
    #[derive(Serialize)]
    struct Head<'a> {
        gate: &'a str,
        by: &'a str,
        server: &'a str,
        language: &'a str,
        tool: &'a str,
        program_sha256: &'a str,
        program_ref: Option<&'a str>,
    }
    let head = Head {
        gate: decision,
        by: &by,
        server: q.server,
        language: q.language,
        tool: q.tool,
        program_sha256: digest,
        program_ref: q.program_ref,
    };
    let mut line = serde_json::to_string(&head).unwrap_or_else(|_| "{}".into());
    line.pop();
    line.push(',');
    line.push_str(members);
    line.push('}');
    inner.audit.line(&line);
    let why = match decision {
        "safe" | "approved" => return Verdict::Forward(evidence.catalog_version.clone()),
        "refused_invalid" => {
            "the program's validation stands with error-severity diagnostics (validate it and fix them first)"
                .to_owned()
        }
        "declined" => format!("the person declined to approve it (risk: {})", evidence.risk.words()),
        "cancelled" => {
            format!("the person cancelled the approval question (risk: {})", evidence.risk.words())
        }
        _ => {
            format!("approval is required (risk: {}) and could not be obtained: {by}", evidence.risk.words())
        }
    };
    let message = format!(
        "The Host's risk gate did not run this program: {why}. Nothing was sent to the server and no run exists; \
         this is not a finding about the program and not a failed run. Do not retry it unchanged without the person's approval."
    );
    Verdict::Refuse(refusal("unsupported", &message))
}

/// A request error the gate answers itself (Part III §7.2 shape).
fn refusal(kind: &str, message: &str) -> CallToolResult {
    let structured = json!({ "error": { "kind": kind, "message": message } });
    serde_json::from_value(json!({
        "content": [{ "type": "text", "text": structured.to_string() }],
        "structuredContent": structured,
        "isError": true,
    }))
    .unwrap_or_else(|_| CallToolResult::error(Vec::new()))
}
