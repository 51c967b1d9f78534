//! What the splice reads of a JSON-RPC line to route it (see [`crate::splice`]): its head, in one
//! pass that skips what routing does not read, and an answer's id from its first bytes.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON-RPC message as routing reads it: one pass over the line, the members it does not
/// route on skipped, a call's arguments left as text until needed.
#[derive(Deserialize)]
pub struct Head<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub params: Option<Params<'a>>,
}

/// The members of `params` that routing reads.
#[derive(Deserialize)]
pub struct Params<'a> {
    /// A tool call's tool.
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
    /// Its `_meta`, each member's text as written.
    #[serde(borrow, rename = "_meta", default)]
    pub meta: Option<HashMap<Cow<'a, str>, &'a RawValue>>,
    /// The retry of a stateless host carrying an answer (the rmcp path's).
    #[serde(rename = "requestState", default)]
    pub request_state: Option<IgnoredAny>,
    #[serde(rename = "inputResponses", default)]
    pub input_responses: Option<IgnoredAny>,
    /// A cancellation's request.
    #[serde(rename = "requestId", default)]
    pub request_id: Option<Value>,
    /// A progress notification's token.
    #[serde(rename = "progressToken", default)]
    pub progress_token: Option<Value>,
}

/// A JSON value's canonical text (an id or token compared as the peer will echo it).
pub fn canon(raw: &RawValue) -> Option<String> {
    if plain(raw.get().as_bytes()) {
        return Some(raw.get().to_owned());
    }
    serde_json::from_str::<Value>(raw.get()).ok().map(|v| v.to_string())
}

/// A tool call's arguments as the text of each member, read without building values; `None`
/// when they are not an object, or a member's name is written with escapes.
pub fn members(arguments: &RawValue) -> Option<HashMap<&str, &RawValue>> {
    serde_json::from_str(arguments.get()).ok()
}

/// The id (as JSON text) of an answer written the way rmcp and most peers write one,
/// `{"jsonrpc":"2.0","id":ID,"result":` (or `"error":`) with a plain integer or a string
/// without escapes as its id: read from the line's first bytes instead of a pass over all of
/// it (an answer carries the whole result). Anything else is `None`, read in full.
pub fn response_id(line: &[u8]) -> Option<String> {
    let (id, after) = plain_value(line.strip_prefix(b"{\"jsonrpc\":\"2.0\",\"id\":")?)?;
    (after.starts_with(b",\"result\":") || after.starts_with(b",\"error\":")).then_some(id)
}

/// The token (as JSON text) of a progress notification written the way rmcp writes one,
/// `{"jsonrpc":"2.0","method":"notifications/progress","params":{...}}`: only its `params`
/// read, for their `progressToken`, the rest (`_meta`, the message) skipped without being
/// kept. Anything else is `None`, read in full.
pub fn progress_token(line: &[u8]) -> Option<String> {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":";
    #[derive(Deserialize)]
    struct Progress<'a> {
        #[serde(borrow, rename = "progressToken")]
        token: &'a RawValue,
    }
    let params = line.strip_prefix(HEAD)?;
    let mut read = serde_json::Deserializer::from_slice(params).into_iter::<Progress<'_>>();
    let progress = read.next()?.ok()?;
    (params[read.byte_offset()..].trim_ascii() == b"}").then_some(())?;
    canon(progress.token)
}

/// The plain integer or escape-free string `text` begins with, as its canonical text, and what
/// follows it.
fn plain_value(text: &[u8]) -> Option<(String, &[u8])> {
    let end = match text.first()? {
        b'"' => 1 + text[1..].iter().position(|b| *b == b'"')? + 1,
        b'-' | b'0'..=b'9' => text.iter().position(|b| !matches!(b, b'-' | b'0'..=b'9'))?,
        _ => return None,
    };
    let (value, after) = text.split_at(end);
    plain(value).then_some(())?;
    Some((String::from_utf8(value.to_vec()).ok()?, after))
}

/// Whether the JSON value `text` is its own canonical text without being read: an integer as
/// [`valid_integer`] says, or a string without escapes or control characters.
fn plain(text: &[u8]) -> bool {
    match text.first() {
        Some(b'"') => !text.iter().any(|b| *b == b'\\' || *b < 0x20),
        _ => valid_integer(text),
    }
}

