//! Unit tests of the `sql/postgres` engine: value conversions, the deny-list, and the
//! server-side cancellation of a running statement (against `PILOTAGE_TEST_POSTGRES`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use pilotage::engine::Signal;

use crate::engine::catalog::literal;
use crate::engine::check::denied_function;
use crate::engine::run::{watched, Canceller, Failed};
use crate::engine::values::{date, numeric, timestamp};
use crate::engine::{Db, Roles};

#[test]
fn dates_and_timestamps_from_the_2000_epoch() {
    assert_eq!(date(0), "2000-01-01");
    assert_eq!(date(-1), "1999-12-31");
    assert_eq!(date(59), "2000-02-29");
    assert_eq!(timestamp(86_400_000_000 + 3_723_000_001, "Z"), "2000-01-02T01:02:03.000001Z");
    assert_eq!(timestamp(-1_000_000, ""), "1999-12-31T23:59:59");
}

#[test]
fn numerics_keep_every_digit() {
    // 12345.678: ndigits 3, weight 1, sign +, dscale 3: digits 1, 2345, 6780.
    let raw = [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c];
    assert_eq!(numeric(&raw).unwrap(), "12345.678");
    // -0.05: ndigits 1, weight -1, sign -, dscale 2: digit 500.
    let raw = [0, 1, 0xff, 0xff, 0x40, 0, 0, 2, 0x01, 0xf4];
    assert_eq!(numeric(&raw).unwrap(), "-0.05");
    // 1.50: digits 1, 5000, weight 0, dscale 2; 10000: digit 1, weight 1; 0: no digit.
    assert_eq!(numeric(&[0, 2, 0, 0, 0, 0, 0, 2, 0, 1, 0x13, 0x88]).unwrap(), "1.50");
    assert_eq!(numeric(&[0, 1, 0, 1, 0, 0, 0, 0, 0, 1]).unwrap(), "10000");
    assert_eq!(numeric(&[0, 0, 0, 0, 0, 0, 0, 0]).unwrap(), "0");
    assert!(numeric(&[0, 1]).is_err(), "a short value is an error, never a panic");
    assert!(numeric(&[0, 2, 0, 0, 0, 0, 0, 2, 0, 1]).is_err(), "a missing digit is an error");
}

#[test]
fn the_deny_list_takes_prefixes_and_whole_names() {
    for name in
        ["pg_read_file", "pg_ls_dir", "lo_import", "dblink", "dblink_exec", "set_config", "query_to_xml"]
    {
        assert!(denied_function(name), "{name}");
    }
    for name in ["pg_sleep", "lower", "count", "pg_typeof", "dblinks", "set_configs", "now"] {
        assert!(!denied_function(name), "{name}");
    }
}

/// A statement that would sleep 30 s is cancelled on the server through the connection's
/// cancel token once the signal fires, and reports that it was stopped.
#[test]
fn a_fired_signal_cancels_the_statement_on_the_server() {
    if !pilotage::state::suite::postgres_or_skip("a_fired_signal_cancels_the_statement_on_the_server") {
        return;
    }
    let url = pilotage::state::suite::test_postgres_url();
    let db = Arc::new(Db::connect(&url, "public", Roles::default(), 2).unwrap_or_else(|e| {
        panic!("{e}: start PostgreSQL (`cargo xtask test` does) or point PILOTAGE_TEST_POSTGRES at one")
    }));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let started = Instant::now();
    let failed = rt.block_on(async {
        let client = db.client().await.expect("a connection");
        let canceller = Canceller { db: db.clone(), token: client.cancel_token() };
        let signal = Signal::until(Instant::now() + Duration::from_millis(300));
        let work = async { client.batch_execute("SELECT pg_sleep(30)").await.map_err(Failed::from) };
        watched(work, &canceller, None, &signal).await.expect_err("the statement was cancelled")
    });
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(failed.stopped);
    assert_eq!(failed.error.code, "57014", "{}", failed.error.message);
    // Unfired, the same path lets a statement finish.
    let ok = rt.block_on(async {
        let client = db.client().await.expect("a connection");
        let canceller = Canceller { db: db.clone(), token: client.cancel_token() };
        let work = async { client.batch_execute("SELECT pg_sleep(0.1)").await.map_err(Failed::from) };
        watched(work, &canceller, None, &Signal::unbounded()).await
    });
    assert!(ok.is_ok());
}

#[test]
fn a_literal_keeps_quotes_and_backslashes_whatever_the_setting() {
    assert_eq!(literal("public"), "E'public'");
    assert_eq!(literal(r#""o'brien\x""#), r#"E'"o''brien\\x"'"#);
}

/// A validation's wait for a pooled connection is measured (and reported as queue time, not as
/// the validation's own): with every connection held for 300 ms, the wait is that long; with one
/// free, it is short.
#[test]
fn a_block_reports_its_wait_for_a_pooled_connection() {
    if !pilotage::state::suite::postgres_or_skip("a_block_reports_its_wait_for_a_pooled_connection") {
        return;
    }
    let url = pilotage::state::suite::test_postgres_url();
    let db = Arc::new(Db::connect(&url, "public", Roles::default(), 1).expect("the database"));
    let select = |c: deadpool_postgres::Object| async move {
        c.simple_query("SELECT 1").await?;
        Ok::<_, crate::engine::db::PgError>(())
    };
    let (ok, waited) = db.block_waiting(select);
    assert!(ok.is_ok() && waited < Duration::from_millis(100), "{waited:?}");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let held = rt.block_on(async {
        let mut held = Vec::new();
        while let Ok(Ok(c)) = tokio::time::timeout(Duration::from_millis(200), db.client()).await {
            held.push(c);
        }
        held
    });
    assert!(!held.is_empty());
    let (ok, waited) = std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        db.block_waiting(select)
    });
    assert!(ok.is_ok(), "{ok:?}");
    assert!((Duration::from_millis(250)..Duration::from_secs(5)).contains(&waited), "{waited:?}");
}
