//! The `gate` example in front of the `postgres` example (the `sql/postgres` Language on a
//! throwaway schema of its own, `postgres_loop::Fixture`), with the official Python SDK as the
//! host: a declined `DELETE` never reaches the server and the row is still there; an approved
//! one arrives once, with the validation's `expected_catalog_version`, and the row is gone; a
//! safe `SELECT` runs without a question (from a host that could not even be asked).

use pilotage::testkit::TempStore;
use serde_json::{json, Value};

use crate::gate::{endpoint, host, present, recording, Lie, Sdk};
use crate::postgres_loop::{admin, Fixture};

const DELETE: &str = "DELETE FROM orders WHERE id = 4";
const SELECT: &str = "SELECT name FROM customers WHERE id = 1";

fn validate(query: &str) -> Value {
    json!({"tool": "validate_sql", "arguments": {"query": query}})
}

fn execute(query: &str) -> Value {
    json!({"tool": "run_sql", "arguments": {"query": query}})
}

/// How many rows of the fixture's `orders` have `id = 4`, read as the administrator.
async fn order_4(f: &Fixture) -> i64 {
    let client = admin(&f.url).await;
    let sql = format!("SELECT count(*) FROM {}.orders WHERE id = 4", f.schema);
    client.query_one(&sql, &[]).await.expect("counting").get(0)
}

#[tokio::test]
async fn the_postgres_example_behind_the_gate() {
    let test = "gate_postgres::the_postgres_example_behind_the_gate";
    if !present(Sdk::Python, test) || !pilotage::state::suite::postgres_or_skip(test) {
        return;
    }
    let f = Fixture::new("gate").await;
    let up = recording(
        f.server(Some(&f.writer)),
        ("validate_sql", "run_sql"),
        Lie::Honest,
        TempStore::new("gate-pg"),
    )
    .await;
    assert_eq!(order_4(&f).await, 1);

    // Declined: never transmitted; the row is still there.
    let (findings, audit) =
        host(&endpoint(&up), "decline", vec![validate(DELETE), execute(DELETE)], "pg-no").await;
    let asked = findings["questions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{findings}");
    let question = asked[0].as_str().unwrap();
    assert!(question.contains("Risk: destructive (from the plan"), "{question}");
    assert!(question.contains(&format!("Program:\n{DELETE}")), "the SQL text is shown: {question}");
    assert_eq!(findings["calls"][1]["is_error"], true, "{findings}");
    assert_eq!(findings["calls"][1]["structured"]["error"]["kind"], "unsupported");
    assert_eq!(up.received.lock().unwrap().executes.len(), 0, "the DELETE never arrived");
    assert_eq!(order_4(&f).await, 1, "the row is still there");
    assert_eq!(
        (audit[0]["gate"].as_str(), audit[0]["language"].as_str()),
        (Some("declined"), Some("sql/postgres"))
    );

    // Approved: arrives once, at the validation's catalog version; the row is gone.
    let (findings, audit) =
        host(&endpoint(&up), "approve", vec![validate(DELETE), execute(DELETE)], "pg-yes").await;
    assert_eq!(findings["questions"].as_array().unwrap().len(), 1, "{findings}");
    let version = findings["calls"][0]["structured"]["catalog_version"].as_str().unwrap();
    assert_eq!(findings["calls"][1]["structured"]["outcome"]["status"], "success", "{findings}");
    {
        let received = up.received.lock().unwrap();
        assert_eq!(received.executes.len(), 1, "arrives once");
        assert_eq!(received.executes[0]["expected_catalog_version"], version);
        assert_eq!(received.executes[0]["query"], DELETE);
    }
    assert_eq!(order_4(&f).await, 0, "the approved DELETE ran");
    assert_eq!(audit[0]["gate"], "approved");

    // Safe: a SELECT runs without a question, from a host without elicitation.
    let (findings, audit) =
        host(&endpoint(&up), "absent", vec![validate(SELECT), execute(SELECT)], "pg-safe").await;
    assert_eq!(findings["questions"], json!([]));
    let ran = &findings["calls"][1]["structured"];
    assert_eq!(ran["outcome"]["status"], "success", "{findings}");
    assert_eq!(ran["output"], json!({"columns": ["name"], "rows": [["Amira Hassan"]]}), "{ran}");
    assert_eq!(up.received.lock().unwrap().executes.len(), 2);
    assert_eq!((audit[0]["gate"].as_str(), audit[0]["risk"].as_str()), (Some("safe"), Some("safe")));
}
