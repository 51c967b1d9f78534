//! What the `host_*` tests share: an approver that records what it was asked, and the example
//! engines' programs.

use std::sync::{Arc, Mutex};

use pilotage::host::{Approval, Approver, GateRequest};
use serde_json::{json, Value};

/// An approver that grants or denies everything and keeps every request it was asked.
#[derive(Clone, Default)]
pub struct Recording {
    grant: bool,
    asked: Arc<Mutex<Vec<GateRequest>>>,
}

impl Recording {
    /// One that denies.
    pub fn denying() -> Self {
        Recording::default()
    }
    /// One that grants.
    pub fn granting() -> Self {
        Recording { grant: true, ..Recording::default() }
    }
    /// The requests asked so far.
    pub fn asked(&self) -> Vec<GateRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[pilotage::host::async_trait]
impl Approver for Recording {
    async fn approve(&self, request: &GateRequest) -> Approval {
        self.asked.lock().unwrap().push(request.clone());
        if self.grant {
            Approval::Granted
        } else {
            Approval::Denied("denied by the test".into())
        }
    }
}

/// A workflow/v1 program calling `capability` with the input's user.
pub fn workflow_call(capability: &str) -> Value {
    json!({
        "inputs": {"userId": "string"},
        "steps": [{"id": "one", "kind": "call", "capability": capability, "with": {"user_id": "$.input.userId"}}],
        "output": {"result": "$.steps.one.output"}
    })
}

/// The input naming the example world's user 42.
pub fn user_42() -> Value {
    json!({"userId": "42"})
}
