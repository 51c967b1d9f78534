//! The compile-time checks of a Language declaration (Part II §4.3 and the tool rules), from
//! the parsed attribute and methods to a [`Model`] ready to expand.

use std::collections::BTreeMap;
use std::path::PathBuf;

use quote::ToTokens;
use syn::{FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, LitStr, Type};

use super::parse::{attribute_span, parse_tool, unknown_key, Args, CapItem, Entry, RawTool, ToolKind};
use super::shapes::{self, LoopShape, Names, PlainShape};
use crate::errors::{closest, list, unknown, Errors};
use crate::guides::{self, Guide};

/// A capability: wire name, `Capability` variant, sub-features (wire name, `SubFeature`
/// variant).
type CapabilityRow = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

/// Every declarable capability.
const CAPABILITIES: [CapabilityRow; 6] = [
    ("guides", "Guides", &[("topic_fetch", "TopicFetch")]),
    ("catalog", "Catalog", &[("search", "Search"), ("changed_since", "ChangedSince")]),
    ("validate", "Validate", &[]),
    ("plan", "Plan", &[]),
    ("execute", "Execute", &[("test_run", "TestRun"), ("idempotency", "Idempotency")]),
    ("trace_fetch", "TraceFetch", &[("narrate", "Narrate")]),
];

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

/// Tool names the runtime serves itself.
const RESERVED_TOOLS: [&str; 3] = ["pilotage_manifest", "pilotage_get_guide", "pilotage_catalog"];

/// A checked retention.
pub enum Retention {
    None,
    Session,
    Duration { iso: String, secs: u64, nanos: u32 },
}

/// A checked loop tool.
pub struct LoopTool {
    /// MCP tool name.
    pub name: String,
    /// Doc comment, joined and trimmed.
    pub doc: String,
    /// The method serving it, with its checked shape (`None` for a trace tool: the runtime
    /// serves trace fetches itself).
    pub method: Option<(Ident, LoopShape)>,
    /// Whether the method is `async`.
    pub is_async: bool,
    /// `no_input`: a Run given `input` is refused before the method runs.
    pub no_input: bool,
    /// `inline`: the validator runs on the request's own task instead of an engine thread.
    pub inline: bool,
}

/// A checked plain tool.
pub struct PlainTool {
    pub name: String,
    pub description: String,
    pub read_only: bool,
    /// The raw form's input schema (JSON text), when given.
    pub input_schema: Option<String>,
    pub method: Ident,
    pub shape: PlainShape,
}

/// Where a Language's context schema comes from.
pub enum ContextSchema {
    /// `context_schema = "file.json"`: the file and its text.
    File(PathBuf, String),
    /// `context = MyContext`: the type the context is read into.
    Type(syn::Path),
}

/// Everything the expansion needs, all checked.
pub struct Model {
    pub name: String,
    pub title: String,
    pub program: String,
    /// `LocatorDialect` variant.
    pub locator: &'static str,
    /// `Capability` variants declared.
    pub capabilities: Vec<&'static str>,
    /// `SubFeature` variants declared.
    pub sub_features: Vec<&'static str>,
    /// `ExecutionMode` variant.
    pub execution: Option<&'static str>,
    /// `TraceLevel` variant.
    pub trace: Option<&'static str>,
    pub retention: Option<Retention>,
    /// `TraceSubprogram` variant.
    pub trace_subprogram: Option<&'static str>,
    /// `PromotionAuthority` variant.
    pub promotion_authority: Option<&'static str>,
    pub context_schema: Option<ContextSchema>,
    pub guides: Vec<Guide>,
    /// The `guides = "..."` value, where the closed-sets guide check reports.
    pub guides_lit: LitStr,
    pub codes: syn::Path,
    pub risk: syn::Path,
    pub statuses: Option<syn::Path>,
    pub kinds: Option<syn::Path>,
    /// The catalog method and its return type.
    pub catalog: Option<(Ident, Type)>,
    /// The narration method.
    pub narrate: Option<Ident>,
    /// The execute tool answers task-augmented calls.
    pub tasks: bool,
    pub validate: LoopTool,
    pub execute: Option<LoopTool>,
    pub trace_tool: Option<LoopTool>,
    pub plain_tools: Vec<PlainTool>,
    /// Methods whose bodies the runtime never calls (the trace tool).
    pub unused_methods: Vec<usize>,
}

