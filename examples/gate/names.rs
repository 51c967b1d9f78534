//! The names the splice gives the rmcp client's requests to the server (see [`crate::splice`]):
//! the host's fast calls reach the server under the host's own ids and progress tokens, so the
//! gate's client, whose ids and tokens count from 0 too, sends its requests under
//! `pilotage-gate:<n>` and `pilotage-gate:p<n>`, and gets their answers, progress and
//! cancellations named back.

use std::collections::HashMap;

use serde_json::Value;

/// The prefix of the names.
const PREFIX: &str = "pilotage-gate:";

/// Whether an id or token (as JSON text) has the form of a name: the host's calls under such
/// an id or token take the rmcp path, so that they never meet the client's.
pub fn reserved(text: &str) -> bool {
    text.strip_prefix('"').is_some_and(|t| t.starts_with(PREFIX))
}

/// A request of the client in flight, by its name (as JSON text).
struct Named {
    /// The client's own id.
    id: Value,
    /// Its progress token's name (as JSON text), when it carried one.
    token: Option<String>,
}

/// The client's requests in flight under their names.
#[derive(Default)]
pub struct Names {
    named: HashMap<String, Named>,
    /// A token's name (as JSON text) -> the client's token.
    tokens: HashMap<String, Value>,
    /// The client's id (as JSON text) -> the request's name (as JSON text).
    by_id: HashMap<String, String>,
    next: u64,
}

impl Names {
    /// Name the client's request `message` (its id, and its progress token when it has one).
    pub fn name(&mut self, message: &mut Value) {
        self.next += 1;
        let name = Value::String(format!("{PREFIX}{}", self.next));
        let id = std::mem::replace(&mut message["id"], name.clone());
        let mut token = None;
        if let Some(t) = message.pointer_mut("/params/_meta/progressToken") {
            let renamed = Value::String(format!("{PREFIX}p{}", self.next));
            let original = std::mem::replace(t, renamed.clone());
            self.tokens.insert(renamed.to_string(), original);
            token = Some(renamed.to_string());
        }
        self.by_id.insert(id.to_string(), name.to_string());
        self.named.insert(name.to_string(), Named { id, token });
    }

    /// The client's id of the request named `name` (JSON text), which is answered: forgotten.
    pub fn answered(&mut self, name: &str) -> Option<Value> {
        let named = self.named.remove(name)?;
        Some(self.forget(named))
    }

    /// The client's token named `name` (JSON text).
    pub fn token(&self, name: &str) -> Option<Value> {
        self.tokens.get(name).cloned()
    }

    /// The name of the request the client cancels by its `id` (JSON text): forgotten.
    pub fn cancelled(&mut self, id: &str) -> Option<Value> {
        let name = self.by_id.get(id)?.clone();
        let named = self.named.remove(&name)?;
        self.forget(named);
        serde_json::from_str(&name).ok()
    }

    fn forget(&mut self, named: Named) -> Value {
        if let Some(t) = &named.token {
            self.tokens.remove(t);
        }
        self.by_id.remove(&named.id.to_string());
        named.id
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_named_request_is_named_back_once() {
        let mut names = Names::default();
        let mut request = json!({"id": 0, "method": "tools/call", "params": {"_meta": {"progressToken": 0}}});
        names.name(&mut request);
        assert_eq!(request["id"], "pilotage-gate:1");
        assert_eq!(request["params"]["_meta"]["progressToken"], "pilotage-gate:p1");
        assert!(reserved(&request["id"].to_string()) && !reserved("0") && !reserved("\"pilotage\""));
        assert_eq!(names.token("\"pilotage-gate:p1\""), Some(json!(0)));
        assert_eq!(names.answered("\"pilotage-gate:1\""), Some(json!(0)));
        assert_eq!(names.answered("\"pilotage-gate:1\""), None, "once");
        assert_eq!(names.token("\"pilotage-gate:p1\""), None, "its token is forgotten with it");
        let mut other = json!({"id": "x", "method": "ping"});
        names.name(&mut other);
        assert_eq!(names.cancelled("\"x\""), Some(json!("pilotage-gate:2")));
        assert_eq!(names.answered("\"pilotage-gate:2\""), None, "a cancelled request is forgotten");
    }
}
