//! Unit tests of the model's derivations (catalog paging, versions, `changed_since`, validate
//! derivations, context checks, correspondence, truncation, the SQLite store), each with an
//! accepted and a rejected case and exact values.

use crate::engine::search::contains_text;
use crate::engine::{CatalogSnapshot, ValidateRequest, Validation};
use crate::model::capabilities::{Capability, CapabilityDeclaration, SubFeature};
use crate::model::catalog::{CatalogEntry, ChangeKind};
use crate::model::closed_sets::{EntryKind, KindMember, RiskLevel, RiskMember};
use crate::model::correspondence;
use crate::model::diagnostic::Severity;
use crate::model::errors::ErrorKind;
use crate::model::plan::{Plan, PlanStep};
use crate::model::risk::RiskHints;
use crate::model::trace::{self, Trace, TraceLevelWire, TraceStep};
use crate::ops::lookup::{self as catalog, ListQuery};
use crate::ops::validate::{self, Derivation};
use crate::state::catalog_history::changed_since;
#[cfg(feature = "sqlite")]
use crate::state::runs::RunRecord;
#[cfg(feature = "sqlite")]
use crate::state::{SharedState, SqliteState};
use serde_json::json;
use std::sync::Arc;

#[derive(Clone, Copy)]
enum Kind {
    Cap,
    Data,
}
impl EntryKind for Kind {
    const MEMBERS: &'static [KindMember] =
        &[KindMember { name: "capability", callable: true }, KindMember { name: "dataset", callable: false }];
    fn wire(self) -> &'static str {
        match self {
            Kind::Cap => "capability",
            Kind::Data => "dataset",
        }
    }
    fn callable(self) -> bool {
        matches!(self, Kind::Cap)
    }
}

#[derive(Clone, Copy)]
enum Risk {
    Safe,
    Wipe,
}
impl RiskLevel for Risk {
    const MEMBERS: &'static [RiskMember] = &[
        RiskMember { name: "safe", hints: RiskHints::READ_ONLY },
        RiskMember { name: "wipe", hints: RiskHints::DESTRUCTIVE },
    ];
    fn wire(self) -> &'static str {
        Self::MEMBERS[self.rank()].name
    }
    fn hints(self) -> RiskHints {
        Self::MEMBERS[self.rank()].hints
    }
    fn rank(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Copy)]
enum Code {
    Unknown,
}
impl crate::model::closed_sets::DiagnosticCode for Code {
    const MEMBERS: &'static [&'static str] = &["unknown"];
    fn wire(self) -> &'static str {
        "unknown"
    }
}

fn entries(n: usize) -> Vec<CatalogEntry> {
    (0..n)
        .map(|i| CatalogEntry::new(format!("e{i:02}"), Kind::Cap, format!("Entry {i}"), Risk::Safe))
        .collect()
}

#[test]
fn effective_capability_map_takes_language_value_in_full() {
    let server = CapabilityDeclaration::new()
        .with(Capability::Guides)
        .with(Capability::Validate)
        .with_sub(SubFeature::Search);
    let lang = CapabilityDeclaration::new().with(Capability::Catalog).without(Capability::Validate);
    let eff = CapabilityDeclaration::effective(Some(&server), &lang);
    assert!(eff.declares(Capability::Guides));
    assert!(eff.declares(Capability::Catalog));
    assert!(!eff.declares_sub(SubFeature::Search), "the language value replaces sub-features, never merges");
    assert!(!eff.declares(Capability::Validate));
    assert_eq!(eff.rule_violations(), vec!["the minimum capability floor requires `validate`".to_owned()]);
    let ok = CapabilityDeclaration::new()
        .with(Capability::Guides)
        .with(Capability::Validate)
        .with(Capability::Plan);
    assert!(ok.rule_violations().is_empty());
    let bad = CapabilityDeclaration::new()
        .with(Capability::Guides)
        .with(Capability::Validate)
        .with(Capability::TraceFetch);
    assert_eq!(bad.rule_violations(), vec!["`trace_fetch` requires `execute`".to_owned()]);
}

#[test]
fn risk_aggregation_is_and_or() {
    assert_eq!(RiskHints::aggregate([]), RiskHints::READ_ONLY);
    assert_eq!(
        RiskHints::aggregate([RiskHints::READ_ONLY, RiskHints::new(true, false, true)]),
        RiskHints::new(true, false, true)
    );
    assert_eq!(RiskHints::aggregate([RiskHints::READ_ONLY, RiskHints::WRITE]), RiskHints::WRITE);
    assert!(RiskHints::DESTRUCTIVE.covers(&RiskHints::WRITE));
    assert!(!RiskHints::READ_ONLY.covers(&RiskHints::WRITE));
    assert!(!RiskHints::new(true, true, false).is_consistent());
}

