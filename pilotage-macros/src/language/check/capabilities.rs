//! The `capabilities(...)` list: each capability and sub-feature, the requirements among them
//! (Part II §4.3), and the keys the declared ones require or forbid.

use std::collections::BTreeMap;

use super::Retention;
use crate::errors::{closest, list, unknown, Errors};
use crate::language::parse::{Args, CapItem, Entry, RawTool};

/// A capability: wire name, `Capability` variant, sub-features (wire name, `SubFeature`
/// variant).
type CapabilityRow = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

/// Every declarable capability.
pub(super) const CAPABILITIES: [CapabilityRow; 6] = [
    ("guides", "Guides", &[("topic_fetch", "TopicFetch")]),
    ("catalog", "Catalog", &[("search", "Search"), ("changed_since", "ChangedSince")]),
    ("validate", "Validate", &[]),
    ("plan", "Plan", &[]),
    ("execute", "Execute", &[("test_run", "TestRun"), ("idempotency", "Idempotency")]),
    ("trace_fetch", "TraceFetch", &[("narrate", "Narrate")]),
];

/// The declared capabilities by wire name.
/// The declared capabilities by wire name, and those a misspelled capability was presumably
/// meant to be: rules fire for neither their presence nor their absence, so the misspelling is
/// reported once.
pub(super) struct Caps<'a>(BTreeMap<&'static str, &'a CapItem>, Vec<&'static str>);

impl<'a> Caps<'a> {
    /// Whether a misspelled capability was presumably meant to be `wire`.
    pub(super) fn presumes(&self, wire: &str) -> bool {
        self.1.contains(&wire)
    }

    pub(super) fn get(&self, wire: &str) -> Option<&'a CapItem> {
        self.0.get(wire).copied()
    }
}

/// `capabilities()` written empty: one error at the list, with the set the rest of the
/// declaration implies; every capability is then presumed, so no rule adds to it.
pub(super) fn empty_capabilities<'a>(
    entry: &Entry<Vec<CapItem>>,
    args: &Args,
    tools: &[RawTool],
    errors: &mut Errors,
) -> Option<Caps<'a>> {
    let syn::Meta::List(written) = &entry.meta else { return None };
    if !written.tokens.is_empty() {
        return None;
    }
    let stage = |wanted: &str| {
        tools.iter().any(|t| match &t.attr.meta {
            syn::Meta::List(l) => {
                l.tokens.clone().into_iter().next().is_some_and(|t| t.to_string() == wanted)
            }
            _ => false,
        })
    };
    let mut set = vec!["guides", "validate"];
    if args.catalog.is_some() || args.kinds.is_some() {
        set.insert(1, "catalog");
    }
    let trace_fetch = args.trace_tool.is_some() || stage("trace");
    if trace_fetch
        || stage("execute")
        || args.execution.is_some()
        || args.trace.is_some()
        || args.tasks.is_some()
    {
        set.push("execute");
    }
    if trace_fetch {
        set.push("trace_fetch");
    }
    let all: Vec<&'static str> = CAPABILITIES.iter().map(|c| c.0).collect();
    errors.spanned(
        &entry.meta,
        format!(
            "`capabilities()` is empty: a Language declares at least `guides` and `validate`; write `capabilities({})` (the capabilities are {}, and `guides(topic_fetch)`, `catalog(search, changed_since)`, `execute(test_run, idempotency)`, `trace_fetch(narrate)` take sub-features)",
            set.join(", "),
            list(&all)
        ),
    );
    Some(Caps(BTreeMap::new(), all))
}

