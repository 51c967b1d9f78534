//! The tool surface (Part III §3.4, §4, §5): every tool's name, signpost description,
//! annotations, `_meta` program declaration, input schema and output schema, built once when
//! the server is built.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{json, Value};

use super::schemas as schema;
use crate::model::capabilities::Capability;
use crate::model::check::SchemaCheck;
use crate::model::manifest::{CATALOG_TOOL, EXTENSION_ID, GUIDE_TOOL, MANIFEST_TOOL};
use crate::model::schema::standardize;
use crate::ops::Hosted;

/// A loop stage served by a (possibly shared) tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Validate,
    Execute,
}

/// Where a tool name leads.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    Manifest,
    Guide,
    Catalog,
    /// A validate or execute tool and the Languages it serves (several when shared).
    Loop(Stage, Vec<usize>),
    Trace(usize),
    Promote(usize),
    Plain(usize),
}

/// One registered tool with its compiled schemas.
pub(crate) struct ToolEntry {
    pub tool: Tool,
    pub route: Route,
    pub input: SchemaCheck,
    /// The check of the tool's results against its `outputSchema` (debug builds), for the
    /// runtime's own tools; a plain or promote tool's result is the engine's (never checked).
    pub output: Option<SchemaCheck>,
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn annotations(read_only: bool, destructive: bool, open_world: bool) -> ToolAnnotations {
    let mut a = ToolAnnotations::new();
    a.read_only_hint = Some(read_only);
    if !read_only {
        a.destructive_hint = Some(destructive);
    }
    a.open_world_hint = Some(open_world);
    a
}

fn entry(
    name: &str,
    description: String,
    input: Value,
    output: Value,
    ann: ToolAnnotations,
    route: Route,
    meta: Option<Value>,
) -> Result<ToolEntry, String> {
    // The one place every advertised schema passes: only standard JSON Schema on the wire.
    let (input, output) = (standardize(input), standardize(output));
    let input_check = SchemaCheck::new(&input).map_err(|e| format!("tool {name}: its inputSchema {e}"))?;
    let output_check = match &route {
        Route::Plain(_) | Route::Promote(_) => None,
        _ => Some(SchemaCheck::new(&output).map_err(|e| format!("tool {name}: its outputSchema {e}"))?),
    };
    let mut tool = Tool::default();
    tool.name = name.to_owned().into();
    tool.description = Some(description.into());
    tool.input_schema = object(input);
    tool.output_schema = Some(object(output));
    tool.annotations = Some(ann);
    if let Some(m) = meta {
        let mut meta = JsonObject::new();
        meta.insert(EXTENSION_ID.to_owned(), m);
        tool.meta = Some(MetaObject(meta));
    }
    Ok(ToolEntry { tool, route, input: input_check, output: output_check })
}

fn with_doc(base: String, doc: &str) -> String {
    let doc = doc.trim();
    if doc.is_empty() {
        base
    } else {
        format!("{base}\n\n{doc}")
    }
}

/// Every tool of a server hosting `langs`.
pub(crate) fn build(langs: &[Hosted]) -> Result<Vec<ToolEntry>, String> {
    let mut tools = fixed_tools(langs)?;
    tools.extend(loop_tools(langs)?);
    for (i, l) in langs.iter().enumerate() {
        tools.extend(language_tools(i, l)?);
    }
    Ok(tools)
}

/// `pilotage_manifest`, `pilotage_get_guide` and, when any Language has a catalog,
/// `pilotage_catalog`.
fn fixed_tools(langs: &[Hosted]) -> Result<Vec<ToolEntry>, String> {
    let names: Vec<&str> = langs.iter().map(|l| l.spec.name).collect();
    let names = names.join(", ");
    let mut tools = vec![
        entry(
            MANIFEST_TOOL,
            format!(
                "START HERE: call this first. Returns the Pilotage manifest of this server's program Languages ({names}): \
                 for each Language its capabilities, guides, catalog and the names of its validate, execute and trace tools. \
                 Read it before using any other tool of this server."
            ),
            schema::manifest_input(),
            schema::manifest_output(),
            annotations(true, false, false),
            Route::Manifest,
            None,
        )?,
        entry(
            GUIDE_TOOL,
            format!(
                "Learn stage: the guides. Without `id`, lists the guides of a Language ({names}); with `id`, returns that guide's body \
                 (read the `core` guide first, the `closed-sets` reference guide for every code, status and risk level)."
            ),
            schema::guide_input(),
            schema::guide_output(),
            annotations(true, false, false),
            Route::Guide,
            None,
        )?,
    ];
    if langs.iter().any(|l| l.effective.declares(Capability::Catalog)) {
        tools.push(entry(
            CATALOG_TOOL,
            "Lookup stage: the catalog. Lists, gets or diffs the environment-bound names (capabilities, tables, ...) a program \
             may reference, with their input schemas and risk; every answer carries the catalog_version to pass to execute."
                .to_owned(),
            schema::catalog_input(),
            schema::catalog_output(),
            annotations(true, false, false),
            Route::Catalog,
            None,
        )?);
    }
    Ok(tools)
}

/// The tools of one Language beside the (possibly shared) loop: trace fetch, promote, plain.
fn language_tools(i: usize, l: &Hosted) -> Result<Vec<ToolEntry>, String> {
    let mut tools = Vec::new();
    let spec = l.spec;
    let decl = json!({"argument": spec.program_argument, "language": spec.name});
    if let (true, Some(t)) = (l.effective.declares(Capability::TraceFetch), &spec.tools.trace) {
        tools.push(entry(
                t.name,
                with_doc(
                    format!(
                        "Trace fetch stage for Language {}: returns the stored trace of an earlier run of this Language by run_id \
                         (runs executed with store: true or under its retention policy).",
                        spec.name
                    ),
                    t.doc,
                ),
                schema::trace_input(&l.effective),
                schema::trace_output(),
                annotations(true, false, false),
                Route::Trace(i),
                None,
            )?);
    }
    if let (Some(kind), true) = (spec.sets.promoted, l.effective.declares(Capability::Plan)) {
        let family = spec.name.split('/').next().unwrap_or(spec.name);
        let mut e = entry(
                &promote_tool_name(spec.name),
                format!(
                    "Promote a valid {} program (argument `{}`) so it can be run later by reference: stores the body immutably and \
                     exposes it in the catalog as a `{kind}` entry whose id is the program_ref, with its input_schema and the body's risk. \
                     Not part of the {family} loop; an invalid program is refused with its diagnostics.",
                    spec.name, spec.program_argument
                ),
                schema::promote_input(spec),
                json!({"type": "object"}),
                annotations(false, false, false),
                Route::Promote(i),
                Some(decl),
            )?;
        e.tool.output_schema = None;
        tools.push(e);
    }
    for p in &spec.plain_tools {
        let mut e = entry(
            p.name,
            p.description.to_owned(),
            p.input_schema.clone(),
            p.output_schema.clone().unwrap_or_else(|| json!({"type": "object"})),
            annotations(p.read_only, false, false),
            Route::Plain(i),
            None,
        )?;
        if p.output_schema.is_none() {
            e.tool.output_schema = None;
        }
        tools.push(e);
    }
    Ok(tools)
}

/// The promote tool's name for Language `name`: `promote_<family>`.
pub(crate) fn promote_tool_name(name: &str) -> String {
    let family: String = name
        .split('/')
        .next()
        .unwrap_or(name)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    format!("promote_{family}")
}

/// The validate and execute tools. Languages may share one only through distinct
/// program-bearing arguments (Part III §4.3): the shared tool then declares a `languages`
/// array, requires none of its program arguments, and selects the Language by the argument
/// present.
fn loop_tools(langs: &[Hosted]) -> Result<Vec<ToolEntry>, String> {
    let mut groups: Vec<(&'static str, Stage, Vec<usize>, String)> = Vec::new();
    for (i, l) in langs.iter().enumerate() {
        let spec = l.spec;
        let mut stages = vec![(spec.tools.validate.name, Stage::Validate, spec.tools.validate.doc)];
        if let (true, Some(t)) = (l.effective.declares(Capability::Execute), &spec.tools.execute) {
            stages.push((t.name, Stage::Execute, t.doc));
        }
        for (name, stage, doc) in stages {
            match groups.iter_mut().find(|g| g.0 == name) {
                Some(g) if g.1 != stage => {
                    return Err(format!(
                        "tool `{name}` cannot serve two stages: each Language names its own tools"
                    ))
                }
                Some(g) => {
                    if let Some(other) =
                        g.2.iter().find(|o| langs[**o].spec.program_argument == spec.program_argument)
                    {
                        return Err(format!(
                            "Languages {} and {} share tool `{name}` through the same program argument `{}`: shared loop tools need distinct program arguments (Part III §4.3)",
                            langs[*other].spec.name, spec.name, spec.program_argument
                        ));
                    }
                    g.2.push(i);
                    if !doc.trim().is_empty() {
                        g.3 = format!("{}\n\n{}", g.3, doc.trim()).trim().to_owned();
                    }
                }
                None => groups.push((name, stage, vec![i], doc.trim().to_owned())),
            }
        }
    }
    groups
        .into_iter()
        .map(|(name, stage, members, doc)| {
            let names: Vec<&str> = members.iter().map(|m| langs[*m].spec.name).collect();
            let args: Vec<String> = members.iter().map(|m| format!("`{}`", langs[*m].spec.program_argument)).collect();
            let (which, args) = (names.join(", "), args.join(" or "));
            let decl = if members.len() == 1 {
                json!({"argument": langs[members[0]].spec.program_argument, "language": names[0]})
            } else {
                json!({"languages": members.iter().map(|m| json!({"argument": langs[*m].spec.program_argument, "language": langs[*m].spec.name})).collect::<Vec<_>>()})
            };
            let shared = members.len() > 1;
            let pick = if shared { " Supply exactly one program argument: it selects the Language." } else { "" };
            let (description, input, output, ann) = match stage {
                Stage::Validate => (
                    format!(
                        "Validate stage for Language {which}: checks a program (argument {args}) without side effects and returns closed diagnostics; \
                         a valid program also gets its plan with risk. Invalid programs are results, not errors.{pick}"
                    ),
                    merge_inputs(members.iter().map(|m| schema::validate_input(langs[*m].spec)), shared),
                    schema::validate_output(),
                    annotations(true, false, false),
                ),
                Stage::Execute => {
                    let risks = || members.iter().flat_map(|m| langs[*m].spec.sets.risks.iter());
                    (
                        format!(
                            "Execute stage for Language {which}: runs a program (argument {args}) after re-validating it and returns its outcome, \
                             output and trace. Pass the catalog_version from validation as expected_catalog_version.{pick}"
                        ),
                        merge_inputs(members.iter().map(|m| schema::execute_input(langs[*m].spec, &langs[*m].effective)), shared),
                        schema::execute_output(),
                        annotations(
                            risks().all(|r| r.hints.read_only),
                            risks().any(|r| r.hints.destructive),
                            risks().any(|r| r.hints.open_world),
                        ),
                    )
                }
            };
            entry(name, with_doc(description, &doc), input, output, ann, Route::Loop(stage, members), Some(decl))
        })
        .collect()
}

/// One Language's input schema as is; several merged (union of properties, nothing required).
fn merge_inputs(schemas: impl Iterator<Item = Value>, shared: bool) -> Value {
    let mut properties = serde_json::Map::new();
    let mut single = None;
    for s in schemas {
        if let Some(Value::Object(p)) = s.get("properties") {
            for (k, v) in p {
                properties.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        single = Some(s);
    }
    match (shared, single) {
        (false, Some(s)) => s,
        _ => json!({"type": "object", "properties": properties}),
    }
}
