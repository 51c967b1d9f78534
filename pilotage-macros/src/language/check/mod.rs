//! The compile-time checks of a Language declaration (Part II §4.3 and the tool rules), from
//! the parsed attribute and methods to a [`Model`] ready to expand: the keys' values
//! ([`values`]), the capabilities and the keys they require ([`capabilities`]), the tool
//! attributes ([`tools`]) and the methods' shapes ([`methods`]).

mod capabilities;
mod methods;
mod tools;
mod values;

use std::path::PathBuf;

use quote::ToTokens;
use syn::{Ident, ItemImpl, LitStr, Type};

use super::parse::{attribute_span, unknown_key, Args, RawTool};
use super::shapes::{self, LoopShape, Names, PlainShape};
use crate::errors::Errors;
use crate::guides::Guide;
use capabilities::{check_capabilities, empty_capabilities, CAPABILITIES};
use methods::find_method;
use tools::check_tools;
use values::{check_context_schema, check_guides, check_name, check_program, check_retention, one_of};

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
        capabilities::dependent_keys(caps, &args, execution, &retention, errors);
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
