//! The behavioural suite every [`SharedState`] backend passes (memory, SQLite, PostgreSQL):
//! `pilotage::testkit::state_suite(store)`. Each run uses fresh owner ids, so it can run
//! again and again on one database.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::idempotency::{claim, Claim};
use super::runs::RunRecord;
use super::shared::{Claimed, KeptRun, KeyRef, SharedState, Stored, Tenure, HISTORY_DEPTH};
use super::tasks::{TaskRecord, TaskState};
use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::{CatalogEntry, ChangeKind};
use crate::model::declaration::TraceLevel;
use crate::model::outcome::Outcome;
use crate::model::trace::TraceStep;

const HOUR: Duration = Duration::from_secs(3600);

/// Run every case against `store`; panics with the case and the difference on a failure.
pub async fn state_suite(store: Arc<dyn SharedState>) {
    let me = format!("suite-{}", uuid::Uuid::new_v4().simple());
    runs_are_scoped_by_owner_and_expire(&*store, &me).await;
    claims_follow_their_lifecycle(&*store, &me).await;
    a_lapsed_lease_of_a_live_claimant_is_kept_and_renewed(&*store, &me).await;
    a_key_is_recorded_with_its_run_or_not_at_all(&*store, &me).await;
    keys_are_scoped_by_owner_and_language(&*store, &me).await;
    concurrent_duplicates_run_once(&store, &me).await;
    promotions_are_immutable_scoped_and_capped(&*store, &me).await;
    catalogs_are_remembered_per_owner_to_a_depth(&*store, &me).await;
    a_chain_composes_to_the_direct_diff(&*store, &format!("{me}-chain")).await;
    a_session_not_told_is_appended(&*store, &me).await;
    tasks_are_scoped_replaced_and_expire(&*store, &me).await;
}

fn record(run_id: &str, owner: &str) -> RunRecord {
    RunRecord {
        run_id: run_id.to_owned(),
        owner: owner.to_owned(),
        language: "suite/v1".into(),
        outcome: Outcome::success(),
        output: Some(RunRecord::text(&json!({"n": 1}))),
        level: TraceLevel::Summary,
        steps: RunRecord::steps_text(&[suite_step()], TraceLevel::Full),
        stats: None,
    }
}

/// The step every suite record keeps, whose text must read back as it.
fn suite_step() -> TraceStep {
    TraceStep {
        id: "s1".into(),
        calls: Some("entry \"é\"".into()),
        input: Some(json!({"q": "a\nb"})),
        output: Some(json!([[1, "x"], [2.5, null]])),
        outcome: Outcome::success(),
        t_ms: Some(2),
        decisions: None,
    }
}

async fn runs_are_scoped_by_owner_and_expire(store: &dyn SharedState, me: &str) {
    let (a, b) = (format!("run_{me}_a"), format!("run_{me}_b"));
    store.put_run(&record(&a, me), HOUR).await.unwrap();
    let got = store.get_run(me, &a).await.unwrap();
    assert_eq!(got, Some(record(&a, me)), "a stored run is its owner's");
    let kept = got.unwrap();
    assert_eq!(kept.steps().unwrap(), vec![suite_step()], "its steps read back as written");
    assert_eq!(kept.output().unwrap(), Some(json!({"n": 1})), "its output reads back as written");
    assert_eq!(store.get_run(&format!("{me}-other"), &a).await.unwrap(), None, "foreign: none");
    assert_eq!(store.get_run(me, &format!("run_{me}_never")).await.unwrap(), None, "unknown: none");
    store.put_run(&record(&b, me), Duration::ZERO).await.unwrap();
    assert_eq!(store.get_run(me, &b).await.unwrap(), None, "past retention: none");
    // No output and a `null` output are different facts, and read back so.
    let (none, null) = (format!("run_{me}_none"), format!("run_{me}_null"));
    let without = RunRecord { output: None, ..record(&none, me) };
    let with_null = RunRecord { output: Some(RunRecord::text(&json!(null))), ..record(&null, me) };
    for kept in [&without, &with_null] {
        store.put_run(kept, HOUR).await.unwrap();
        assert_eq!(store.get_run(me, &kept.run_id).await.unwrap().as_ref(), Some(kept));
    }
    let fetched = store.get_run(me, &null).await.unwrap().map(|r| r.output().unwrap());
    assert_eq!(fetched, Some(Some(json!(null))));
}