#[test]
fn catalog_pages_cover_every_entry_once_with_stable_cursors() {
    let snap = CatalogSnapshot::new(entries(5));
    let mut seen = vec![];
    let mut cursor: Option<String> = None;
    loop {
        let page = catalog::list(
            &snap,
            &ListQuery { cursor: cursor.as_deref(), limit: Some(2), ..Default::default() },
        )
        .unwrap();
        assert_eq!(page.catalog_version, snap.version());
        seen.extend(page.items.iter().map(|e| e.id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, vec!["e00", "e01", "e02", "e03", "e04"]);
    let bad = catalog::list(&snap, &ListQuery { cursor: Some("garbage"), ..Default::default() }).unwrap_err();
    assert_eq!(bad.error.kind, ErrorKind::InvalidRequest);
    assert_eq!(bad.catalog_version.as_deref(), Some(snap.version()));
}

#[test]
fn catalog_version_moves_exactly_with_defined_fields() {
    let a = CatalogSnapshot::new(entries(3));
    let same = CatalogSnapshot::new(entries(3).into_iter().rev().collect());
    assert_eq!(a.version(), same.version(), "order of construction does not matter");
    let revised = CatalogSnapshot::new(entries(3).into_iter().map(|e| e.revision("r9")).collect());
    assert_eq!(a.version(), revised.version(), "revision alone does not move the token");
    let described = CatalogSnapshot::new(entries(3).into_iter().map(|e| e.description("new")).collect());
    assert_ne!(a.version(), described.version());
    let fewer = CatalogSnapshot::new(entries(2));
    assert_ne!(a.version(), fewer.version());
    assert!(a.version().starts_with("cv_"));
}

#[test]
fn get_unknown_entry_carries_the_token_and_hints_use_only_visible_names() {
    let snap = CatalogSnapshot::new(entries(3));
    let e = catalog::get(&snap, "e01").unwrap();
    assert_eq!(e.entry.id, "e01");
    let err = catalog::get(&snap, "secret").unwrap_err();
    assert_eq!(err.error.kind, ErrorKind::NotFound);
    assert_eq!(err.catalog_version.as_deref(), Some(snap.version()));
    assert_eq!(snap.close_matches("e0", 2), vec!["e00", "e01"]);
    assert!(snap.close_matches("zzzzzz", 3).is_empty());
}

#[test]
fn changed_since_diffs_known_baselines_and_refuses_unknown_ones() {
    let old = Arc::new(CatalogSnapshot::new(entries(3)));
    let mut next = entries(3);
    next.remove(0);
    next[0] = next[0].clone().description("changed");
    next.push(CatalogEntry::new("zz", Kind::Data, "Data", Risk::Safe));
    let new = CatalogSnapshot::new(next);
    let diff = changed_since(Some(&old), &new, old.version()).unwrap();
    let got: Vec<(String, String)> = diff
        .changes
        .iter()
        .map(|c| (c.id.clone(), serde_json::to_value(c.change).unwrap().as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("e00".into(), "removed".into()),
            ("e01".into(), "modified".into()),
            ("zz".into(), "added".into())
        ]
    );
    let err = changed_since(None, &new, "cv_unknown").unwrap_err();
    assert_eq!(err.error.kind, ErrorKind::UnknownBaseline);
    let err = changed_since(Some(&old), &new, "cv_other").unwrap_err();
    assert_eq!(err.error.kind, ErrorKind::UnknownBaseline);
}

/// What `changed_since` answered before it walked digests: both snapshots' defined fields
/// compared by id. The reference the digest walk must agree with.
fn changes_by_comparison(old: &CatalogSnapshot, new: &CatalogSnapshot) -> Vec<(String, ChangeKind)> {
    use std::collections::BTreeMap;
    let form = |s: &CatalogSnapshot| -> BTreeMap<String, serde_json::Value> {
        s.entries().iter().map(|e| (e.id.clone(), e.versioned_form())).collect()
    };
    let (before, after) = (form(old), form(new));
    let mut changes: Vec<(String, ChangeKind)> = after
        .iter()
        .filter_map(|(id, f)| match before.get(id) {
            None => Some((id.clone(), ChangeKind::Added)),
            Some(old) if old != f => Some((id.clone(), ChangeKind::Modified)),
            Some(_) => None,
        })
        .chain(
            before.keys().filter(|id| !after.contains_key(*id)).map(|id| (id.clone(), ChangeKind::Removed)),
        )
        .collect();
    changes.sort_by(|a, b| a.0.cmp(&b.0));
    changes
}

fn walked(old: &CatalogSnapshot, new: &CatalogSnapshot) -> Vec<(String, ChangeKind)> {
    old.changes_to(new).into_iter().map(|(id, c)| (id.to_owned(), c)).collect()
}

#[test]
fn changes_walk_digests_and_agree_with_a_full_comparison() {
    let base = CatalogSnapshot::new(entries(300));
    // The same token: nothing, whatever the entries (a revision alone does not count).
    let revised = CatalogSnapshot::new(entries(300).into_iter().map(|e| e.revision("r2")).collect());
    assert_eq!(base.version(), revised.version());
    assert!(base.changes_to(&revised).is_empty());
    assert!(base.changes_to(&base).is_empty());
    // Changes at both ends, in the middle, next to each other, of every kind.
    let mut next = entries(300);
    next.retain(|e| !["e00", "e01", "e150", "e299"].contains(&e.id.as_str()));
    for e in next.iter_mut().filter(|e| ["e02", "e151", "e152", "e298"].contains(&e.id.as_str())) {
        *e = e.clone().description("changed");
    }
    next.extend(["a", "e150a", "e40x", "zz"].map(|id| CatalogEntry::new(id, Kind::Data, "New", Risk::Wipe)));
    let next = CatalogSnapshot::new(next);
    let got = walked(&base, &next);
    assert_eq!(got.len(), 12);
    assert_eq!(got, changes_by_comparison(&base, &next));
    assert_eq!(got[0], ("a".to_owned(), ChangeKind::Added));
    assert_eq!(got[1], ("e00".to_owned(), ChangeKind::Removed));
    assert_eq!(got[3], ("e02".to_owned(), ChangeKind::Modified));
    // Everything against nothing, both ways.
    let empty = CatalogSnapshot::new(Vec::new());
    assert_eq!(walked(&base, &empty), changes_by_comparison(&base, &empty));
    assert_eq!(walked(&empty, &base).len(), 300);
    assert!(walked(&empty, &base).iter().all(|(_, c)| *c == ChangeKind::Added));
}

/// Entries whose searchable text varies: ids, names, descriptions and tags.
fn searchable(n: usize) -> Vec<CatalogEntry> {
    (0..n)
        .map(|i| {
            let e =
                CatalogEntry::new(format!("cap_{i:04}"), Kind::Cap, format!("Reader {}", i % 7), Risk::Safe);
            let e =
                if i % 3 == 0 { e.description(format!("Reads the Île n°{} ledger", i % 11)) } else { e };
            if i % 5 == 0 {
                e.tag("Finance").tag(format!("t{}", i % 4))
            } else {
                e
            }
        })
        .collect()
}

#[test]
fn q_from_the_index_finds_exactly_what_a_scan_finds() {
    let snap = CatalogSnapshot::new(searchable(400));
    let scan = |q: &str, from: usize| -> Vec<String> {
        let lowered = q.to_lowercase();
        snap.entries()[from..].iter().filter(|e| contains_text(e, &lowered)).map(|e| e.id.clone()).collect()
    };
    let found = |q: &str, from: usize| -> Vec<String> {
        snap.matching(Some(q), from).map(|e| e.id.clone()).collect()
    };
    for q in [
        "cap_0123",
        "CAP_01",
        "reader 3",
        "READER",
        "île",
        "ÎLE N°1",
        "n°10",
        "finance",
        "t3",
        "ledger",
        "nothing here",
        "zzz",
        "r",
        "3",
        "°",
        "cap_0399",
        "s the",
        "reader 3reads",
    ] {
        for from in [0, 1, 200, 399, 400] {
            assert_eq!(found(q, from), scan(q, from), "q = {q:?} from {from}");
        }
    }
    assert!(found("nothing here", 0).is_empty());
    assert_eq!(found("cap_0123", 0), vec!["cap_0123"]);
    // A q across two fields (name then description) matches neither.
    assert!(found("reader 3reads", 0).is_empty());
    assert_eq!(snap.matching(None, 398).count(), 2);
    assert_eq!(snap.matching(Some("x"), 401).count(), 0, "past the end: nothing");
}

#[test]
fn list_pages_q_results_with_the_cursor() {
    let snap = CatalogSnapshot::new(searchable(400));
    let mut seen = vec![];
    let mut cursor: Option<String> = None;
    loop {
        let page = catalog::list(
            &snap,
            &ListQuery {
                q: Some("finance"),
                tag: Some("t0"),
                cursor: cursor.as_deref(),
                limit: Some(7),
                ..Default::default()
            },
        )
        .unwrap();
        seen.extend(page.items.iter().map(|e| e.id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let expected: Vec<String> = (0..400).filter(|i| i % 20 == 0).map(|i| format!("cap_{i:04}")).collect();
    assert_eq!(seen, expected);
    let none = catalog::list(&snap, &ListQuery { q: Some("no such text"), ..Default::default() }).unwrap();
    assert!(none.items.is_empty() && none.next_cursor.is_none());
}

fn request() -> ValidateRequest {
    ValidateRequest {
        program: Arc::new(json!({})),
        context: None,
        catalog: None,
        caller: crate::engine::Caller::new("t"),
    }
}

/// One validation's steps: `ids` at risk Safe, then one Wipe step, which `calls` an entry.
fn judged(ids: &[&str]) -> crate::engine::ValidationCore {
    let mut v = Validation::<Code, Risk>::new(&request());
    for id in ids {
        v.step(*id, Risk::Safe);
    }
    v.step("last", Risk::Wipe).calls("e01");
    v.finish()
}

#[test]
fn a_counting_validation_keeps_no_step_yet_gives_the_same_verdict_and_count() {
    let how = Derivation { codes: &["unknown", "constraint"], plan: true, catalog_version: None };
    for ids in [&["a", "b", "c"][..], &["a", "b/c", "d"], &[]] {
        let kept = judged(ids);
        let counted = crate::engine::validation::counting_steps(|| judged(ids));
        assert_eq!(kept.unkept_steps, 0);
        let reserved = ids.iter().filter(|id| id.contains('/')).count();
        assert_eq!(counted.steps.len(), reserved, "only a reserved id is kept: {ids:?}");
        assert_eq!(counted.unkept_steps, ids.len() + 1 - reserved);
        let (kept, counted) = (validate::derive(kept, vec![], &how), validate::derive(counted, vec![], &how));
        assert_eq!(counted.valid, kept.valid);
        assert_eq!(counted.diagnostics, kept.diagnostics);
        assert_eq!(kept.plan.as_ref().map(|p| p.steps.len()), (reserved == 0).then_some(ids.len() + 1));
    }
    // The thread keeps plans again afterwards, even after a panic inside.
    let _ = std::panic::catch_unwind(|| crate::engine::validation::counting_steps(|| panic!("engine fault")));
    assert_eq!(judged(&["a"]).steps.len(), 2);
}

#[test]
fn validity_and_maxima_are_derived_not_declared() {
    let mut v = Validation::<Code, Risk>::new(&request());
    v.warning(Code::Unknown, "/a", "just a warning");
    v.step("read", Risk::Safe).calls("e00");
    v.step("wipe", Risk::Wipe).calls("e01");
    let r = validate::derive(
        v.finish(),
        vec![],
        &Derivation { codes: &["unknown", "constraint"], plan: true, catalog_version: Some("cv_x".into()) },
    );
    assert!(r.valid, "warnings do not invalidate");
    let plan = r.plan.unwrap();
    assert_eq!(plan.max_risk, "wipe");
    assert_eq!(plan.max_risk_hints, RiskHints::new(false, true, false));
    assert_eq!(r.references, None, "plan declared: no references");

    let mut v = Validation::<Code, Risk>::new(&request());
    v.error(Code::Unknown, "/b", "bad").hint("try c");
    let r = validate::derive(
        v.finish(),
        vec![],
        &Derivation { codes: &["unknown"], plan: true, catalog_version: None },
    );
    assert!(!r.valid);
    assert!(r.plan.is_none(), "no plan for an invalid program");
    assert_eq!(r.diagnostics[0].hint.as_deref(), Some("try c"));
}

#[test]
fn codes_outside_the_set_become_constraint_and_reserved_ids_are_reported() {
    let mut v = Validation::<Code, Risk>::new(&request());
    v.step("a#b", Risk::Safe);
    let r = validate::derive(
        v.finish(),
        vec![],
        &Derivation { codes: &["constraint"], plan: true, catalog_version: None },
    );
    assert!(!r.valid);
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(r.diagnostics[0].code, "constraint");
    assert_eq!(r.diagnostics[0].severity, Severity::Error);
    let mut v = Validation::<Code, Risk>::new(&request());
    v.error(Code::Unknown, "", "x");
    let r = validate::derive(
        v.finish(),
        vec![],
        &Derivation { codes: &["constraint"], plan: false, catalog_version: None },
    );
    assert_eq!(r.diagnostics[0].code, "constraint", "'unknown' is outside this set");
}

#[test]
fn context_without_schema_and_missing_context_are_context_binding() {
    let found = validate::check_context(None, Some(&json!({"any": 1})));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].code, "context_binding");
    assert_eq!(serde_json::to_value(&found[0].path).unwrap(), json!(""));
    assert!(validate::check_context(None, None).is_empty());
    let schema =
        crate::model::check::SchemaCheck::new(&json!({"type": "object", "required": ["tz"]})).unwrap();
    assert_eq!(validate::check_context(Some(&schema), None)[0].code, "context_binding");
    assert!(validate::check_context(Some(&schema), Some(&json!({"tz": "UTC"}))).is_empty());
    assert_eq!(validate::check_context(Some(&schema), Some(&json!({}))).len(), 1);
}

fn plan_step(id: &str, arm: Option<(&str, &str)>, in_loop: Option<&str>) -> PlanStep {
    let mut s = PlanStep::new(id, Risk::Safe);
    if let Some((b, l)) = arm {
        s.arm(b, l);
    }
    if let Some(l) = in_loop {
        s.in_loop(l);
    }
    s
}

fn tstep(id: &str, took: &[&str]) -> TraceStep {
    serde_json::from_value(json!({
        "id": id,
        "outcome": {"ok": true, "status": "success", "error": null},
        "decisions": if took.is_empty() { serde_json::Value::Null } else {
            json!(took.iter().map(|t| json!({"at": id, "took": t, "because": "x"})).collect::<Vec<_>>())
        }
    }))
    .unwrap()
}

#[test]
fn correspondence_accepts_taken_arms_and_rejects_untaken_ones() {
    let plan = Plan {
        steps: vec![
            plan_step("b", None, None),
            plan_step("gold", Some(("b", "gold")), None),
            plan_step("other", Some(("b", "other")), None),
            plan_step("l", None, None),
            plan_step("body", None, Some("l")),
        ],
        max_risk: "safe".into(),
        max_risk_hints: RiskHints::READ_ONLY,
    };
    let trace =
        |steps: Vec<TraceStep>| Trace { run_id: "r".into(), level: TraceLevelWire::Full, steps, stats: None };
    let good = trace(vec![
        tstep("b", &["gold"]),
        tstep("gold", &[]),
        tstep("l", &["continue", "continue", "exit"]),
        tstep("body#1", &[]),
        tstep("body#2", &[]),
    ]);
    assert_eq!(correspondence::check(&plan, &good, true), Ok(()));
    let untaken = trace(vec![tstep("b", &["gold"]), tstep("other", &[]), tstep("l", &["exit"])]);
    let problems = correspondence::check(&plan, &untaken, false).unwrap_err();
    assert!(problems.iter().any(|p| p.contains("'other'")), "{problems:?}");
    let missing = trace(vec![tstep("b", &["gold"]), tstep("l", &["exit"])]);
    assert!(correspondence::check(&plan, &missing, false).is_ok(), "an incomplete run may stop early");
    assert_eq!(
        correspondence::check(&plan, &missing, true).unwrap_err(),
        vec!["plan step 'gold' is expected but absent from the trace".to_owned()]
    );
    assert_eq!(correspondence::base_id("x#1/body#2#3"), "body");
}

#[test]
fn summary_truncation_has_the_documented_form() {
    let small = json!({"a": 1});
    assert_eq!(trace::truncate_output(&small), small);
    let big = json!({"text": "x".repeat(400)});
    let t = trace::truncate_output(&big);
    assert_eq!(t["truncated"], true);
    assert_eq!(t["bytes"], big.to_string().len());
    assert_eq!(t["preview"].as_str().unwrap().chars().count(), 200);
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_store_survives_reopen_and_expires() {
    let dir = std::env::temp_dir().join(format!("pilotage-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("runs.sqlite");
    let _ = std::fs::remove_file(&path);
    let record = RunRecord {
        run_id: "run_1".into(),
        owner: "me".into(),
        language: "x/1".into(),
        outcome: crate::model::outcome::Outcome::success(),
        output: Some(RunRecord::text(&json!({"n": 1}))),
        level: crate::model::declaration::TraceLevel::Full,
        steps: RunRecord::steps_text(&[], crate::model::declaration::TraceLevel::Full),
        stats: None,
    };
    {
        let store = SqliteState::open(&path).unwrap();
        assert!(store.durable());
        store.put_run(&record, std::time::Duration::from_secs(3600)).await.unwrap();
        let expired = RunRecord { run_id: "run_2".into(), ..record.clone() };
        store.put_run(&expired, std::time::Duration::ZERO).await.unwrap();
    }
    let reopened = SqliteState::open(&path).unwrap();
    assert_eq!(reopened.get_run("me", "run_1").await.unwrap(), Some(record));
    assert_eq!(reopened.get_run("me", "run_2").await.unwrap(), None, "expired");
    assert_eq!(reopened.purge_expired().await.unwrap(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

fn bounds(max_bytes: usize, max_diagnostics: usize) -> crate::engine::Bounds {
    crate::engine::Bounds {
        signal: crate::engine::Signal::unbounded(),
        budget: crate::engine::Budget::new(max_bytes),
        max_diagnostics,
    }
}

#[test]
fn a_budget_refuses_the_charge_that_does_not_fit_and_stays_spent() {
    let b = crate::engine::Budget::new(100);
    assert!(b.charge(60));
    assert!(b.charge(40), "exactly the limit fits");
    assert!(!b.is_exhausted());
    assert!(!b.charge(1));
    assert!(b.is_exhausted());
    assert!(!b.charge(0), "once spent, every charge fails");
}

#[test]
fn a_signal_fires_at_its_deadline_or_when_cancelled() {
    let past = crate::engine::Signal::until(std::time::Instant::now());
    assert!(past.is_cancelled());
    let later = crate::engine::Signal::until(std::time::Instant::now() + std::time::Duration::from_secs(60));
    assert!(!later.is_cancelled());
    later.clone().cancel();
    assert!(later.is_cancelled(), "clones share the signal");
    assert!(!crate::engine::Signal::current().is_cancelled(), "outside an engine call: unbounded");
}

#[test]
fn diagnostics_past_the_cap_are_counted_and_reported_once() {
    let _entered = bounds(usize::MAX, 3).enter();
    let mut v = Validation::<Code, Risk>::new(&request());
    for i in 0..10 {
        v.error(Code::Unknown, format!("/{i}"), "bad");
    }
    let r = validate::derive(
        v.finish(),
        vec![],
        &Derivation { codes: &["unknown", "constraint"], plan: true, catalog_version: None },
    );
    assert_eq!(r.diagnostics.len(), 4);
    assert!(!r.valid);
    let last = &r.diagnostics[3];
    assert_eq!((last.code.as_str(), last.severity), ("constraint", Severity::Error));
    assert_eq!(
        last.message,
        "7 more diagnostic(s) left out: this server reports at most the first 3 per response"
    );
    // At the cap exactly, nothing is left out.
    let _entered = bounds(usize::MAX, 10).enter();
    let mut v = Validation::<Code, Risk>::new(&request());
    for i in 0..10 {
        v.warning(Code::Unknown, format!("/{i}"), "meh");
    }
    assert_eq!(v.finish().left_out, 0);
}

#[test]
fn a_validation_past_its_byte_budget_is_a_bound_and_turns_inert() {
    let _entered = bounds(200, usize::MAX).enter();
    let mut v = Validation::<Code, Risk>::new(&request());
    v.error(Code::Unknown, "/a", "short");
    v.error(Code::Unknown, "/b", "x".repeat(500));
    v.step("s", Risk::Safe);
    let core = v.finish();
    assert_eq!(core.diagnostics.len(), 1);
    assert!(core.steps.is_empty(), "inert after the bound");
    assert_eq!(core.bound_exceeded.as_deref(), Some("validation exceeded its memory bound of 200 bytes"));
}

#[test]
fn a_cancelled_validation_keeps_nothing_more() {
    let b = bounds(usize::MAX, usize::MAX);
    let _entered = b.enter();
    let mut v = Validation::<Code, Risk>::new(&request());
    v.step("kept", Risk::Safe);
    assert!(!v.is_cancelled());
    b.signal.cancel();
    assert!(v.is_cancelled());
    v.step("dropped", Risk::Wipe);
    v.error(Code::Unknown, "", "dropped");
    let core = v.finish();
    assert_eq!(core.steps.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["kept"]);
    assert!(core.diagnostics.is_empty());
}

#[test]
fn a_run_records_until_its_budget_or_signal_and_then_is_inert() {
    use crate::engine::{ExecuteRequest, Recorder, Run};
    let request = ExecuteRequest {
        run_id: "run_t".into(),
        program: Arc::new(json!({})),
        input: None,
        context: None,
        catalog: None,
        caller: crate::engine::Caller::new("t"),
        mode: crate::model::declaration::ExecutionMode::Immediate,
        test_run: false,
        promoted: Arc::new(Default::default()),
    };
    // Entries are charged the memory they hold: "a" is about 500 bytes, "b" over 1 400.
    let b = bounds(1_000, usize::MAX);
    let recorder = Recorder::bounded(100, &b);
    let mut run = Run::<crate::model::closed_sets::NoStatus>::new(&request, recorder.clone());
    run.step("a").output(json!("small")).succeeded();
    run.step("b").output(json!("y".repeat(1000))).succeeded();
    run.step("c").succeeded();
    assert_eq!(recorder.steps().iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["a"]);
    assert!(recorder.bytes_exceeded() && run.should_stop());
    // A cancelled run records nothing more, though bytes remain.
    let b = bounds(usize::MAX, usize::MAX);
    let recorder = Recorder::bounded(100, &b);
    let mut run = Run::<crate::model::closed_sets::NoStatus>::new(&request, recorder.clone());
    run.step("a").succeeded();
    recorder.cancel();
    assert!(run.is_cancelled() && b.signal.is_cancelled());
    run.step("b").succeeded();
    assert_eq!(recorder.steps().len(), 1);
    assert!(!recorder.exceeded(), "a cancelled run did not exceed its step bound");
}

/// A finished run of owner `o` without output, as the store tests keep it.
#[cfg(feature = "sqlite")]
fn old_run() -> RunRecord {
    RunRecord {
        run_id: "run_old".into(),
        owner: "o".into(),
        language: "l/v1".into(),
        outcome: crate::model::outcome::Outcome::success(),
        output: None,
        level: crate::model::declaration::TraceLevel::Full,
        steps: RunRecord::steps_text(&[], crate::model::declaration::TraceLevel::Full),
        stats: None,
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_store_purges_expired_runs_and_keys() {
    use crate::state::{Claimed, KeyRef};
    let store = SqliteState::in_memory().unwrap();
    let record = old_run();
    store.put_run(&record, std::time::Duration::ZERO).await.unwrap();
    let hour = std::time::Duration::from_secs(3600);
    for (k, keep) in [("k", std::time::Duration::ZERO), ("k2", hour)] {
        let key = KeyRef { owner: "o", language: "l/v1", key: k };
        let Claimed::Fresh(token) = store.claim_key(key, "f", hour).await.unwrap() else { panic!("fresh") };
        store.record_key(key, &token, &json!({}), keep, None).await.unwrap();
    }
    assert_eq!(store.purge_expired().await.unwrap(), 2, "one run and one key had expired");
    let k2 = KeyRef { owner: "o", language: "l/v1", key: "k2" };
    assert_eq!(store.claim_key(k2, "f", hour).await.unwrap(), Claimed::Replay(json!({})));
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn an_sqlite_file_of_the_first_schema_migrates_and_keeps_its_runs() {
    let dir = std::env::temp_dir().join(format!("pilotage-migrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.sqlite");
    let _ = std::fs::remove_file(&path);
    let record = serde_json::to_value(old_run()).unwrap();
    {
        // The schema written before versioned migrations: runs and replays, no version table.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE pilotage_runs (run_id TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at_ms INTEGER NOT NULL);
             CREATE TABLE pilotage_replays (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, response TEXT NOT NULL, expires_at_ms INTEGER NOT NULL);",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO pilotage_runs VALUES ('run_old', ?1, 99999999999999)",
            [record.to_string()],
        )
        .unwrap();
    }
    let store = SqliteState::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 4);
    let kept = store.get_run("o", "run_old").await.unwrap().expect("the run survives the migration");
    assert_eq!(serde_json::to_value(&kept).unwrap()["run_id"], "run_old");
    // The catalog histories of the current schema work on a migrated file.
    let (old, new) = (Arc::new(CatalogSnapshot::new(entries(2))), Arc::new(CatalogSnapshot::new(entries(3))));
    store.remember_catalog("o", "l/v1", &old).await.unwrap();
    store.remember_catalog("o", "l/v1", &new).await.unwrap();
    let changes = store.catalog_changes("o", "l/v1", old.version(), &new).await.unwrap();
    assert_eq!(changes, Some(vec![("e02".to_owned(), ChangeKind::Added)]));
    drop(store);
    assert_eq!(SqliteState::open(&path).unwrap().schema_version().unwrap(), 4, "applied once");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn an_sqlite_store_keeps_catalog_histories_bounded() {
    let dir = std::env::temp_dir().join(format!("pilotage-bounded-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.sqlite");
    let store = SqliteState::open(&path).unwrap();
    let depth = crate::state::HISTORY_DEPTH;
    for n in 0..depth + 8 {
        store.remember_catalog("o", "l/v1", &Arc::new(CatalogSnapshot::new(entries(n + 1)))).await.unwrap();
    }
    store.remember_catalog("p", "l/v1", &Arc::new(CatalogSnapshot::new(entries(3)))).await.unwrap();
    store.purge_expired().await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let count = |table: &str| -> i64 {
        conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).unwrap()
    };
    assert_eq!(count("pilotage_catalog_chain"), depth as i64 + 1, "32 versions of o, 1 of p");
    assert_eq!(count("pilotage_catalog_deltas"), depth as i64 - 1, "one per link of o's chain");
    assert_eq!(count("pilotage_catalog_lists"), 2, "each owner's last version's list");
    let oldest = CatalogSnapshot::new(entries(9));
    let last = Arc::new(CatalogSnapshot::new(entries(depth + 8)));
    let changes = store.catalog_changes("o", "l/v1", oldest.version(), &last).await.unwrap().unwrap();
    assert_eq!(changes.len(), depth - 1, "the oldest kept: one added entry per version since");
    let gone = CatalogSnapshot::new(entries(8));
    assert_eq!(store.catalog_changes("o", "l/v1", gone.version(), &last).await.unwrap(), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn close_matches_are_bounded_work() {
    let snap = CatalogSnapshot::new(vec![
        CatalogEntry::new("cap_read", Kind::Cap, "r", Risk::Safe),
        CatalogEntry::new("cap_reads_everything_else", Kind::Cap, "r", Risk::Safe),
    ]);
    assert_eq!(snap.close_matches("cap_raed", 3), ["cap_read"]);
    assert!(snap.close_matches(&"x".repeat(65), 3).is_empty(), "too long to compare");
    assert!(snap.close_matches(&"cap_read".repeat(8), 3).is_empty(), "64 characters, nothing within 3");
}

#[test]
fn the_left_out_diagnostic_of_a_text_language_is_a_range() {
    let _entered = bounds(usize::MAX, 1).enter();
    let mut v = Validation::<Code, Risk>::new(&request());
    v.error(Code::Unknown, crate::model::diagnostic::TextRange::new(2, 1, 2, 5), "bad");
    v.error(Code::Unknown, crate::model::diagnostic::TextRange::new(3, 1, 3, 5), "bad");
    let r = validate::derive(
        v.finish(),
        vec![],
        &Derivation { codes: &["unknown", "constraint"], plan: false, catalog_version: None },
    );
    assert_eq!(r.diagnostics.len(), 2);
    assert_eq!(
        serde_json::to_value(&r.diagnostics[1].path).unwrap(),
        json!({"start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 1}})
    );
}

/// Each response moved into its value equals, byte for byte, the one `serde_json::to_value` writes.
mod moved_responses {
    use serde_json::{json, Value};

    use crate::model::diagnostic::{Diagnostic, Severity};
    use crate::model::execution::ExecuteResponse;
    use crate::model::outcome::Outcome;
    use crate::model::plan::{Plan, PlanStep, ValidateResponse};
    use crate::model::risk::RiskHints;
    use crate::model::trace::{Decision, Trace, TraceFetchResponse, TraceLevelWire, TraceStep};

    /// Every combination of a step's optional members, present `null`s among them.
    fn steps() -> Vec<TraceStep> {
        let mut steps = Vec::new();
        for bits in 0u32..32 {
            let on = |b: u32| bits & (1 << b) != 0;
            steps.push(TraceStep {
                id: format!("s{bits}"),
                calls: on(0).then(|| "tool/x".to_owned()),
                input: on(1).then(|| if on(4) { Value::Null } else { json!({"a": [1, 2.5, "\"q\""]}) }),
                output: on(2).then(|| if on(4) { json!(0.1) } else { Value::Null }),
                outcome: if on(3) { Outcome::failure("error", "it broke") } else { Outcome::success() },
                t_ms: on(4).then_some(u64::from(bits)),
                decisions: on(3).then(|| {
                    vec![Decision { at: "/if".into(), took: "then".into(), because: "x > 1".into() }]
                }),
            });
        }
        steps
    }

    fn response(output: Option<Value>, trace: Option<Trace>, refused: bool) -> ExecuteResponse {
        let diagnostics = refused.then(|| vec![Diagnostic::new(Severity::Error, "constraint", "/a", "no")]);
        let outcome = if refused { Outcome::failure("validation_error", "no") } else { Outcome::success() };
        ExecuteResponse { run_id: "run_1".into(), outcome, output, diagnostics, trace }
    }

    #[test]
    fn a_moved_execute_or_trace_response_is_the_serialised_response_byte_for_byte() {
        let traces = [
            None,
            Some(Trace { run_id: "run_1".into(), level: TraceLevelWire::Full, steps: steps(), stats: None }),
            Some(Trace {
                run_id: "run_1".into(),
                level: TraceLevelWire::Summary,
                steps: vec![],
                stats: Some(json!({"n": 0})),
            }),
        ];
        for trace in traces {
            for output in [None, Some(Value::Null), Some(json!({"count": 3}))] {
                for refused in [false, true] {
                    let r = response(output.clone(), trace.clone(), refused);
                    let written = serde_json::to_string(&r).unwrap();
                    assert_eq!(serde_json::to_string(&r.into_value()).unwrap(), written);
                }
                let Some(trace) = trace.clone() else { continue };
                for narration in [None, Some("it ran".to_owned())] {
                    let outcome = Outcome::success();
                    let (run_id, output) = ("run_1".to_owned(), output.clone());
                    let r = TraceFetchResponse { run_id, outcome, output, trace: trace.clone(), narration };
                    let written = serde_json::to_string(&r).unwrap();
                    assert_eq!(serde_json::to_string(&r.into_value()).unwrap(), written);
                }
            }
        }
        for step in steps() {
            let written = serde_json::to_string(&step).unwrap();
            assert_eq!(serde_json::to_string(&step.into_value()).unwrap(), written);
        }
    }

    #[derive(Clone, Copy)]
    struct Level(&'static str);

    impl crate::model::closed_sets::RiskLevel for Level {
        const MEMBERS: &'static [crate::model::closed_sets::RiskMember] = &[];
        fn wire(self) -> &'static str {
            self.0
        }
        fn hints(self) -> RiskHints {
            RiskHints::WRITE
        }
        fn rank(self) -> usize {
            0
        }
    }

    /// Every combination of a plan step's optional members.
    fn plan_steps() -> Vec<PlanStep> {
        (0u32..8)
            .map(|bits| {
                let mut step = PlanStep::new(format!("s\"{bits}"), Level("write"));
                if bits & 1 != 0 {
                    step.calls("tool/x");
                }
                if bits & 2 != 0 {
                    step.arm("b1", "then");
                }
                if bits & 4 != 0 {
                    step.in_loop("l1");
                }
                step
            })
            .collect()
    }

    #[test]
    fn a_moved_validate_response_is_the_serialised_response_byte_for_byte() {
        let plans = [
            None,
            Some(Plan { steps: vec![], max_risk: "read".into(), max_risk_hints: RiskHints::READ_ONLY }),
            Some(Plan { steps: plan_steps(), max_risk: "write".into(), max_risk_hints: RiskHints::WRITE }),
        ];
        for plan in plans {
            for (catalog_version, references) in
                [(None, None), (Some("cv_1".to_owned()), Some(vec!["e1".to_owned()]))]
            {
                let diagnostics = vec![Diagnostic::new(Severity::Warning, "constraint", "/a", "hm")];
                let r = ValidateResponse {
                    valid: plan.is_some(),
                    diagnostics,
                    catalog_version: catalog_version.clone(),
                    plan: plan.clone(),
                    references: references.clone(),
                };
                let written = serde_json::to_string(&r).unwrap();
                assert_eq!(serde_json::to_string(&r.into_value()).unwrap(), written);
            }
        }
    }
}
