//! A run of `sql/postgres` is admitted against the catalog snapshot the engine kept, without
//! the catalog stamp's round trip, and confirms that snapshot inside its own transaction (a
//! guard pipelined with the prologue). These tests move the catalog behind the server's back
//! (DDL by the administrator, which no request of the server saw) and check what a run then
//! does, over HTTP: nothing runs against a snapshot that moved, the program is admitted again
//! against the current catalog, and a write happens exactly once.

use serde_json::json;

use crate::postgres_loop::{session, Fixture};
use crate::support::HttpServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_confirms_the_kept_catalog_in_its_transaction_and_is_admitted_again_when_it_moved() {
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_confirm::a_run_confirms_the_kept_catalog_in_its_transaction_and_is_admitted_again_when_it_moved",
    ) {
        return;
    }
    let f = Fixture::new("confirm").await;
    let db = f.db(Some(&f.writer));
    let server = pilotage::Server::builder()
        .name("pg-test", "0")
        .engine(crate::postgres::Pg::factory(db.clone(), true))
        .build()
        .unwrap();
    let http = HttpServer::start(&server).await;
    let mut conn = session(&http).await;
    let read = json!({"query": "SELECT name FROM customers WHERE id = 1"});
    let v1 = conn.call_ok("validate_sql", read.clone()).await;
    assert_eq!(v1["valid"], true, "{v1}");
    let version = v1["catalog_version"].clone();
    let stamps = db.stamps_read();

    // Runs of a kept snapshot read no stamp: their transaction confirms it.
    for _ in 0..3 {
        let ran = conn.call_ok("run_sql", read.clone()).await;
        assert_eq!(ran["outcome"]["status"], "success", "{ran}");
        assert_eq!(ran["output"], json!({"columns": ["name"], "rows": [["Amira Hassan"]]}));
    }
    let mut expected = read.clone();
    expected["expected_catalog_version"] = version.clone();
    let ran = conn.call_ok("run_sql", expected.clone()).await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    assert_eq!(db.stamps_read(), stamps, "no stamp was read for the four runs");

    // The column is renamed behind the server's back: the kept snapshot (and the session's
    // verdict for the program) are stale. The run's guard finds it; the program is validated
    // again against the current catalog (one stamp read) and refused: nothing ran.
    f.admin("ALTER TABLE customers RENAME COLUMN name TO full_name").await;
    let ran = conn.call_ok("run_sql", read.clone()).await;
    assert_eq!(ran["outcome"]["status"], "validation_error", "{ran}");
    assert_eq!(ran["diagnostics"][0]["code"], "unknown_column", "{ran}");
    assert_eq!(db.stamps_read(), stamps + 1);

    // With the version the caller validated against, the moved catalog is `catalog_drift`.
    f.admin("ALTER TABLE customers RENAME COLUMN full_name TO name").await;
    f.admin("COMMENT ON TABLE customers IS 'who buys'").await;
    let drift = conn.call_ok("run_sql", expected).await;
    assert_eq!(
        drift["outcome"],
        json!({"ok": false, "status": "catalog_drift", "error": "catalog version mismatch"})
    );

    // A write whose catalog moved in a way that keeps it valid runs once, against the current
    // catalog: the first attempt's statement never ran.
    let before = conn.call_ok("pg_world_fingerprint", json!({})).await["rows"]["orders"].clone();
    assert_eq!(before, 4);
    let insert = json!({"query": "INSERT INTO orders (customer_id, item, quantity, price) VALUES (2, 'pen', 1, 1.50)"});
    let v2 = conn.call_ok("validate_sql", insert.clone()).await;
    assert_eq!(v2["valid"], true, "{v2}");
    f.admin("COMMENT ON TABLE orders IS 'what they buy'").await;
    let stamps = db.stamps_read();
    let ran = conn.call_ok("run_sql", insert).await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    assert_eq!(ran["output"], json!({"changes": 1}));
    assert_eq!(db.stamps_read(), stamps + 1, "the second attempt read the current catalog");
    let after = conn.call_ok("pg_world_fingerprint", json!({})).await["rows"]["orders"].clone();
    assert_eq!(after, 5, "the insert happened exactly once");

    // A grant behind the server's back: a program refused against the kept snapshot is judged
    // again against the current catalog, and runs.
    let audit = json!({"query": "SELECT count(*) AS notes FROM audit_log"});
    let refused = conn.call_ok("run_sql", audit.clone()).await;
    assert_eq!(refused["outcome"]["status"], "validation_error", "{refused}");
    assert_eq!(refused["diagnostics"][0]["code"], "unknown_table", "{refused}");
    f.admin(&format!("GRANT SELECT ON audit_log TO {}", f.writer)).await;
    let ran = conn.call_ok("run_sql", audit).await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    assert_eq!(ran["output"], json!({"columns": ["notes"], "rows": [[0]]}));
}