fn task(task_id: &str, owner: &str, ttl_ms: u64) -> TaskRecord {
    let (id, owner, run_id) = (task_id.to_owned(), owner.to_owned(), format!("run_of_{task_id}"));
    TaskRecord::working(id, owner, "suite/v1".into(), run_id, ttl_ms, "suite".into())
}

async fn tasks_are_scoped_replaced_and_expire(store: &dyn SharedState, me: &str) {
    let (a, b) = (format!("task_{me}_a"), format!("task_{me}_b"));
    let working = task(&a, me, 3_600_000);
    store.put_task(&working).await.unwrap();
    assert_eq!(store.get_task(me, &a).await.unwrap(), Some(working.clone()), "a stored task is its owner's");
    assert_eq!(store.get_task(&format!("{me}-other"), &a).await.unwrap(), None, "foreign: none");
    assert_eq!(store.get_task(me, &format!("task_{me}_never")).await.unwrap(), None, "unknown: none");
    let done = TaskRecord {
        state: TaskState::Completed,
        steps_done: 3,
        result: Some(json!({"content": [], "structuredContent": {"run_id": "r"}})),
        ..working
    };
    store.put_task(&done).await.unwrap();
    assert_eq!(store.get_task(me, &a).await.unwrap(), Some(done), "a put replaces the record");
    store.put_task(&task(&b, me, 0)).await.unwrap();
    assert_eq!(store.get_task(me, &b).await.unwrap(), None, "past its ttl: none");
}

fn key<'a>(me: &'a str, k: &'a str) -> KeyRef<'a> {
    KeyRef { owner: me, language: "suite/v1", key: k }
}

async fn claims_follow_their_lifecycle(store: &dyn SharedState, me: &str) {
    let k = key(me, "life");
    let Claimed::Fresh(token) = store.claim_key(k, "f1", HOUR).await.unwrap() else { panic!("fresh") };
    assert_eq!(store.claim_key(k, "f1", HOUR).await.unwrap(), Claimed::Pending, "held: pending");
    assert_eq!(store.claim_key(k, "f2", HOUR).await.unwrap(), Claimed::Conflict, "held, other input");
    store.release_key(k, &token).await.unwrap();
    let Claimed::Fresh(token) = store.claim_key(k, "f2", HOUR).await.unwrap() else { panic!("released") };
    let stale = store.record_key(k, "not-the-token", &json!({"run_id": "wrong"}), HOUR, None).await;
    assert_eq!(stale.unwrap(), Tenure::Lost, "a stale token records nothing");
    assert_eq!(
        store.claim_key(k, "f2", HOUR).await.unwrap(),
        Claimed::Pending,
        "a stale token records nothing"
    );
    let first = store.record_key(k, &token, &json!({"run_id": "run_1"}), HOUR, None).await.unwrap();
    assert_eq!(first, Tenure::Held);
    let again = store.record_key(k, &token, &json!({"run_id": "run_2"}), HOUR, None).await.unwrap();
    assert_eq!(again, Tenure::Held, "a retried record of the same claim is idempotent");
    assert_eq!(store.claim_key(k, "f2", HOUR).await.unwrap(), Claimed::Replay(json!({"run_id": "run_1"})));
    assert_eq!(store.claim_key(k, "f1", HOUR).await.unwrap(), Claimed::Conflict, "recorded, other input");
    store.release_key(k, &token).await.unwrap();
    assert!(
        matches!(store.claim_key(k, "f2", HOUR).await.unwrap(), Claimed::Replay(_)),
        "no release after record"
    );
    let short = key(me, "short");
    let Claimed::Fresh(t) = store.claim_key(short, "f", HOUR).await.unwrap() else { panic!("fresh") };
    store.record_key(short, &t, &json!(1), Duration::ZERO, None).await.unwrap();
    assert!(matches!(store.claim_key(short, "g", HOUR).await.unwrap(), Claimed::Fresh(_)), "past its window");
}

