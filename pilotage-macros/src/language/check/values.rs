//! The values of single keys: the Language name, the program argument, one-of strings,
//! retention, the context schema file and the guide folder.

use std::path::PathBuf;

use syn::LitStr;

use super::Retention;
use crate::errors::{closest, list, unknown, Errors};
use crate::guides::{self, Guide};
use crate::language::parse::Entry;

/// Argument names the runtime reserves on the loop tools.
const RESERVED_ARGUMENTS: [&str; 11] = [
    "program_ref",
    "input",
    "context",
    "trace_level",
    "expected_catalog_version",
    "idempotency_key",
    "test_run",
    "mode",
    "store",
    "run_id",
    "question",
];

pub(super) fn check_name(lit: &LitStr, errors: &mut Errors) -> Option<String> {
    let name = lit.value();
    let parts: Vec<&str> = name.split('/').collect();
    let bad = if parts.len() != 2 {
        Some("a Language name is `family/version` with exactly one `/`")
    } else if parts.iter().any(|p| p.is_empty()) {
        Some("both the family and the version of `family/version` must be non-empty")
    } else if name.contains(char::is_whitespace) {
        Some("a Language name contains no whitespace")
    } else {
        None
    };
    match bad {
        Some(why) => {
            errors.spanned(
                lit,
                format!("invalid Language name `{name}`: {why}, e.g. `name = \"workflow/v1\"`"),
            );
            None
        }
        None => Some(name),
    }
}

pub(super) fn check_program(lit: &LitStr, errors: &mut Errors) -> Option<String> {
    let program = lit.value();
    let mut chars = program.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        errors.spanned(
            lit,
            format!("invalid program argument name `{program}`: it must match [A-Za-z_][A-Za-z0-9_]*, e.g. `program = \"workflow\"`"),
        );
        return None;
    }
    if RESERVED_ARGUMENTS.contains(&program.as_str()) {
        errors.spanned(
            lit,
            format!(
                "`{program}` is a reserved argument of the loop tools: name the program argument after the Language instead (reserved: {})",
                list(&RESERVED_ARGUMENTS)
            ),
        );
        return None;
    }
    Some(program)
}

/// A string key whose value is one of `choices` (wire name, variant).
pub(super) fn one_of(
    entry: &Option<Entry<LitStr>>,
    choices: &[(&str, &'static str)],
    errors: &mut Errors,
) -> Option<&'static str> {
    let entry = entry.as_ref()?;
    let value = entry.value.value();
    if let Some((_, variant)) = choices.iter().find(|(w, _)| *w == value) {
        return Some(variant);
    }
    let wires: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
    errors.spanned(&entry.value, unknown(&format!("`{}` value", entry.key), &value, &wires));
    None
}

pub(super) fn check_retention(lit: &LitStr, errors: &mut Errors) -> Option<Retention> {
    let value = lit.value();
    match value.as_str() {
        "none" => return Some(Retention::None),
        "session" => return Some(Retention::Session),
        _ => {}
    }
    match crate::duration::parse(&value) {
        Ok(d) if d.is_zero() => {
            errors.spanned(
                lit,
                format!("`{value}` is a zero duration, which retains nothing: write `retention = \"none\"`"),
            );
            None
        }
        Ok(d) => Some(Retention::Duration { iso: value, secs: d.as_secs(), nanos: d.subsec_nanos() }),
        Err(why) => {
            let upper = value.to_uppercase();
            let hint = if let Some(word) = closest(&value, &["none", "session"]) {
                format!("did you mean `{word}`?")
            } else if upper != value && crate::duration::parse(&upper).is_ok() {
                format!("did you mean `{upper}`? (ISO 8601 designators are upper case)")
            } else {
                "write \"none\", \"session\", or an ISO 8601 duration PnYnMnWnDTnHnMnS such as \"PT1H\" or \"P30D\"".to_owned()
            };
            errors.spanned(lit, format!("invalid retention `{value}`: {why}; {hint}"));
            None
        }
    }
}

/// A file path relative to the crate being compiled.
fn resolve(relative: &str) -> PathBuf {
    let root = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_default();
    let path = root.join(relative);
    path.canonicalize().unwrap_or(path)
}

pub(super) fn check_context_schema(lit: &LitStr, errors: &mut Errors) -> Option<(PathBuf, String)> {
    let shown = lit.value();
    let path = resolve(&shown);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            errors.spanned(
                lit,
                format!("cannot read the context schema `{shown}` ({}): {e}; the path is relative to the crate root (CARGO_MANIFEST_DIR)", path.display()),
            );
            return None;
        }
    };
    check_json_object(&text, lit, &format!("the context schema `{shown}`"), errors)?;
    Some((path, text))
}

/// Check that `text` is a JSON object; errors at `lit`.
pub(super) fn check_json_object(text: &str, lit: &LitStr, what: &str, errors: &mut Errors) -> Option<()> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Some(()),
        Ok(_) => {
            errors
                .spanned(lit, format!("{what} must be a JSON object schema, e.g. {{\"type\": \"object\"}}"));
            None
        }
        Err(e) => {
            errors.spanned(lit, format!("{what} is not valid JSON: {e}"));
            None
        }
    }
}

pub(super) fn check_guides(lit: &LitStr, errors: &mut Errors) -> Option<Vec<Guide>> {
    let shown = lit.value();
    let shown = shown.trim_end_matches('/');
    match guides::load(&resolve(shown), shown) {
        Ok(g) => Some(g),
        Err(problems) => {
            for p in problems {
                errors.spanned(lit, p);
            }
            None
        }
    }
}
