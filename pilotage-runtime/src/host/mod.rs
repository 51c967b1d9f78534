//! The Host half of Pilotage (feature `host`): a client for any Pilotage server, over stdio or
//! Streamable HTTP, that follows Part III §10.2 and Part II §7 and §12.2.
//!
//! * **Connect and discover** ([`Host::stdio`], [`Host::http`], [`Host::over`]): the extension
//!   is declared on `initialize`, or, stateless, in every request's `_meta`; the manifest comes
//!   from the initialize (or `server/discover`) metadata, else from `pilotage_manifest`, and is
//!   checked ([`check_manifest`]); it is discovered again after `tools/list_changed`, after a
//!   `not_found`, and, stateless, when older than [`HostLimits::rediscover_after`].
//! * **Requests** are built from the manifest, the tool's `inputSchema`, its program
//!   declaration and the reserved names: no argument name is guessed.
//! * **Values are values**: `valid: false` is an `Ok` [`Verdict`], `ok: false` an `Ok`
//!   [`Ran`] (an unknown status reads as [`RunStatus::Partial`]); a request error is
//!   [`HostError::Request`] with a closed kind (an unknown kind reads as `internal`); nothing
//!   is retried.
//! * **The gate** ([`decide`], [`Approver`]): execute is not transmitted while the plan, the
//!   referenced entries or missing risk information make a Run risky, unless the Host's
//!   approver grants it; without an approver nothing risky runs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), pilotage_runtime::host::HostError> {
//! use pilotage_runtime::host::{Approval, Approver, Attempt, ExecuteOptions, GateRequest, Host};
//!
//! struct Policy;
//! #[pilotage_runtime::host::async_trait]
//! impl Approver for Policy {
//!     async fn approve(&self, request: &GateRequest) -> Approval {
//!         println!("{}", request.unverified_claims);
//!         Approval::Denied("this Host never runs risky programs".into())
//!     }
//! }
//!
//! let host = Host::stdio("target/debug/examples/workflow").approver(Policy).connect().await?;
//! let workflow = host.language("workflow/v1")?;
//! let program = serde_json::json!({"steps": []});
//! match workflow.run(program, &ExecuteOptions::default()).await? {
//!     Attempt::Invalid(verdict) => println!("revise: {:?}", verdict.diagnostics()),
//!     Attempt::Executed(execution) => println!("{execution:?}"),
//! }
//! # Ok(()) }
//! ```

mod carrier;
mod connect;
mod discover;
mod error;
mod exact;
mod gate;
mod keys;
mod limits;
mod requests;
mod results;
mod run;

pub use self::carrier::{ToolAnswer, ToolInfo};
pub use self::connect::{Connect, Host};
pub use self::discover::check_manifest;
pub use self::error::{HostError, RequestFailure};
pub use self::gate::{
    decide, decide_promoted, Approval, Approver, GateDecision, GateReason, GateRequest, NoApprover, Runnable,
    UNVERIFIED_CLAIMS,
};
pub use self::limits::HostLimits;
pub use self::requests::{ExecuteOptions, ExecutionMode, TraceDetail, ValidateOptions};
pub use self::results::RunStatus;
pub use self::run::{Attempt, Denial, Execution, Language, Ran, Verdict, MAX_GATE_LOOKUPS};
/// The attribute an [`Approver`] implementation carries (`#[pilotage::host::async_trait]`),
/// so that the trait stays usable as `dyn Approver`.
pub use async_trait::async_trait;