async fn a_lapsed_lease_of_a_live_claimant_is_kept_and_renewed(store: &dyn SharedState, me: &str) {
    let k = key(me, "held-up");
    let Claimed::Fresh(token) = store.claim_key(k, "f", Duration::ZERO).await.unwrap() else {
        panic!("fresh")
    };
    assert_eq!(store.claim_key(k, "f", HOUR).await.unwrap(), Claimed::Pending, "lapsed, its claimant lives");
    assert_eq!(store.renew_key(k, &token, HOUR).await.unwrap(), Tenure::Held, "renewed");
    assert_eq!(store.renew_key(k, "not-the-token", HOUR).await.unwrap(), Tenure::Lost, "a stale token");
    assert_eq!(store.claim_key(k, "f", HOUR).await.unwrap(), Claimed::Pending, "still held");
    let recorded = store.record_key(k, &token, &json!("first"), HOUR, None).await.unwrap();
    assert_eq!(recorded, Tenure::Held);
    assert_eq!(store.renew_key(k, &token, HOUR).await.unwrap(), Tenure::Lost, "recorded: nothing to renew");
    assert_eq!(store.claim_key(k, "f", HOUR).await.unwrap(), Claimed::Replay(json!("first")));
}

async fn a_key_is_recorded_with_its_run_or_not_at_all(store: &dyn SharedState, me: &str) {
    let (k, run_id) = (key(me, "with-run"), format!("run_{me}_keyed"));
    let run = record(&run_id, me);
    let Claimed::Fresh(token) = store.claim_key(k, "f", HOUR).await.unwrap() else { panic!("fresh") };
    let kept = Some(KeptRun { record: &run, keep_for: HOUR });
    let stale = store.record_key(k, "not-the-token", &json!({"run_id": run_id}), HOUR, kept).await.unwrap();
    assert_eq!(stale, Tenure::Lost);
    assert_eq!(store.get_run(me, &run_id).await.unwrap(), None, "a lost claim keeps no run either");
    let response = json!({"run_id": run_id});
    assert_eq!(store.record_key(k, &token, &response, HOUR, kept).await.unwrap(), Tenure::Held);
    assert_eq!(store.get_run(me, &run_id).await.unwrap(), Some(run.clone()), "kept with the key");
    assert_eq!(store.claim_key(k, "f", HOUR).await.unwrap(), Claimed::Replay(response.clone()));
    assert_eq!(store.record_key(k, &token, &response, HOUR, kept).await.unwrap(), Tenure::Held, "a retry");
    assert_eq!(store.get_run(me, &run_id).await.unwrap(), Some(run), "the same record");
}

async fn keys_are_scoped_by_owner_and_language(store: &dyn SharedState, me: &str) {
    let Claimed::Fresh(_) = store.claim_key(key(me, "scoped"), "f", HOUR).await.unwrap() else { panic!() };
    let other = format!("{me}-other");
    assert!(matches!(store.claim_key(key(&other, "scoped"), "g", HOUR).await.unwrap(), Claimed::Fresh(_)));
    let elsewhere = KeyRef { owner: me, language: "suite/v2", key: "scoped" };
    assert!(matches!(store.claim_key(elsewhere, "g", HOUR).await.unwrap(), Claimed::Fresh(_)));
}

async fn concurrent_duplicates_run_once(store: &Arc<dyn SharedState>, me: &str) {
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (store, me, ran) = (store.clone(), me.to_owned(), ran.clone());
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                match claim(&store, (&me, "suite/v1", "dup"), "f", deadline).await.unwrap() {
                    Claim::Fresh(guard) => {
                        ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        guard.record(json!({"run_id": "run_once"}), HOUR, None, deadline).await.unwrap();
                        json!({"run_id": "run_once"})
                    }
                    Claim::Replay(v) => v,
                    Claim::Conflict | Claim::Busy => panic!("same input, within the deadline: a replay"),
                }
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(
            t.await.unwrap(),
            json!({"run_id": "run_once"}),
            "every duplicate gets the first response"
        );
    }
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1, "32 duplicates ran once");
}

