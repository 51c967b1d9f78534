//! The tool attributes of the impl: one validate tool, the execute and trace tools the
//! capabilities call for, any plain tools; their names, stages and descriptions.

use std::collections::BTreeMap;

use syn::{Ident, ImplItem, ImplItemFn, ItemImpl, LitStr};

use super::capabilities::Caps;
use super::methods::check_method;
use super::values::check_json_object;
use super::{LoopTool, PlainTool};
use crate::errors::{list, Errors};
use crate::language::parse::{parse_tool, Entry, RawTool, ToolKind};
use crate::language::shapes::{self, Names};

/// Tool names the runtime serves itself.
const RESERVED_TOOLS: [&str; 3] = ["pilotage_manifest", "pilotage_get_guide", "pilotage_catalog"];

type Tools = (LoopTool, Option<LoopTool>, Option<LoopTool>, Vec<PlainTool>, Vec<usize>);

pub(super) fn check_tools(
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
