//! Who is asking.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Map, Value};

/// Who is asking. Every engine call receives it so visibility, hints and catalog tokens are
/// computed in the caller's scope (Part II §10.3). Over stdio it is the ambient identity; over
/// HTTP it is the caller an authenticator verified (with the claims it vouched for), or an
/// explicitly anonymous one (each MCP session its own).
///
/// Cheap to clone. Two callers are equal when their ids and claims are; the hash is the id's.
///
/// ```
/// use pilotage::prelude::*;
///
/// let claims = json!({"sub": "alice", "pg_role": "agent_reader"});
/// let caller = Caller::with_claims("alice", claims.as_object().cloned().unwrap_or_default());
/// assert_eq!(&*caller.id, "alice");
/// assert_eq!(caller.claim("pg_role"), Some(&json!("agent_reader")));
/// assert_eq!(Caller::new("bob").claim("pg_role"), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// An opaque identity.
    pub id: Arc<str>,
    /// What the authenticator vouched for about the caller (a verified token's claims, say);
    /// empty for an anonymous or ambient caller.
    pub claims: Arc<Map<String, Value>>,
}

impl Hash for Caller {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl Caller {
    /// A caller with identity `id` and no claims.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Caller { id: id.into(), claims: Arc::default() }
    }

    /// A caller with identity `id` and the verified `claims`.
    pub fn with_claims(id: impl Into<Arc<str>>, claims: Map<String, Value>) -> Self {
        Caller { id: id.into(), claims: Arc::new(claims) }
    }

    /// The claim `name`, if the caller has it.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.claims.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_read_by_name_and_the_hash_is_the_ids() {
        use std::collections::hash_map::DefaultHasher;
        let mut claims = Map::new();
        claims.insert("role".into(), Value::from("admin"));
        let admin = Caller::with_claims("alice", claims);
        assert_eq!(admin.claim("role"), Some(&Value::from("admin")));
        assert_eq!(admin.claim("scope"), None);
        let plain = Caller::new("alice");
        assert_ne!(admin, plain);
        let hash = |c: &Caller| {
            let mut h = DefaultHasher::new();
            c.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&admin), hash(&plain));
    }
}