async fn promotions_are_immutable_scoped_and_capped(store: &dyn SharedState, me: &str) {
    let lang = "suite/v1";
    assert_eq!(store.put_promotion(me, lang, "prog_a", &json!({"a": 1}), 2).await.unwrap(), Stored::Held);
    assert_eq!(store.put_promotion(me, lang, "prog_a", &json!({"a": 2}), 2).await.unwrap(), Stored::Held);
    assert_eq!(store.put_promotion(me, lang, "prog_b", &json!({"b": 1}), 2).await.unwrap(), Stored::Held);
    assert_eq!(store.put_promotion(me, lang, "prog_c", &json!({"c": 1}), 2).await.unwrap(), Stored::Full);
    let held = store.promotions(me, lang).await.unwrap();
    assert_eq!(held, [("prog_a".to_owned(), json!({"a": 1})), ("prog_b".to_owned(), json!({"b": 1}))]);
    assert_eq!(store.promotions(&format!("{me}-other"), lang).await.unwrap(), []);
    assert_eq!(store.promotions(me, "suite/v2").await.unwrap(), []);
}

fn entry(id: &str, name: &str) -> CatalogEntry {
    serde_json::from_value(json!({
        "id": id, "kind": "thing", "name": name, "risk": "read",
        "risk_hints": {"readOnly": true, "destructive": false, "openWorld": false},
    }))
    .unwrap()
}

/// A catalog of `(id, name)` entries.
fn catalog(entries: &[(&str, &str)]) -> Arc<CatalogSnapshot> {
    Arc::new(CatalogSnapshot::new(entries.iter().map(|(id, name)| entry(id, name)).collect()))
}

fn snapshot(n: usize) -> Arc<CatalogSnapshot> {
    catalog(&[(&format!("entry_{n}"), &format!("Thing {n}"))])
}

/// What `changes_to` answers from `old` to `new`: what a store must compose.
fn direct(old: &CatalogSnapshot, new: &CatalogSnapshot) -> Option<Vec<(String, ChangeKind)>> {
    Some(super::catalog_history::changes_between(old, new))
}

async fn changes(
    store: &dyn SharedState,
    me: &str,
    since: &CatalogSnapshot,
    current: &Arc<CatalogSnapshot>,
) -> Option<Vec<(String, ChangeKind)>> {
    store.catalog_changes(me, "suite/v1", since.version(), current).await.unwrap()
}

async fn serve(store: &dyn SharedState, me: &str, snapshot: &Arc<CatalogSnapshot>) {
    store.remember_catalog(me, "suite/v1", snapshot).await.unwrap();
}

async fn catalogs_are_remembered_per_owner_to_a_depth(store: &dyn SharedState, me: &str) {
    let (first, second) = (snapshot(0), snapshot(1));
    serve(store, me, &first).await;
    serve(store, me, &second).await;
    let expected =
        vec![("entry_0".to_owned(), ChangeKind::Removed), ("entry_1".to_owned(), ChangeKind::Added)];
    assert_eq!(changes(store, me, &first, &second).await, Some(expected), "remembered");
    assert_eq!(changes(store, me, &second, &second).await, Some(Vec::new()), "the same token");
    assert_eq!(changes(store, me, &snapshot(99), &second).await, None, "never served");
    let other = format!("{me}-other");
    assert_eq!(changes(store, &other, &first, &second).await, None, "served to another owner");
    let elsewhere = store.catalog_changes(me, "suite/v2", first.version(), &second).await.unwrap();
    assert_eq!(elsewhere, None, "served in another Language");
    for n in 2..HISTORY_DEPTH {
        serve(store, me, &snapshot(n)).await;
    }
    let last = snapshot(HISTORY_DEPTH - 1);
    assert_eq!(changes(store, me, &first, &last).await, direct(&first, &last), "the depth-th last");
    serve(store, me, &snapshot(HISTORY_DEPTH)).await;
    let last = snapshot(HISTORY_DEPTH);
    assert_eq!(changes(store, me, &first, &last).await, None, "past the depth");
    assert_eq!(changes(store, me, &second, &last).await, direct(&second, &last), "within the depth");
    serve(store, me, &second).await;
    serve(store, me, &snapshot(HISTORY_DEPTH + 1)).await;
    let last = snapshot(HISTORY_DEPTH + 1);
    assert_eq!(changes(store, me, &second, &last).await, direct(&second, &last), "served again: recent");
    assert_eq!(changes(store, me, &snapshot(2), &last).await, None, "now the oldest went");
    assert_eq!(changes(store, me, &snapshot(3), &last).await, direct(&snapshot(3), &last), "the oldest kept");
}

