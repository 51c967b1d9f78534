//! Store faults (issue 28): whatever the state store does, an answer is a promise. Every Run a
//! caller was told of (`isError: false`, a `run_id`) is fetchable afterwards, byte for byte; no
//! idempotent program runs twice; no replay names a Run that does not resolve. A store that
//! cannot keep a Run's record in time makes the execute a request error (`internal`) that says
//! the program ran, never `success`.
//!
//! Two scenarios, each bounded in time and count:
//! - **SQLite**: an in-process server on one file while a second connection holds the file's
//!   write lock for longer than `Limits::store_time`.
//! - **PostgreSQL**: two stateless `automation` replicas (separate processes, a role and a schema
//!   of this test's own, a pool `application_name` of its own) under concurrent load from several
//!   callers over HTTP on 127.0.0.1, while each `pilotage_*` table of the test's schema is locked
//!   in turn, the replicas' backends are terminated (only theirs: by `application_name`), and the
//!   role's write privileges are revoked, then given back.
//!
//! The PostgreSQL counts are printed (`store faults:`) and reported in `docs/store-faults.md`.

use crate::replicas::{envelope, try_call};
use crate::{kit, support};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kit::{ctx, Client, TempStore, ARG, EXECUTE, TRACE};
use pilotage::engine::Limits;
use pilotage::state::suite::{test_postgres_url, TestSchema};
use serde_json::{json, Value};
use support::{free_port, Served as Replica};

/// The PostgreSQL scenario's bound: a hang fails the test instead of holding CI.
const BOUND: Duration = Duration::from_secs(90);

/// Adds 1 to the caller's counter, then waits `ms` (so a fault can land while it runs), in
/// waits of at most a second (the longest one `wait` takes).
fn add_then_wait(ms: u64) -> Value {
    let mut steps = vec![json!({"id": "add", "call": "counter_add", "with": {"by": 1}})];
    let waits = (0..ms.div_ceil(1000)).map(|i| (i, (ms - i * 1000).min(1000)));
    steps.extend(waits.map(|(i, ms)| json!({"id": format!("pause{i}"), "call": "wait", "with": {"ms": ms}})));
    json!({"steps": steps, "output": {"counter": "$.steps.add.output.counter"}})
}

/// The run id an `internal` "the program ran" error names.
fn named_run(message: &str) -> String {
    let start = message.find("(run ").map(|i| i + 5).unwrap_or_else(|| panic!("no run named: {message}"));
    message[start..].split([',', ' ']).next().unwrap_or_default().to_owned()
}

