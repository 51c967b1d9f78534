//! The argument readers of the catalog admin tools (`catalog_add_entry`,
//! `catalog_update_entry`, `catalog_remove_entry`) of `workflow/v1` and `automation/v1`.
//!
//! Each engine's `admin.rs` includes it with
//! `#[path = "../../common/admin_args.rs"] mod admin_args;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use serde_json::Value as Json;

/// The string argument `key`, when given.
pub fn str_arg<'a>(args: &'a Json, key: &str) -> Result<Option<&'a str>, String> {
    match args.get(key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// The string argument `key`, which must be given.
pub fn required<'a>(args: &'a Json, key: &str) -> Result<&'a str, String> {
    str_arg(args, key)?.ok_or_else(|| format!("`{key}` is required"))
}

/// The `risk` argument, when given: the name of one of the four levels an entry can have.
pub fn risk_arg(args: &Json) -> Result<Option<&str>, String> {
    match str_arg(args, "risk")? {
        Some(other) if !["safe", "write", "destructive", "external"].contains(&other) => {
            Err(format!("unknown risk '{other}': use safe, write, destructive or external"))
        }
        risk => Ok(risk),
    }
}