/// Versions served one after the other: additions, removals, modifications, an entry removed
/// and re-added the same, one removed and re-added otherwise, one modified and back.
fn versions() -> Vec<Arc<CatalogSnapshot>> {
    vec![
        catalog(&[("a", "A"), ("b", "B"), ("c", "C"), ("d", "D")]),
        catalog(&[("a", "A2"), ("c", "C"), ("d", "D"), ("e", "E")]),
        catalog(&[("a", "A2"), ("b", "B"), ("d", "D2"), ("e", "E")]),
        catalog(&[("a", "A"), ("b", "B"), ("c", "C3"), ("d", "D2"), ("f", "F")]),
        catalog(&[("a", "A"), ("b", "B"), ("c", "C3"), ("f", "F"), ("g", "G")]),
    ]
}

async fn a_chain_composes_to_the_direct_diff(store: &dyn SharedState, me: &str) {
    let all = versions();
    for v in &all {
        serve(store, me, v).await;
    }
    let current = &all[all.len() - 1];
    store.purge_expired().await.unwrap();
    for since in &all {
        assert_eq!(
            changes(store, me, since, current).await,
            direct(since, current),
            "from {}",
            since.version()
        );
    }
    let from_first = changes(store, me, &all[0], current).await.unwrap();
    let ids: Vec<&str> = from_first.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c", "d", "f", "g"], "a and b came back as they were");
    // A → B → A: the chain continues; nothing from A, B's changes undone from B.
    let (a, b) = (all[0].clone(), all[1].clone());
    serve(store, me, &a).await;
    serve(store, me, &b).await;
    serve(store, me, &a).await;
    assert_eq!(changes(store, me, &a, &a).await, Some(Vec::new()), "A→B→A: nothing from A");
    assert_eq!(changes(store, me, &b, &a).await, direct(&b, &a), "from B back to A");
    assert_eq!(changes(store, me, &all[2], &a).await, direct(&all[2], &a), "across the A→B→A");
}

async fn a_session_not_told_is_appended(store: &dyn SharedState, me: &str) {
    let all = versions();
    let owner = format!("{me}-sessions");
    serve(store, &owner, &all[0]).await;
    serve(store, &owner, &all[1]).await;
    // Another session of the owner still holds all[0] and asks from all[1].
    assert_eq!(changes(store, &owner, &all[1], &all[0]).await, direct(&all[1], &all[0]));
}

/// The cases that need a second store on the same database or file (`replica`, a replica whose
/// process served nothing yet): it answers from versions `store` served, and remembers the next
/// version from the stored list of the last one. Each run uses fresh owner ids.
pub async fn replica_suite(store: Arc<dyn SharedState>, replica: Arc<dyn SharedState>) {
    let me = format!("replica-{}", uuid::Uuid::new_v4().simple());
    catalogs_are_shared_between_replicas(&*store, &*replica, &me).await;
    a_dead_replicas_claim_is_taken_over(store, replica, &me).await;
}

/// A claim of a replica that is gone (its store dropped, as a killed process's is) is taken
/// over by another replica as soon as its lease lapses.
async fn a_dead_replicas_claim_is_taken_over(
    store: Arc<dyn SharedState>,
    replica: Arc<dyn SharedState>,
    me: &str,
) {
    let k = key(me, "dead");
    let Claimed::Fresh(_) = replica.claim_key(k, "f", Duration::from_millis(200)).await.unwrap() else {
        panic!("fresh")
    };
    drop(replica);
    let started = std::time::Instant::now();
    loop {
        match store.claim_key(k, "f", HOUR).await.unwrap() {
            Claimed::Fresh(_) => break,
            Claimed::Pending if started.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => panic!("the dead replica's claim was not taken over: {other:?}"),
        }
    }
}

