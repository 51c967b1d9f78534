//! The behavioural suite every [`SharedState`] backend passes (memory, SQLite, PostgreSQL):
//! `pilotage::testkit::state_suite(store)`. Each run uses fresh owner ids, so it can run
//! again and again on one database.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::idempotency::{claim, Claim};
use super::runs::RunRecord;
use super::shared::{Claimed, KeyRef, SharedState, Stored, HISTORY_DEPTH};
use super::tasks::{TaskRecord, TaskState};
use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::CatalogEntry;
use crate::model::declaration::TraceLevel;
use crate::model::outcome::Outcome;

const HOUR: Duration = Duration::from_secs(3600);

/// Run every case against `store`; panics with the case and the difference on a failure.
pub async fn state_suite(store: Arc<dyn SharedState>) {
    let me = format!("suite-{}", uuid::Uuid::new_v4().simple());
    runs_are_scoped_by_owner_and_expire(&*store, &me).await;
    claims_follow_their_lifecycle(&*store, &me).await;
    a_lapsed_lease_frees_the_key(&*store, &me).await;
    keys_are_scoped_by_owner_and_language(&*store, &me).await;
    concurrent_duplicates_run_once(&store, &me).await;
    promotions_are_immutable_scoped_and_capped(&*store, &me).await;
    catalogs_are_remembered_per_owner_to_a_depth(&*store, &me).await;
    tasks_are_scoped_replaced_and_expire(&*store, &me).await;
}

fn record(run_id: &str, owner: &str) -> RunRecord {
    RunRecord {
        run_id: run_id.to_owned(),
        owner: owner.to_owned(),
        language: "suite/v1".into(),
        outcome: Outcome::success(),
        output: Some(json!({"n": 1})),
        level: TraceLevel::Summary,
        steps: Vec::new(),
        stats: None,
    }
}

async fn runs_are_scoped_by_owner_and_expire(store: &dyn SharedState, me: &str) {
    let (a, b) = (format!("run_{me}_a"), format!("run_{me}_b"));
    store.put_run(&record(&a, me), HOUR).await.unwrap();
    let got = store.get_run(me, &a).await.unwrap();
    assert_eq!(got, Some(record(&a, me)), "a stored run is its owner's");
    assert_eq!(store.get_run(&format!("{me}-other"), &a).await.unwrap(), None, "foreign: none");
    assert_eq!(store.get_run(me, &format!("run_{me}_never")).await.unwrap(), None, "unknown: none");
    store.put_run(&record(&b, me), Duration::ZERO).await.unwrap();
    assert_eq!(store.get_run(me, &b).await.unwrap(), None, "past retention: none");
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
    store.record_key(k, "not-the-token", &json!({"run_id": "wrong"}), HOUR).await.unwrap();
    assert_eq!(
        store.claim_key(k, "f2", HOUR).await.unwrap(),
        Claimed::Pending,
        "a stale token records nothing"
    );
    store.record_key(k, &token, &json!({"run_id": "run_1"}), HOUR).await.unwrap();
    assert_eq!(store.claim_key(k, "f2", HOUR).await.unwrap(), Claimed::Replay(json!({"run_id": "run_1"})));
    assert_eq!(store.claim_key(k, "f1", HOUR).await.unwrap(), Claimed::Conflict, "recorded, other input");
    store.release_key(k, &token).await.unwrap();
    assert!(
        matches!(store.claim_key(k, "f2", HOUR).await.unwrap(), Claimed::Replay(_)),
        "no release after record"
    );
    let short = key(me, "short");
    let Claimed::Fresh(t) = store.claim_key(short, "f", HOUR).await.unwrap() else { panic!("fresh") };
    store.record_key(short, &t, &json!(1), Duration::ZERO).await.unwrap();
    assert!(matches!(store.claim_key(short, "g", HOUR).await.unwrap(), Claimed::Fresh(_)), "past its window");
}

async fn a_lapsed_lease_frees_the_key(store: &dyn SharedState, me: &str) {
    let k = key(me, "crashed");
    let Claimed::Fresh(old) = store.claim_key(k, "f", Duration::ZERO).await.unwrap() else { panic!("fresh") };
    let Claimed::Fresh(new) = store.claim_key(k, "f", HOUR).await.unwrap() else { panic!("lease lapsed") };
    assert_ne!(old, new);
    store.record_key(k, &old, &json!("late"), HOUR).await.unwrap();
    store.release_key(k, &old).await.unwrap();
    assert_eq!(store.claim_key(k, "f", HOUR).await.unwrap(), Claimed::Pending, "the old claimant lost it");
    store.record_key(k, &new, &json!("first"), HOUR).await.unwrap();
    assert_eq!(store.claim_key(k, "f", HOUR).await.unwrap(), Claimed::Replay(json!("first")));
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
                match claim(&store, (&me, "suite/v1", "dup"), "f", HOUR).await.unwrap() {
                    Claim::Fresh(guard) => {
                        ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        guard.record(&json!({"run_id": "run_once"}), HOUR).await.unwrap();
                        json!({"run_id": "run_once"})
                    }
                    Claim::Replay(v) => v,
                    Claim::Conflict => panic!("same input: no conflict"),
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

fn snapshot(n: usize) -> Arc<CatalogSnapshot> {
    let entry: CatalogEntry = serde_json::from_value(json!({
        "id": format!("entry_{n}"), "kind": "thing", "name": format!("Thing {n}"), "risk": "read",
        "risk_hints": {"readOnly": true, "destructive": false, "openWorld": false},
    }))
    .unwrap();
    Arc::new(CatalogSnapshot::new(vec![entry]))
}

async fn catalogs_are_remembered_per_owner_to_a_depth(store: &dyn SharedState, me: &str) {
    let lang = "suite/v1";
    let first = snapshot(0);
    store.remember_catalog(me, lang, &first).await.unwrap();
    let found = store.catalog_at(me, lang, first.version()).await.unwrap().expect("remembered");
    assert_eq!((found.version(), found.entries()), (first.version(), first.entries()));
    assert!(store.catalog_at(&format!("{me}-other"), lang, first.version()).await.unwrap().is_none());
    for n in 1..=HISTORY_DEPTH {
        store.remember_catalog(me, lang, &snapshot(n)).await.unwrap();
    }
    assert!(store.catalog_at(me, lang, first.version()).await.unwrap().is_none(), "past the depth");
    assert!(store.catalog_at(me, lang, snapshot(1).version()).await.unwrap().is_some(), "within the depth");
    store.remember_catalog(me, lang, &snapshot(1)).await.unwrap();
    store.remember_catalog(me, lang, &snapshot(HISTORY_DEPTH + 1)).await.unwrap();
    assert!(
        store.catalog_at(me, lang, snapshot(1).version()).await.unwrap().is_some(),
        "served again: recent"
    );
    assert!(
        store.catalog_at(me, lang, snapshot(2).version()).await.unwrap().is_none(),
        "now the oldest went"
    );
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
}

/// The PostgreSQL server the tests use: `PILOTAGE_TEST_POSTGRES`, by default the local one.
#[cfg(feature = "postgres")]
pub fn test_postgres_url() -> String {
    std::env::var("PILOTAGE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
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
        "no PostgreSQL answers at {url} ({e}). Start one (`.ci/run` installs and starts PostgreSQL 15 \
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
        state_suite(Arc::new(test_postgres().await)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_starting_together_migrate_once() {
        // A schema of its own: the shared test database may hold another build's tables.
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