/// Whether `text` is an integer as JSON writes it and reads back the same (`-` at most first, no
/// leading zero, at most 18 digits: within `i64`, so its canonical text is itself; not `-0`,
/// which reads back as `-0.0`).
fn valid_integer(text: &[u8]) -> bool {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    text != b"-0"
        && (1..=18).contains(&digits.len())
        && digits.iter().all(u8::is_ascii_digit)
        && (digits.len() == 1 || digits[0] != b'0')
}

#[cfg(test)]
mod tests {
    use super::{canon, members, progress_token, response_id};
    use serde_json::value::RawValue;
    use serde_json::Value;

    #[test]
    fn canon_is_the_text_serde_json_writes_back() {
        for text in [
            "0",
            "42",
            "-7",
            "\"a\"",
            "\"ä b\"",
            "\"a\\\"b\"",
            "\"\\u0041\"",
            "1.5",
            "1e3",
            "-0",
            "12345678901234567890",
            "{\"b\":1,\"a\":[true,null]}",
            "[ 1 ,2 ]",
        ] {
            let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
            let written = serde_json::from_str::<Value>(text).unwrap().to_string();
            assert_eq!(canon(&raw).as_deref(), Some(written.as_str()), "{text}");
        }
    }

    #[test]
    fn a_progress_token_is_read_from_the_params_alone_as_its_canonical_text() {
        let head = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"#;
        let meta = r#""_meta":{"io.github.jafarsa0/pilotage":{"run_id":"r"}},"#;
        for (before, token, after) in [
            ("", "7", r#","progress":1}}"#),
            (meta, r#""t-1""#, "}}"),
            ("", r#""ä""#, r#","message":"x"} }"#),
            (meta, r#""a\"b""#, "}}"),
        ] {
            let line = format!(r#"{head}{before}"progressToken":{token}{after}"#);
            let expected = serde_json::from_str::<Value>(token).unwrap().to_string();
            assert_eq!(progress_token(line.as_bytes()), Some(expected), "{line}");
        }
        for line in [
            format!(r#"{head}"progressToken":007,"progress":1}}}}"#),
            format!(r#"{head}"progressToken":7,"progress":1}},"id":1}}"#),
            format!(r#"{head}"progress":1}}}}"#),
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"progressToken":7}}"#.to_owned(),
            r#"{"method":"notifications/progress","jsonrpc":"2.0","params":{"progressToken":7}}"#.to_owned(),
        ] {
            assert_eq!(progress_token(line.as_bytes()), None, "{line}");
        }
    }

    #[test]
    fn arguments_are_read_as_their_members_text() {
        let raw: Box<RawValue> = serde_json::from_str(r#"{"a": {"x": [1, 2]}, "b":null}"#).unwrap();
        let read = members(&raw).unwrap();
        assert_eq!((read["a"].get(), read["b"].get(), read.len()), (r#"{"x": [1, 2]}"#, "null", 2));
        // Not an object, or a member's name written with an escape: not read.
        for text in ["[1]", "\"a\"", r#"{"\u0061": 1}"#] {
            let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
            assert!(members(&raw).is_none(), "{text}");
        }
    }

    #[test]
    fn an_answers_id_is_read_from_its_first_bytes_as_its_canonical_text() {
        let answer = |id: &str| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"x\":[1,2]}}}}");
        for id in ["0", "42", "-7", "\"pilotage-gate:3\"", "\"ä b\""] {
            let line = answer(id);
            let raw: serde_json::Value = serde_json::from_str(&line).unwrap();
            let expected = canon(&serde_json::value::to_raw_value(&raw["id"]).unwrap());
            assert_eq!(response_id(line.as_bytes()), expected, "{id}");
        }
        let error = "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32603}}";
        assert_eq!(response_id(error.as_bytes()).as_deref(), Some("5"));
        // Anything else is read in full.
        for id in ["007", "1.5", "1e3", "-", "-0", "\"a\\\"b\"", "null", "12345678901234567890"] {
            assert_eq!(response_id(answer(id).as_bytes()), None, "{id}");
        }
        for other in [
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            "{\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"open",
        ] {
            assert_eq!(response_id(other.as_bytes()), None, "{other}");
        }
    }
}