pub(super) fn check_capabilities<'a>(entry: &'a Entry<Vec<CapItem>>, errors: &mut Errors) -> Caps<'a> {
    let names: Vec<&str> = CAPABILITIES.iter().map(|c| c.0).collect();
    let mut declared: BTreeMap<&'static str, &'a CapItem> = BTreeMap::new();
    let mut presumed: Vec<&'static str> = Vec::new();
    for item in &entry.value {
        let wire = item.ident.to_string();
        let Some((cap, _, subs)) = CAPABILITIES.iter().find(|c| c.0 == wire) else {
            match CAPABILITIES.iter().find(|c| c.2.iter().any(|s| s.0 == wire)) {
                Some((parent, ..)) => errors.spanned(
                    &item.ident,
                    format!(
                        "`{wire}` is a sub-feature of `{parent}`, not a capability: write `{parent}({wire})`"
                    ),
                ),
                None => {
                    errors.spanned(&item.ident, unknown("capability", &wire, &names));
                    // The rules that follow read the typo as the capability it was meant to
                    // be, so the one mistake is reported once.
                    if let Some(meant) = closest(&wire, &names) {
                        presumed.extend(CAPABILITIES.iter().map(|c| c.0).find(|c| *c == meant));
                    }
                }
            }
            continue;
        };
        if declared.contains_key(cap) {
            errors.spanned(
                &item.ident,
                format!("`{cap}` is declared twice: declare it once, with all its sub-features"),
            );
            continue;
        }
        declared.insert(cap, item);
        let sub_names: Vec<&str> = subs.iter().map(|s| s.0).collect();
        for (i, sub) in item.subs.iter().enumerate() {
            let s = sub.to_string();
            if item.subs[..i].iter().any(|o| *o == s) {
                errors.spanned(sub, format!("sub-feature `{s}` is given twice"));
            } else if sub_names.contains(&s.as_str()) {
                // fine
            } else if let Some((parent, ..)) = CAPABILITIES.iter().find(|c| c.2.iter().any(|x| x.0 == s)) {
                errors
                    .spanned(sub, format!("`{s}` belongs to `{parent}`, not `{cap}`: write `{parent}({s})`"));
            } else if sub_names.is_empty() {
                errors.spanned(sub, format!("`{cap}` has no sub-features: write plain `{cap}`"));
            } else {
                errors.spanned(sub, unknown(&format!("`{cap}` sub-feature"), &s, &sub_names));
            }
        }
    }
    // Capability requirements (Part II §4.3). A missing floor capability is reported once, by
    // the floor rule, naming the declared capabilities that need it too.
    const REQUIRES: [(&str, &str); 4] =
        [("validate", "guides"), ("plan", "validate"), ("execute", "validate"), ("trace_fetch", "execute")];
    for floor in ["guides", "validate"] {
        if !declared.contains_key(floor) && !presumed.contains(&floor) {
            let needing: Vec<String> = REQUIRES
                .iter()
                .filter(|(cap, needs)| *needs == floor && declared.contains_key(cap))
                .map(|(cap, _)| format!("`{cap}`"))
                .collect();
            let also = match needing.as_slice() {
                [] => String::new(),
                [one] => format!(" ({one} requires `{floor}`)"),
                several => format!(" ({} require `{floor}`)", several.join(" and ")),
            };
            errors.spanned(
                &entry.meta,
                format!("the minimum capability floor requires `{floor}`{also}: add `{floor}` to capabilities(...)"),
            );
        }
    }
    for (cap, needs) in REQUIRES.iter().filter(|(_, needs)| !["guides", "validate"].contains(needs)) {
        if let (Some(item), false) =
            (declared.get(cap), declared.contains_key(needs) || presumed.contains(needs))
        {
            errors.spanned(
                &item.ident,
                format!("`{cap}` requires `{needs}`: add `{needs}` to capabilities(...)"),
            );
        }
    }
    Caps(declared, presumed)
}

