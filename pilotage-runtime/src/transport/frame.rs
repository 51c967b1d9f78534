//! Judging one incoming JSON-RPC frame before rmcp sees it, shared by the stdio transport and
//! the HTTP POST adapter.
//!
//! rmcp answers a frame it cannot read as a client message with an `Invalid request` error
//! that has no `id`, even when the frame is a notification (which JSON-RPC 2.0 §4.1 forbids
//! answering) or carries a readable id (which §5 requires echoing). [`judge`] decides first:
//!
//! * a frame rmcp can read goes on ([`Judged::Message`]): this typed parse is the only full
//!   parse of an ordinary frame;
//! * a frame that is not JSON gets `-32700`, JSON that is not an object `-32600`, both with
//!   `id: null` (§5);
//! * a notification, valid or not (an object with a string `method` and no `id`), gets no
//!   reply ([`Judged::Silent`]);
//! * any other object gets `-32600` (not a JSON-RPC 2.0 request), or `-32602` (a request whose
//!   params do not fit its method), with its id wherever the id is readable; an id that is
//!   neither a string nor an integer rmcp can echo exactly (`1.5`, `18446744073709551616`), or
//!   a member given twice (two `id`s), is `-32600` with `id: null`, never `-32602`.
//!
//! A frame nested deeper than a JSON parser's recursion limit (serde_json stops at 128
//! levels) cannot be parsed at all. A cheap byte scan measures the depth of every frame; a
//! deeper one is checked and read without recursion, and a `tools/call` among them is
//! answered as the runtime answers any over-deep program: a `bounds_exceeded` tool result.

use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientRequest, ContentBlock, NumberOrString, ServerJsonRpcMessage,
    ServerResult,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{invalid_request, parse_error};
use crate::engine::Limits;
use crate::model::errors::{ErrorKind, RequestError};

/// The deepest frame handed to a JSON parser: serde_json refuses 128 levels.
pub(crate) const MAX_PARSE_DEPTH: usize = 127;
/// Levels a tool argument sits below the frame: message, `params`, `arguments`.
const ARGUMENT_LEVELS: usize = 3;

/// What to do with one frame.
#[derive(Debug)]
pub(crate) enum Judged {
    /// A client message rmcp can take.
    Message(Box<ClientJsonRpcMessage>),
    /// Answer with this JSON-RPC message; nothing reaches rmcp.
    Reply(Value),
    /// A notification rmcp cannot take: no reply (JSON-RPC 2.0 §4.1).
    Silent,
}