async fn catalogs_are_shared_between_replicas(store: &dyn SharedState, replica: &dyn SharedState, me: &str) {
    let all = versions();
    for v in &all[..3] {
        serve(store, me, v).await;
    }
    let current = &all[2];
    assert_eq!(changes(replica, me, &all[0], current).await, direct(&all[0], current), "served elsewhere");
    assert_eq!(changes(replica, me, &all[3], current).await, None, "not served yet");
    serve(replica, me, &all[3]).await;
    let next = &all[3];
    for since in &all[..3] {
        assert_eq!(changes(replica, me, since, next).await, direct(since, next), "cold cache");
        assert_eq!(changes(store, me, since, next).await, direct(since, next), "seen from the first");
    }
    // Another owner served the same versions: the deltas are shared, the chain is its own.
    let other = format!("{me}-other");
    serve(replica, &other, &all[1]).await;
    serve(replica, &other, &all[3]).await;
    assert_eq!(changes(store, &other, &all[1], next).await, direct(&all[1], next));
    assert_eq!(changes(store, &other, &all[0], next).await, None, "not in its chain");
}

/// The environment variable `cargo xtask test` (and so CI) sets: a test whose outside service
/// (PostgreSQL, the official client SDKs) is missing fails instead of skipping.
pub const REQUIRE_SERVICES: &str = "PILOTAGE_REQUIRE_SERVICES";