/// Check everything; `None` when an error was recorded.
pub fn check(args: Args, tools: &[RawTool], item: &ItemImpl, errors: &mut Errors) -> Option<Model> {
    let required = [
        ("name", args.name.is_some(), "name = \"family/v1\"", ""),
        ("title", args.title.is_some(), "title = \"Human-readable title\"", ""),
        ("program", args.program.is_some(), "program = \"program\"", " (the program-bearing argument)"),
        ("locator", args.locator.is_some(), "locator = \"json-pointer\"", " (or \"text-range\")"),
        ("capabilities", args.capabilities.is_some(), "capabilities(guides, validate)", ""),
        (
            "guides",
            args.guides.is_some(),
            "guides = \"guides\"",
            " (a folder of .md guides, relative to the crate root)",
        ),
        ("codes", args.codes.is_some(), "codes = MyCodes", " (an enum with #[derive(pilotage::Codes)])"),
        ("risk", args.risk.is_some(), "risk = MyRisk", " (an enum with #[derive(pilotage::RiskLevels)])"),
    ];
    let absent: Vec<_> =
        required.iter().filter(|(key, present, ..)| !present && !args.mentioned.contains(key)).collect();
    let mut missing: Vec<String> =
        absent.iter().map(|(key, _, ex, note)| format!("`{key}`: add `{ex}`{note}")).collect();
    // One unknown key where one required key is missing is that key under another name.
    match (args.unmatched.as_slice(), absent.as_slice()) {
        ([meta], [(key, _, ex, _)]) => {
            let written = meta.path().to_token_stream().to_string().replace(' ', "");
            errors.spanned(
                meta.path(),
                format!("unknown key `{written}`: did you mean `{key}`? It is required: write `{ex}`"),
            );
            missing.clear();
        }
        (unmatched, _) => {
            for meta in unmatched {
                unknown_key(meta, errors);
            }
        }
    }
    if !missing.is_empty() {
        let keys = if missing.len() == 1 { "key" } else { "keys" };
        errors.at(
            attribute_span(),
            format!("#[pilotage::language] is missing required {keys}:\n  {}", missing.join("\n  ")),
        );
    }

    let name = args.name.as_ref().and_then(|e| check_name(&e.value, errors));
    let title = args.title.as_ref().and_then(|e| {
        let t = e.value.value();
        if t.trim().is_empty() {
            errors.spanned(&e.value, "`title` is empty: give the Language a human-readable title");
            None
        } else {
            Some(t)
        }
    });
    let program = args.program.as_ref().and_then(|e| check_program(&e.value, errors));
    let locator =
        one_of(&args.locator, &[("json-pointer", "JsonPointer"), ("text-range", "TextRange")], errors);
    let caps = args.capabilities.as_ref().map(|e| {
        empty_capabilities(e, &args, tools, errors).unwrap_or_else(|| check_capabilities(e, errors))
    });
    let execution = one_of(
        &args.execution,
        &[("immediate", "Immediate"), ("deploy", "Deploy"), ("both", "Both")],
        errors,
    );
    let trace = match &args.trace {
        Some(e) if e.value.value() == "none" => {
            errors.spanned(
                &e.value,
                "`trace = \"none\"` is not a trace ceiling: a Language that executes records its Runs (Part II §4.3); write `trace = \"summary\"` or `trace = \"full\"`",
            );
            None
        }
        _ => one_of(&args.trace, &[("summary", "Summary"), ("full", "Full")], errors),
    };
    let retention = args.retention.as_ref().and_then(|e| check_retention(&e.value, errors));
    let trace_subprogram =
        one_of(&args.trace_subprogram, &[("opaque", "Opaque"), ("expanded", "Expanded")], errors);
    let promotion_authority =
        one_of(&args.promotion_authority, &[("caller", "Caller"), ("promoter", "Promoter")], errors);
    let context_schema = match (&args.context_schema, &args.context) {
        (Some(file), Some(ty)) => {
            errors.spanned(
                &ty.meta,
                format!(
                    "the context schema is given twice: by the file `{}` and by the type `{}`; keep one",
                    file.value.value(),
                    shapes::show(&ty.value)
                ),
            );
            None
        }
        (Some(file), None) => {
            check_context_schema(&file.value, errors).map(|(p, t)| ContextSchema::File(p, t))
        }
        (None, Some(ty)) => Some(ContextSchema::Type(ty.value.clone())),
        (None, None) => None,
    };
    let guides = args.guides.as_ref().and_then(|e| check_guides(&e.value, errors));

    // Rules that depend on the declared capabilities.
    if let Some(caps) = &caps {
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
            (caps.get("trace_fetch"), &retention, &args.retention)
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
    }

    if let Some(caps) = &caps {
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
    let written = args.name.as_ref().map(|e| e.value.value()).unwrap_or_default();
    let family = Some(written.split('/').next().unwrap_or_default().trim())
        .filter(|f| !f.is_empty())
        .unwrap_or("family");
    let names = Names {
        codes: args.codes.as_ref().map(|e| e.value.clone()),
        risk: args.risk.as_ref().map(|e| e.value.clone()),
        statuses: args.statuses.as_ref().map(|e| e.value.clone()),
    };
    let tools = check_tools(
        tools,
        item,
        caps.as_ref(),
        family,
        &names,
        (args.trace_tool.as_ref(), args.mentioned.contains(&"trace_tool")),
        errors,
    );
    let catalog = args.catalog.as_ref().and_then(|e| {
        let method = find_method(item, &e.value, "catalog", errors)?;
        shapes::catalog(method, errors).map(|ret| (e.value.clone(), ret))
    });
    if let Some(e) = &args.narrate {
        find_method(item, &e.value, "narrate", errors);
    }

    if !errors.is_empty() {
        return None;
    }
    let caps = caps?;
    let (validate, execute, trace_tool, plain_tools, unused_methods) = tools?;
    let mut capabilities = Vec::new();
    let mut sub_features = Vec::new();
    for (wire, variant, subs) in CAPABILITIES {
        if let Some(cap) = caps.get(wire) {
            capabilities.push(variant);
            for (sub_wire, sub_variant) in subs {
                if cap.subs.iter().any(|s| s == sub_wire) {
                    sub_features.push(*sub_variant);
                }
            }
        }
    }
    Some(Model {
        name: name?,
        title: title?,
        program: program?,
        locator: locator?,
        capabilities,
        sub_features,
        execution,
        trace,
        retention,
        trace_subprogram,
        promotion_authority,
        context_schema,
        guides: guides?,
        guides_lit: args.guides?.value,
        codes: args.codes?.value,
        risk: args.risk?.value,
        statuses: args.statuses.map(|e| e.value),
        kinds: args.kinds.map(|e| e.value),
        catalog,
        narrate: args.narrate.map(|e| e.value),
        tasks: args.tasks.is_some(),
        validate,
        execute,
        trace_tool,
        plain_tools,
        unused_methods,
    })
}

fn check_name(lit: &LitStr, errors: &mut Errors) -> Option<String> {
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

fn check_program(lit: &LitStr, errors: &mut Errors) -> Option<String> {
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
fn one_of(
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

fn check_retention(lit: &LitStr, errors: &mut Errors) -> Option<Retention> {
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
pub fn resolve(relative: &str) -> PathBuf {
    let root = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_default();
    let path = root.join(relative);
    path.canonicalize().unwrap_or(path)
}

/// The method of the impl a key names, or an error at the name with the closest method.
fn find_method<'i>(
    item: &'i ItemImpl,
    name: &Ident,
    key: &str,
    errors: &mut Errors,
) -> Option<&'i ImplItemFn> {
    let methods: Vec<&ImplItemFn> =
        item.items.iter().filter_map(|i| if let ImplItem::Fn(f) = i { Some(f) } else { None }).collect();
    if let Some(found) = methods.iter().find(|f| f.sig.ident == *name) {
        return Some(found);
    }
    let names: Vec<String> = methods.iter().map(|f| f.sig.ident.to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let hint = match closest(&name.to_string(), &names) {
        Some(best) => format!(": did you mean `{best}`?"),
        None => format!(": add the method, or name one of this impl's methods in `{key} = ...`"),
    };
    errors.spanned(name, format!("`{key} = {name}` names no method of this impl{hint}"));
    None
}

fn check_context_schema(lit: &LitStr, errors: &mut Errors) -> Option<(PathBuf, String)> {
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
pub fn check_json_object(text: &str, lit: &LitStr, what: &str, errors: &mut Errors) -> Option<()> {
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

fn check_guides(lit: &LitStr, errors: &mut Errors) -> Option<Vec<Guide>> {
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

/// The declared capabilities by wire name.
/// The declared capabilities by wire name, and those a misspelled capability was presumably
/// meant to be: rules fire for neither their presence nor their absence, so the misspelling is
/// reported once.
struct Caps<'a>(BTreeMap<&'static str, &'a CapItem>, Vec<&'static str>);

impl<'a> Caps<'a> {
    /// Whether a misspelled capability was presumably meant to be `wire`.
    fn presumes(&self, wire: &str) -> bool {
        self.1.contains(&wire)
    }

    fn get(&self, wire: &str) -> Option<&'a CapItem> {
        self.0.get(wire).copied()
    }
}

/// `capabilities()` written empty: one error at the list, with the set the rest of the
/// declaration implies; every capability is then presumed, so no rule adds to it.
fn empty_capabilities<'a>(
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

fn check_capabilities<'a>(entry: &'a Entry<Vec<CapItem>>, errors: &mut Errors) -> Caps<'a> {
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

type Tools = (LoopTool, Option<LoopTool>, Option<LoopTool>, Vec<PlainTool>, Vec<usize>);

fn check_tools(
    raw: &[RawTool],
    item: &ItemImpl,
    caps: Option<&Caps<'_>>,
    family: &str,
    names: &Names,
    (trace_key, trace_misspelled): (Option<&Entry<LitStr>>, bool),
    errors: &mut Errors,
) -> Option<Tools> {
    let family: String = family
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' { c } else { '_' })
        .collect();
    let mut tool_names: Vec<String> = Vec::new();
    let mut stages: BTreeMap<&'static str, LoopTool> = BTreeMap::new();
    // Every stage some attribute names, even a broken one, with the method serving it.
    let mut served: BTreeMap<&'static str, Ident> = BTreeMap::new();
    let mut plain = Vec::new();
    let mut unused = Vec::new();
    let mut seen_methods: Vec<usize> = Vec::new();
    let mut ok = true;
    if let Some(key) = trace_key {
        match check_tool_name(&key.value, &tool_names, errors) {
            Some(name) => {
                tool_names.push(name.clone());
                stages.insert(
                    "trace",
                    LoopTool {
                        name,
                        doc: String::new(),
                        method: None,
                        is_async: false,
                        no_input: false,
                        inline: false,
                    },
                );
            }
            None => ok = false,
        }
        served.insert("trace", key.key.clone());
        if caps.is_some_and(|c| c.get("trace_fetch").is_none() && !c.presumes("trace_fetch")) {
            errors.spanned(
                &key.meta,
                "`trace_tool = ...` names the trace-fetch tool, which exists only with the `trace_fetch` capability: add `trace_fetch` to capabilities(...), or remove this key",
            );
        }
    }
    for raw_tool in raw {
        let ImplItem::Fn(method) = &item.items[raw_tool.item] else {
            errors.spanned(&raw_tool.attr, "tool attributes go on methods (`fn`) of the impl");
            ok = false;
            continue;
        };
        if seen_methods.contains(&raw_tool.item) {
            errors.spanned(
                &raw_tool.attr,
                format!("`fn {}` already has a tool attribute: one method serves one tool", method.sig.ident),
            );
            ok = false;
            continue;
        }
        seen_methods.push(raw_tool.item);
        let Some(tool) = parse_tool(raw_tool, errors) else {
            // The stage was unreadable (reported): the method's shape says which stage it
            // serves, so the stage is not also reported as missing.
            if let (true, Some(stage)) = (raw_tool.is_loop, shapes::stage_of_shape(method)) {
                served.entry(stage).or_insert_with(|| method.sig.ident.clone());
            }
            ok = false;
            continue;
        };
        if let ToolKind::Loop { stage, .. } = &tool.kind {
            let stage_name = stage_of(stage);
            if let (Some(key), "trace") = (trace_key, stage_name) {
                errors.spanned(
                    stage,
                    format!(
                        "the trace tool is already named by `trace_tool = \"{}\"`, and the runtime serves trace fetches itself: remove this method (or the key)",
                        key.value.value()
                    ),
                );
                ok = false;
                continue;
            }
            if let Some(first) = served.get(stage_name) {
                errors.spanned(
                    stage,
                    format!("a second `#[loop_tool({stage_name})]`: `fn {first}` already serves this stage; keep one"),
                );
                ok = false;
                continue;
            }
            served.insert(stage_name, method.sig.ident.clone());
        }
        if tool.broken {
            ok = false;
            continue;
        }
        let suggested = match &tool.kind {
            ToolKind::Loop { stage, .. } => match stage.to_string().as_str() {
                "validate" => format!("validate_{family}"),
                "execute" => format!("run_{family}"),
                _ => format!("trace_{family}"),
            },
            ToolKind::Plain { .. } => method.sig.ident.to_string(),
        };
        let name = match &tool.name {
            Some(lit) => check_tool_name(lit, &tool_names, errors).inspect(|n| tool_names.push(n.clone())),
            None => {
                errors.spanned(&tool.attr, format!("the tool needs a name: add `name = \"{suggested}\"`"));
                None
            }
        };
        match &tool.kind {
            ToolKind::Loop { stage, no_input, inline } => {
                let stage_name = stage_of(stage);
                let shape = check_method(stage_name, method, names, errors);
                let needs = match stage_name {
                    "execute" => Some("execute"),
                    "trace" => Some("trace_fetch"),
                    _ => None,
                };
                if let (Some(needs), Some(caps)) = (needs, caps) {
                    if caps.get(needs).is_none() && !caps.presumes(needs) {
                        errors.spanned(
                            stage,
                            format!("`#[loop_tool({stage_name})]` needs the `{needs}` capability: add `{needs}` to capabilities(...), or remove this tool"),
                        );
                    }
                }
                if stage_name == "trace" {
                    unused.push(tool.item);
                }
                let (Some(name), Some(shape)) = (name, shape) else {
                    ok = false;
                    continue;
                };
                stages.insert(
                    stage_name,
                    LoopTool {
                        name,
                        doc: doc_of(method),
                        method: shape.map(|s| (method.sig.ident.clone(), s)),
                        is_async: method.sig.asyncness.is_some(),
                        no_input: no_input.is_some(),
                        inline: inline.is_some(),
                    },
                );
            }
            ToolKind::Plain { description, read_only, input_schema } => {
                let shape = check_method("plain", method, names, errors)
                    .is_some()
                    .then(|| shapes::plain(method, errors))
                    .flatten();
                let description = match description {
                    Some(d) if d.value().trim().is_empty() => {
                        errors.spanned(d, "the description is empty: say what the tool does");
                        None
                    }
                    Some(d) => Some(d.value()),
                    None => {
                        let doc = doc_of(method);
                        if doc.is_empty() {
                            errors.spanned(
                                &tool.attr,
                                "a plain tool needs a description: add `description = \"...\"` or a doc comment on the method",
                            );
                            None
                        } else {
                            Some(doc)
                        }
                    }
                };
                let typed = shape.as_ref().and_then(|s| {
                    s.params.iter().find_map(|p| {
                        if let shapes::PlainParam::Typed(t) = p {
                            Some(t)
                        } else {
                            None
                        }
                    })
                });
                let schema = match (input_schema, typed) {
                    (Some(lit), Some(ty)) => {
                        errors.spanned(
                            lit,
                            format!("the input schema of a tool with typed arguments comes from their type `{}` (derive `JsonSchema` on it): remove `input_schema`", shapes::show(ty)),
                        );
                        None
                    }
                    (Some(lit), None) => check_json_object(&lit.value(), lit, "`input_schema`", errors)
                        .map(|()| Some(lit.value())),
                    (None, _) => Some(None),
                };
                let (Some(name), Some(description), Some(input_schema), Some(shape)) =
                    (name, description, schema, shape)
                else {
                    ok = false;
                    continue;
                };
                plain.push(PlainTool {
                    name,
                    description,
                    read_only: *read_only,
                    input_schema,
                    method: method.sig.ident.clone(),
                    shape,
                });
            }
        }
    }
    if !served.contains_key("validate") {
        errors.spanned(
            &item.self_ty,
            format!(
                "no method of this impl has `#[loop_tool(validate, ...)]`: every Language has a validate tool; add\n    #[loop_tool(validate, name = \"validate_{family}\")]\n    {} {{ ... }}",
                names.validate_sig("validate", "program", "v")
            ),
        );
    }
    if let Some(caps) = caps {
        for (cap, stage, example) in [
            (
                "execute",
                "execute",
                format!("#[loop_tool(execute, name = \"run_{family}\")]\n    {} {{ ... }}", names.execute_sig("async ", "run", "program", "run")),
            ),
            ("trace_fetch", "trace", format!("`trace_tool = \"trace_{family}\"` to #[pilotage::language(...)] (the runtime serves trace fetches)")),
        ] {
            // A misspelled `trace_tool` key was reported already.
            let misspelled = stage == "trace" && trace_misspelled;
            if let (Some(item), false) = (caps.get(cap), served.contains_key(stage) || misspelled) {
                let what = if stage == "trace" { "the trace-fetch tool has no name" } else { "no method has `#[loop_tool(execute, ...)]`" };
                errors.spanned(&item.ident, format!("`{cap}` is declared but {what}: add\n    {example}"));
            }
        }
    }
    if !ok || !errors.is_empty() {
        return None;
    }
    let validate = stages.remove("validate")?;
    let execute = stages.remove("execute");
    let trace = stages.remove("trace");
    Some((validate, execute, trace, plain, unused))
}

fn check_tool_name(lit: &LitStr, taken: &[String], errors: &mut Errors) -> Option<String> {
    let name = lit.value();
    let why = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.chars().count() > 128 {
        Some(format!("a tool name has at most 128 characters, this one has {}", name.chars().count()))
    } else if let Some(c) =
        name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        Some(format!("`{c}` is not allowed: tool names use only A-Z, a-z, 0-9, `_`, `.` and `-`"))
    } else if RESERVED_TOOLS.contains(&name.as_str()) {
        Some(format!("`{name}` is served by the runtime itself (reserved: {})", list(&RESERVED_TOOLS)))
    } else if taken.contains(&name) {
        Some("another tool of this Language already has this name: tool names are unique".to_owned())
    } else {
        None
    };
    match why {
        Some(why) => {
            let shown = if name.is_empty() { String::new() } else { format!(" `{name}`") };
            errors.spanned(lit, format!("invalid tool name{shown}: {why}"));
            None
        }
        None => Some(name),
    }
}

fn stage_of(stage: &Ident) -> &'static str {
    match stage.to_string().as_str() {
        "validate" => "validate",
        "execute" => "execute",
        _ => "trace",
    }
}

/// Receiver, asyncness and arity of a tool method, then its types ([`shapes`]). `stage` is
/// validate, execute, trace or plain. `None` when an error was reported; `Some(None)` for a
/// trace method (its body is never called) and a plain tool (checked by [`shapes::plain`]).
fn check_method(
    stage: &str,
    method: &ImplItemFn,
    names: &Names,
    errors: &mut Errors,
) -> Option<Option<LoopShape>> {
    if stage == "trace" {
        return Some(None);
    }
    let sig = &method.sig;
    let m = sig.ident.to_string();
    let shape = match stage {
        "validate" => names.validate_sig(&m, "program", "v"),
        "execute" => names.execute_sig("async ", &m, "program", "run"),
        _ => format!("fn {m}(&self, args: &Json) -> Result<Json, String>"),
    };
    let shape_note = if stage == "plain" {
        " (or typed: `args: MyArgs` with `MyArgs: Deserialize + JsonSchema`; optionally `caller: &Caller` too)"
    } else {
        ""
    };
    let mut ok = true;
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => {
            let why = if r.colon_token.is_some() {
                Some("take `&self`, not a typed receiver".to_owned())
            } else if r.reference.is_none() {
                Some("take `&self`, not `self` by value: the engine is shared between requests".to_owned())
            } else if r.mutability.is_some() {
                Some(if stage == "validate" {
                    "the validate method must take `&self`, not `&mut self`: validation is side-effect free (keep caches behind interior mutability)".to_owned()
                } else {
                    "take `&self`, not `&mut self`: the engine is shared between concurrent requests (use interior mutability)".to_owned()
                })
            } else {
                None
            };
            if let Some(why) = why {
                errors.spanned(r, why);
                ok = false;
            }
        }
        _ => {
            errors.spanned(&sig.ident, format!("a tool method takes `&self` first: `{shape}`{shape_note}"));
            return None;
        }
    }
    if stage != "execute" {
        if let Some(a) = &sig.asyncness {
            let what = if stage == "validate" { "the validate method" } else { "a plain tool" };
            errors.spanned(a, format!("{what} is synchronous: remove `async`"));
            ok = false;
        }
    }
    let params = sig.inputs.len() - 1;
    let arity_ok = match stage {
        "plain" => params == 1 || params == 2,
        _ => params == 2,
    };
    if !arity_ok {
        let count = match params {
            0 => "no parameter".to_owned(),
            1 => "1 parameter".to_owned(),
            n => format!("{n} parameters"),
        };
        errors.at(
            sig.paren_token.span.join(),
            format!("this tool method takes {count} after `&self`; expected `{shape}`{shape_note}"),
        );
        return None;
    }
    let shape = match stage {
        "validate" => shapes::validate(method, names, errors),
        "execute" => shapes::execute(method, names, errors),
        _ => return ok.then_some(None),
    };
    match (ok, shape) {
        (true, Some(shape)) => Some(Some(shape)),
        _ => None,
    }
}

/// The doc comment of a method: lines joined with `\n`, each without its leading space, the
/// whole trimmed.
fn doc_of(method: &ImplItemFn) -> String {
    let lines: Vec<String> = method
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
                ..
            }) => Some(s.value()),
            _ => None,
        })
        .flat_map(|s| {
            s.split('\n').map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end().to_owned()).collect::<Vec<_>>()
        })
        .collect();
    lines.join("\n").trim().to_owned()
}
