//! The completeness gate (Part IV §4.2): for every example Language, every *reachable* member
//! of its declared closed sets (diagnostic codes, run and step statuses, request-error kinds)
//! has a rejected case (a request through the real endpoint that exhibits the member on its
//! channel) and an accepted case (its corrected counterpart, accepted) in the bound suite:
//! the official vectors as bound by `examples/conformance/bindings`, plus each binding's
//! paired cases. Unreachable members are written down below, each with its reason; a member
//! claimed unreachable that the suite nevertheless exhibits fails the gate too.
//!
//! What counts as the accepted counterpart (see `Evidence::accepted_by`):
//! - a diagnostic code: a paired case whose corrected program validates with no such finding;
//! - a request-error kind: a non-error result of an operation that returned the kind;
//! - a run or step status: a successful run (for `success` itself, the rejected side is a
//!   run that did not succeed).
//!
//! `cargo test --test it completeness:: -- --nocapture` prints the reachable and unreachable lists.

use crate::{automation, bindings, runner, sql, support, workflow};

use std::collections::BTreeSet;
use std::sync::Arc;

use pilotage::engine::Engine;
use pilotage::model::closed_sets::{ClosedSets, RESERVED_CODES, RESERVED_STATUSES};
use pilotage::model::errors::ErrorKind;
use serde_json::{json, Value};

use runner::binding::Surface;
use runner::client::Connector;
use runner::ctx::{declares, language_entry};
use runner::Report;

/// One declared closed set, read from the closed-sets guide the server publishes.
#[derive(Clone, Debug, Default)]
struct Declared {
    codes: BTreeSet<String>,
    statuses: BTreeSet<String>,
}

impl Declared {
    /// The engine's own declared sets, cross-checked against the closed-sets guide the server
    /// publishes (`body`).
    fn of(sets: &ClosedSets, body: &str) -> Declared {
        let declared = Declared {
            codes: sets.codes.iter().map(|c| c.to_string()).collect(),
            statuses: sets.statuses.iter().map(|s| s.name.to_owned()).collect(),
        };
        assert_eq!(guide_members(body, "diagnostic code"), declared.codes, "the closed-sets guide's codes");
        assert_eq!(guide_members(body, "status"), declared.statuses, "the closed-sets guide's statuses");
        declared
    }
}

/// The `code` spans that open the entries of the closed-sets guide's sections whose level-2
/// heading contains `keyword`: the first cell of each table row, or the part of each list item
/// before its first `: `.
fn guide_members(body: &str, keyword: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in body.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            inside = heading.to_lowercase().contains(keyword);
            continue;
        }
        if !inside {
            continue;
        }
        let head = if let Some(item) = line.strip_prefix("- ") {
            item.split(": ").next().unwrap_or_default()
        } else if line.starts_with('|') {
            line.split('|').nth(1).unwrap_or_default()
        } else {
            continue;
        };
        out.extend(head.split('`').skip(1).step_by(2).map(str::to_owned));
    }
    out
}

/// The closed-sets guide body and the Language entry, through the endpoint.
async fn published(connector: &Connector, language: &str) -> (String, Value, Value, Vec<Value>) {
    // The published closed sets, read over the raw client: this is the gate's own reading of
    // what the server publishes, not a vector.
    let mut client = (connector.raw)();
    client.initialize(true).await;
    let m = client.request("tools/call", json!({"name": "pilotage_manifest", "arguments": {}})).await;
    let manifest = m["result"]["structuredContent"].clone();
    let tools =
        client.request("tools/list", Value::Null).await["result"]["tools"].as_array().cloned().unwrap();
    let (entry, effective) = language_entry(&manifest, language).expect("the Language is in the manifest");
    let index = client
        .request("tools/call", json!({"name": "pilotage_get_guide", "arguments": {"language": language}}))
        .await;
    let guides = index["result"]["structuredContent"]["guides"].as_array().cloned().unwrap();
    let closed = guides
        .iter()
        .find(|g| g["topics"].as_array().is_some_and(|t| t.iter().any(|t| t == "closed-sets")))
        .expect("a closed-sets guide");
    let fetched = client
        .request(
            "tools/call",
            json!({"name": "pilotage_get_guide", "arguments": {"language": language, "id": closed["id"]}}),
        )
        .await;
    let body = fetched["result"]["structuredContent"]["guide"]["body"].as_str().unwrap().to_owned();
    (body, entry, effective, tools)
}

