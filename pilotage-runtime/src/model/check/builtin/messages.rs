//! The messages of faults, in the words of `jsonschema`, and values shown cut short.

use serde_json::{Map, Value};

use super::names::{has, is_known};
use super::tree::{Kw, Limit, TYPES};

/// How much of a value's JSON a message shows.
const SHOWN: usize = 100;
/// How many names or items a message lists.
const LISTED: usize = 10;

pub(super) const NOT_ANY: &str = "is not valid under any of the schemas listed in the";
pub(super) const MORE_THAN_ONE: &str = "is valid under more than one of the schemas listed in the";

/// The messages of a failed keyword that applies no subschema, or of `anyOf`, `not`,
/// `contains`.
pub(super) fn messages(kw: &Kw, value: &Value) -> Vec<String> {
    let v = shown(value);
    let one = match kw {
        Kw::False => format!("False schema does not allow {v}"),
        Kw::Type(bits) => type_message(*bits, &v),
        Kw::Const(expected) => format!("{} was expected", shown(expected)),
        Kw::Enum(options) => enum_message(options, &v),
        Kw::Bound(bound, limit) => format!("{v} {} {limit}", bound.phrase()),
        Kw::MultipleOf(multiple) => format!("{v} is not a multiple of {multiple}"),
        Kw::Length(limit, n) => {
            let word = if *limit == Limit::Min { "shorter" } else { "longer" };
            format!("{v} is {word} than {n} character{}", plural(*n, "", "s"))
        }
        Kw::ItemCount(limit, n) => {
            let word = if *limit == Limit::Min { "less" } else { "more" };
            format!("{v} has {word} than {n} item{}", plural(*n, "", "s"))
        }
        Kw::PropCount(limit, n) => {
            let word = if *limit == Limit::Min { "less" } else { "more" };
            format!("{v} has {word} than {n} propert{}", plural(*n, "y", "ies"))
        }
        Kw::Required(names) => {
            return value.as_object().map(|m| missing(names, m).collect()).unwrap_or_default()
        }
        Kw::UniqueItems => format!("{v} has non-unique elements"),
        Kw::Additional { known, .. } => additional_message(known, value),
        Kw::NoMembers => {
            let first = value.as_object().and_then(|m| m.values().next()).map(shown).unwrap_or_default();
            format!("False schema does not allow {first}")
        }
        Kw::NoNames => format!("False schema does not allow {v}"),
        Kw::NoMoreItems(n) => items_message(*n, value),
        Kw::Contains { .. } => format!("None of {v} are valid under the given schema"),
        Kw::AnyOf(_) => format!("{v} {NOT_ANY} 'anyOf' keyword"),
        Kw::Not(_, schema) => format!("{schema} is not allowed for {v}"),
        _ => format!("{v} is not valid"),
    };
    vec![one]
}

fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// One message per name of `names` missing from `members`.
pub(super) fn missing<'a>(
    names: &'a [String],
    members: &'a Map<String, Value>,
) -> impl Iterator<Item = String> + 'a {
    names
        .iter()
        .filter(|name| !has(members, name))
        .map(|name| format!("{} is a required property", shown(&Value::String(name.clone()))))
}

fn type_message(bits: u8, shown_value: &str) -> String {
    let named: Vec<&str> = TYPES.iter().filter(|(_, b)| bits & b != 0).map(|(t, _)| *t).collect();
    match named.as_slice() {
        [one] => format!("{shown_value} is not of type \"{one}\""),
        many => {
            let quoted: Vec<String> = many.iter().map(|t| format!("\"{t}\"")).collect();
            format!("{shown_value} is not of types {}", quoted.join(", "))
        }
    }
}

fn enum_message(options: &[Value], shown_value: &str) -> String {
    let mut out = format!("{shown_value} is not one of ");
    let n = options.len();
    if n <= 3 {
        for (i, option) in options.iter().enumerate() {
            if i > 0 {
                out.push_str(if i + 1 == n { " or " } else { ", " });
            }
            out.push_str(&shown(option));
        }
    } else {
        let first: Vec<String> = options.iter().take(2).map(shown).collect();
        out.push_str(&format!("{} or {} other candidates", first.join(", "), n - 2));
    }
    out
}

fn additional_message(known: &[String], value: &Value) -> String {
    let members = value.as_object().map(|m| m.keys().collect::<Vec<_>>()).unwrap_or_default();
    let unexpected: Vec<&String> = members.into_iter().filter(|name| !is_known(known, name)).collect();
    let mut listed: Vec<String> =
        unexpected.iter().take(LISTED).map(|name| format!("'{}'", cut(name, SHOWN))).collect();
    if unexpected.len() > LISTED {
        listed.push("...".into());
    }
    let verb = if unexpected.len() == 1 { "was" } else { "were" };
    format!("Additional properties are not allowed ({} {verb} unexpected)", listed.join(", "))
}

fn items_message(tuple: usize, value: &Value) -> String {
    let extra: Vec<&Value> = value.as_array().map(|a| a.iter().skip(tuple).collect()).unwrap_or_default();
    let mut listed: Vec<String> = extra.iter().take(LISTED).map(|item| shown(item)).collect();
    if extra.len() > LISTED {
        listed.push("...".into());
    }
    let verb = if extra.len() == 1 { "was" } else { "were" };
    format!("Additional items are not allowed ({} {verb} unexpected)", listed.join(", "))
}

/// `text` cut to `max` bytes at a character boundary, marked with `...` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = (0..=max).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    format!("{}...", text.get(..end).unwrap_or_default())
}

/// A writer keeping the first `cap` bytes and failing past them.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
    cut: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.bytes.len());
        if buf.len() > room {
            self.bytes.extend_from_slice(buf.get(..room).unwrap_or_default());
            self.cut = true;
            return Err(std::io::Error::other("the message is long enough"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` as JSON, cut after about 100 characters (serialisation stops there, however large
/// the value).
pub(super) fn shown(value: &Value) -> String {
    let mut out = Capped { bytes: Vec::new(), cap: SHOWN, cut: false };
    let _ = serde_json::to_writer(&mut out, value);
    let text = match std::str::from_utf8(&out.bytes) {
        Ok(text) => text,
        Err(e) => {
            std::str::from_utf8(out.bytes.get(..e.valid_up_to()).unwrap_or_default()).unwrap_or_default()
        }
    };
    if out.cut {
        format!("{text}...")
    } else {
        text.to_owned()
    }
}
