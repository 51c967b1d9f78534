//! The wire model of Pilotage (Part II, Part III): manifest, guides, catalog entries,
//! diagnostics, plans, outcomes, traces and request errors, plain data with their JSON Schemas
//! (each type derives `JsonSchema`; every `outputSchema` is generated from these very types).
//!
//! It depends on nothing else of the crate; every other room depends on it.

pub mod capabilities;
pub mod catalog;
pub mod check;
pub mod closed_sets;
pub mod correspondence;
pub mod declaration;
pub mod diagnostic;
pub(crate) mod digest;
pub mod errors;
pub mod execution;
pub mod guide;
pub mod manifest;
pub(crate) mod moved;
pub mod outcome;
pub mod plan;
pub mod risk;
pub mod schema;
pub mod size;
pub mod trace;
