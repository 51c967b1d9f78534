//! The `sql/postgres` Language against the real PostgreSQL of `PILOTAGE_TEST_POSTGRES` (a
//! panic says how to provide one: these tests never skip). Each test works in its own
//! throwaway schema with two roles of its own (a reader and a writer), dropped at the end.
//! Exact values throughout: text ranges from PostgreSQL's error positions, plans, traces,
//! outcomes, catalogs per role.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::{postgres, support};

use serde_json::{json, Value};
use support::{Conn, HttpServer, HttpStyle};
use tokio_postgres::NoTls;

/// A throwaway schema with the demo tables, a view, a function and two roles.
pub(crate) struct Fixture {
    pub schema: String,
    pub reader: String,
    pub writer: String,
    pub url: String,
}

const SETUP: &str = "
CREATE TABLE customers (
  id integer PRIMARY KEY,
  name text NOT NULL,
  email text NOT NULL UNIQUE,
  tier text NOT NULL DEFAULT 'bronze' CHECK (tier IN ('gold', 'silver', 'bronze'))
);
CREATE TABLE orders (
  id serial PRIMARY KEY,
  customer_id integer NOT NULL REFERENCES customers (id),
  item text NOT NULL,
  quantity integer NOT NULL CHECK (quantity > 0),
  price numeric(10, 2) NOT NULL
);
CREATE VIEW order_totals AS
  SELECT c.id AS customer_id, c.name, count(o.id) AS orders, coalesce(sum(o.quantity * o.price), 0) AS total
  FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id GROUP BY c.id;
CREATE TABLE price_list (item text PRIMARY KEY, price numeric(10, 2) NOT NULL);
CREATE TABLE audit_log (id serial PRIMARY KEY, note text NOT NULL);
INSERT INTO price_list VALUES ('pen', 1.50), ('cable', 4.50);
CREATE FUNCTION tier_rank(t text) RETURNS integer LANGUAGE sql IMMUTABLE
  AS $$ SELECT CASE t WHEN 'gold' THEN 1 WHEN 'silver' THEN 2 ELSE 3 END $$;
INSERT INTO customers (id, name, email, tier) VALUES
  (1, 'Amira Hassan', 'amira@example.com', 'gold'),
  (2, 'Tomás Silva', 'tomas@example.com', 'silver'),
  (3, 'Mei Chen', 'mei@example.com', 'bronze');
INSERT INTO orders (customer_id, item, quantity, price) VALUES
  (1, 'keyboard', 1, 49.50), (1, 'mouse', 2, 19.00), (2, 'monitor', 1, 189.00), (3, 'cable', 3, 4.50);
";

pub(crate) async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = match tokio_postgres::connect(url, NoTls).await {
        Ok(c) => c,
        Err(e) => panic!(
            "no PostgreSQL answers at {url} ({e}). Start one (`cargo xtask test` installs and starts PostgreSQL \
             where missing) or point PILOTAGE_TEST_POSTGRES at a server where the user may create schemas and roles."
        ),
    };
    tokio::spawn(connection);
    client
}

impl Fixture {
    /// A new schema `sqlpg_<tag>_<pid>_<n>` with the demo rows; `<schema>_reader` may SELECT
    /// customers, the view and the price list, `<schema>_writer` may also change customers and
    /// orders (and create tables); neither may touch `audit_log`.
    pub async fn new(tag: &str) -> Fixture {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let schema = format!("sqlpg_{tag}_{}_{n}", std::process::id());
        let url = pilotage::state::suite::test_postgres_url();
        let f =
            Fixture { reader: format!("{schema}_reader"), writer: format!("{schema}_writer"), schema, url };
        let (s, r, w) = (&f.schema, &f.reader, &f.writer);
        let sql = format!(
            "DROP SCHEMA IF EXISTS {s} CASCADE; DROP ROLE IF EXISTS {r}; DROP ROLE IF EXISTS {w};
             CREATE SCHEMA {s}; SET search_path = {s}; {SETUP}
             CREATE ROLE {r} NOLOGIN; CREATE ROLE {w} NOLOGIN;
             GRANT USAGE ON SCHEMA {s} TO {r}, {w}; GRANT CREATE ON SCHEMA {s} TO {w};
             GRANT SELECT ON customers, order_totals, price_list TO {r};
             GRANT SELECT ON price_list TO {w};
             GRANT SELECT, INSERT, UPDATE, DELETE ON customers, orders TO {w};
             GRANT SELECT ON order_totals TO {w};
             GRANT USAGE ON SEQUENCE orders_id_seq TO {w};
             RESET search_path;"
        );
        admin(&f.url).await.batch_execute(&sql).await.expect("the fixture schema");
        f
    }