/// Hold the SQLite file's write lock from another connection for `hold`, starting after `after`.
fn lock_file_later(path: std::path::PathBuf, after: Duration, hold: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let conn = rusqlite::Connection::open(path).expect("a second connection");
        conn.execute_batch("BEGIN IMMEDIATE").expect("the write lock");
        std::thread::sleep(hold);
        conn.execute_batch("COMMIT").expect("release the write lock");
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_sqlite_file_never_turns_into_an_unkept_success() {
    let store = TempStore::new("faults");
    let limits = Limits { store_time: Duration::from_millis(800), ..Limits::default() };
    let server = kit::server_on(store.path(), Some(limits));
    let mut c = Client::duplex(&server).await;
    let program = add_then_wait(400);
    let (plan, version) = c.plan(&program).await;
    let args = |extra: Value| {
        let mut a =
            json!({ARG: program, "mode": "immediate", "context": ctx(), "expected_catalog_version": version});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            a[k] = v;
        }
        a
    };

    // Without a key: the lock outlasts the store time, so the caller is told the program ran
    // and its record was not kept.
    let lock =
        lock_file_later(store.path().to_owned(), Duration::from_millis(200), Duration::from_millis(2500));
    let unkept = c.execute_with(&plan, args(json!({}))).await;
    kit::assert_request_error(&unkept, "internal");
    let message = unkept.structured["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.starts_with("the program ran (run run_"), "{message}");
    assert!(message.contains("outcome success") && message.contains("cannot be fetched"), "{message}");
    lock.join().expect("the lock holder");
    assert_eq!(c.fingerprint().await["counter"], 1, "its effect is the one it reported");

    // With a key: the same fault; the retry waits for the record the server kept on trying and
    // replays it: the program ran once and the replayed run resolves.
    let lock =
        lock_file_later(store.path().to_owned(), Duration::from_millis(200), Duration::from_millis(2500));
    let keyed = args(json!({"idempotency_key": "k-locked"}));
    let first = c.execute_with(&plan, keyed.clone()).await;
    kit::assert_request_error(&first, "internal");
    let message = first.structured["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("does not run the program again"), "{message}");
    let ran = named_run(&message);
    let retry = c.execute_with(&plan, keyed.clone()).await;
    lock.join().expect("the lock holder");
    assert!(!retry.is_error, "the retry replays the kept record: {}", retry.raw);
    assert_eq!(retry.structured["run_id"], json!(ran), "the replay is the run the error named");
    assert_eq!(retry.structured["output"], json!({"counter": 2}));
    let fetched = c.fetch(json!({"run_id": ran})).await;
    assert!(!fetched.is_error, "the replayed run resolves: {}", fetched.raw);
    assert_eq!(fetched.structured["outcome"], retry.structured["outcome"]);
    let again = c.execute_with(&plan, keyed).await;
    assert_eq!(again.raw["result"], retry.raw["result"], "every replay alike, byte for byte");
    assert_eq!(c.fingerprint().await["counter"], 2, "the keyed program ran once");
}

/// What the load saw.
#[derive(Default)]
struct Seen {
    /// Acknowledged stored runs without a key: `(caller, response)`.
    plain: Vec<(String, Value)>,
    /// Per keyed caller (one key each), every answer `(acknowledged, structuredContent)`.
    keyed: Vec<(String, Vec<(bool, Value)>)>,
    /// Request errors, by kind.
    errors: std::collections::BTreeMap<String, usize>,
    /// Requests that found no answer over HTTP.
    unanswered: usize,
}

/// One execute: `Some((acknowledged, structuredContent))`, or `None` when no answer came.
async fn execute(url: &str, who: &str, arguments: Value, seen: &mut Seen) -> Option<(bool, Value)> {
    match try_call(url, who, EXECUTE, arguments).await {
        Ok(result) => {
            let structured = result["structuredContent"].clone();
            let acknowledged = result["isError"] == false;
            if !acknowledged {
                let kind = structured["error"]["kind"].as_str().unwrap_or("?").to_owned();
                assert!(
                    ["internal", "bounds_exceeded"].contains(&kind.as_str()),
                    "an unexpected refusal: {result}"
                );
                *seen.errors.entry(kind).or_default() += 1;
            } else {
                assert_eq!(structured["outcome"]["status"], "success", "{result}");
            }
            Some((acknowledged, structured))
        }
        Err(_) => {
            seen.unanswered += 1;
            None
        }
    }
}

/// One load client: alternately a stored execute without a key, and a keyed execute (a caller
/// of its own per key) sent to one replica then retried on the other; until `stop`, at most 60
/// rounds.
async fn load(worker: usize, urls: [String; 2], stop: Arc<AtomicBool>) -> Seen {
    let mut seen = Seen::default();
    for i in 0..60 {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let who = format!("plain-{worker}");
        let stored = json!({ARG: add_then_wait(20), "mode": "immediate", "context": ctx(), "store": true});
        if let Some((true, response)) = execute(&urls[i % 2], &who, stored, &mut seen).await {
            seen.plain.push((who, response));
        }
        let who = format!("keyed-{worker}-{i}");
        let keyed =
            json!({ARG: add_then_wait(20), "mode": "immediate", "context": ctx(), "idempotency_key": "k"});
        let mut answers = Vec::new();
        for url in [&urls[(i + 1) % 2], &urls[i % 2]] {
            answers.extend(execute(url, &who, keyed.clone(), &mut seen).await);
        }
        seen.keyed.push((who, answers));
    }
    seen
}

/// The faults, in turn: each table of the schema locked, the replicas' backends terminated
/// twice, the role's write privileges revoked for longer than the store time and given back, and the keys table locked for
/// longer than a claim's lease.
async fn inject(admin: &tokio_postgres::Client, schema: &str, role: &str, app: &str) {
    let tables: Vec<String> = admin
        .query("SELECT tablename::TEXT FROM pg_tables WHERE schemaname = $1 ORDER BY 1", &[&schema])
        .await
        .expect("list the tables")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.len() >= 7, "every pilotage_* table: {tables:?}");
    let lock = |table: String, hold: Duration| async move {
        admin
            .batch_execute(&format!("BEGIN; LOCK TABLE {schema}.{table} IN ACCESS EXCLUSIVE MODE"))
            .await
            .expect("lock");
        tokio::time::sleep(hold).await;
        admin.batch_execute("COMMIT").await.expect("unlock");
    };
    for table in tables {
        lock(table, Duration::from_millis(700)).await;
    }
    for _ in 0..2 {
        let sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1";
        admin.execute(sql, &[&app]).await.expect("terminate the replicas' backends");
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let grants = format!("INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema}");
    admin.batch_execute(&format!("REVOKE {grants} FROM {role}")).await.expect("revoke");
    // Longer than the replicas' store time (the default), so that the runs which start in the
    // first second cannot keep their records and must be told so: the faults are felt on every
    // machine, however fast, and not only where the other faults happen to outlast a retry.
    tokio::time::sleep(Limits::default().store_time + Duration::from_secs(1)).await;
    admin.batch_execute(&format!("GRANT {grants} TO {role}")).await.expect("grant again");
    lock("pilotage_keys".to_owned(), Duration::from_millis(4000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_faults_under_load_lose_no_acknowledged_run_and_run_no_key_twice() {
    let test = "store_faults::postgres_faults_under_load_lose_no_acknowledged_run_and_run_no_key_twice";
    if !pilotage::state::suite::postgres_or_skip(test) {
        return;
    }
    tokio::time::timeout(BOUND, postgres_scenario())
        .await
        .expect("the fault scenario finished within its bound");
}

async fn postgres_scenario() {
    let schema = TestSchema::create("faults").await;
    let (role, app) = (format!("{}_role", schema.name), format!("{}_app", schema.name));
    let (admin, connection) = tokio_postgres::connect(&test_postgres_url(), tokio_postgres::NoTls)
        .await
        .expect("an admin connection");
    tokio::spawn(connection);
    let name = &schema.name;
    admin
        .batch_execute(&format!("CREATE ROLE {role} LOGIN; GRANT USAGE, CREATE ON SCHEMA {name} TO {role}"))
        .await
        .expect("a role of the test's own");
    let base = test_postgres_url();
    let (_, host) = base.split_once('@').expect("a URL with a user");
    let separator = if host.contains('?') { '&' } else { '?' };
    let url = format!(
        "postgres://{role}@{host}{separator}application_name={app}&options=-c%20search_path%3D{name}"
    );
    let secret = std::env::temp_dir().join(format!("{name}.secret"));
    let on_postgres = ["--postgres".as_ref(), url.as_ref()];
    let mut a = Replica::start(free_port(), &on_postgres, &secret).await;
    let mut b = Replica::start(free_port(), &on_postgres, &secret).await;
    let urls = [a.url(), b.url()];

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4).map(|w| tokio::spawn(load(w, urls.clone(), stop.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    inject(&admin, name, &role, &app).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    let mut seen = Seen::default();
    for worker in workers {
        let s = worker.await.expect("a load worker");
        seen.plain.extend(s.plain);
        seen.keyed.extend(s.keyed);
        for (kind, n) in s.errors {
            *seen.errors.entry(kind).or_default() += n;
        }
        seen.unanswered += s.unanswered;
    }
    let (lost, twice, unknown_replays, acknowledged_keys) = check(&seen, &urls).await;
    let acknowledged = seen.plain.len()
        + seen.keyed.iter().map(|(_, answers)| answers.iter().filter(|(ack, _)| *ack).count()).sum::<usize>();
    eprintln!(
        "store faults: {acknowledged} acknowledged responses ({} stored runs, {acknowledged_keys} keys), \
         request errors {:?}, {} unanswered; lost {lost}, run twice {twice}, replays of unknown ids {unknown_replays}",
        seen.plain.len(),
        seen.errors,
        seen.unanswered
    );
    assert_eq!((lost, twice, unknown_replays), (0, 0, 0), "no acknowledged run lost, no key run twice");
    assert!(
        seen.plain.len() >= 20 && acknowledged_keys >= 20,
        "the replicas kept acknowledging under faults"
    );
    assert!(seen.errors.values().sum::<usize>() > 0, "the faults were felt: some requests were refused");

    a_killed_claimants_key_is_free_in_seconds(&mut a, &b).await;
    b.kill9().await;
    let _ = std::fs::remove_file(&secret);
    admin.batch_execute(&format!("DROP SCHEMA {name} CASCADE")).await.expect("drop the schema");
    admin.batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role}")).await.expect("drop the role");
    drop(schema);
}

/// A keyed execute runs on A, which is killed with SIGKILL while it holds the key; the retry on
/// B takes the key over once the dead claim's lease lapses (its liveness backend went with A) and
/// runs, instead of waiting for a lease as long as the whole execute bound (its own deadline).
async fn a_killed_claimants_key_is_free_in_seconds(a: &mut Replica, b: &Replica) {
    let keyed =
        json!({ARG: add_then_wait(1500), "mode": "immediate", "context": ctx(), "idempotency_key": "k-dead"});
    let first = {
        let (url, keyed) = (a.url(), keyed.clone());
        tokio::spawn(async move { try_call(&url, "claimant", EXECUTE, keyed).await })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    a.kill9().await;
    let first = first.await.expect("the first request");
    assert!(first.is_err(), "A died before it answered: {first:?}");
    let started = std::time::Instant::now();
    let retry = try_call(&b.url(), "claimant", EXECUTE, keyed).await.expect("B answers");
    eprintln!("store faults: the retry of a killed claimant's key was answered in {:?}", started.elapsed());
    assert_eq!(retry["isError"], false, "B took the dead claim over and ran: {retry}");
    assert_eq!(retry["structuredContent"]["outcome"]["status"], "success", "{retry}");
}

/// Every acknowledged response checked against the store, through both replicas: `(runs lost, keys run twice, replays of unknown ids, keys acknowledged)`.
async fn check(seen: &Seen, urls: &[String; 2]) -> (usize, usize, usize, usize) {
    let mut lost = 0;
    for (who, response) in &seen.plain {
        for url in urls {
            let fetched =
                try_call(url, who, TRACE, json!({"run_id": response["run_id"]})).await.expect("a fetch");
            if fetched["isError"] != false || &envelope(&fetched) != response {
                lost += 1;
            }
        }
    }
    let (mut twice, mut unknown, mut acknowledged_keys) = (0, 0, 0);
    for (who, answers) in &seen.keyed {
        let acks: Vec<&Value> = answers.iter().filter(|(ack, _)| *ack).map(|(_, v)| v).collect();
        if let Some(first) = acks.first() {
            acknowledged_keys += 1;
            if acks.iter().any(|v| v != first) {
                twice += 1;
            }
            for url in urls {
                let fetched =
                    try_call(url, who, TRACE, json!({"run_id": first["run_id"]})).await.expect("a fetch");
                if fetched["isError"] != false {
                    unknown += 1;
                }
            }
        }
        let mut ran = 0;
        for url in urls {
            let world = try_call(url, who, "world_fingerprint", json!({})).await.expect("the world");
            ran += world["structuredContent"]["counter"].as_i64().expect("a counter");
        }
        if ran > 1 || (ran == 0 && !acks.is_empty()) {
            twice += usize::from(ran > 1);
            lost += usize::from(ran == 0);
        }
    }
    (lost, twice, unknown, acknowledged_keys)
}
