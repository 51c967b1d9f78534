//! The realistic row: a `sql/sqlite-3` execute (the `sql` example's engine, on its seeded demo
//! database) against a hand-written server that runs the same SQL on rusqlite, on the same
//! seeded rows, in one transaction, and answers every statement's rows: both answer the same
//! output (the last statement's columns and rows), checked before any timing.

use std::sync::{Arc, Mutex};

use pilotage::prelude::*;
use rmcp::model::Tool;
use rmcp::ErrorData;

use crate::hand::{tool, Work};

#[allow(dead_code)]
#[path = "../../examples/sql/engine/mod.rs"]
mod engine;

/// Three statements; the last answers 20 rows.
pub const QUERY: &str = "SELECT id, name, tier FROM customers ORDER BY id; \
    SELECT customer_id, name, orders, total FROM order_totals ORDER BY customer_id; \
    SELECT a.item, b.item AS other, c.name FROM orders AS a, orders AS b, customers AS c \
    ORDER BY a.id, b.id, c.id LIMIT 20";

/// The pilotage server of the `sql` example as it is served (its `limits()`): every session on
/// its own seeded demo database.
pub fn pilotage_server() -> Server {
    Server::builder()
        .language(engine::Sql::factory(None))
        .limits(engine::limits())
        .build()
        .expect("the sql bench server")
}

/// One session's database for the hand-written server: the same schema and rows, in memory.
#[derive(Clone)]
pub struct SqlWork {
    db: Arc<Mutex<rusqlite::Connection>>,
}

impl Default for SqlWork {
    fn default() -> Self {
        let conn = rusqlite::Connection::open_in_memory().expect("an in-memory database");
        conn.execute_batch(engine::db::DEMO_SCHEMA).expect("the demo schema");
        conn.execute_batch(engine::db::DEMO_ROWS).expect("the demo rows");
        SqlWork { db: Arc::new(Mutex::new(conn)) }
    }
}

/// Every statement of `query` in one transaction: each one's SQL, columns and rows, and the
/// last one's as the output.
fn run(conn: &rusqlite::Connection, query: &str) -> rusqlite::Result<Json> {
    let tx = conn.unchecked_transaction()?;
    let mut results = Vec::new();
    let mut last = Json::Null;
    for sql in query.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let mut statement = tx.prepare(sql)?;
        let n = statement.column_count();
        let columns: Vec<String> = statement.column_names().into_iter().map(str::to_owned).collect();
        let mut rows = Vec::new();
        let mut cursor = statement.raw_query();
        while let Some(row) = cursor.next()? {
            let cells: Vec<Json> =
                (0..n).map(|i| row.get_ref(i).map(engine::db::cell)).collect::<Result<_, _>>()?;
            rows.push(Json::Array(cells));
        }
        last = json!({"columns": columns, "rows": rows});
        results.push(json!({"sql": sql, "output": last}));
    }
    tx.commit()?;
    Ok(json!({"statements": results, "output": last}))
}

fn schema() -> Json {
    json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})
}

impl Work for SqlWork {
    fn schema() -> Json {
        schema()
    }

    fn tools() -> Vec<Tool> {
        vec![tool("run_sql", &schema())]
    }

    fn call(&self, name: &str, arguments: &Json) -> Result<(Json, &'static str), ErrorData> {
        if name != "run_sql" {
            return Err(ErrorData::invalid_params(format!("Unknown tool: {name}"), None));
        }
        let conn = self.db.lock().unwrap_or_else(|p| p.into_inner());
        let query = arguments["query"].as_str().unwrap_or_default();
        match run(&conn, query) {
            Ok(done) => Ok((done, "success")),
            Err(e) => Err(ErrorData::invalid_params(format!("the query failed: {e}"), None)),
        }
    }
}
