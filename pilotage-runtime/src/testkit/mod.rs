//! For engine authors' tests: drive an engine through the real protocol path, in process.
//!
//! A [`Kit`] serves one engine instance with a real [`Server`](crate::Server) over an
//! in-process pipe and holds an initialized MCP session with it, so every call takes the path a
//! host's call takes: frame checks, rmcp, routing, the structural check against the advertised
//! `inputSchema`, the bounded engine call, the derivations and the envelope (and, in debug
//! builds, the runtime's check of every result against the tool's `outputSchema`). Results
//! come back as the wire model's types. In debug builds every Run executed with its program
//! inline is validated first and its trace checked against that plan (Part II §5.8.4): a run
//! whose trace strays from its plan fails the test that ran it.
//!
//! The crate documentation of `pilotage` has a complete engine with its tests; in short:
//!
//! ```ignore
//! use pilotage::testkit::Kit;
//!
//! let mut kit = Kit::new(Calc);
//! assert!(kit.validate(&json!({"op": "add", "args": [1, 2]})).valid);
//! let ran = kit.execute(&json!({"op": "add", "args": [1, 2]}));
//! assert_eq!(ran.output(), Some(&json!({"sum": 3.0})));
//! ```
//!
//! Guides are checked with [`guides`] and [`fenced_blocks`]: every example a guide shows
//! should validate, and the runnable ones run.
//!
//! Inside an async test, use [`Client::connect`] on a server of your own instead of a [`Kit`].
//! Authors of a [`SharedState`](crate::state::SharedState) backend run [`state_suite`] on it.

mod client;
mod findings;
mod guides;
mod kit;
mod ran;
#[cfg(feature = "sqlite")]
mod store;

pub use self::client::{Client, ToolResult};
pub use self::findings::{findings, has, locator};
pub use self::guides::{fenced_blocks, guide, guides};
pub use self::kit::Kit;
pub use self::ran::{check_correspondence, Ran};
#[cfg(feature = "sqlite")]
pub use self::store::TempStore;
pub use crate::ops::validate::{derive, Derivation};
pub use crate::state::suite::{replica_suite, state_suite};

/// A typed plain tool's arguments from JSON, as the generated code reads them: for a test
/// that calls the tool's method directly (`engine.add_entry(typed_args(json!({...})))`).
///
/// # Panics
///
/// When `json` does not fit `T`: a test's own arguments are wrong.
pub fn typed_args<T: serde::de::DeserializeOwned>(json: serde_json::Value) -> T {
    serde_json::from_value(json).expect("the arguments fit the tool's parameter type")
}
