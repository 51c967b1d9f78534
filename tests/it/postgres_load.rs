//! `sql/postgres` under load, as an operator configures it (issue 31): the binary started with
//! `--max-connections 16` runs 16 statements at once and queues the rest; a queued run reports
//! its wait (the result's `_meta` and the trace's `stats.queued_ms`) and keeps all its time; a
//! catalog read is answered while every connection of the runs is busy; a statement cut by its
//! `statement_timeout` after waiting says it waited. Against the real PostgreSQL of
//! `PILOTAGE_TEST_POSTGRES` (skipped when none answers, unless `PILOTAGE_REQUIRE_SERVICES=1`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::postgres_loop::{admin, session, Fixture};
use crate::{postgres, support};
use support::{Conn, HttpServer};

/// The Pilotage extension's member of a result's `_meta`.
const EXTENSION: &str = "io.github.jafarsa0/pilotage";

/// Runs sent at once, and the connections the server is started with.
const RUNS: usize = 20;
const CONNECTIONS: usize = 16;

/// The queue time a tools/call result reports in `_meta` (0: none reported).
fn meta_queued(response: &Value) -> u64 {
    response["result"]["_meta"][EXTENSION]["queued_ms"].as_u64().unwrap_or(0)
}

/// Whether `m` is a JSON-RPC response.
fn is_response(m: &Value) -> bool {
    m.get("method").is_none()
        && m.get("id").is_some()
        && (m.get("result").is_some() || m.get("error").is_some())
}

