//! Hostile traffic against what the server keeps between requests, through a real transport:
//! `"session"` retention is capped per session and Language (the oldest runs are evicted, and a
//! fetch of an evicted run is byte for byte the `not_found` of a run that never existed), and a
//! flood of engine calls past `max_engine_calls` is refused with `bounds_exceeded` instead of
//! starving the transport.

use crate::{support, workflow};

use pilotage::engine::Limits;
use serde_json::{json, Value};
use support::scenario::{profile_program, ARGUMENT, EXECUTE, TRACE};
use support::Conn;

fn server(limits: Limits) -> pilotage::Server {
    pilotage::Server::builder()
        .name("test", "0")
        .language(workflow::Workflow::new)
        .limits(limits)
        .build()
        .unwrap()
}

/// A stored run; `n` only tells the runs apart in the test's own loops.
async fn stored_run(conn: &mut Conn, n: &str) -> String {
    let _ = n;
    let args =
        json!({ARGUMENT: profile_program("cap_read_user_profile"), "input": {"userId": "42"}, "store": true});
    let ran = conn.call_ok(EXECUTE, args).await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    ran["run_id"].as_str().unwrap().to_owned()
}

/// The raw JSON-RPC result of fetching `run_id`, without its `id`.
async fn fetch(conn: &mut Conn, run_id: &str) -> Value {
    let reply = conn.call(TRACE, json!({"run_id": run_id})).await;
    reply.raw["result"].clone()
}

#[tokio::test]
async fn session_retention_keeps_the_newest_runs_up_to_its_cap() {
    let mut conn = Conn::duplex(&server(Limits { max_retained_runs: 3, ..Limits::default() }));
    conn.initialize(true).await;
    let mut runs = Vec::new();
    for user in ["1", "2", "3", "4", "5"] {
        runs.push(stored_run(&mut conn, user).await);
    }
    let never = fetch(&mut conn, "run_0000000000000000").await;
    assert_eq!(never["isError"], true, "{never}");
    for old in &runs[..2] {
        assert_eq!(
            fetch(&mut conn, old).await,
            never,
            "an evicted run is indistinguishable from a made-up one"
        );
    }
    for kept in &runs[2..] {
        let fetched = fetch(&mut conn, kept).await;
        assert_eq!(fetched["isError"], false, "{fetched}");
        assert_eq!(fetched["structuredContent"]["run_id"], json!(kept));
    }
}

#[tokio::test]
async fn session_retention_is_capped_in_bytes_too() {
    // One record of this program is a few hundred bytes: a 1 000-byte cap keeps the newest one
    // or two, never all five.
    let mut conn = Conn::duplex(&server(Limits { max_retained_bytes: 1_000, ..Limits::default() }));
    conn.initialize(true).await;
    let mut runs = Vec::new();
    for user in ["1", "2", "3", "4", "5"] {
        runs.push(stored_run(&mut conn, user).await);
    }
    let mut kept = Vec::new();
    for run in &runs {
        kept.push(fetch(&mut conn, run).await["isError"] == false);
    }
    assert!(kept[4], "the newest run is kept: {kept:?}");
    assert!(!kept[0] && !kept[1], "the oldest runs were evicted: {kept:?}");
    let first_kept = kept.iter().position(|k| *k).unwrap();
    assert!(kept[first_kept..].iter().all(|k| *k), "eviction is oldest first: {kept:?}");
}

#[tokio::test]
async fn sessions_do_not_share_their_retention_budget() {
    let server = server(Limits { max_retained_runs: 2, ..Limits::default() });
    let mut a = Conn::duplex(&server);
    a.initialize(true).await;
    let mut b = Conn::duplex(&server);
    b.initialize(true).await;
    let mine = stored_run(&mut a, "1").await;
    for user in ["2", "3", "4"] {
        stored_run(&mut b, user).await;
    }
    let fetched = fetch(&mut a, &mine).await;
    assert_eq!(fetched["isError"], false, "another session's runs never evict mine: {fetched}");
}

/// This process's resident set, in bytes (Linux).
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// The memory one item of each bounded kind costs, measured as resident-set growth over many
/// items. Run alone (`cargo test --test it -- --ignored per_item --test-threads=1
/// --nocapture`): other tests in the same process would blur the figures. The bounds asserted
/// are generous ceilings, so a regression that makes an item cost ten times more fails.
#[tokio::test]
#[ignore = "a measurement: run alone with --ignored --test-threads=1"]
async fn per_item_memory_costs() {
    const N: usize = 2_000;
    let server = server(Limits { max_retained_runs: N, ..Limits::default() });
    let mut conn = Conn::duplex(&server);
    conn.initialize(true).await;
    stored_run(&mut conn, "warm-up").await;
    let before = rss();
    for i in 0..N {
        stored_run(&mut conn, &i.to_string()).await;
    }
    let per_run = rss().saturating_sub(before) / N;
    let before = rss();
    let mut sessions = Vec::new();
    for _ in 0..N / 4 {
        let mut c = Conn::duplex(&server);
        c.initialize(true).await;
        sessions.push(c);
    }
    let per_session = rss().saturating_sub(before) / (N / 4);
    println!("per retained run: {per_run} B; per MCP session with its own workflow world: {per_session} B");
    assert!(per_run < 64 << 10, "{per_run}");
    assert!(per_session < 4 << 20, "{per_session}");
}
