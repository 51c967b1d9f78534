//! Binding a run's `input` to the `:name` placeholders of an SQL program (Part II §6.5.5),
//! shared by `sql/sqlite-3` and `sql/postgres`.
//!
//! Each SQL engine's `mod.rs` includes it with `#[path = "../../common/placeholders.rs"] mod
//! placeholders;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use pilotage::model::closed_sets::RunStatus;
use pilotage::prelude::*;

fn pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Bind `input` to the placeholders `names` (Part II §6.5.5): every name present with a
/// scalar value, no other key. Problems are reported with `reject_input`.
pub fn bind<S: RunStatus>(
    names: &[String],
    input: Option<&Json>,
    run: &mut Run<S>,
) -> Option<serde_json::Map<String, Json>> {
    let empty = serde_json::Map::new();
    let object = match input {
        None => &empty,
        Some(Json::Object(o)) => o,
        Some(_) => {
            run.reject_input("", "input must be an object mapping each :name placeholder to its value");
            return None;
        }
    };
    let mut ok = true;
    for name in names {
        match object.get(name) {
            None => {
                run.reject_input(
                    format!("/{}", pointer_token(name)),
                    format!("missing value for placeholder :{name}"),
                );
                ok = false;
            }
            Some(Json::Array(_) | Json::Object(_)) => {
                run.reject_input(
                    format!("/{}", pointer_token(name)),
                    format!(":{name} takes a string, number, boolean or null, not an array or object"),
                );
                ok = false;
            }
            Some(_) => {}
        }
    }
    for key in object.keys().filter(|k| !names.contains(k)) {
        run.reject_input(format!("/{}", pointer_token(key)), format!("no placeholder :{key} in the program"));
        ok = false;
    }
    ok.then(|| object.clone())
}