    /// The shared database serving this schema; callers without a `pg_role` claim act as
    /// `default` (`None`: the login role).
    pub fn db(&self, default: Option<&str>) -> Arc<postgres::Db> {
        let roles = postgres::Roles {
            claim: "pg_role".into(),
            default: default.map(str::to_owned),
            allow_superuser: false,
        };
        let (url, schema) = (self.url.clone(), self.schema.clone());
        // Connecting waits on the engine's own runtime: off this one's workers.
        let db = std::thread::spawn(move || postgres::Db::connect(&url, &schema, roles, 4))
            .join()
            .expect("connect")
            .expect("the engine connects");
        Arc::new(db)
    }

    /// A server of the Language over this schema, with the harness tools.
    pub fn server(&self, default: Option<&str>) -> pilotage::Server {
        pilotage::Server::builder()
            .name("pg-test", "0")
            .engine(postgres::Pg::factory(self.db(default), true))
            .build()
            .unwrap()
    }

    /// Run `sql` as the login role on this schema.
    pub async fn admin(&self, sql: &str) {
        let client = admin(&self.url).await;
        client.batch_execute(&format!("SET search_path = {}; {sql}", self.schema)).await.expect(sql);
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let sql = format!(
            "DROP SCHEMA IF EXISTS {s} CASCADE; DROP ROLE IF EXISTS {r}; DROP ROLE IF EXISTS {w};",
            s = self.schema,
            r = self.reader,
            w = self.writer
        );
        drop_batch(self.url.clone(), sql);
    }
}

/// Run `sql` as the administrator from a `Drop`: on a thread and runtime of its own, since the
/// drop may happen inside the test's runtime; failures are ignored (nothing left to clean).
pub(crate) fn drop_batch(url: String, sql: String) {
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        rt.block_on(async move {
            let _ = admin(&url).await.batch_execute(&sql).await;
        });
    })
    .join();
}

fn hints(read_only: bool, destructive: bool) -> Value {
    json!({"readOnly": read_only, "destructive": destructive, "openWorld": false})
}

/// A plan step as the wire carries it.
fn step(id: &str, calls: Option<&str>, level: &str) -> Value {
    let mut s = json!({"id": id});
    if let Some(c) = calls {
        s["calls"] = json!(c);
    }
    s["risk"] = json!(level);
    s["risk_hints"] = match level {
        "safe" => hints(true, false),
        "write" => hints(false, false),
        _ => hints(false, true),
    };
    s
}

pub(crate) fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
    json!({"start": {"line": l1, "column": c1}, "end": {"line": l2, "column": c2}})
}

pub(crate) async fn session(http: &HttpServer) -> Conn {
    let mut conn = http.connect(HttpStyle::Plain);
    conn.initialize(true).await;
    conn
}

pub(crate) async fn validate(conn: &mut Conn, query: &str) -> Value {
    conn.call_ok("validate_sql", json!({"query": query})).await
}

