//! Who is asking.

use std::sync::Arc;

/// Who is asking. Every engine call receives it so visibility, hints and catalog tokens are
/// computed in the caller's scope (Part II §10.3). Over stdio it is the ambient identity; over
/// HTTP each MCP session is its own caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller {
    /// An opaque identity.
    pub id: Arc<str>,
}

impl Caller {
    /// A caller with identity `id`.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Caller { id: id.into() }
    }
}
