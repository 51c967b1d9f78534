//! What the fast path settles itself: which host calls it relays (a plain tool, a validate
//! call, an execute its kept validation lets through), and the work they leave for after their
//! chunk is written (reading what a validation is kept for, and keeping it).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{Fast, Source, Splice, MAX_FAST};
use crate::lines::{canon, members, Params};
use crate::names::reserved;
use crate::proxy::LIFECYCLE_KEYS;
use crate::surface::{Language, Surface};

/// A call the fast path settled: what to send the server instead of the line (`None`: the line
/// as it came), and for a validate call its tool and its arguments, read once the call is on
/// its way.
pub(super) struct Settled<'a> {
    pub(super) edited: Option<Vec<u8>>,
    pub(super) validation: Option<(Arc<Surface>, String, &'a RawValue)>,
}

/// What a line leaves for after its chunk's lines are written.
pub(super) enum Later {
    /// Read what the answer to the validate call `id` is to be kept for.
    Expect { id: String, surface: Arc<Surface>, tool: String, arguments: Box<RawValue> },
    /// Keep the validation a fast validate call's `answer` carries.
    Keep { language: Language, arguments: Value, argument: String, answer: Vec<u8> },
}

impl Splice {
    /// What to send the server for the host's `tools/call` `id`, when the fast path settles
    /// it (the call recorded as in flight); `None` leaves it to the rmcp gate.
    pub(super) fn settle<'a>(&mut self, id: &str, params: Params<'a>, line: &[u8]) -> Option<Settled<'a>> {
        if !self.handshake
            || self.fast.len() >= MAX_FAST
            || reserved(id)
            || !self.readers[Source::Server as usize].open
        {
            return None;
        }
        if self.inner.surface_stale.load(Ordering::Acquire) {
            return None;
        }
        let surface = self.inner.surface.try_lock().ok()?.clone()?;
        if params.request_state.is_some() || params.input_responses.is_some() {
            return None;
        }
        let meta = params.meta.as_ref();
        if meta.is_some_and(|m| m.keys().any(|k| k.starts_with(LIFECYCLE_KEYS))) {
            return None;
        }
        let token = match meta.and_then(|m| m.get("progressToken")) {
            Some(raw) => Some(canon(raw)?),
            None => None,
        };
        if token.as_deref().is_some_and(reserved) {
            return None;
        }
        let mut settled = Settled { edited: None, validation: None };
        let name = params.name?;
        if let Some(tool) = surface.programs.get(name.as_ref()) {
            let raw = params.arguments?;
            if tool.validates {
                settled.validation = Some((surface.clone(), name.into_owned(), raw));
            } else {
                let arguments = members(raw)?;
                let version =
                    crate::execute::settled_forward(&self.inner, &surface, tool, &name, &arguments)?;
                let version = version.filter(|_| tool.takes_version).map(Value::String);
                // The version the host gave, compared as JSON text (a string written with
                // escapes is replaced by the same value).
                let given = arguments.get("expected_catalog_version").map(|raw| raw.get());
                if let Some(version) = version.filter(|v| given != Some(v.to_string().as_str())) {
                    let mut message: Value = serde_json::from_slice(line).ok()?;
                    message["params"]["arguments"]["expected_catalog_version"] = version;
                    settled.edited = Some(serde_json::to_vec(&message).ok()?);
                }
            }
        }
        if let Some(token) = &token {
            self.fast_tokens.insert(token.clone(), id.to_owned());
        }
        self.fast.insert(id.to_owned(), Fast { validation: None, token });
        Some(settled)
    }

    /// Note what the answer to the fast call `id` of the validate tool `tool` is to be kept for.
    fn expect_validation(&mut self, id: &str, surface: &Surface, tool: &str, raw: &RawValue) {
        let Ok(arguments) = serde_json::from_str::<Value>(raw.get()) else { return };
        let Some(tool) = surface.programs.get(tool) else { return };
        let (Some(language), Some(call)) = (surface.language_of(tool, &arguments), self.fast.get_mut(id))
        else {
            return;
        };
        call.validation = Some((language.clone(), arguments, tool.argument.clone()));
    }

    /// Do what the lines of the chunk just written left for after it.
    pub(super) fn after(&mut self) {
        for later in std::mem::take(&mut self.later) {
            match later {
                Later::Expect { id, surface, tool, arguments } => {
                    self.expect_validation(&id, &surface, &tool, &arguments)
                }
                Later::Keep { language, arguments, argument, answer } => {
                    self.keep(&language, &arguments[argument.as_str()], &arguments["context"], &answer)
                }
            }
        }
    }

    /// Keep the validation a fast validate call's answer `line` carries (a result, not an error),
    /// its `structuredContent` as the server wrote it.
    fn keep(&self, language: &Language, program: &Value, context: &Value, line: &[u8]) {
        #[derive(Deserialize)]
        struct Answer<'a> {
            #[serde(borrow)]
            result: Option<Result<'a>>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Result<'a> {
            #[serde(borrow)]
            structured_content: Option<&'a RawValue>,
            is_error: Option<bool>,
        }
        if let Ok(Answer { result: Some(Result { structured_content: Some(response), is_error }) }) =
            serde_json::from_slice(line)
        {
            if is_error != Some(true) {
                self.inner.validations.keep(language, program, context, response.to_owned());
            }
        }
    }
}
