//! Plain tools: ordinary MCP tools an engine exposes beside the loop (admin tools that change
//! the catalog, fingerprints of the world). They get no Pilotage semantics: an object result,
//! or `{"result": v}` around any other value; an error is `{"error": message}`. Arguments a
//! typed tool cannot read are the caller's fault, answered like schema-invalid arguments.

use serde_json::{json, Value};

use super::{Args, Ctx, Reply};
use crate::engine::call::value_size;
use crate::engine::PlainToolError;
use crate::model::errors::{ErrorKind, RequestError};

/// Call plain tool `name` of the Language in `ctx`; `Err` (why) when the arguments do not fit
/// the tool's parameter type.
pub(crate) async fn plain(ctx: Ctx<'_>, name: &str, args: &Args) -> Result<Reply, String> {
    let (engine, tool, caller) = (ctx.engine(), name.to_owned(), ctx.session.caller.clone());
    let arguments = Value::Object(args.clone());
    let call = ctx.tool_call();
    let answer = match call.run(move || engine.call_plain_tool(&tool, &arguments, &caller)).await {
        Ok(answer) => answer,
        Err(end) => return Ok(Reply::error(super::call_failed(&ctx, &format!("tool {name}"), &call, end))),
    };
    let bound = ctx.lang.limits.max_run_bytes;
    let size = match &answer {
        Some(Ok(v)) => value_size(v),
        _ => 0,
    };
    Ok(match answer {
        Some(Ok(_)) if size > bound => Reply::error(RequestError::new(
            ErrorKind::BoundsExceeded,
            format!("the answer of tool {name} is {size} bytes; the bound is {bound}"),
        )),
        Some(Ok(v)) => {
            let v = if v.is_object() { v } else { json!({ "result": v }) };
            Reply { text: v.to_string(), structured: v, ..Reply::default() }
        }
        Some(Err(PlainToolError::Failed(message))) => Reply {
            structured: json!({ "error": message }),
            text: message,
            is_error: true,
            ..Reply::default()
        },
        Some(Err(PlainToolError::InvalidArguments(why))) => return Err(why),
        None => Reply::error(RequestError::internal(format!("engine has no tool {name}"))),
    })
}
