//! The runtime behind [pilotage](https://docs.rs/pilotage): the Pilotage wire model, the engine
//! API, the operations of the binding, the state kept between requests, the server on rmcp and
//! its transports.
//!
//! Engine authors use it through the `pilotage` facade and its macros. One room per concept,
//! each depending only on the rooms before it:
//!
//! | room | what |
//! | --- | --- |
//! | [`model`] | the wire types of Part II/III (manifest, guide, catalog entry, diagnostic, plan, outcome, trace, request error) with their JSON Schemas |
//! | [`engine`] | what an engine author touches: the [`engine::Engine`] trait the macro implements, `Validation`, `Run`, `StepBuilder`, `Finish`, `Caller`, `Limits`, the catalog snapshot |
//! | `ops` | one file per operation of the binding (learn, lookup, validate, execute, trace fetch, promote), each owning its eligibility checks and its reply |
//! | [`state`] | sessions, run stores (memory, SQLite), idempotency claims, promotions, catalog histories |
//! | [`server`] | the builder, the registry of tools, the rmcp handler that routes to the operations |
//! | [`transport`] | stdio and Streamable HTTP |
//! | [`testkit`] | for engine authors' tests: an engine behind a real server and an in-process client |
//! | `host` | (feature `host`) the Host half: a client that discovers any Pilotage server, runs the standard loop and enforces the risk gate; uses only [`model`] |
#![warn(missing_docs)]

pub mod model;

pub mod engine;

pub mod state;

mod ops;

pub mod server;

pub mod transport;

pub use server::{BuildError, Server, ServerBuilder};

/// The schemars (version 1) whose `JsonSchema` the tool macros expect of typed plain-tool
/// arguments and answers and of `context = MyType`. Derive it without a `schemars` dependency
/// of your own with `#[derive(pilotage::schemars::JsonSchema)]` and
/// `#[schemars(crate = "pilotage::schemars")]`; a `schemars = "0.8"` dependency does not fit.
pub use schemars;

pub mod testkit;

#[cfg(feature = "host")]
pub mod host;

/// The names an engine's code uses, and what serving it over stdio or HTTP needs
/// ([`crate::Server`], [`crate::transport::HttpOptions`]).
pub mod prelude {
    pub use crate::engine::{Caller, CatalogSnapshot, Failure, Finish, Limits, Run, Validation};
    pub use crate::model::catalog::CatalogEntry;
    pub use crate::model::closed_sets::NoStatus;
    pub use crate::model::diagnostic::TextRange;
    pub use crate::model::risk::RiskHints;
    pub use crate::server::Server;
    #[cfg(feature = "http")]
    pub use crate::transport::HttpOptions;
    pub use serde_json::{json, Value as Json};
}

/// Items generated code reaches the runtime through. Not a public API: it may change in any
/// release.
#[doc(hidden)]
pub mod __private {
    pub use crate::engine::plain;
    pub use crate::engine::{
        Caller, CatalogSnapshot, Engine, ExecuteRequest, Finish, FinishCore, LanguageSpec, Limits, LoopTools,
        PlainToolError, PlainToolSpec, Recorder, Run, ToolDecl, ValidateRequest, Validation, ValidationCore,
    };

    /// The catalog method's answer, as `Engine::catalog_snapshot` returns it (a function, so
    /// that a wrong return type is reported at the method's own return type).
    pub fn catalog_snapshot(snapshot: Arc<CatalogSnapshot>) -> Arc<CatalogSnapshot> {
        snapshot
    }
    pub use crate::model::capabilities::{Capability, CapabilityDeclaration, SubFeature};
    pub use crate::model::closed_sets::{
        ClosedSets, DiagnosticCode, EntryKind, GuideSet, KindMember, NoKind, NoStatus, RiskLevel, RiskMember,
        RunStatus, StatusMember,
    };
    pub use crate::model::declaration::{
        ExecutionMode, LocatorDialect, PromotionAuthority, Retention, TraceLevel, TraceSubprogram,
    };
    pub use crate::model::guide::{GuideLevel, GuideSource};
    pub use crate::model::risk::RiskHints;
    pub use crate::model::trace::TraceFetchResponse;
    pub use futures::future::BoxFuture;
    pub use serde_json;
    pub use std::sync::{Arc, OnceLock};
    pub use std::time::Duration;

    /// Implemented by `#[pilotage::language]` for a struct or enum it was wrongly put on: that
    /// mistake is reported at the struct, so the tool attributes of the type's impl, which then
    /// run on their own, add no error of their own ([`InsideLanguage`]).
    pub trait LanguageMisplaced {}

    /// Asked by a tool attribute that ran on its own (outside a `#[pilotage::language]` impl) of
    /// the impl's type: met only when the type carries a misplaced `#[pilotage::language]`,
    /// already reported; otherwise the attribute's error is this trait's message.
    #[diagnostic::on_unimplemented(
        message = "`#[loop_tool]` only works on a method inside an impl annotated with `#[pilotage::language(...)]`: add `#[pilotage::language(...)]` above this impl",
        label = "this impl has no `#[pilotage::language(...)]`"
    )]
    pub trait InsideLanguage {
        /// `()`; naming it is the check.
        #[allow(non_upper_case_globals)]
        const __loop_tool_needs_pilotage_language_on_this_impl: ();
    }

    #[diagnostic::do_not_recommend]
    impl<T: LanguageMisplaced + ?Sized> InsideLanguage for T {
        #[allow(non_upper_case_globals)]
        const __loop_tool_needs_pilotage_language_on_this_impl: () = ();
    }

    /// [`InsideLanguage`] for a `#[plain_tool]` in an impl with no validate tool to report the
    /// missing `#[pilotage::language]`.
    #[diagnostic::on_unimplemented(
        message = "`#[plain_tool]` only works on a method inside an impl annotated with `#[pilotage::language(...)]`: add `#[pilotage::language(...)]` above this impl",
        label = "this impl has no `#[pilotage::language(...)]`"
    )]
    pub trait PlainInsideLanguage {}

    #[diagnostic::do_not_recommend]
    impl<T: LanguageMisplaced + ?Sized> PlainInsideLanguage for T {}

    /// What a tool attribute that ran on its own calls on its impl's type when the impl's
    /// validate tool did not already report the forgotten `#[pilotage::language]`: that validate
    /// tool defines inherent functions of these names, which a path prefers to a trait's, so
    /// these (and their bounds, a plain E0277 with the bound trait's message) are reached only
    /// in an impl with no validate tool.
    pub trait NoValidateTool {
        /// The check of a `#[loop_tool]`.
        #[allow(non_snake_case)]
        fn __loop_tool_outside_pilotage_language()
        where
            Self: InsideLanguage,
        {
        }

        /// The check of a `#[plain_tool]`.
        #[allow(non_snake_case)]
        fn __plain_tool_outside_pilotage_language()
        where
            Self: PlainInsideLanguage,
        {
        }
    }

    impl<T: ?Sized> NoValidateTool for T {}
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod layout_tests;
