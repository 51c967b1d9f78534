//! Responses turned into JSON values with their large members moved into place rather than
//! copied: `serde_json::to_value` copies every string and value it is given, and a trace's
//! step values or a plan's step ids are most of a response.
//!
//! Each type takes its large members out and leaves placeholders (an empty string, a `null`)
//! that keep the members and their order; [`written_with`] serialises the rest with the type's
//! own `Serialize` and puts the taken values back where the placeholders are. An optional
//! member whose placeholder would cost as much as the member (a plan, a trace) is taken out
//! whole and put back by [`insert_before`]. So the fields and their names stay the derive's,
//! and a test per type holds the value equal, byte for byte, to the one
//! `serde_json::to_value` writes (`tests.rs`, `moved_responses`).

use serde::Serialize;
use serde_json::Value;

/// `value` as `serde_json::to_value` writes it, with each `(member, value)` of `moved` put into
/// the member of that name in place of its placeholder.
pub(crate) fn written_with<T: Serialize>(value: &T, moved: &mut [(&str, Option<Value>)]) -> Value {
    let mut written = serde_json::to_value(value).unwrap_or(Value::Null);
    if let Value::Object(members) = &mut written {
        // A walk over the members rather than a hashed look-up per member.
        for (name, slot) in members.iter_mut() {
            if let Some((_, value)) = moved.iter_mut().find(|(n, _)| *n == name.as_str()) {
                if let Some(value) = value.take() {
                    *slot = value;
                }
            }
        }
    }
    written
}

/// Puts `value` into the object `written` as member `name` where serde's derive writes it:
/// before the first of `later` (the members declared after it) that `written` holds, or last.
/// For an optional member taken out whole, so that no placeholder is serialised for it.
pub(crate) fn insert_before(written: &mut Value, name: &str, value: Value, later: &[&str]) {
    if let Value::Object(members) = written {
        let at = members.keys().position(|k| later.contains(&k.as_str())).unwrap_or(members.len());
        members.shift_insert(at, name.to_owned(), value);
    }
}
