//! The runtime behind [pilotage](https://docs.rs/pilotage): the Pilotage model types, the
//! protocol engine on rmcp, transports and run stores.
//!
//! Engine authors use it through the `pilotage` facade and its macros; the modules are named
//! after the specification's nouns: [`manifest`], [`guides`], [`catalog`], [`validate`],
//! [`execute`], [`trace`], [`errors`], [`transport`].
#![warn(missing_docs)]

pub mod capabilities;
pub mod catalog;
pub mod closed_sets;
pub mod correspondence;
mod digest;
mod dispatch;
pub mod errors;
pub mod execute;
pub mod guides;
mod idempotency;
pub mod language;
pub mod manifest;
pub mod promotion;
mod registry;
pub mod risk;
pub mod schema;
pub mod server;
mod session;
pub mod store;
pub mod trace;
pub mod transport;
pub mod validate;

pub use server::{BuildError, Server, ServerBuilder};

/// The names an engine's code uses.
pub mod prelude {
    pub use crate::catalog::{CatalogEntry, CatalogSnapshot};
    pub use crate::closed_sets::NoStatus;
    pub use crate::execute::{Failure, Finish, Run};
    pub use crate::language::{Caller, Limits};
    pub use crate::risk::RiskHints;
    pub use crate::server::Server;
    pub use crate::validate::{TextRange, Validation};
    pub use serde_json::{json, Value as Json};
}

/// Items generated code reaches the runtime through. Not a public API: it may change in any
/// release.
#[doc(hidden)]
pub mod __private {
    pub use crate::capabilities::{Capability, CapabilityDeclaration, SubFeature};
    pub use crate::catalog::CatalogSnapshot;
    pub use crate::closed_sets::{
        ClosedSets, DiagnosticCode, EntryKind, GuideSet, KindMember, NoKind, NoStatus, RiskLevel, RiskMember,
        RunStatus, StatusMember,
    };
    pub use crate::execute::{ExecuteRequest, Finish, FinishCore, Recorder, Run};
    pub use crate::guides::{GuideLevel, GuideSource};
    pub use crate::language::{
        Caller, Engine, ExecutionMode, LanguageSpec, Limits, LocatorDialect, LoopTools, PlainToolSpec,
        PromotionAuthority, Retention, ToolDecl, TraceLevel, TraceSubprogram,
    };
    pub use crate::risk::RiskHints;
    pub use crate::trace::TraceFetchResponse;
    pub use crate::validate::{ValidateRequest, Validation, ValidationCore};
    pub use futures::future::BoxFuture;
    pub use serde_json;
    pub use std::sync::{Arc, OnceLock};
    pub use std::time::Duration;
}
