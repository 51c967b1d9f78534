//! The tool surface (Part III §3.4, §4, §5): every tool's name, signpost description,
//! annotations, `_meta` program declaration, input schema and output schema, built once when
//! the server is built.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{json, Value};

use crate::capabilities::Capability;
use crate::dispatch::Route;
use crate::manifest::{CATALOG_TOOL, EXTENSION_ID, GUIDE_TOOL, MANIFEST_TOOL};
use crate::risk::RiskHints;
use crate::schema;
use crate::server::LangInfo;

/// One registered tool with its compiled schemas.
pub(crate) struct ToolEntry {
    pub tool: Tool,
    pub route: Route,
    pub input: jsonschema::Validator,
    pub output: jsonschema::Validator,
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

fn entry(name: &str, description: String, input: Value, output: Value, ann: ToolAnnotations, route: Route, meta: Option<Value>) -> Result<ToolEntry, String> {
    let input_validator = jsonschema::validator_for(&input).map_err(|e| format!("tool {name}: bad input schema: {e}"))?;
    let output_validator = jsonschema::validator_for(&output).map_err(|e| format!("tool {name}: bad output schema: {e}"))?;
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
    Ok(ToolEntry {
        tool,
        route,
        input: input_validator,
        output: output_validator,
    })
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
pub(crate) fn build(langs: &[LangInfo]) -> Result<Vec<ToolEntry>, String> {
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
    for (i, l) in langs.iter().enumerate() {
        let spec = l.spec;
        let decl = json!({"argument": spec.program_argument, "language": spec.name});
        let decl = &decl;
        tools.push(entry(
            spec.tools.validate.name,
            with_doc(
                format!(
                    "Validate stage for Language {}: checks a program (argument `{}`) without side effects and returns closed diagnostics; \
                     a valid program also gets its plan with risk. Invalid programs are results, not errors.",
                    spec.name, spec.program_argument
                ),
                spec.tools.validate.doc,
            ),
            schema::validate_input(spec),
            schema::validate_output(),
            annotations(true, false, false),
            Route::Validate(i),
            Some(decl.clone()),
        )?);
        if let (true, Some(t)) = (l.effective.declares(Capability::Execute), &spec.tools.execute) {
            let max = RiskHints::aggregate(spec.sets.risks.iter().map(|r| RiskHints {
                read_only: r.hints.read_only,
                ..RiskHints::aggregate([])
            }));
            let destructive = spec.sets.risks.iter().any(|r| r.hints.destructive);
            let open_world = spec.sets.risks.iter().any(|r| r.hints.open_world);
            tools.push(entry(
                t.name,
                with_doc(
                    format!(
                        "Execute stage for Language {}: runs a program (argument `{}`) after re-validating it and returns its outcome, \
                         output and trace. Pass the catalog_version from validation as expected_catalog_version.",
                        spec.name, spec.program_argument
                    ),
                    t.doc,
                ),
                schema::execute_input(spec, &l.effective),
                schema::execute_output(),
                annotations(max.read_only, destructive, open_world),
                Route::Execute(i),
                Some(decl.clone()),
            )?);
        }
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
                Some(decl.clone()),
            )?;
            e.tool.output_schema = None;
            tools.push(e);
        }
        for p in &spec.plain_tools {
            let mut e = entry(
                p.name,
                p.description.to_owned(),
                p.input_schema.clone(),
                json!({"type": "object"}),
                annotations(p.read_only, false, false),
                Route::Plain(i),
                None,
            )?;
            e.tool.output_schema = None;
            tools.push(e);
        }
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
