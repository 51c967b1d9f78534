//! One `tools/call` routed to its operation: the tool by name, the structural check against
//! its advertised `inputSchema`, the operation in `ops`, the envelope. Shared by the handler
//! (a plain call) and the tasks (an execute that runs as a task).

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::ErrorData as McpError;
use serde_json::Value;

use super::tools::{Route, Stage};
use super::Shared;
use crate::model::errors::RequestError;
use crate::model::execution::ExecuteResponse;
use crate::model::manifest::EXTENSION_ID;
use crate::model::plan::ValidateResponse;
use crate::model::trace::TraceFetchResponse;
use crate::ops::watch::Watch;
use crate::ops::{self, Args, Ctx, LoopArgs, OpResult, Reply};
use crate::state::session::Session;

/// Serve one `tools/call`, an execute watched by `watch`. `Err` is the carrier channel.
pub(super) async fn call(
    shared: &Shared,
    session: &Arc<Session>,
    name: &str,
    args: Args,
    watch: &Watch,
) -> Result<Reply, McpError> {
    // The time the request waits for engine slots (and its engine for its own resources) is
    // reported with its result.
    let (reply, queued) = ops::call::queue_counted(routed(shared, session, name, args, watch)).await;
    reply.map(|reply| Reply { queued, ..reply })
}

/// [`call`], not counting its queue time.
async fn routed(
    shared: &Shared,
    session: &Arc<Session>,
    name: &str,
    args: Args,
    watch: &Watch,
) -> Result<Reply, McpError> {
    let Some(entry) = shared.tool(name) else {
        return Err(McpError::invalid_params(format!("Unknown tool: {name}"), None));
    };
    let as_value = Value::Object(args);
    if let Some(fault) = entry.input.first_fault(&as_value) {
        return Err(McpError::invalid_params(
            format!("Invalid arguments for tool {name}: {} (at '{}')", fault.message, fault.path),
            None,
        ));
    }
    let Value::Object(args) = as_value else {
        return Err(McpError::invalid_params("arguments must be an object", None));
    };
    let ctx = |index: usize| {
        tracing::Span::current().record("language", shared.langs[index].spec.name);
        Ctx { lang: &shared.langs[index], index, session, stores: &shared.stores, slots: &shared.slots }
    };
    let reply = match &entry.route {
        Route::Manifest => Reply::value(&*shared.manifest, shared.manifest_summary.clone()),
        Route::Guide => ops::learn::guide(&shared.langs, &args),
        Route::Catalog => match ops::by_name(&shared.langs, &args) {
            Ok((l, _)) => ops::lookup::lookup(ctx(l), &args).await,
            Err(e) => Reply::error(e),
        },
        Route::Loop(stage, langs) => match select(shared, langs, &args) {
            Err(e) => Reply::error(e),
            Ok(l) => {
                let args = LoopArgs::take(args, shared.langs[l].spec.program_argument);
                match stage {
                    Stage::Validate => {
                        let validated = ops::validate::validate(ctx(l), args).await;
                        Reply::moved(validated, ops::validate::summary, ValidateResponse::into_value)
                    }
                    Stage::Execute => {
                        // Boxed: the largest operation's state, which every other call's
                        // future would otherwise carry (and copy) too.
                        let executed = Box::pin(ops::execute::execute(ctx(l), args, watch)).await;
                        Reply::moved(executed, ops::execute::summary, ExecuteResponse::into_value)
                    }
                }
            }
        },
        Route::Trace(l) => {
            let fetched = ops::trace_fetch::trace_fetch(ctx(*l), &args).await;
            let text = |v: &TraceFetchResponse| format!("run {}: {}", v.run_id, v.outcome.status());
            Reply::moved(fetched, text, TraceFetchResponse::into_value)
        }
        Route::Promote(l) => {
            let args = LoopArgs::take(args, shared.langs[*l].spec.program_argument);
            ops::promote::promote(ctx(*l), args).await
        }
        Route::Plain(l) => ops::plain::plain(ctx(*l), name, &args).await.map_err(|why| {
            McpError::invalid_params(format!("Invalid arguments for tool {name}: {why}"), None)
        })?,
    };
    if cfg!(debug_assertions) && !matches!(entry.route, Route::Plain(_) | Route::Promote(_)) {
        if let Some(fault) = entry.output.as_ref().and_then(|check| check.first_fault(&reply.structured)) {
            let fault = format!("{} (at '{}')", fault.message, fault.path);
            tracing::error!(tool = name, %fault, "result does not match the advertised outputSchema");
            return Ok(Reply::error(RequestError::internal(format!(
                "result of {name} does not match its outputSchema: {fault}"
            ))));
        }
    }
    Ok(reply)
}

/// The Language a loop tool call is for: the tool's only Language, or, on a shared tool, the
/// one whose program argument is present (exactly one must be).
pub(super) fn select(shared: &Shared, langs: &[usize], args: &Args) -> OpResult<usize> {
    if let [only] = langs {
        return Ok(*only);
    }
    let argument = |l: &usize| shared.langs[*l].spec.program_argument;
    let present: Vec<usize> = langs.iter().copied().filter(|l| args.contains_key(argument(l))).collect();
    match present.as_slice() {
        [one] => Ok(*one),
        _ => {
            let choices: Vec<String> =
                langs.iter().map(|l| format!("`{}` ({})", argument(l), shared.langs[*l].spec.name)).collect();
            Err(RequestError::invalid(format!(
                "this tool serves several Languages: supply exactly one program argument of {}",
                choices.join(", ")
            )))
        }
    }
}

/// The MCP envelope of a reply: its summary as the text content (never the structured value
/// stringified only to be replaced, as `CallToolResult::structured` would), and, for a request
/// that waited a millisecond or more for engine slots (or its engine for its own resources),
/// `_meta: {"io.github.jafarsa0/pilotage": {"queued_ms": N}}`: never inside
/// `structuredContent`, so the official output schemas hold as they are.
pub(super) fn envelope(reply: Reply) -> CallToolResult {
    let content = vec![ContentBlock::text(reply.text)];
    let mut r =
        if reply.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    r.structured_content = Some(reply.structured);
    if let Ok(ms @ 1..) = u64::try_from(reply.queued.as_millis()) {
        let mut meta = rmcp::model::JsonObject::new();
        meta.insert(EXTENSION_ID.to_owned(), serde_json::json!({ "queued_ms": ms }));
        r.meta = Some(rmcp::model::MetaObject(meta));
    }
    r
}
