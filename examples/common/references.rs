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

use serde_json::{Map, Value as Json};

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
///
/// Every value built is charged to the engine call's [`Budget`](pilotage::engine::Budget) as
/// the memory it takes, before it is built or copied: a template that copies large outputs
/// many times fails once the budget refuses (the runtime then ends the run `partial` at its
/// memory bound), instead of making the server allocate without bound.
pub fn resolve<'v, O: OwnRoots>(
    v: &Json,
    value_of: &dyn Fn(&Root<O>) -> Option<&'v Json>,
) -> Result<Json, String> {
    resolve_within(v, value_of, &pilotage::engine::Budget::current())
}

fn resolve_within<'v, O: OwnRoots>(
    v: &Json,
    value_of: &dyn Fn(&Root<O>) -> Option<&'v Json>,
    budget: &pilotage::engine::Budget,
) -> Result<Json, String> {
    use pilotage::engine::memory::node_memory;
    Ok(match v {
        Json::String(s) => text_within(s, value_of, budget)?,
        Json::Array(a) => {
            // The result has the template's shape: its item slots are charged before it is built.
            charge(budget, node_memory(v))?;
            let mut items = Vec::with_capacity(a.len());
            for x in a {
                items.push(resolve_within(x, value_of, budget)?);
            }
            Json::Array(items)
        }
        Json::Object(o) => {
            charge(budget, node_memory(v))?;
            let mut members = Map::with_capacity(o.len());
            for (k, x) in o {
                members.insert(k.clone(), resolve_within(x, value_of, budget)?);
            }
            Json::Object(members)
        }
        other => other.clone(),
    })
}

/// Charge `bytes` to `budget`; the error a resolution fails with once it refuses.
fn charge(budget: &pilotage::engine::Budget, bytes: usize) -> Result<(), String> {
    if budget.charge(bytes) {
        Ok(())
    } else {
        Err(format!("the values this run builds exceed its memory bound of {} bytes", budget.limit()))
    }
}

/// Evaluate one string of a template (see [`resolve`]).
pub fn resolve_text<'v, O: OwnRoots>(
    s: &str,
    value_of: &dyn Fn(&Root<O>) -> Option<&'v Json>,
) -> Result<Json, String> {
    text_within(s, value_of, &pilotage::engine::Budget::current())
}

fn text_within<'v, O: OwnRoots>(
    s: &str,
    value_of: &dyn Fn(&Root<O>) -> Option<&'v Json>,
    budget: &pilotage::engine::Budget,
) -> Result<Json, String> {
    let r = match classify::<O>(s) {
        Text::Literal(l) => {
            let literal = Json::String(l.to_owned());
            charge(budget, pilotage::engine::memory::node_memory(&literal))?;
            return Ok(literal);
        }
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
    // A deep copy: charged as the memory it will take, before it is made.
    charge(budget, pilotage::engine::memory::value_memory(cur))?;
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

/// Close-match lookups one validation makes (see [`begin_hints`]); later unknown names get the
/// engine's plain hint. Keeps validation linear in the program's size: each lookup compares
/// against at most [`MAX_HINT_CANDIDATES`] candidates of similar length.
pub const MAX_HINT_LOOKUPS: usize = 64;
/// Candidates one close-match lookup compares at most.
pub const MAX_HINT_CANDIDATES: usize = 4096;
/// Names longer than this get no close-match hint.
const MAX_HINT_NAME: usize = 64;

thread_local! {
    static HINTS_LEFT: std::cell::Cell<usize> = const { std::cell::Cell::new(MAX_HINT_LOOKUPS) };
}

/// Start a validation's close-match allowance ([`MAX_HINT_LOOKUPS`] on this thread).
pub fn begin_hints() {
    HINTS_LEFT.with(|h| h.set(MAX_HINT_LOOKUPS));
}

/// Whether this validation may still compute a close-match hint (check it before gathering
/// candidates that cost work to list).
pub fn hints_left() -> bool {
    HINTS_LEFT.with(|h| h.get() > 0) && !pilotage::engine::Signal::current().is_cancelled()
}

/// Up to three of `candidates` within edit distance 3 of `name`, closest first (none once the
/// validation's allowance of lookups is spent, or the call is cancelled).
pub fn close<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let n = name.chars().count();
    if n > MAX_HINT_NAME || !hints_left() {
        return Vec::new();
    }
    HINTS_LEFT.with(|h| h.set(h.get() - 1));
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .take(MAX_HINT_CANDIDATES)
        .filter(|c| c.len() <= 4 * (MAX_HINT_NAME + 3) && c.chars().count().abs_diff(n) <= 3)
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