/// Whether the test `test`, which needs `service`, may run: `missing` says why the service is
/// not there (`None` when it is). A missing service skips the test: this says so on stderr,
/// past the test harness's capture, with the command that provides it, and answers `false`
/// (the test returns at once). With [`REQUIRE_SERVICES`] set, a missing service panics instead:
/// under `cargo xtask test` nothing skips.
pub fn service_or_skip(test: &str, service: &str, missing: Option<String>) -> bool {
    use std::io::Write;
    let Some(why) = missing else { return true };
    if std::env::var_os(REQUIRE_SERVICES).is_some() {
        panic!("{test} needs {service}, and {REQUIRE_SERVICES} is set: {why}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: it needs {service} ({why}); `cargo xtask test` provides it and runs every test"
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_state_passes_the_suite() {
        state_suite(Arc::new(crate::state::MemoryState::default())).await;
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_state_passes_the_suite() {
        state_suite(Arc::new(crate::state::SqliteState::in_memory().unwrap())).await;
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_sqlite_stores_on_one_file_pass_the_replica_suite() {
        let dir = std::env::temp_dir().join(format!("pilotage-replica-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let open = || crate::state::SqliteState::open(dir.join("state.sqlite")).unwrap();
        replica_suite(Arc::new(open()), Arc::new(open())).await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The PostgreSQL server the tests use: `PILOTAGE_TEST_POSTGRES`, by default the local one.
#[cfg(feature = "postgres")]
pub fn test_postgres_url() -> String {
    std::env::var("PILOTAGE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// [`service_or_skip`] for PostgreSQL at [`test_postgres_url`]: missing when no server accepts a
/// TCP connection at the URL's host and port within 2 s.
#[cfg(feature = "postgres")]
pub fn postgres_or_skip(test: &str) -> bool {
    let url = test_postgres_url();
    service_or_skip(test, "PostgreSQL", postgres_unreachable(&url))
}

#[cfg(feature = "postgres")]
fn postgres_unreachable(url: &str) -> Option<String> {
    use std::net::{TcpStream, ToSocketAddrs};
    let config: tokio_postgres::Config = match url.parse() {
        Ok(config) => config,
        Err(e) => return Some(format!("PILOTAGE_TEST_POSTGRES={url} is not a connection URL: {e}")),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    for host in config.get_hosts() {
        let tokio_postgres::config::Host::Tcp(name) = host else { return None };
        let addrs = (name.as_str(), port).to_socket_addrs().into_iter().flatten();
        for addr in addrs {
            if TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)).is_ok() {
                return None;
            }
        }
    }
    Some(format!("no server answers at {url}; set PILOTAGE_TEST_POSTGRES to use another"))
}

/// A [`PostgresState`](super::PostgresState) on the test server, or a panic saying how to
/// provide one (the PostgreSQL tests never skip silently).
#[cfg(feature = "postgres")]
pub async fn test_postgres() -> super::PostgresState {
    let url = test_postgres_url();
    match super::PostgresState::connect(&url).await {
        Ok(state) => state,
        Err(e) => no_postgres(&url, e),
    }
}

#[cfg(feature = "postgres")]
fn no_postgres(url: &str, e: impl std::fmt::Display) -> ! {
    panic!(
        "no PostgreSQL answers at {url} ({e}). Start one (`cargo xtask test` installs and starts PostgreSQL \
         where missing) or point PILOTAGE_TEST_POSTGRES at a server where the user may create tables \
         and schemas."
    )
}

/// A PostgreSQL schema of one test's own on the test server, and a URL whose `search_path`
/// selects it: a [`PostgresState`](super::PostgresState) (or a server process) connected with
/// [`TestSchema::url`] never meets another test's tables. [`TestSchema::drop_all`] removes it.
#[cfg(feature = "postgres")]
pub struct TestSchema {
    /// The schema's name: `pilotage_<tag>_<pid>_<nanos>`.
    pub name: String,
    /// The test server's URL with `options=-c search_path=<name>`.
    pub url: String,
    admin: tokio_postgres::Client,
}

#[cfg(feature = "postgres")]
impl TestSchema {
    /// A fresh schema named after `tag`, or a panic saying how to provide a server.
    pub async fn create(tag: &str) -> TestSchema {
        let base = test_postgres_url();
        let (admin, connection) = match tokio_postgres::connect(&base, tokio_postgres::NoTls).await {
            Ok(connected) => connected,
            Err(e) => no_postgres(&base, e),
        };
        tokio::spawn(connection);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let name = format!("pilotage_{tag}_{}_{}", std::process::id(), nanos.as_nanos());
        admin.batch_execute(&format!("CREATE SCHEMA {name}")).await.expect("create the test schema");
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{separator}options=-c%20search_path%3D{name}");
        TestSchema { name, url, admin }
    }

    /// The names of the tables in the schema, sorted.
    pub async fn tables(&self) -> Vec<String> {
        let sql = "SELECT table_name::TEXT FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1";
        let rows = self.admin.query(sql, &[&self.name]).await.expect("list the tables");
        rows.iter().map(|r| r.get(0)).collect()
    }

    /// Drop the schema and everything in it.
    pub async fn drop_all(self) {
        self.admin
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name))
            .await
            .expect("drop the test schema");
    }
}

#[cfg(all(test, feature = "postgres"))]
mod postgres_tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_state_passes_the_suite() {
        // A schema of its own: the shared test database may hold another build's schema.
        if !postgres_or_skip("postgres_state_passes_the_suite") {
            return;
        }
        let schema = TestSchema::create("suite").await;
        state_suite(Arc::new(crate::state::PostgresState::connect(&schema.url).await.unwrap())).await;
        schema.drop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_postgres_replicas_pass_the_replica_suite() {
        if !postgres_or_skip("two_postgres_replicas_pass_the_replica_suite") {
            return;
        }
        let schema = TestSchema::create("replica").await;
        let connect = || crate::state::PostgresState::connect(&schema.url);
        replica_suite(Arc::new(connect().await.unwrap()), Arc::new(connect().await.unwrap())).await;
        schema.drop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_starting_together_migrate_once() {
        // A schema of its own: the shared test database may hold another build's tables.
        if !postgres_or_skip("replicas_starting_together_migrate_once") {
            return;
        }
        let schema = TestSchema::create("migrate").await;
        let starts: Vec<_> = (0..4)
            .map(|_| {
                let url = schema.url.clone();
                tokio::spawn(async move { crate::state::PostgresState::connect(&url).await.map(|_| ()) })
            })
            .collect();
        for s in starts {
            s.await.unwrap().expect("every replica connects and finds the schema applied");
        }
        let state = crate::state::PostgresState::connect(&schema.url).await.expect("connect");
        let version = state.schema_version().await.unwrap();
        schema.drop_all().await;
        assert_eq!(version, crate::state::postgres::MIGRATIONS.len() as i64);
    }
}