/// The members the Part IV §4.2 rules make unreachable under the declared capabilities.
fn unreachable_by_rule(
    entry: &Value,
    effective: &Value,
    tools: &[Value],
    declared: &Declared,
) -> BTreeSet<(Surface, String)> {
    let mut out = BTreeSet::new();
    let mut add = |s: Surface, m: &str| {
        out.insert((s, m.to_owned()));
    };
    let family = entry["name"].as_str().unwrap_or_default().split('/').next().unwrap_or_default().to_owned();
    let promoted = tools.iter().any(|t| t["name"] == format!("promote_{family}"));
    if !declares(effective, "execute") {
        for s in &declared.statuses {
            add(Surface::Status, s);
        }
        add(Surface::Code, "input_binding");
        add(Surface::Kind, "unsupported");
    }
    if !declares(effective, "catalog") {
        add(Surface::Status, "catalog_drift");
    }
    if !promoted {
        add(Surface::Status, "promotion_drift");
    }
    if !declares(effective, "catalog.changed_since") {
        add(Surface::Kind, "unknown_baseline");
    }
    if !declares(effective, "execute.idempotency") {
        add(Surface::Kind, "idempotency_conflict");
    }
    if entry["retention"] != "none" {
        add(Surface::Kind, "unsupported");
    }
    out
}

/// Run the gate for one Language: print the lists, return the violations.
fn gate(
    language: &str,
    declared: &Declared,
    unreachable: &[(Surface, &str, &str)],
    by_rule: &BTreeSet<(Surface, String)>,
    report: &Report,
) -> Vec<String> {
    let mut problems = Vec::new();
    println!("{}", report.table());
    if report.failed() > 0 {
        problems.push(format!("{language}: the bound suite has {} FAIL", report.failed()));
    }
    let kinds: BTreeSet<String> = ErrorKind::ALL.iter().map(|k| k.as_str().to_owned()).collect();
    let members: Vec<(Surface, String)> = declared
        .codes
        .iter()
        .map(|c| (Surface::Code, c.clone()))
        .chain(declared.statuses.iter().map(|s| (Surface::Status, s.clone())))
        .chain(kinds.iter().map(|k| (Surface::Kind, k.clone())))
        .collect();
    for (s, m, _) in unreachable {
        if !members.contains(&(*s, m.to_string())) {
            problems.push(format!("{language}: unreachable {} `{m}` is not a declared member", s.as_str()));
        }
    }
    for (s, m) in by_rule {
        if !unreachable.iter().any(|(us, um, _)| us == s && um == m) {
            problems.push(format!(
                "{language}: {} `{m}` is unreachable under the declared capabilities; write it down with its reason",
                s.as_str()
            ));
        }
    }
    println!("## {language}: reachable members (rejected case | accepted case)");
    for (s, m) in &members {
        if let Some((_, _, why)) = unreachable.iter().find(|(us, um, _)| us == s && um == m) {
            let seen = report.evidence.rejected_by(*s, m);
            if !seen.is_empty() {
                problems.push(format!(
                    "{language}: {} `{m}` is claimed unreachable ({why}) but {seen:?} exhibit it",
                    s.as_str()
                ));
            }
            continue;
        }
        let rejected = report.evidence.rejected_by(*s, m);
        let accepted = report.evidence.accepted_by(*s, m);
        // Show the most telling source: the member's own case, else a vector, else any.
        let own = format!("CASE {}:{m}", s.as_str());
        let first = |v: &[String]| {
            v.iter()
                .find(|x| **x == own)
                .or_else(|| v.iter().find(|x| *x == "PIL-EXECUTE-SUCCESS-G"))
                .or_else(|| v.iter().find(|x| x.starts_with("PIL-") && x.ends_with("-G")))
                .or_else(|| v.iter().find(|x| x.starts_with("PIL-")))
                .or(v.first())
                .cloned()
                .unwrap_or_else(|| "NONE".to_owned())
        };
        println!("  {:<6} {:<22} {} | {}", s.as_str(), m, first(&rejected), first(&accepted));
        if rejected.is_empty() {
            problems.push(format!("{language}: reachable {} `{m}` has no rejected case", s.as_str()));
        }
        if accepted.is_empty() {
            problems.push(format!("{language}: reachable {} `{m}` has no accepted case", s.as_str()));
        }
    }
    println!("## {language}: unreachable members");
    for (s, m, why) in unreachable {
        println!("  {:<6} {:<22} {why}", s.as_str(), m);
    }
    problems
}

