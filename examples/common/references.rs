//! The reference grammar of the JSON program Languages (`workflow/v1`, `automation/v1`): a
//! string `$.input.<name>`, `$.steps.<id>.output` or `$.vars.<name>`, optionally followed by
//! `.<member>...`, plus the whole-value roots a Language adds (see [`OwnRoots`]); `$$` starts a
//! literal `$...`. Also the JSON Pointers findings carry, the name rules, and template
//! evaluation.
//!
//! Each engine's `program.rs` includes it with
//! `#[path = "../../common/references.rs"] mod references;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use serde_json::Value as Json;

/// The roots a Language adds to the shared three: `$.<name>[.<member>...]`, each naming a whole
/// value (an uninhabited type for none). A name is none of `input`, `steps`, `vars`.
pub trait OwnRoots: Copy + 'static {
    /// Each added root's name and value.
    const NAMES: &'static [(&'static str, Self)];
    /// The sentence that lists every reference form, for messages.
    const FORMS: &'static str;
}

/// What a reference starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root<O> {
    /// `$.input.<name>`
    Input(String),
    /// `$.steps.<id>.output`
    Step(String),
    /// `$.vars.<name>`
    Var(String),
    /// A root the Language adds.
    Own(O),
}

/// A parsed reference: a root and a member path (object keys or array indexes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ref<O> {
    pub root: Root<O>,
    pub path: Vec<String>,
}

/// A string value in a template: a reference, or a literal string.
pub enum Text<'a, O> {
    Ref(Result<Ref<O>, String>),
    Literal(&'a str),
}

/// Whether `s` is a reference (well-formed or not): it starts with `$` but not with `$$`.
pub fn is_reference(s: &str) -> bool {
    s.starts_with('$') && !s.starts_with("$$")
}

/// Classify a string value: `$$...` is the literal `$...`, any other `$...` is a reference.
pub fn classify<O: OwnRoots>(s: &str) -> Text<'_, O> {
    match s.strip_prefix('$') {
        Some(rest) if rest.starts_with('$') => Text::Literal(rest),
        Some(_) => Text::Ref(parse_ref(s)),
        None => Text::Literal(s),
    }
}

fn parse_ref<O: OwnRoots>(s: &str) -> Result<Ref<O>, String> {
    let forms = O::FORMS;
    let Some(rest) = s.strip_prefix("$.") else {
        return Err(format!("'{s}' is not a reference: {forms} (write $$ for a literal leading $)"));
    };
    let segs: Vec<&str> = rest.split('.').collect();
    if segs.iter().any(|x| x.is_empty()) {
        return Err(format!("'{s}' has an empty member name: {forms}"));
    }
    let owned = |from: usize| segs[from..].iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    if let Some((_, own)) = O::NAMES.iter().find(|(name, _)| *name == segs[0]) {
        return Ok(Ref { root: Root::Own(*own), path: owned(1) });
    }
    match segs[0] {
        "input" if segs.len() >= 2 => Ok(Ref { root: Root::Input(segs[1].to_owned()), path: owned(2) }),
        "vars" if segs.len() >= 2 => Ok(Ref { root: Root::Var(segs[1].to_owned()), path: owned(2) }),
        "steps" if segs.len() >= 3 && segs[2] == "output" => {
            Ok(Ref { root: Root::Step(segs[1].to_owned()), path: owned(3) })
        }
        "steps" if segs.len() >= 2 => {
            Err(format!("'{s}' does not address an output: write $.steps.{}.output[.<member>...]", segs[1]))
        }
        root @ ("input" | "vars" | "steps") => Err(format!("'{s}' names no {root} member: {forms}")),
        other => {
            let roots = ["input", "steps", "vars"].into_iter().chain(O::NAMES.iter().map(|(name, _)| *name));
            let hint = close(other, roots);
            let hint = hint.first().map(|h| format!(" (did you mean $.{h}?)")).unwrap_or_default();
            Err(format!("'{s}' starts from an unknown root '{other}'{hint}: {forms}"))
        }
    }
}

/// Every string in `v` that is a reference, with its pointer (`at` is the pointer of `v`).
pub fn references<'a>(v: &'a Json, at: &str, out: &mut Vec<(String, &'a str)>) {
    match v {
        Json::String(s) if is_reference(s) => out.push((at.to_owned(), s.as_str())),
        Json::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                references(x, &ptr(at, i), out);
            }
        }
        Json::Object(o) => {
            for (k, x) in o {
                references(x, &ptr(at, k), out);
            }
        }
        _ => {}
    }
}

/// Evaluate a template: references replaced by their values, `$$` unescaped. `value_of` gives
/// the value a root holds at this point (`None`: it has none).
pub fn resolve<'v, O: OwnRoots>(
    v: &Json,
    value_of: &dyn Fn(&Root<O>) -> Option<&'v Json>,
) -> Result<Json, String> {
    Ok(match v {
        Json::String(s) => resolve_text(s, value_of)?,
        Json::Array(a) => Json::Array(a.iter().map(|x| resolve(x, value_of)).collect::<Result<_, _>>()?),
        Json::Object(o) => Json::Object(
            o.iter().map(|(k, x)| Ok((k.clone(), resolve(x, value_of)?))).collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

/// Evaluate one string of a template (see [`resolve`]).
pub fn resolve_text<'v, O: OwnRoots>(
    s: &str,
    value_of: &dyn Fn(&Root<O>) -> Option<&'v Json>,
) -> Result<Json, String> {
    let r = match classify::<O>(s) {
        Text::Literal(l) => return Ok(Json::String(l.to_owned())),
        Text::Ref(Err(e)) => return Err(e),
        Text::Ref(Ok(r)) => r,
    };
    let mut cur = value_of(&r.root).ok_or_else(|| format!("{s} has no value at this point"))?;
    for seg in &r.path {
        let next = match cur {
            Json::Object(o) => o.get(seg),
            Json::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        cur = next.ok_or_else(|| format!("{s}: {} has no member '{seg}'", short(cur)))?;
    }
    Ok(cur.clone())
}

/// A value's JSON text, cut to 80 characters.
pub fn short(v: &Json) -> String {
    let text = v.to_string();
    if text.chars().count() <= 80 {
        text
    } else {
        format!("{}…", text.chars().take(80).collect::<String>())
    }
}

/// `base` + `/` + the RFC 6901 escape of `token`.
pub fn ptr(base: &str, token: impl std::fmt::Display) -> String {
    let token = token.to_string().replace('~', "~0").replace('/', "~1");
    format!("{base}/{token}")
}

/// Up to three of `candidates` within edit distance 3 of `name`, closest first.
pub fn close<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| (pilotage::engine::catalog::edit_distance(name, c), c))
        .filter(|(d, _)| *d <= 3)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// `Some("close match: a, b")` when there are close matches.
pub fn close_hint<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let m = close(name, candidates);
    (!m.is_empty()).then(|| format!("close match: {}", m.join(", ")))
}

/// Whether `s` is a plain name (inputs, loop variables): letters, digits and `_`, not starting
/// with a digit.
pub fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `s` is a usable step id: letters, digits, `_` and `-`.
pub fn is_step_id(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