/// The keys the declared capabilities require or forbid: `execution`, `trace`, `retention`,
/// `tasks`, `catalog`, `kinds`, `narrate`, and `test_run` / `trace_fetch` against the values.
pub(super) fn dependent_keys(
    caps: &Caps<'_>,
    args: &Args,
    execution: Option<&'static str>,
    retention: &Option<Retention>,
    errors: &mut Errors,
) {
    let execute = caps.get("execute");
    for (key, entry, ex) in [
        ("execution", args.execution.as_ref(), "execution = \"immediate\"` (immediate | deploy | both)"),
        ("trace", args.trace.as_ref(), "trace = \"full\"` (summary | full)"),
        (
            "retention",
            args.retention.as_ref(),
            "retention = \"session\"` (none | session | an ISO 8601 duration such as \"PT1H\")",
        ),
    ] {
        match (execute, entry) {
            // A misspelled key was reported already, with the key it was meant as.
            (Some(_), None) if args.mentioned.contains(&key) => {}
            (Some(cap), None) => errors.spanned(
                &cap.ident,
                format!("`execute` is declared, so `{key}` is required: add `{ex}"),
            ),
            (None, Some(entry)) if !caps.presumes("execute") => errors.spanned(
                &entry.meta,
                format!("`{key}` applies only when `execute` is declared: remove it, or add `execute` to capabilities(...)"),
            ),
            _ => {}
        }
    }
    if let (None, Some(entry)) = (execute, &args.tasks) {
        if !caps.presumes("execute") {
            errors.spanned(
                &entry.meta,
                "`tasks` makes the execute tool answer task-augmented calls, but `execute` is not declared: remove `tasks`, or add `execute` to capabilities(...)",
            );
        }
    }
    if let (Some(_), Some(Retention::None), Some(entry)) =
        (caps.get("trace_fetch"), retention, &args.retention)
    {
        errors.spanned(
            &entry.value,
            "`trace_fetch` needs stored Runs, but `retention = \"none\"` keeps none: use `retention = \"session\"` or a duration such as \"PT1H\", or remove `trace_fetch`",
        );
    }
    if let (Some(cap), Some("Immediate")) = (caps.get("execute"), execution) {
        if let Some(test_run) = cap.subs.iter().find(|s| *s == "test_run") {
            errors.spanned(
                test_run,
                "`execute(test_run)` needs a mode that can install for later, but `execution = \"immediate\"`: use `execution = \"deploy\"` or `\"both\"`, or remove `test_run`",
            );
        }
    }
    let catalog = caps.get("catalog");
    for (key, given, ex) in [
        ("catalog", args.catalog.as_ref().map(|e| &e.meta), "catalog = catalog_snapshot` (the method `fn(&self, caller: &Caller) -> Arc<CatalogSnapshot>` returning the caller's snapshot)"),
        ("kinds", args.kinds.as_ref().map(|e| &e.meta), "kinds = MyKinds` (an enum with #[derive(pilotage::EntryKinds)])"),
    ] {
        match (catalog, given) {
            (Some(_), None) if args.mentioned.contains(&key) => {}
            (Some(cap), None) => errors.spanned(
                &cap.ident,
                format!("the `catalog` capability is declared, so `{key} = ...` is required: add `{ex}"),
            ),
            (None, Some(meta)) if !caps.presumes("catalog") => errors.spanned(
                meta,
                format!("`{key} = ...` applies only with the `catalog` capability: add `catalog` to capabilities(...), or remove this key"),
            ),
            _ => {}
        }
    }
    let narrate = caps.get("trace_fetch").and_then(|c| c.subs.iter().find(|s| *s == "narrate"));
    match (narrate, &args.narrate) {
        (Some(_), None) if args.mentioned.contains(&"narrate") => {}
        (Some(sub), None) => errors.spanned(
            sub,
            "`trace_fetch(narrate)` is declared, so `narrate = method` is required: add `narrate = narrate_run` (a method `fn(&self, run: &TraceFetchResponse, question: Option<&str>) -> Option<String>`)",
        ),
        (None, Some(entry)) => errors.spanned(
            &entry.meta,
            "`narrate = ...` applies only with `trace_fetch(narrate)`: declare the sub-feature, or remove this key",
        ),
        _ => {}
    }
}
