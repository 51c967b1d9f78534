//! Asking a host on the stateless revision (MCP 2026-07-28), which has no server-to-client
//! requests: the question goes back as the execute's input-required result (the elicitation in
//! `inputRequests`, under [`KEY`], and a `requestState` naming the question), and the host's
//! retry of the same call carries the person's answer in `inputResponses`.
//!
//! The gate keeps each open question itself (the `requestState` is only its name): the program,
//! the evidence the person was shown, and the digest of the exact call. An answer is read only
//! for the question it names, on a retry of that exact call, once; anything else is no
//! approval (fail closed).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rmcp::model::{ElicitRequestParams, ElicitResult, InputRequest, InputRequiredResult, InputResponses};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::ask::{self, Answer};
use crate::evidence::Evidence;

/// The key of the approval question in `inputRequests` and `inputResponses`.
pub const KEY: &str = "approve";

/// How many questions may be open at once; the oldest is forgotten beyond (its answer then
/// approves nothing).
const OPEN: usize = 32;

/// An open question: what the person is asked to approve.
pub struct Pending {
    /// The digest of the exact call (tool and arguments) the question is about.
    pub call: String,
    /// The upstream's `serverInfo.name`.
    pub server: String,
    /// The Language's name.
    pub language: String,
    /// The tool called.
    pub tool: String,
    /// The inline program.
    pub program: Option<Value>,
    /// The promoted program's reference.
    pub program_ref: Option<String>,
    /// The evidence the person was shown (its catalog version is the one forwarded).
    pub evidence: Evidence,
}

/// The open questions, oldest first.
#[derive(Default)]
pub struct Rounds {
    open: Mutex<VecDeque<(String, Pending)>>,
    asked: AtomicU64,
}

/// The digest of a call: the tool's name and its arguments, as JSON text.
pub fn call_digest(tool: &str, arguments: &Value) -> String {
    let text = json!([tool, arguments]).to_string();
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

impl Rounds {
    /// Open a question about `pending`, asked with `params`: the input-required result.
    pub fn ask(&self, pending: Pending, params: ElicitRequestParams) -> Result<InputRequiredResult, String> {
        let request: InputRequest =
            serde_json::from_value(json!({ "method": "elicitation/create", "params": params }))
                .map_err(|e| format!("the question could not be built: {e}"))?;
        let n = self.asked.fetch_add(1, Ordering::Relaxed);
        let state = format!("gate-approval-{n}-{}", &pending.call[..16]);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() == OPEN {
            open.pop_front();
        }
        open.push_back((state.clone(), pending));
        let requests = [(KEY.to_owned(), request)].into_iter().collect();
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// The question `state` names, closed now, when it is open and about the call `call`.
    pub fn answered(&self, state: &str, call: &str) -> Result<Pending, &'static str> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let Some(at) = open.iter().position(|(s, _)| s == state) else {
            return Err(
                "the answer names no open question of the gate (unknown, forgotten, or answered already)",
            );
        };
        if open[at].1.call != call {
            return Err("the answer was sent with another call than the one the question was about");
        }
        open.remove(at).map(|(_, p)| p).ok_or("the answer names no open question of the gate")
    }
}

/// The person's answer in the retry's `inputResponses`.
pub fn read(responses: Option<&InputResponses>) -> Answer {
    let Some(response) = responses.and_then(|r| r.get(KEY)) else {
        return Answer::Unasked("the host's retry carried no answer to the approval question".into());
    };
    match serde_json::from_value::<ElicitResult>(response.clone()) {
        Ok(result) => ask::read(&result),
        Err(_) => {
            Answer::Unasked("the host's answer to the approval question is not an elicitation result".into())
        }
    }
}