/// The code, path and message of each diagnostic.
pub(crate) fn findings(v: &Value) -> Vec<(String, Value, String)> {
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["path"].clone(),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_plans_and_diagnoses_with_postgres_positions() {
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_loop::validation_plans_and_diagnoses_with_postgres_positions",
    ) {
        return;
    }
    let f = Fixture::new("validate").await;
    let http = HttpServer::start(&f.server(Some(&f.writer))).await;
    let mut conn = session(&http).await;

    let ok = validate(&mut conn, "SELECT name, tier_rank(tier) FROM customers WHERE tier = :tier").await;
    assert_eq!(ok["valid"], true, "{ok}");
    assert_eq!(
        ok["plan"]["steps"],
        json!([
            step("stmt-1", None, "safe"),
            step("stmt-1.ref-1", Some("customers"), "safe"),
            step("stmt-1.ref-2", Some("tier_rank(t text)"), "safe")
        ])
    );

    // A column only PostgreSQL knows is missing: its error position becomes the range.
    let bad = validate(&mut conn, "SELECT name,\n       emial FROM customers").await;
    let got = findings(&bad);
    assert_eq!(got.len(), 1, "{bad}");
    assert_eq!((got[0].0.as_str(), &got[0].1), ("unknown_column", &range(2, 8, 2, 13)), "{bad}");
    assert!(got[0].2.starts_with("PostgreSQL (42703): column \"emial\" does not exist"), "{}", got[0].2);

    let bad = validate(&mut conn, "SELECT * FROM custmers").await;
    assert_eq!(
        bad["diagnostics"],
        json!([{"severity": "error", "code": "unknown_table", "path": range(1, 15, 1, 23),
                "message": "no table or view `custmers` in your catalog", "hint": "close match: customers"}])
    );

    // Positions survive the :name → $k rewrite.
    let bad = validate(&mut conn, "SELECT :first, nope FROM customers WHERE id = :id").await;
    assert_eq!(findings(&bad)[0].1, range(1, 16, 1, 20), "{bad}");

    let bad =
        validate(&mut conn, "SELECT id FROM customers JOIN orders ON orders.customer_id = customers.id")
            .await;
    assert_eq!(findings(&bad)[0].0, "ambiguous_column");
    assert_eq!(findings(&bad)[0].1, range(1, 8, 1, 10));

    let bad = validate(&mut conn, "SELECT name FROM customers WHERE id = 'one'").await;
    assert_eq!((findings(&bad)[0].0.as_str(), &findings(&bad)[0].1), ("type_mismatch", &range(1, 39, 1, 44)));

    for (sql, at) in [
        ("COPY customers TO PROGRAM 'cat > /tmp/x'", range(1, 1, 1, 5)),
        ("ALTER SYSTEM SET work_mem = '1GB'", range(1, 1, 1, 6)),
        ("CREATE ROLE evil SUPERUSER", range(1, 1, 1, 7)),
        ("CREATE EXTENSION dblink", range(1, 1, 1, 7)),
        ("SELECT pg_read_file('/etc/passwd')", range(1, 8, 1, 20)),
        ("SELECT query_to_xml('DELETE FROM orders', true, true, '')", range(1, 8, 1, 20)),
        ("BEGIN", range(1, 1, 1, 6)),
        ("SET ROLE postgres", range(1, 1, 1, 4)),
    ] {
        let bad = validate(&mut conn, sql).await;
        let got = findings(&bad);
        assert_eq!((got[0].0.as_str(), &got[0].1), ("forbidden_statement", &at), "{sql}: {bad}");
    }

    let bad = validate(&mut conn, "SELECT name FROM customers WHERE id = $1").await;
    assert_eq!(
        (findings(&bad)[0].0.as_str(), &findings(&bad)[0].1),
        ("bad_placeholder", &range(1, 39, 1, 41))
    );

    // Risk from the statement's shape; the estimate of an unqualified change as a warning.
    let all = validate(&mut conn, "DELETE FROM orders").await;
    assert_eq!(all["valid"], true, "{all}");
    assert_eq!(all["plan"]["max_risk"], "destructive");
    assert_eq!(all["diagnostics"][0]["code"], "every_row");
    assert_eq!(all["diagnostics"][0]["severity"], "warning");
    assert!(all["diagnostics"][0]["message"].as_str().unwrap().contains("PostgreSQL estimates"), "{all}");
    let one = validate(&mut conn, "UPDATE orders SET quantity = 2 WHERE id = :id").await;
    assert_eq!(one["plan"]["max_risk"], "write", "{one}");
    assert_eq!(one["diagnostics"], json!([]));
    let every = validate(&mut conn, "UPDATE orders SET quantity = 2 WHERE true").await;
    assert_eq!(every["plan"]["max_risk"], "destructive", "{every}");
    // A data-modifying WITH is as risky as its DELETE.
    let hidden = validate(
        &mut conn,
        "WITH d AS (DELETE FROM orders WHERE id = 1 RETURNING id) SELECT count(*) FROM d",
    )
    .await;
    assert_eq!(hidden["plan"]["max_risk"], "destructive", "{hidden}");

    // DDL of the allow-list runs in the validation transaction, rolled back: later statements
    // see it, the database never does.
    let ddl = validate(
        &mut conn,
        "CREATE TABLE notes (id int PRIMARY KEY, body text);\nINSERT INTO notes VALUES (1, 'x')",
    )
    .await;
    assert_eq!(ddl["valid"], true, "{ddl}");
    assert_eq!(ddl["plan"]["steps"], json!([step("stmt-1", None, "write"), step("stmt-2", None, "write")]));
    let ddl = validate(
        &mut conn,
        "CREATE TABLE notes (id int PRIMARY KEY, body text);\nINSERT INTO notes VALUES (1, 'x', 3)",
    )
    .await;
    assert_eq!(findings(&ddl)[0].0, "syntax_error", "{ddl}");
    assert_eq!(findings(&ddl)[0].1, range(2, 35, 2, 36), "{ddl}");
    // CREATE TABLE ... AS runs WITH NO DATA in validation: its query, and the functions it
    // calls, never run before the run (a sequence would remember).
    let client = admin(&pilotage::state::suite::test_postgres_url()).await;
    let seq = format!("SELECT last_value FROM {}.orders_id_seq", f.schema);
    let before: i64 = client.query_one(&seq, &[]).await.unwrap().get(0);
    let ctas =
        validate(&mut conn, "CREATE TABLE ids AS SELECT nextval('orders_id_seq') AS n FROM customers").await;
    assert_eq!(ctas["valid"], true, "{ctas}");
    let after: i64 = client.query_one(&seq, &[]).await.unwrap().get(0);
    assert_eq!(before, after, "validation ran the query of CREATE TABLE ... AS");

    let catalog = conn.call_ok("pilotage_catalog", json!({"language": "sql/postgres", "verb": "list"})).await;
    let ids: Vec<&str> =
        catalog["items"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["customers", "order_totals", "orders", "price_list", "tier_rank(t text)"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_one_transaction_with_a_trace_step_per_statement() {
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_loop::a_run_is_one_transaction_with_a_trace_step_per_statement",
    ) {
        return;
    }
    let f = Fixture::new("run").await;
    let http = HttpServer::start(&f.server(Some(&f.writer))).await;
    let mut conn = session(&http).await;
    let before = conn.call_ok("pg_world_fingerprint", json!({})).await;
    assert_eq!(before["rows"], json!({"audit_log": 0, "customers": 3, "orders": 4, "price_list": 2}));

    let program = "INSERT INTO orders (customer_id, item, quantity, price) VALUES (:c, :item, 2, 2.50);\n\
                   SELECT item, quantity, price FROM orders WHERE customer_id = :c ORDER BY id";
    let ran = conn
        .call_ok(
            "run_sql",
            json!({"query": program, "input": {"c": 3, "item": "pen"}, "trace_level": "full"}),
        )
        .await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    assert_eq!(
        ran["output"],
        json!({"columns": ["item", "quantity", "price"], "rows": [["cable", 3, "4.50"], ["pen", 2, "2.50"]]})
    );
    let run_id = ran["run_id"].as_str().unwrap().to_owned();
    let fetched = conn.call_ok("trace_sql", json!({"run_id": run_id})).await;
    assert_eq!(fetched["trace"]["steps"], ran["trace"]["steps"]);
    let steps = ran["trace"]["steps"].as_array().unwrap();
    let ids: Vec<&str> = steps.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["stmt-1", "stmt-1.ref-1", "stmt-2", "stmt-2.ref-1"], "{ran}");
    assert_eq!(steps[0]["input"]["params"], json!({"c": 3, "item": "pen"}));
    assert_eq!(steps[0]["output"], json!({"changes": 1}));
    assert_eq!(steps[2]["output"]["row_count"], 2);
    assert_eq!(steps[1]["calls"], "orders");
    assert_eq!(steps[1]["input"], json!({"access": "insert"}));
    let after = conn.call_ok("pg_world_fingerprint", json!({})).await;
    assert_eq!(after["rows"], json!({"audit_log": 0, "customers": 3, "orders": 5, "price_list": 2}));

    // A constraint violation in the second statement rolls the first back.
    let failing = "UPDATE customers SET tier = 'silver' WHERE id = 3;\nINSERT INTO orders (customer_id, item, quantity, price) VALUES (3, 'x', 0, 1)";
    let ran = conn.call_ok("run_sql", json!({"query": failing, "trace_level": "full"})).await;
    assert_eq!(ran["outcome"]["status"], "partial", "{ran}");
    let last = ran["trace"]["steps"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["outcome"]["status"], "constraint_violated", "{ran}");
    assert_eq!(
        conn.call_ok("pg_world_fingerprint", json!({})).await,
        after,
        "nothing of the failed run persists"
    );

    // Inputs bind exactly.
    let refused = conn.call_ok("run_sql", json!({"query": "SELECT :a", "input": {"a": 1, "b": 2}})).await;
    assert_eq!(refused["outcome"]["status"], "validation_error", "{refused}");
    assert_eq!(refused["diagnostics"][0]["code"], "input_binding");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_statement_is_cancelled_on_the_server() {
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_loop::a_runaway_statement_is_cancelled_on_the_server",
    ) {
        return;
    }
    let f = Fixture::new("cancel").await;
    let limits = pilotage::engine::Limits {
        execute_time: Duration::from_millis(1500),
        ..pilotage::engine::Limits::default()
    };
    let server = pilotage::Server::builder()
        .name("pg-test", "0")
        .engine(postgres::Pg::factory(f.db(Some(&f.writer)), true))
        .limits(limits)
        .build()
        .unwrap();
    let http = HttpServer::start(&server).await;
    let mut conn = session(&http).await;
    let started = std::time::Instant::now();
    let ran = conn.call_ok("run_sql", json!({"query": "SELECT pg_sleep(30)", "trace_level": "full"})).await;
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert_eq!(ran["outcome"]["status"], "error", "{ran}");
    let step = &ran["trace"]["steps"][0];
    assert_eq!(step["outcome"]["status"], "timeout", "{ran}");
    // The statement timeout is the run's time left, less a fifth: at most 1200 ms here.
    let error = step["outcome"]["error"].as_str().unwrap();
    // (A wait for the connection under the parallel tests' load is said after it.)
    let ms: u64 = error
        .strip_prefix("cancelled by statement_timeout after ")
        .and_then(|e| e.split(" ms").next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("{ran}"));
    assert!((1000..=1200).contains(&ms), "{error}");
    // Nothing of it still runs on the server.
    let client = admin(&pilotage::state::suite::test_postgres_url()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let running: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE strpos(query, 'SELECT pg_sleep(30)') > 0 \
             AND query NOT LIKE '%pg_stat_activity%' AND state = 'active'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(running, 0);
}

pub(crate) async fn stateless(url: &str, sub: &str, role: &str, name: &str, arguments: Value) -> Value {
    let token =
        support::auth::sign(&support::auth::claims(sub, json!({"pg_role": role})), support::auth::SECRET);
    let params = json!({"name": name, "arguments": arguments});
    let got =
        support::stateless_request(url, "tools/call", params, json!({}), Some(&format!("Bearer {token}")))
            .await;
    got["result"]["structuredContent"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_verified_callers_see_their_own_roles_catalogs_and_diagnostics() {
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_loop::two_verified_callers_see_their_own_roles_catalogs_and_diagnostics",
    ) {
        return;
    }
    let f = Fixture::new("roles").await;
    let server = pilotage::Server::builder()
        .name("pg-test", "0")
        .engine(postgres::Pg::factory(f.db(None), false))
        .authenticator(support::auth::authenticator())
        .build()
        .unwrap();
    let http = HttpServer::start(&server).await;
    let list = json!({"language": "sql/postgres", "verb": "list"});
    let reader = stateless(http.url(), "rita", &f.reader, "pilotage_catalog", list.clone()).await;
    let writer = stateless(http.url(), "walt", &f.writer, "pilotage_catalog", list).await;
    let ids = |c: &Value| -> Vec<String> {
        c["items"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(ids(&reader), ["customers", "order_totals", "price_list", "tier_rank(t text)"], "{reader}");
    assert_eq!(
        ids(&writer),
        ["customers", "order_totals", "orders", "price_list", "tier_rank(t text)"],
        "{writer}"
    );
    assert_ne!(reader["catalog_version"], writer["catalog_version"]);

    let program = json!({"query": "DELETE FROM customers WHERE id = 3"});
    let r = stateless(http.url(), "rita", &f.reader, "validate_sql", program.clone()).await;
    assert_eq!(
        r["diagnostics"],
        json!([{"severity": "error", "code": "permission_denied", "path": range(1, 13, 1, 22),
                "message": format!("your role may SELECT `customers`, not DELETE"),
                "hint": "ask the database administrator for the grant, or leave the statement out"}])
    );
    let w = stateless(http.url(), "walt", &f.writer, "validate_sql", program).await;
    assert_eq!(w["valid"], true, "{w}");
    let r =
        stateless(http.url(), "rita", &f.reader, "validate_sql", json!({"query": "SELECT * FROM orders"}))
            .await;
    assert_eq!(r["diagnostics"][0]["code"], "unknown_table", "{r}");

    // A GRANT is the database's: the reader's catalog moves, the writer's does not.
    f.admin(&format!("GRANT SELECT ON orders TO {}", f.reader)).await;
    let list = json!({"language": "sql/postgres", "verb": "list"});
    let reader2 = stateless(http.url(), "rita", &f.reader, "pilotage_catalog", list.clone()).await;
    let writer2 = stateless(http.url(), "walt", &f.writer, "pilotage_catalog", list).await;
    assert_ne!(reader2["catalog_version"], reader["catalog_version"]);
    assert_eq!(writer2["catalog_version"], writer["catalog_version"]);
    let since = json!({"language": "sql/postgres", "verb": "changed_since", "catalog_version": reader["catalog_version"]});
    let changes = stateless(http.url(), "rita", &f.reader, "pilotage_catalog", since).await;
    assert!(changes.to_string().contains("orders"), "{changes}");

    // The harness tools act as the login role: absent unless the server says --admin-tools.
    let fp = support::auth::sign(
        &support::auth::claims("rita", json!({"pg_role": f.reader})),
        support::auth::SECRET,
    );
    let params = json!({"name": "pg_world_fingerprint", "arguments": {}});
    let got = support::stateless_request(
        http.url(),
        "tools/call",
        params,
        json!({}),
        Some(&format!("Bearer {fp}")),
    )
    .await;
    assert_eq!(got["error"]["code"], -32602, "{got}");

    // A claim naming a superuser role is refused.
    let su = stateless(http.url(), "mallory", "postgres", "validate_sql", json!({"query": "SELECT 1"})).await;
    assert_eq!(su["diagnostics"][0]["code"], "permission_denied", "{su}");
}

/// The binary checks its database at start: no answer, no server, and a message that says so.
#[test]
fn the_binary_refuses_to_start_without_its_database() {
    let binary = support::example_binary("postgres");
    let url = "postgres://postgres@127.0.0.1:1/nothing";
    let out =
        std::process::Command::new(&binary).args(["--database-url", url]).output().expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("error: no PostgreSQL answers at {url}")), "{stderr}");
    if !pilotage::state::suite::postgres_or_skip(
        "postgres_loop::the_binary_refuses_to_start_without_its_database",
    ) {
        return;
    }
    let good = pilotage::state::suite::test_postgres_url();
    let out = std::process::Command::new(&binary)
        .args(["--database-url", &good, "--schema", "no_such_schema_here"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("schema \"no_such_schema_here\" does not exist"), "{stderr}");
}