/// Judges `text`, one frame without its line ending or byte order mark. `result_type`: a
/// result answered here carries `resultType` (MCP 2026-07-28 and later; rmcp leaves it out
/// for peers on earlier revisions).
pub(crate) fn judge(text: &[u8], result_type: bool) -> Judged {
    let depth = nesting_depth(text);
    if depth > MAX_PARSE_DEPTH {
        return judge_deep(text, depth, result_type);
    }
    if let Some(message) = tool_call(text) {
        return Judged::Message(Box::new(message));
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(text) {
        Ok(message) => Judged::Message(Box::new(message)),
        Err(typed) => match serde_json::from_slice::<Value>(text) {
            Ok(value) => refuse(text, &value, &typed),
            Err(e) => Judged::Reply(parse_error(e)),
        },
    }
}

/// A `tools/call` whose `arguments` is an object, read as rmcp reads it but without its
/// buffering of the arguments: rmcp's message parse buffers every member into serde's private
/// content tree and clones the buffered `params` once more, so its cost grows with the
/// arguments (about half the CPU of a call with a 27 KB program). Here rmcp parses the frame
/// with `{}` in place of the arguments, and they are parsed straight into their map, once.
/// `None` for any other frame, or any that does not parse this way: [`judge`] then parses it
/// whole, so every error is rmcp's (or ours) exactly as before.
fn tool_call(text: &[u8]) -> Option<ClientJsonRpcMessage> {
    let (rest, raw) = split_arguments(text)?;
    let mut message: ClientJsonRpcMessage = serde_json::from_slice(&rest).ok()?;
    let ClientJsonRpcMessage::Request(request) = &mut message else { return None };
    let ClientRequest::CallToolRequest(call) = &mut request.request else { return None };
    call.params.arguments = Some(serde_json::from_str(raw).ok()?);
    Some(message)
}

/// A `tools/call` frame with `{}` in place of its `arguments` object, and that object's text;
/// `None` for any other frame.
fn split_arguments(text: &[u8]) -> Option<(Vec<u8>, &str)> {
    #[derive(Deserialize)]
    struct Frame<'a> {
        #[serde(borrow)]
        method: &'a str,
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: &'a serde_json::value::RawValue,
    }
    let frame: Frame<'_> = serde_json::from_slice(text).ok()?;
    let raw = frame.params.arguments.get();
    if frame.method != "tools/call" || !raw.starts_with('{') {
        return None;
    }
    // Where the arguments lie in the frame (the raw value borrows from it).
    let start = (raw.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start.checked_add(raw.len()).filter(|&end| end <= text.len())?;
    let mut rest = Vec::with_capacity(text.len() - raw.len() + 2);
    rest.extend_from_slice(&text[..start]);
    rest.extend_from_slice(b"{}");
    rest.extend_from_slice(&text[end..]);
    Some((rest, raw))
}

/// The HTTP edge's way around rmcp's buffering of a `tools/call`'s arguments, where rmcp parses
/// the frame itself: the frame with `{}` in place of its `arguments` object (for rmcp), and
/// the arguments parsed straight into their map, once (for the handler, which takes them from
/// the request's head: [`crate::server::LiftedArguments`]). `None` for any other frame, or one
/// whose arguments do not parse alone: it then goes to rmcp whole, as before.
#[cfg(feature = "http")]
pub(crate) fn lift_arguments(text: &[u8]) -> Option<(Vec<u8>, rmcp::model::JsonObject)> {
    let (rest, raw) = split_arguments(text)?;
    Some((rest, serde_json::from_str(raw).ok()?))
}

/// What the HTTP edge reads of a frame before rmcp parses it: the request id and whether it is
/// an `initialize` request. Read without building the frame's tree (every other member is
/// skipped), so an ordinary frame is parsed into a message only once, by rmcp.
#[cfg(feature = "http")]
#[derive(Debug, PartialEq)]
pub(crate) struct Probe {
    /// The request id (`null` for a notification or a response).
    pub(crate) id: Value,
    /// Whether the frame is an `initialize` request.
    pub(crate) initialize: bool,
    /// Whether the frame is a `ping` request.
    pub(crate) ping: bool,
}

/// The [`Probe`] of `text`, or `None` when it is not a JSON object with a well-typed `id` and
/// `method` within the parse depth: such a frame goes to [`judge`] instead.
#[cfg(feature = "http")]
pub(crate) fn probe(text: &[u8]) -> Option<Probe> {
    #[derive(Deserialize)]
    struct Shape<'a> {
        id: Option<NumberOrString>,
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    if nesting_depth(text) > MAX_PARSE_DEPTH {
        return None;
    }
    let shape: Shape<'_> = serde_json::from_slice(text).ok()?;
    let request = |name: &str| shape.id.is_some() && shape.method.as_deref() == Some(name);
    let (initialize, ping) = (request("initialize"), request("ping"));
    let id = shape.id.and_then(|id| serde_json::to_value(id).ok()).unwrap_or(Value::Null);
    Some(Probe { id, initialize, ping })
}

/// The answer to JSON that rmcp could not read as a client message (`why`); `text` is the
/// frame `value` was parsed from.
fn refuse(text: &[u8], value: &Value, why: &serde_json::Error) -> Judged {
    if is_notification(value) {
        tracing::debug!(error = %why, "dropping a notification rmcp cannot read");
        return Judged::Silent;
    }
    if let Some(name) = repeated_member(text) {
        // Which of two ids is meant cannot be known: neither is echoed.
        let message = format!("Invalid Request: member `{name}` appears more than once");
        return Judged::Reply(error_reply(Value::Null, -32600, message));
    }
    if let Some(reply) = invalid_request(value) {
        return Judged::Reply(reply);
    }
    let (id, method) = (&value["id"], value["method"].as_str());
    match method {
        Some(method) if NumberOrString::deserialize(id).is_ok() => {
            let message = format!("Invalid params: {}", params_fault(method, &value["params"]));
            Judged::Reply(error_reply(id.clone(), -32602, message))
        }
        Some(_) => Judged::Reply(error_reply(Value::Null, -32600, BAD_ID.to_owned())),
        None => Judged::Reply(error_reply(id.clone(), -32600, format!("Invalid Request: {why}"))),
    }
}

/// Why a request id that cannot be echoed exactly is refused.
const BAD_ID: &str = "Invalid Request: a request id is a string or an integer (at most 2^63 - 1)";

/// The first top-level member of the object `text` (valid JSON) that appears more than once,
/// cut for the message.
fn repeated_member(text: &[u8]) -> Option<String> {
    let top = members(text)?;
    let mut seen = std::collections::HashSet::new();
    let name = top.into_iter().map(|(key, _)| key).find(|key| !seen.insert(key.clone()))?;
    Some(name.chars().take(64).collect())
}

/// Why `params` do not fit the request `method` (rmcp's own message says only that the frame
/// is not a message it knows).
fn params_fault(method: &str, params: &Value) -> String {
    if !matches!(params, Value::Object(_) | Value::Null) {
        return format!("the params of {method} must be an object");
    }
    match ClientRequest::deserialize(&json!({"method": method, "params": params})) {
        Err(e) => format!("the params of {method} do not fit it: {e}"),
        Ok(_) => format!("the params of {method} do not fit it"),
    }
}

/// A notification, valid or not: an object with a string `method` and no `id` member.
fn is_notification(value: &Value) -> bool {
    value.as_object().is_some_and(|m| !m.contains_key("id") && m.get("method").is_some_and(Value::is_string))
}

fn error_reply(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The deepest nesting of arrays and objects in `text` (brackets inside strings, escapes
/// included, do not count). One pass, no allocation; valid JSON or not.
pub(crate) fn nesting_depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &byte in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A frame deeper than [`MAX_PARSE_DEPTH`]: checked and read without a parser.
fn judge_deep(text: &[u8], depth: usize, result_type: bool) -> Judged {
    if let Err(e) = check_syntax(text) {
        return Judged::Reply(parse_error(e));
    }
    let Some(top) = members(text) else {
        return Judged::Reply(error_reply(
            Value::Null,
            -32600,
            "Invalid Request: not a JSON-RPC 2.0 message".into(),
        ));
    };
    let field = |name: &str| top.iter().rev().find(|(key, _)| key == name).map(|(_, span)| *span);
    let id = field("id").map(|span| shallow(span).filter(|v| NumberOrString::deserialize(v).is_ok()));
    let method = field("method").and_then(shallow).and_then(|v| v.as_str().map(str::to_owned));
    if id.is_none() && method.is_some() {
        tracing::debug!(depth, "dropping an over-deep notification");
        return Judged::Silent;
    }
    let id = id.flatten().unwrap_or(Value::Null);
    let version_ok = field("jsonrpc").and_then(shallow) == Some(json!("2.0"));
    if version_ok && !id.is_null() && method.as_deref() == Some("tools/call") {
        if let Some(reply) = field("params").and_then(|params| deep_tool_call(&id, params, result_type)) {
            return Judged::Reply(reply);
        }
    }
    let message =
        format!("Invalid Request: the message nests {depth} levels deep; at most {MAX_PARSE_DEPTH} are read");
    Judged::Reply(error_reply(id, -32600, message))
}

/// The `bounds_exceeded` result of a `tools/call` whose `params` nest too deep to parse, when
/// the deepest part is a tool argument; `None` otherwise.
fn deep_tool_call(id: &Value, params: &[u8], result_type: bool) -> Option<Value> {
    let params = members(params)?;
    let field = |name: &str| params.iter().rev().find(|(key, _)| key == name).map(|(_, span)| *span);
    field("name").and_then(shallow).filter(Value::is_string)?;
    let arguments = members(field("arguments")?)?;
    let (argument, depth) =
        arguments.iter().map(|(key, span)| (key, nesting_depth(span))).max_by_key(|(_, depth)| *depth)?;
    if depth + ARGUMENT_LEVELS <= MAX_PARSE_DEPTH {
        return None;
    }
    let bound = Limits::default().max_depth;
    let message = format!("argument `{argument}` nests {depth} levels deep; the bound is {bound}");
    let error = RequestError::new(ErrorKind::BoundsExceeded, message.clone());
    let mut result = CallToolResult::structured_error(serde_json::to_value(&error).ok()?);
    result.content = vec![ContentBlock::text(message)];
    let id = match id {
        Value::String(s) => NumberOrString::String(s.as_str().into()),
        other => NumberOrString::Number(other.as_i64()?),
    };
    let mut result = ServerResult::CallToolResult(result);
    if !result_type {
        result.strip_result_type_for_legacy_peer();
    }
    let response = ServerJsonRpcMessage::response(result, id);
    serde_json::to_value(response).ok()
}

/// `span` parsed, when it is shallow enough for the parser.
fn shallow(span: &[u8]) -> Option<Value> {
    (nesting_depth(span) <= MAX_PARSE_DEPTH).then(|| serde_json::from_slice(span).ok()).flatten()
}

/// The members of the object `text` (whose syntax is already checked) as key and value span,
/// in order; `None` when `text` is not an object.
fn members(text: &[u8]) -> Option<Vec<(String, &[u8])>> {
    let mut i = skip_ws(text, 0);
    if text.get(i) != Some(&b'{') {
        return None;
    }
    let mut found = Vec::new();
    i = skip_ws(text, i + 1);
    while text.get(i) == Some(&b'"') {
        let key_end = string_end(text, i).ok()?;
        let key: String = serde_json::from_slice(&text[i..key_end]).ok()?;
        let start = skip_ws(text, skip_ws(text, key_end) + 1);
        let end = value_end(text, start);
        found.push((key, trim_end(&text[start..end])));
        i = skip_ws(text, end);
        if text.get(i) == Some(&b',') {
            i = skip_ws(text, i + 1);
        }
    }
    Some(found)
}

/// Where the value starting at `start` ends: the `,`, `}` or `]` closing it, or the end.
fn value_end(text: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while let Some(&byte) = text.get(i) {
        match byte {
            b'"' => {
                i = string_end(text, i).unwrap_or(text.len());
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return i,
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    text.len()
}

fn skip_ws(text: &[u8], mut i: usize) -> usize {
    while text.get(i).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

fn trim_end(mut span: &[u8]) -> &[u8] {
    while let [rest @ .., b' ' | b'\t' | b'\n' | b'\r'] = span {
        span = rest;
    }
    span
}

/// What a JSON syntax check expects next.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    Value,
    Key,
    AfterValue,
}

/// Checks that `text` is exactly one JSON value (RFC 8259), with an explicit stack instead of
/// recursion, so that any depth is fine.
pub(crate) fn check_syntax(text: &[u8]) -> Result<(), String> {
    std::str::from_utf8(text).map_err(|e| e.to_string())?;
    let mut open: Vec<u8> = Vec::new();
    let mut expect = Expect::Value;
    let mut i = 0;
    loop {
        i = skip_ws(text, i);
        let byte = text.get(i).copied();
        (i, expect) = match (expect, byte) {
            (Expect::AfterValue, _) => match (open.last(), byte) {
                (None, None) => return Ok(()),
                (None, Some(_)) => return Err(format!("trailing characters at byte {i}")),
                (Some(b'{'), Some(b',')) => (i + 1, Expect::Key),
                (Some(_), Some(b',')) => (i + 1, Expect::Value),
                (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']')) => {
                    open.pop();
                    (i + 1, Expect::AfterValue)
                }
                _ => return Err(format!("expected `,` or a closing bracket at byte {i}")),
            },
            (Expect::Key, Some(b'"')) => {
                let end = skip_ws(text, string_end(text, i)?);
                if text.get(end) != Some(&b':') {
                    return Err(format!("expected `:` at byte {end}"));
                }
                (end + 1, Expect::Value)
            }
            (Expect::Key, _) => return Err(format!("expected a member name at byte {i}")),
            (Expect::Value, Some(opener @ (b'[' | b'{'))) => {
                open.push(opener);
                let next = skip_ws(text, i + 1);
                match (opener, text.get(next)) {
                    (b'[', Some(b']')) | (b'{', Some(b'}')) => {
                        open.pop();
                        (next + 1, Expect::AfterValue)
                    }
                    (b'{', _) => (next, Expect::Key),
                    _ => (next, Expect::Value),
                }
            }
            (Expect::Value, Some(b'"')) => (string_end(text, i)?, Expect::AfterValue),
            (Expect::Value, _) => (scalar_end(text, i)?, Expect::AfterValue),
        };
    }
}

/// The index just past the string that opens at `start`, its escapes checked.
fn string_end(text: &[u8], start: usize) -> Result<usize, String> {
    let mut i = start + 1;
    while let Some(&byte) = text.get(i) {
        match byte {
            b'"' => return Ok(i + 1),
            b'\\' => match text.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                Some(b'u') if text.get(i + 2..i + 6).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) => {
                    i += 6
                }
                _ => return Err(format!("invalid escape at byte {i}")),
            },
            0..=0x1f => return Err(format!("control character in a string at byte {i}")),
            _ => i += 1,
        }
    }
    Err("unterminated string".into())
}

/// The index just past the number or literal that starts at `start`.
fn scalar_end(text: &[u8], start: usize) -> Result<usize, String> {
    let rest = &text[start.min(text.len())..];
    for literal in [&b"true"[..], b"false", b"null"] {
        if rest.starts_with(literal) {
            return Ok(start + literal.len());
        }
    }
    let len = rest.iter().take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')).count();
    match serde_json::from_slice::<Value>(&rest[..len]) {
        Ok(Value::Number(_)) => Ok(start + len),
        _ => Err(format!("expected a value at byte {start}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tool calls read (and lifted) without rmcp: nested and escaped arguments, members in
    /// another order, duplicate argument members, a task.
    const CALLS: [&str; 3] = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"v","arguments":{"program":{"steps":[1,{"a":"x\"y"}]}}}}"#,
        r#"{"params":{"_meta":{"progressToken":"p"},"name":"v","arguments":{"k":1.5,"k":[]}},"method":"tools/call","id":2,"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"v","arguments":{"a":1},"task":{"ttl":60000}}}"#,
    ];
    /// Frames left to rmcp whole: another method, arguments that are not an object or not there,
    /// a duplicate member.
    const NOT_CALLS: [&str; 4] = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"v","arguments":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"v"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"v","arguments":{}},"params":{}}"#,
    ];

    #[cfg(feature = "http")]
    #[test]
    fn probe_reads_the_id_and_initialize_of_ordinary_frames_only() {
        let probe = |text: &str| probe(text.as_bytes());
        let init = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"deep":[[[1]]]}}"#;
        assert_eq!(probe(init), Some(Probe { id: json!(7), initialize: true, ping: false }));
        let call = r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}"#;
        assert_eq!(probe(call), Some(Probe { id: json!("a"), initialize: false, ping: false }));
        let ping = r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#;
        assert_eq!(probe(ping), Some(Probe { id: json!(8), initialize: false, ping: true }));
        let note = r#"{"jsonrpc":"2.0","method":"initialize"}"#;
        assert_eq!(probe(note), Some(Probe { id: Value::Null, initialize: false, ping: false }));
        let ping_note = r#"{"jsonrpc":"2.0","method":"ping"}"#;
        assert_eq!(probe(ping_note), Some(Probe { id: Value::Null, initialize: false, ping: false }));
        // Judged in full instead: not JSON, not an object, an id of the wrong type, a method
        // that is not a string, a duplicate member, too deep to parse.
        for text in [
            "{",
            "[1]",
            r#"{"id":{"a":1},"method":"ping"}"#,
            r#"{"id":1,"method":5}"#,
            r#"{"id":1,"id":2,"method":"ping"}"#,
        ] {
            assert_eq!(probe(text), None, "{text}");
        }
        let deep =
            format!("{{\"id\":1,\"method\":\"ping\",\"params\":{}{}}}", "[".repeat(130), "]".repeat(130));
        assert_eq!(probe(&deep), None);
    }

    #[test]
    fn a_tool_call_reads_as_rmcp_reads_it() {
        let empty =
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"arguments":{},"name":"v"}}"#;
        for text in CALLS.into_iter().chain([empty]) {
            let fast = tool_call(text.as_bytes()).unwrap_or_else(|| panic!("not read: {text}"));
            let whole: ClientJsonRpcMessage = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_value(&fast).unwrap(), serde_json::to_value(&whole).unwrap(), "{text}");
        }
        // Parsed whole instead: those, an escaped method name, a frame rmcp refuses.
        for text in NOT_CALLS.into_iter().chain([
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"v","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call","params":{"name":"v","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"arguments":{}}}"#,
        ]) {
            assert!(tool_call(text.as_bytes()).is_none(), "{text}");
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn lifted_arguments_and_the_rest_of_the_frame_make_the_whole_call() {
        for text in CALLS {
            let (rest, arguments) =
                lift_arguments(text.as_bytes()).unwrap_or_else(|| panic!("not lifted: {text}"));
            let mut whole: ClientJsonRpcMessage = serde_json::from_str(text).unwrap();
            let ClientJsonRpcMessage::Request(request) = &mut whole else { panic!("{text}") };
            let ClientRequest::CallToolRequest(call) = &mut request.request else { panic!("{text}") };
            assert_eq!(call.params.arguments.replace(Default::default()), Some(arguments), "{text}");
            let rest: ClientJsonRpcMessage = serde_json::from_slice(&rest).unwrap();
            assert_eq!(serde_json::to_value(&rest).unwrap(), serde_json::to_value(&whole).unwrap(), "{text}");
        }
        for text in NOT_CALLS {
            assert!(lift_arguments(text.as_bytes()).is_none(), "{text}");
        }
    }

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(nesting_depth(br#"{"a":"[[[{\"]","b":[[1]]}"#), 3);
        assert_eq!(nesting_depth(b"5"), 0);
        assert_eq!(nesting_depth(br#"[[],[[]]]"#), 3);
    }

    #[test]
    fn syntax_check_agrees_with_serde_json() {
        let cases: [&[u8]; 22] = [
            b"{}",
            b"[]",
            b"5",
            b"-0.5e+3",
            br#""a\u00e9\n""#,
            br#"{"a":[1,{"b":null}],"c":true}"#,
            b" [ 1 , 2 ] ",
            b"",
            b"[",
            b"]",
            b"[1,]",
            b"{\"a\"}",
            b"{\"a\":1,}",
            b"{1:2}",
            b"01",
            b"tru",
            b"[1 2]",
            b"\"\\x\"",
            b"\"a",
            b"{} {}",
            b"[}",
            b"\"\x01\"",
        ];
        for case in cases {
            let serde = serde_json::from_slice::<Value>(case).is_ok();
            assert_eq!(check_syntax(case).is_ok(), serde, "{}", String::from_utf8_lossy(case));
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(check_syntax(deep.as_bytes()), Ok(()));
        assert!(check_syntax(&deep.as_bytes()[1..]).is_err());
    }

    #[test]
    fn members_of_an_object() {
        let found = members(br#" { "a" : [1, {"x": "}"}] , "b\"":"s", "c": {} } "#).unwrap();
        let found: Vec<(&str, &[u8])> = found.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(found, [("a", &br#"[1, {"x": "}"}]"#[..]), ("b\"", br#""s""#), ("c", b"{}")]);
        assert!(members(b"[1]").is_none());
    }

    #[test]
    fn serde_json_refuses_what_is_judged_deep() {
        let at = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(serde_json::from_str::<Value>(&at(MAX_PARSE_DEPTH)).is_ok());
        assert!(serde_json::from_str::<Value>(&at(MAX_PARSE_DEPTH + 1)).is_err());
    }
}
