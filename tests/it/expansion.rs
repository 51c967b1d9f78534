//! Reviewable snapshots of what `#[pilotage::language]` generates.
//!
//! * `tests/snapshots/workflow_tools.json`: the example engine `workflow/v1` as an MCP client
//!   sees it over the in-process duplex transport: `tools/list` (names, descriptions,
//!   annotations, `_meta`, input schemas; output schemas summarized by their `$ref`s) and the
//!   `pilotage_manifest` result.
//! * `tests/snapshots/full_spec.txt`: the `LanguageSpec` generated for a Language with every
//!   capability, sub-feature and optional key (the declaration of `tests/ui/pass/full.rs`),
//!   guide bodies elided.
//!
//! A change to the macros or to what the runtime derives from a declaration shows up here as a
//! diff. Review it, then accept it with `PILOTAGE_BLESS=1 cargo test --test it expansion::`.

use crate::{support, workflow};

use std::path::Path;

use serde_json::{json, Map, Value};
use support::Conn;

/// Compare `actual` with the snapshot file `path` (relative to the crate root), or rewrite the
/// file when `PILOTAGE_BLESS` is set.
fn assert_snapshot(path: &str, actual: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("PILOTAGE_BLESS").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| {
            panic!("cannot read the snapshot {path} ({e}): create it with `PILOTAGE_BLESS=1 cargo test --test it expansion::`, then review it")
        })
        .replace("\r\n", "\n");
    if expected != actual {
        panic!(
            "the expansion differs from {path} (- snapshot, + now):\n{}\nIf the change is intended, accept it with `PILOTAGE_BLESS=1 cargo test --test it expansion::`.",
            line_diff(&expected, actual)
        );
    }
}

/// The lines of `old` and `new` that differ, by longest common subsequence, with one line of
/// context; runs of unchanged lines are elided.
fn line_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near = |k: usize| ops[k.saturating_sub(1)..(k + 2).min(ops.len())].iter().any(|(op, _)| *op != ' ');
    let mut out = String::new();
    let mut elided = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if near(k) {
            out.push_str(&format!("{op} {line}\n"));
            elided = false;
        } else if !elided {
            out.push_str("  ...\n");
            elided = true;
        }
    }
    out
}

/// An output schema, reduced to the definitions its `anyOf` / `oneOf` / `$ref` point to.
fn output_summary(schema: &Value) -> Value {
    let refs = |list: &Value| -> Vec<Value> {
        list.as_array()
            .into_iter()
            .flatten()
            .map(|s| s.get("$ref").cloned().unwrap_or_else(|| json!("<inline>")))
            .collect()
    };
    let mut out = Map::new();
    for key in ["$ref", "type"] {
        if let Some(v) = schema.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(list) = schema.get(key) {
            out.insert(format!("{key} $refs"), Value::Array(refs(list)));
        }
    }
    Value::Object(out)
}

/// A `tools/list` entry with its output schema summarized.
fn tool_summary(tool: &Value) -> Value {
    let mut tool = tool.clone();
    if let Some(schema) = tool.get("outputSchema").cloned() {
        tool["outputSchema"] = output_summary(&schema);
    }
    tool
}

/// Guide versions and sizes follow the guides' text, not the declaration: keep them out of the
/// snapshot so that editing a guide's prose does not change it.
fn redact_guide_digests(index: &mut Value) {
    for guide in index["guides"].as_array_mut().into_iter().flatten() {
        for key in ["version", "size_bytes"] {
            if guide.get(key).is_some() {
                guide[key] = json!("<follows the guide text>");
            }
        }
    }
}

/// The closed sets the derives generated, as the runtime reads them.
fn closed_sets(sets: &pilotage::model::closed_sets::ClosedSets) -> Value {
    json!({
        "codes": sets.codes,
        "risk levels": sets.risks.iter().map(|r| json!({
            "name": r.name,
            "read_only": r.hints.read_only,
            "destructive": r.hints.destructive,
            "open_world": r.hints.open_world,
        })).collect::<Vec<_>>(),
        "statuses": sets.statuses.iter().map(|s| json!({
            "name": s.name,
            "ok": s.ok,
            "side_effects": s.side_effects,
        })).collect::<Vec<_>>(),
        "entry kinds": sets.kinds.iter().map(|k| json!({"name": k.name, "callable": k.callable})).collect::<Vec<_>>(),
        "promoted kind": sets.promoted,
    })
}