/// Count, every 20 ms until `done`, the statements of `application` running `query` on the
/// server (a query runs inside the `LIMIT` that bounds its rows); the most seen at once.
fn peak_of(url: String, application: String, query: &'static str, done: Arc<AtomicBool>) -> Arc<AtomicI64> {
    let peak = Arc::new(AtomicI64::new(0));
    let seen = peak.clone();
    tokio::spawn(async move {
        let client = admin(&url).await;
        let sql =
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND strpos(query, $2) > 0 \
                   AND state = 'active'";
        while !done.load(Ordering::Relaxed) {
            if let Ok(row) = client.query_one(sql, &[&application, &query]).await {
                seen.fetch_max(row.get::<_, i64>(0), Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    peak
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_runs_on_sixteen_connections_queue_four_report_it_and_catalog_reads_are_not_starved() {
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_load::twenty_runs_on_sixteen_connections_queue_four_report_it_and_catalog_reads_are_not_starved",
    ) {
        return;
    }
    let f = Fixture::new("load").await;
    let application = format!("pgload_{}", std::process::id());
    let sep = if f.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{sep}application_name={application}", f.url);
    let max = CONNECTIONS.to_string();
    let args = ["--database-url", &url, "--schema", &f.schema, "--default-role", &f.reader];
    let mut conn = Conn::stdio("postgres", &[&args[..], &["--max-connections", &max]].concat());
    conn.initialize(true).await;
    const SLEEP: &str = "SELECT pg_sleep(1)";
    // Validated once, so the runs below queue for the run itself, not for their validations.
    let valid = conn.call_ok("validate_sql", json!({"query": SLEEP})).await;
    assert_eq!(valid["valid"], true, "{valid}");

    let done = Arc::new(AtomicBool::new(false));
    let peak = peak_of(f.url.clone(), application.clone(), SLEEP, done.clone());
    let started = Instant::now();
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        runs.push(
            conn.start(
                "tools/call",
                json!({"name": "run_sql", "arguments": {"query": SLEEP, "trace_level": "full"}}),
            )
            .await,
        );
    }
    // Once every connection is busy: a catalog read, and the validation of a new program.
    let client = admin(&f.url).await;
    let busy = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND strpos(query, $2) > 0 AND state = 'active'";
    loop {
        let n: i64 = client.query_one(busy, &[&application, &SLEEP]).await.unwrap().get(0);
        if n == CONNECTIONS as i64 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "never {CONNECTIONS} statements at once (last {n})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let catalog_sent = Instant::now();
    let catalog = conn
        .start(
            "tools/call",
            json!({"name": "pilotage_catalog", "arguments": {"language": "sql/postgres", "verb": "list"}}),
        )
        .await;
    let validation = conn
        .start("tools/call", json!({"name": "validate_sql", "arguments": {"query": "SELECT 2 AS two"}}))
        .await;

    // Every answer, in the order it comes.
    let mut answers: HashMap<u64, (Value, Duration)> = HashMap::new();
    let mut order = Vec::new();
    while answers.len() < RUNS + 2 {
        let m = conn.message_where(is_response).await;
        let id = m["id"].as_u64().unwrap();
        order.push(id);
        answers.insert(id, (m, catalog_sent.elapsed()));
    }
    done.store(true, Ordering::Relaxed);

    // Exactly the configured connections ran at once.
    assert_eq!(peak.load(Ordering::Relaxed), CONNECTIONS as i64);
    // The catalog read was answered first, while all 16 statements still slept, without waiting.
    let (answer, took) = &answers[&catalog];
    assert_eq!(order[0], catalog, "the catalog read waited for a run: {order:?}");
    assert!(*took < Duration::from_millis(1000), "the catalog read took {took:?}");
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    // What it waited, if anything, is its own lane's connection (now reported), never a run's
    // second-long statement.
    assert!(meta_queued(answer) < 500, "{answer}");
    let ids: Vec<&str> = answer["result"]["structuredContent"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["customers", "order_totals", "price_list", "tier_rank(t text)"], "{answer}");
    // The validation waited for a slot freed by the runs, and says how long.
    let (answer, _) = &answers[&validation];
    assert_eq!(answer["result"]["structuredContent"]["valid"], true, "{answer}");
    assert!((500..2000).contains(&meta_queued(answer)), "{answer}");

    // Every run succeeded, its statement timed from its start (the queue is not its time); the
    // four queued ones report their wait, the same in `_meta` and in the trace.
    let mut queued = Vec::new();
    let mut waited_most = (0, String::new());
    for id in &runs {
        let (answer, _) = &answers[id];
        let run = &answer["result"]["structuredContent"];
        assert_eq!(run["outcome"]["status"], "success", "{answer}");
        let step = &run["trace"]["steps"][0];
        assert_eq!(step["outcome"]["status"], "success", "{answer}");
        let t = step["t_ms"].as_u64().unwrap();
        assert!((1000..1500).contains(&t), "the statement took {t} ms: {answer}");
        let stats = run["trace"]["stats"]["queued_ms"].as_u64().unwrap_or(0);
        assert_eq!(stats, meta_queued(answer), "{answer}");
        queued.push(stats);
        if stats > waited_most.0 {
            waited_most = (stats, run["run_id"].as_str().unwrap().to_owned());
        }
    }
    // The kept record says it too.
    let kept = conn.call_ok("trace_sql", json!({"run_id": waited_most.1})).await;
    assert_eq!(kept["trace"]["stats"], json!({"queued_ms": waited_most.0}), "{kept}");
    queued.sort_unstable();
    let (catalog_took, validation_queued) = (answers[&catalog].1, meta_queued(&answers[&validation].0));
    eprintln!(
        "postgres_load: peak {} statements at once; queued_ms of the runs {queued:?}; catalog read answered \
         in {catalog_took:?}; validation queued {validation_queued} ms; all in {:?}",
        peak.load(Ordering::Relaxed),
        started.elapsed()
    );
    let (first, rest) = queued.split_at(CONNECTIONS);
    assert!(first.iter().all(|q| *q < 500), "{queued:?}");
    assert!(rest.iter().all(|q| (800..2000).contains(q)), "{queued:?}");
    // 16 at once, then 4: two statement times, not five.
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_timeout_after_a_wait_says_it_waited() {
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_load::a_statement_timeout_after_a_wait_says_it_waited",
    ) {
        return;
    }
    let f = Fixture::new("queuedtimeout").await;
    let roles =
        postgres::Roles { claim: "pg_role".into(), default: Some(f.reader.clone()), allow_superuser: false };
    let (url, schema) = (f.url.clone(), f.schema.clone());
    let db = std::thread::spawn(move || postgres::Db::connect(&url, &schema, roles, 1))
        .join()
        .expect("connect")
        .expect("the engine connects");
    let limits = pilotage::engine::Limits { execute_time: Duration::from_millis(1500), ..Default::default() };
    let server = pilotage::Server::builder()
        .name("pg-test", "0")
        .engine(postgres::Pg::factory(Arc::new(db), false))
        .limits(limits)
        .max_engine_calls(1)
        .build()
        .unwrap();
    let http = HttpServer::start(&server).await;
    let (mut first, mut second) = (session(&http).await, session(&http).await);
    // The one connection is busy for 600 ms; the second run waits for it, then gets its whole
    // time: a statement timeout of 1200 ms (its 1500 ms less a fifth), not what the wait left.
    let holder =
        tokio::spawn(async move { first.call_ok("run_sql", json!({"query": "SELECT pg_sleep(0.6)"})).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let late = second.call("run_sql", json!({"query": "SELECT pg_sleep(30)", "trace_level": "full"})).await;
    assert_eq!(holder.await.unwrap()["outcome"]["status"], "success");
    let run = &late.structured;
    assert_eq!(run["outcome"]["status"], "error", "{run}");
    let step = &run["trace"]["steps"][0];
    assert_eq!(step["outcome"]["status"], "timeout", "{run}");
    let error = step["outcome"]["error"].as_str().unwrap();
    let (timeout, waited) = error
        .strip_prefix("cancelled by statement_timeout after ")
        .and_then(|e| e.strip_suffix(" ms queued for a connection"))
        .and_then(|e| e.split_once(" ms, after "))
        .unwrap_or_else(|| panic!("{error}"));
    let (timeout, waited): (u64, u64) = (timeout.parse().unwrap(), waited.parse().unwrap());
    eprintln!("postgres_load: {error}");
    assert!((1000..=1200).contains(&timeout), "{error}");
    assert!((200..=900).contains(&waited), "{error}");
    assert_eq!(run["trace"]["stats"]["queued_ms"].as_u64(), Some(waited), "{run}");
    assert_eq!(late.raw["result"]["_meta"][EXTENSION]["queued_ms"].as_u64(), Some(waited), "{}", late.raw);
    // The run's summary carries the step's message.
    assert_eq!(
        run["outcome"]["error"],
        format!("stmt-1 failed: {error}; the transaction was rolled back: no change persists"),
        "{run}"
    );
}