/// Reserved members are part of every Language's declared sets, reachable or not.
fn check_reserved(language: &str, declared: &Declared) {
    for c in RESERVED_CODES {
        assert!(declared.codes.contains(c), "{language} does not declare the reserved code {c}");
    }
    for s in RESERVED_STATUSES {
        assert!(
            declared.statuses.contains(s.name),
            "{language} does not declare the reserved status {}",
            s.name
        );
    }
}

#[test]
fn the_request_error_kinds_are_the_official_closed_set() {
    let schema: Value = serde_json::from_str(support::schemas::OFFICIAL_SCHEMA).unwrap();
    let official: BTreeSet<String> = schema["$defs"]["RequestError"]["properties"]["error"]["properties"]
        ["kind"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    let ours: BTreeSet<String> = ErrorKind::ALL.iter().map(|k| k.as_str().to_owned()).collect();
    assert_eq!(ours, official);
}

/// Gate `language` served through `connector`: its published closed-sets guide against the
/// engine's declared `sets`, the reserved members, then the bound suite (`binding`, over
/// `transport`) against the `unreachable` list.
async fn gate_language(
    connector: &Connector,
    language: &str,
    sets: &ClosedSets,
    unreachable: &[(Surface, &str, &str)],
    binding: &runner::binding::Binding,
    transport: &str,
) {
    let (body, entry, effective, tools) = published(connector, language).await;
    let declared = Declared::of(sets, &body);
    check_reserved(language, &declared);
    let report = runner::run(connector, binding, transport, None).await;
    let by_rule = unreachable_by_rule(&entry, &effective, &tools, &declared);
    let problems = gate(language, &declared, unreachable, &by_rule, &report);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn workflow_every_reachable_member_has_both_cases() {
    let server = pilotage::Server::builder().language(workflow::Workflow::new).build().unwrap();
    let connector = crate::conformance::http(&server).await;
    let sets = workflow::Workflow::new().language_spec().sets.clone();
    let unreachable = [
        (
            Surface::Status,
            "promotion_drift",
            "no promoted programs: no entry kind is marked promoted, so there is no promote tool (Part IV §4.2)",
        ),
        (Surface::Kind, "idempotency_conflict", "execute.idempotency is not declared"),
        (
            Surface::Kind,
            "unsupported",
            "retention is \"session\" on a session-ful deployment, so `store: true` can always be honoured",
        ),
    ];
    gate_language(&connector, "workflow/v1", &sets, &unreachable, &bindings::workflow::binding(), "http")
        .await;
}

#[tokio::test]
async fn sql_every_reachable_member_has_both_cases() {
    let server = pilotage::Server::builder().language(sql::Sql::factory(None)).build().unwrap();
    let connector = crate::conformance::http(&server).await;
    let sets = sql::Sql::demo().language_spec().sets.clone();
    let unreachable = [
        (Surface::Status, "promotion_drift", "no promoted programs: no entry kind is marked promoted (Part IV §4.2)"),
        (Surface::Kind, "unknown_baseline", "catalog.changed_since is not declared"),
        (Surface::Kind, "idempotency_conflict", "execute.idempotency is not declared"),
        (
            Surface::Kind,
            "unsupported",
            "retention is \"session\" on a session-ful deployment, so `store: true` can always be honoured",
        ),
        (
            Surface::Kind,
            "internal",
            "no fault-injection switch; the validator catches the parser's panics itself and SQLite errors are findings or outcomes",
        ),
    ];
    gate_language(&connector, "sql/sqlite-3", &sets, &unreachable, &bindings::sql::binding(), "http").await;
}

#[tokio::test]
async fn automation_every_reachable_member_has_both_cases() {
    let store = std::env::temp_dir().join(format!("pilotage-completeness-{}.sqlite", std::process::id()));
    let runs = pilotage::state::SqliteState::open(&store).expect("the run store opens");
    let server = pilotage::Server::builder()
        .language(automation::Automation::new)
        .state(Arc::new(runs))
        .build()
        .unwrap();
    let connector = crate::conformance::http(&server).await;
    let (body, entry, effective, tools) = published(&connector, "automation/v1").await;
    let sets = automation::Automation::new().language_spec().sets.clone();
    let declared = Declared::of(&sets, &body);
    check_reserved("automation/v1", &declared);
    let unreachable = [
        (Surface::Kind, "unknown_baseline", "catalog.changed_since is not declared"),
        (
            Surface::Kind,
            "unsupported",
            "retention is \"PT1H\" with a durable run store, so `store: true` can always be honoured",
        ),
        (
            Surface::Kind,
            "internal",
            "no switch makes the server's own machinery fail: inject_fault only makes devices fail (timeout, denied)",
        ),
    ];
    let report = runner::run(&connector, &bindings::automation::binding(), "http", None).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
    let by_rule = unreachable_by_rule(&entry, &effective, &tools, &declared);
    let problems = gate("automation/v1", &declared, &unreachable, &by_rule, &report);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn calc_every_reachable_member_has_both_cases() {
    let connector = crate::conformance::stdio("calc");
    let (body, entry, effective, tools) = published(&connector, "calc/v1").await;
    // calc's engine type is private to its binary: the published guide is the declaration.
    let declared =
        Declared { codes: guide_members(&body, "diagnostic code"), statuses: guide_members(&body, "status") };
    assert!(declared.codes.contains("unknown_op"), "{declared:?}");
    check_reserved("calc/v1", &declared);
    let unreachable = [
        (
            Surface::Code,
            "constraint",
            "native validator: its only finding is `unknown_op`, and the runtime's reserved-character check cannot fire on \
             calc's one fixed step id `sum` (membership is still required, and checked above)",
        ),
        (Surface::Status, "catalog_drift", "catalog is not declared (Part IV §4.2)"),
        (Surface::Status, "promotion_drift", "no promoted programs (Part IV §4.2)"),
        (
            Surface::Status,
            "partial",
            "a run is one `sum` step that cannot fail, and one addition cannot reach the step or time bound",
        ),
        (Surface::Status, "error", "the sum cannot fail and nothing runs before it"),
        (Surface::Kind, "unknown_baseline", "catalog.changed_since is not declared"),
        (Surface::Kind, "idempotency_conflict", "execute.idempotency is not declared"),
        (
            Surface::Kind,
            "internal",
            "no fault-injection switch, and neither the validator nor the engine can fail",
        ),
    ];
    let report = runner::run(&connector, &bindings::calc::binding(), "stdio", None).await;
    let by_rule = unreachable_by_rule(&entry, &effective, &tools, &declared);
    let problems = gate("calc/v1", &declared, &unreachable, &by_rule, &report);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// sql/postgres on a throwaway schema of the test PostgreSQL, the caller acting as the
/// fixture's writer role.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_every_reachable_member_has_both_cases() {
    if !pilotage::state::suite::postgres_or_skip(
        "completeness::postgres_every_reachable_member_has_both_cases",
    ) {
        return;
    }
    let f = crate::postgres_loop::Fixture::new("complete").await;
    let db = f.db(Some(&f.writer));
    let sets = crate::postgres::Pg::factory(db.clone(), true)().language_spec().sets.clone();
    let server = pilotage::Server::builder().engine(crate::postgres::Pg::factory(db, true)).build().unwrap();
    let connector = crate::conformance::http(&server).await;
    let unreachable = [
        (Surface::Code, "unavailable", "needs PostgreSQL to stop answering between the catalog and the check"),
        (Surface::Status, "promotion_drift", "no promoted programs: no entry kind is marked promoted (Part IV §4.2)"),
        (Surface::Kind, "idempotency_conflict", "execute.idempotency is not declared"),
        (
            Surface::Kind,
            "unsupported",
            "retention is \"session\" on a session-ful deployment, so `store: true` can always be honoured",
        ),
        (
            Surface::Kind,
            "internal",
            "no fault-injection switch; the validator catches the parser's panics itself and PostgreSQL's errors are findings or outcomes",
        ),
    ];
    gate_language(&connector, "sql/postgres", &sets, &unreachable, &bindings::postgres::binding(), "http")
        .await;
}

#[test]
fn the_guide_parser_reads_tables_and_lists() {
    let body = "## Diagnostic codes\n| code | x |\n|---|---|\n| `a` | `not_this` |\n- `b`, `c`: about `d`\n\nText `e`.\n## Risk\n- `safe`: x\n";
    let got = guide_members(body, "diagnostic code");
    assert_eq!(got, ["a", "b", "c"].iter().map(|s| s.to_string()).collect());
}