#[tokio::test]
async fn workflow_tool_list_and_manifest() {
    use pilotage::engine::Engine;

    let server =
        pilotage::Server::builder().name("expansion", "0").language(workflow::Workflow::new).build().unwrap();
    let mut conn = Conn::duplex(&server);
    conn.initialize(true).await;
    let tools: Vec<Value> = conn.tools_list().await.iter().map(tool_summary).collect();
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    let mut guides = conn.call_ok("pilotage_get_guide", json!({"language": "workflow/v1"})).await;
    redact_guide_digests(&mut guides);
    let snapshot = json!({
        "tools/list": tools,
        "pilotage_manifest": manifest,
        "pilotage_get_guide (index)": guides,
        "closed sets": closed_sets(&workflow::Workflow::new().language_spec().sets),
    });
    let text = serde_json::to_string_pretty(&snapshot).unwrap() + "\n";
    assert_snapshot("tests/snapshots/workflow_tools.json", &text);
}

/// The declaration of `tests/ui/pass/full.rs`, with paths from the crate root.
#[allow(dead_code)]
mod full {
    use std::sync::Arc;

    use pilotage::prelude::*;

    #[derive(Clone, Copy, Debug, pilotage::Codes)]
    pub enum WfCode {
        UnknownCapability,
        #[code(rename = "bad_ref")]
        BadReference,
        MalformedStep,
    }

    #[derive(Clone, Copy, pilotage::RiskLevels)]
    pub enum WfRisk {
        #[risk(read_only)]
        Safe,
        #[risk(write, open_world)]
        Write,
        #[risk(destructive)]
        Destructive,
        #[risk(destructive, open_world)]
        DestructiveOpen,
    }

    #[derive(Clone, Copy, pilotage::Statuses)]
    pub enum WfStatus {
        #[status(side_effects = true)]
        Timeout,
        #[status(side_effects = false, rename = "denied_by_policy")]
        Denied,
    }

    #[derive(Clone, Copy, pilotage::EntryKinds)]
    pub enum WfKind {
        #[kind(callable)]
        Capability,
        Dataset,
        #[kind(promoted)]
        Program,
    }

    pub struct Workflow;

    #[pilotage::language(
        name = "workflow/v1",
        title = "Workflow documents",
        program = "workflow",
        locator = "json-pointer",
        capabilities(
            guides(topic_fetch),
            catalog(search, changed_since),
            validate,
            plan,
            execute(test_run, idempotency),
            trace_fetch(narrate),
        ),
        execution = "both",
        trace = "full",
        retention = "PT1H",
        trace_subprogram = "opaque",
        promotion_authority = "caller",
        context_schema = "tests/ui/schemas/context.json",
        guides = "tests/ui/guides/full",
        codes = WfCode,
        risk = WfRisk,
        statuses = WfStatus,
        kinds = WfKind,
        catalog = catalog_snapshot,
        narrate = narrate_run,
    )]
    impl Workflow {
        fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
            Arc::new(CatalogSnapshot::new(Vec::new()))
        }

        fn narrate_run(
            &self,
            _run: &pilotage::model::trace::TraceFetchResponse,
            _question: Option<&str>,
        ) -> Option<String> {
            None
        }

        /// Checks a workflow document.
        ///
        /// Every step calls one catalog entry.
        #[loop_tool(validate, name = "validate_workflow", inline)]
        fn validate(&self, _program: &Json, _v: &mut Validation<WfCode, WfRisk>) {}

        /// Runs a workflow.
        #[loop_tool(execute, name = "run_workflow")]
        async fn run(&self, _program: &Json, _run: &mut Run<WfStatus>) -> Finish<WfStatus> {
            Finish::done()
        }

        #[loop_tool(trace, name = "trace_run")]
        fn trace(&self) {}

        #[plain_tool(
            name = "world_fingerprint",
            description = "Fingerprint of this session's world.",
            read_only
        )]
        fn fingerprint(&self, args: &Json) -> Result<Json, String> {
            Ok(args.clone())
        }

        /// Who is calling.
        #[pilotage::plain_tool(name = "whoami", input_schema = r#"{"type": "object", "properties": {}}"#)]
        fn whoami(&self, _args: &Json, caller: &Caller) -> Result<Json, String> {
            Ok(json!(caller.id.to_string()))
        }
    }
}

#[test]
fn full_language_spec() {
    use pilotage::engine::Engine;

    let mut spec = full::Workflow.language_spec().clone();
    for guide in &mut spec.guides {
        guide.body = "<body elided>";
    }
    assert_snapshot("tests/snapshots/full_spec.txt", &format!("{spec:#?}\n"));
}
