//! The typed arguments of the catalog admin tools (`catalog_add_entry`,
//! `catalog_remove_entry`) and of the argument-less tools of `workflow/v1` and `automation/v1`:
//! the macro reads each tool's arguments into these types and advertises their JSON Schemas.
//!
//! Each engine's `admin.rs` includes it with
//! `#[path = "../../common/admin_args.rs"] mod admin_args;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use schemars::JsonSchema;
use serde::Deserialize;

/// A tool that takes no arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The risk level of a catalog entry, by name.
#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryRisk {
    Safe,
    Write,
    Destructive,
    External,
}

impl EntryRisk {
    /// The level's name, as the engines' risk enums spell it.
    pub fn name(self) -> &'static str {
        match self {
            EntryRisk::Safe => "safe",
            EntryRisk::Write => "write",
            EntryRisk::Destructive => "destructive",
            EntryRisk::External => "external",
        }
    }
}

/// The arguments of `catalog_add_entry`: the new entry.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddEntry {
    /// New entry id (letters, digits, '_' and '-').
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub risk: Option<EntryRisk>,
}

/// The arguments of `catalog_remove_entry`: the entry to remove.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveEntry {
    pub id: String,
}
