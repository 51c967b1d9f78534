//! `sql/postgres` failing closed (issue 31): a bound stops the statement on the server, callers
//! without a usable role are refused, risk never under-states a function or a `WHERE` that
//! matches every row, every known bypass of its peers is refused and leaves the database
//! unchanged, and the agent frictions found in use. Each test in its own throwaway schema
//! (`postgres_loop::Fixture`), with its own extra roles dropped at the end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::postgres;
use crate::postgres_loop::{admin, findings, range, session, stateless, validate, Fixture};
use crate::support::{self, HttpServer};

/// Extra roles of one test, dropped (with what they own or were granted) at the end.
struct ExtraRoles {
    url: String,
    names: Vec<String>,
}

impl Drop for ExtraRoles {
    fn drop(&mut self) {
        let sql: String =
            self.names.iter().map(|r| format!("DROP OWNED BY {r}; DROP ROLE IF EXISTS {r};")).collect();
        crate::postgres_loop::drop_batch(self.url.clone(), sql);
    }
}

/// The shared database of `f` connecting with `application_name` (what `pg_stat_activity`
/// is filtered by), callers mapped by `roles`.
fn db_named(f: &Fixture, application_name: &str, roles: postgres::Roles) -> Arc<postgres::Db> {
    let sep = if f.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{sep}application_name={application_name}", f.url);
    let schema = f.schema.clone();
    let db = std::thread::spawn(move || postgres::Db::connect(&url, &schema, roles, 4))
        .join()
        .expect("connect")
        .expect("the engine connects");
    Arc::new(db)
}

fn roles(default: Option<&str>, allow_superuser: bool) -> postgres::Roles {
    postgres::Roles { claim: "pg_role".into(), default: default.map(str::to_owned), allow_superuser }
}

fn server(db: Arc<postgres::Db>, admin_tools: bool) -> pilotage::Server {
    pilotage::Server::builder()
        .name("pg-test", "0")
        .engine(postgres::Pg::factory(db, admin_tools))
        .build()
        .unwrap()
}

/// The run's time bound ends it during its third statement: the runtime drops the run, and the
/// dropped session cancels the statement on the server and closes its connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_dropped_at_its_bound_leaves_nothing_running_on_the_server() {
    let f = Fixture::new("bound").await;
    let app = format!("sqlpg_bound_{}", std::process::id());
    let db = db_named(&f, &app, roles(Some(&f.writer), false));
    let limits = pilotage::engine::Limits {
        execute_time: Duration::from_millis(2000),
        ..pilotage::engine::Limits::default()
    };
    let server = pilotage::Server::builder()
        .name("pg-test", "0")
        .engine(postgres::Pg::factory(db, false))
        .limits(limits)
        .build()
        .unwrap();
    let http = HttpServer::start(&server).await;
    let mut conn = session(&http).await;
    let program = "SELECT pg_sleep(0.8);\nSELECT pg_sleep(0.8);\nSELECT pg_sleep(30)";
    let started = Instant::now();
    let ran = conn.call_ok("run_sql", json!({"query": program})).await;
    let answered = Instant::now();
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
    assert_eq!(ran["outcome"]["status"], "partial", "{ran}");
    let client = admin(&f.url).await;
    tokio::time::sleep(Duration::from_millis(500).saturating_sub(answered.elapsed())).await;
    let busy: Vec<String> = client
        .query(
            "SELECT coalesce(query, '') FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'",
            &[&app],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(busy, Vec::<String>::new(), "still running 500 ms after the answer");
}

/// Who the caller is fails closed: no claim and no default role, a role the login cannot
/// assume, a superuser or BYPASSRLS role: each an error the caller reads, never a silent
/// fallback; and the harness tools are absent without --admin-tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_without_a_usable_role_are_refused() {
    let f = Fixture::new("identity").await;
    let bypass = format!("{}_bypass", f.schema);
    let _extra = ExtraRoles { url: f.url.clone(), names: vec![bypass.clone()] };
    f.admin(&format!(
        "CREATE ROLE {bypass} NOLOGIN BYPASSRLS; GRANT USAGE ON SCHEMA {s} TO {bypass}; GRANT SELECT ON customers TO {bypass}",
        s = f.schema
    ))
    .await;

    let app = format!("sqlpg_identity_{}", std::process::id());
    let verified = pilotage::Server::builder()
        .name("pg-test", "0")
        .engine(postgres::Pg::factory(db_named(&f, &app, roles(None, false)), false))
        .authenticator(support::auth::authenticator())
        .build()
        .unwrap();
    let http = HttpServer::start(&verified).await;
    let query = json!({"query": "SELECT name FROM customers"});
    let whole = range(1, 1, 1, 27);

    // A verified caller without the claim, and no default role.
    let token = support::auth::sign(&support::auth::claims("nora", json!({})), support::auth::SECRET);
    let params = json!({"name": "validate_sql", "arguments": query});
    let got = support::stateless_request(
        http.url(),
        "tools/call",
        params,
        json!({}),
        Some(&format!("Bearer {token}")),
    )
    .await;
    let got = &got["result"]["structuredContent"];
    assert_eq!(
        findings(got),
        [(
            "permission_denied".to_owned(),
            whole.clone(),
            "the caller has no `pg_role` claim and the server names no default role (--default-role): refused"
                .to_owned()
        )],
        "{got}"
    );

    // A role the login cannot assume (it does not exist): said, not an empty catalog's
    // `unknown_table`.
    let ghost = format!("{}_ghost", f.schema);
    let got = stateless(http.url(), "gus", &ghost, "validate_sql", query.clone()).await;
    let found = findings(&got);
    assert_eq!((found[0].0.as_str(), &found[0].1), ("permission_denied", &whole), "{got}");
    assert!(
        found[0].2.starts_with(&format!("the caller's database role \"{ghost}\" cannot be assumed: role")),
        "{got}"
    );
    assert_eq!(found.len(), 1, "{got}");

    // BYPASSRLS and superuser roles serve no caller.
    let got = stateless(http.url(), "bea", &bypass, "validate_sql", query.clone()).await;
    assert_eq!(
        findings(&got),
        [(
            "permission_denied".to_owned(),
            whole.clone(),
            format!("the caller's database role \"{bypass}\" is a superuser or bypasses row security: refused (a server started with --allow-superuser would serve it)")
        )],
        "{got}"
    );
    let run = stateless(http.url(), "bea", &bypass, "run_sql", query.clone()).await;
    assert_eq!(run["outcome"]["status"], "validation_error", "{run}");
    let got = stateless(http.url(), "sue", "postgres", "validate_sql", query.clone()).await;
    assert_eq!(findings(&got)[0].0, "permission_denied", "{got}");

    // The harness tools are not listed to agents.
    let tools = support::stateless_request(
        http.url(),
        "tools/list",
        json!({}),
        json!({}),
        Some(&format!("Bearer {token}")),
    )
    .await;
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"run_sql") && !names.iter().any(|n| n.starts_with("pg_")), "{names:?}");

    // An ambient caller acts as the login role: a superuser here, refused unless allowed.
    let refused = HttpServer::start(&server(db_named(&f, &app, roles(None, false)), false)).await;
    let mut conn = session(&refused).await;
    let got = validate(&mut conn, "SELECT name FROM customers").await;
    assert_eq!(
        findings(&got),
        [(
            "permission_denied".to_owned(),
            whole.clone(),
            "the login role is a superuser or bypasses row security: refused (a server started with --allow-superuser would serve it)".to_owned()
        )],
        "{got}"
    );
    let allowed = HttpServer::start(&server(db_named(&f, &app, roles(None, true)), false)).await;
    let mut conn = session(&allowed).await;
    let got = validate(&mut conn, "SELECT name FROM customers").await;
    assert_eq!(got["valid"], true, "{got}");
}

/// Function risk from what a function may do, and `every_row` from PostgreSQL's estimate
/// whatever the `WHERE` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn risk_does_not_under_state_functions_or_where_clauses() {
    let f = Fixture::new("risk").await;
    f.admin(&format!(
        "CREATE TABLE secrets (id int PRIMARY KEY, secret text NOT NULL);
         INSERT INTO secrets VALUES (1, 'hunter2');
         CREATE FUNCTION get_secret(k int) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
           AS $$ SELECT secret FROM secrets WHERE id = k $$;
         CREATE FUNCTION bump(n int, step int DEFAULT 1) RETURNS int LANGUAGE sql VOLATILE AS $$ SELECT n + step $$;
         CREATE FUNCTION raw_now() RETURNS timestamptz LANGUAGE internal STABLE AS 'now';
         GRANT EXECUTE ON FUNCTION raw_now() TO {w};
         ANALYZE customers; ANALYZE orders;",
        w = f.writer
    ))
    .await;
    let http = HttpServer::start(&f.server(Some(&f.writer))).await;
    let mut conn = session(&http).await;
    let catalog = conn.call_ok("pilotage_catalog", json!({"language": "sql/postgres", "verb": "list"})).await;
    let entry = |id: &str| -> Value {
        catalog["items"].as_array().unwrap().iter().find(|e| e["id"] == id).cloned().unwrap_or(Value::Null)
    };
    assert_eq!(entry("get_secret(k integer)")["risk"], "write", "{catalog}");
    assert_eq!(entry("bump(n integer, step integer)")["risk"], "write", "{catalog}");
    assert_eq!(entry("raw_now()")["risk"], "external", "{catalog}");
    assert_eq!(entry("tier_rank(t text)")["risk"], "safe", "{catalog}");
    let got = conn
        .call_ok(
            "pilotage_catalog",
            json!({"language": "sql/postgres", "verb": "get", "id": "bump(n integer, step integer)"}),
        )
        .await;
    let bump = &got["entry"];
    assert_eq!(
        bump["input_schema"],
        json!({"type": "object", "additionalProperties": false, "required": ["n"],
               "properties": {"n": {"type": "integer", "description": "integer"},
                              "step": {"type": "integer", "description": "integer"}}}),
        "{got}"
    );

    let plan = validate(&mut conn, "SELECT get_secret(1)").await;
    assert_eq!(plan["plan"]["max_risk"], "write", "{plan}");
    let plan = validate(&mut conn, "SELECT raw_now()").await;
    assert_eq!(plan["plan"]["max_risk"], "external", "{plan}");
    assert_eq!(plan["plan"]["max_risk_hints"]["openWorld"], true, "{plan}");
    let plan = validate(&mut conn, "DELETE FROM orders WHERE raw_now() IS NOT NULL AND id = 1").await;
    assert_eq!(plan["plan"]["max_risk"], "destructive_external", "{plan}");
    let plan = validate(&mut conn, "INSERT INTO orders (customer_id, item, quantity, price) VALUES (1, 'x', 1, nextval('orders_id_seq'))").await;
    assert_eq!(plan["plan"]["max_risk"], "write", "{plan}");

    // A WHERE that matches every row is every row.
    let all = validate(&mut conn, "UPDATE customers SET tier = 'gold' WHERE id > 0").await;
    assert_eq!(all["plan"]["max_risk"], "destructive", "{all}");
    assert_eq!(
        findings(&all),
        [(
            "every_row".to_owned(),
            range(1, 1, 1, 48),
            "stmt-1's WHERE matches every row: PostgreSQL estimates 3 of the table's 3 rows".to_owned()
        )],
        "{all}"
    );
    let all = validate(&mut conn, "DELETE FROM orders WHERE quantity > 0").await;
    assert_eq!(all["diagnostics"][0]["code"], "every_row", "{all}");
    let one = validate(&mut conn, "UPDATE customers SET tier = 'gold' WHERE id = 2").await;
    assert_eq!(one["plan"]["max_risk"], "write", "{one}");
    assert_eq!(one["diagnostics"], json!([]), "{one}");
}

/// Every known bypass of the peer servers, as the writer: refused at validation, and a run of
/// it changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_known_bypass_is_refused_and_changes_nothing() {
    let f = Fixture::new("bypass").await;
    let http = HttpServer::start(&f.server(Some(&f.writer))).await;
    let mut conn = session(&http).await;
    let before = conn.call_ok("pg_world_fingerprint", json!({})).await;
    let forbidden = [
        "COMMIT; DROP TABLE orders",
        "END; DROP TABLE orders",
        "ROLLBACK; DELETE FROM orders",
        "ABORT; DELETE FROM orders",
        "/* hi */ COMMIT; DROP TABLE orders",
        "-- note\nCOMMIT; DROP TABLE orders",
        "SELECT 1; COMMIT; UPDATE customers SET tier = 'gold' WHERE id = 1",
        "START TRANSACTION; DROP TABLE orders",
        "BEGIN READ WRITE; DROP TABLE orders",
        "EXPLAIN ANALYZE DELETE FROM orders",
        "explain (analyze) delete from orders",
        "SELECT pg_import_system_collations('pg_catalog')",
        "SELECT pg_catalog.pg_stat_reset()",
        "SELECT pg_advisory_lock(1)",
        "LOCK TABLE customers IN ACCESS EXCLUSIVE MODE",
        "LOCK customers",
        "LISTEN pilotage",
        "NOTIFY pilotage, 'x'",
        "SELECT pg_notify('pilotage', 'x')",
        "PREPARE p AS DELETE FROM orders",
        "EXECUTE p",
        "DEALLOCATE ALL",
        "CALL do_it()",
        "DO $$ BEGIN DELETE FROM orders; END $$",
        "SET ROLE postgres",
        "set role postgres",
        "SET SESSION AUTHORIZATION postgres",
        "SET LOCAL statement_timeout = 0",
        "SET SESSION search_path = public",
        "SET search_path TO public",
        "RESET ROLE",
        "RESET ALL",
        "SELECT set_config('role', 'postgres', true)",
        "SELECT pg_catalog.set_config('role', 'postgres', true)",
        "SELECT \"set_config\"('role', 'postgres', true)",
        "SELECT pg_catalog.\"set_config\"('statement_timeout', '0', true)",
        "SELECT * FROM set_config('role', 'postgres', true)",
        "SELECT * FROM pg_ls_dir('.')",
        "COPY orders TO PROGRAM 'true'",
        "SELECT lo_import('/etc/passwd')",
        "SELECT dblink_exec('dbname=test', 'DROP TABLE orders')",
        "SELECT query_to_xml('DELETE FROM orders', true, true, '')",
        "VACUUM orders",
        "GRANT SELECT ON orders TO PUBLIC",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    ];
    // A backslash is no escape in a standard string: `'\'` ends, and COMMIT is a statement.
    let smuggled = validate(&mut conn, "SELECT '\\'; COMMIT; DROP TABLE orders; --'").await;
    assert_eq!(smuggled["valid"], false, "{smuggled}");
    for sql in forbidden {
        let got = validate(&mut conn, sql).await;
        assert_eq!(got["valid"], false, "{sql}: {got}");
        let codes: Vec<String> = findings(&got).into_iter().map(|f| f.0).collect();
        // Its first finding is the bypass itself (other statements may have findings of their own).
        assert_eq!(codes[0], "forbidden_statement", "{sql}: {got}");
        let ran = conn.call_ok("run_sql", json!({"query": sql})).await;
        assert_eq!(ran["outcome"]["status"], "validation_error", "{sql}: {ran}");
    }
    // A reader locking rows needs UPDATE, as PostgreSQL asks: refused before it runs.
    let token_reader = f.reader.clone();
    drop(conn);
    let reader = HttpServer::start(&f.server(Some(&token_reader))).await;
    let mut conn = session(&reader).await;
    for sql in ["SELECT * FROM customers FOR UPDATE", "SELECT id FROM customers FOR SHARE"] {
        let got = validate(&mut conn, sql).await;
        assert_eq!(
            findings(&got),
            [(
                "permission_denied".to_owned(),
                range(
                    1,
                    sql.find("customers").unwrap() as u32 + 1,
                    1,
                    sql.find("customers").unwrap() as u32 + 10
                ),
                "your role may SELECT `customers`, not UPDATE".to_owned()
            )],
            "{sql}: {got}"
        );
    }
    let after = conn.call_ok("pg_world_fingerprint", json!({})).await;
    assert_eq!(after, before, "the database changed");
}

/// The frictions agents met: set-returning functions in FROM, the range of a qualified unknown
/// column, real step times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_frictions_are_gone() {
    let f = Fixture::new("friction").await;
    let http = HttpServer::start(&f.server(Some(&f.writer))).await;
    let mut conn = session(&http).await;
    let srf = validate(&mut conn, "SELECT g FROM generate_series(1, 3) AS g").await;
    assert_eq!(srf["valid"], true, "{srf}");
    assert_eq!(srf["plan"]["max_risk"], "safe", "{srf}");
    let ran = conn.call_ok("run_sql", json!({"query": "SELECT g FROM generate_series(1, 3) AS g"})).await;
    assert_eq!(ran["output"], json!({"columns": ["g"], "rows": [[1], [2], [3]]}), "{ran}");

    let bad = validate(&mut conn, "SELECT c.nmae FROM customers AS c").await;
    let got = findings(&bad);
    assert_eq!((got[0].0.as_str(), &got[0].1), ("unknown_column", &range(1, 8, 1, 14)), "{bad}");

    let ran = conn
        .call_ok("run_sql", json!({"query": "SELECT pg_sleep(0.2);\nSELECT 1", "trace_level": "full"}))
        .await;
    let t_ms = ran["trace"]["steps"][0]["t_ms"].as_u64().unwrap();
    assert!((200..2000).contains(&t_ms), "{ran}");

    // A refused run has a run_id (Part II §3.6) and no trace: the trace door holds started runs
    // only, as the guide says, and answers not_found for the refused one.
    let refused = conn.call_ok("run_sql", json!({"query": "SELECT nope FROM customers"})).await;
    assert_eq!(refused["outcome"]["status"], "validation_error", "{refused}");
    let id = refused["run_id"].as_str().unwrap();
    let fetched = conn.call("trace_sql", json!({"run_id": id})).await;
    crate::kit::assert_request_error(&fetched, "not_found");
}

/// The catalog kept per role serves while nothing it shows changed, and moves with each change
/// it shows (a column renamed, a comment, a function, a REVOKE); rows never move it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kept_catalog_moves_with_every_change_it_shows() {
    let f = Fixture::new("stamp").await;
    let http = HttpServer::start(&f.server(Some(&f.writer))).await;
    let mut conn = session(&http).await;
    let list = json!({"language": "sql/postgres", "verb": "list"});
    let mut last = conn.call_ok("pilotage_catalog", list.clone()).await["catalog_version"].clone();
    f.admin("INSERT INTO customers (id, name, email) VALUES (9, 'Nine', 'nine@example.com')").await;
    assert_eq!(conn.call_ok("pilotage_catalog", list.clone()).await["catalog_version"], last);
    for change in [
        "ALTER TABLE customers RENAME COLUMN name TO full_name".to_owned(),
        "COMMENT ON TABLE orders IS 'one row per order line'".to_owned(),
        "CREATE FUNCTION answer() RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 42'".to_owned(),
        format!("REVOKE DELETE ON orders FROM {}", f.writer),
    ] {
        f.admin(&change).await;
        let now = conn.call_ok("pilotage_catalog", list.clone()).await["catalog_version"].clone();
        assert_ne!(now, last, "{change}");
        last = now;
    }
    // A statement prepared before the rename is not served from a stale cache.
    let got = validate(&mut conn, "SELECT full_name FROM customers").await;
    assert_eq!(got["valid"], true, "{got}");
}

/// A statement's rows stop at 1,000 in PostgreSQL, in the statement's own order, whatever its
/// shape: a query is bounded by a `LIMIT` around it (here with a trailing comment, duplicate
/// column names and a placeholder), and a statement that is not a query keeps 1,000 of its
/// `RETURNING` rows while all of its work is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_stop_at_the_bound_in_order_whatever_the_statement() {
    let f = Fixture::new("rowbound").await;
    let http = HttpServer::start(&f.server(Some(&f.writer))).await;
    let mut conn = session(&http).await;

    let query = "SELECT g AS n, g + :k AS n FROM generate_series(1, 1500) AS g ORDER BY g DESC -- the end";
    let ran = conn.call_ok("run_sql", json!({"query": query, "input": {"k": 1}})).await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    let out = &ran["output"];
    assert_eq!(out["columns"], json!(["n", "n"]), "{out}");
    let rows = out["rows"].as_array().unwrap();
    assert_eq!((rows.len(), &rows[0], &rows[999]), (1000, &json!([1500, 1501]), &json!([501, 502])));
    assert_eq!(out["more_rows"], true);

    let exact =
        conn.call_ok("run_sql", json!({"query": "SELECT g FROM generate_series(1, 1000) AS g"})).await;
    assert_eq!(exact["output"]["rows"].as_array().unwrap().len(), 1000, "{exact}");
    assert_eq!(exact["output"].get("more_rows"), None, "exactly the bound is not more: {exact}");

    let insert = "INSERT INTO orders (customer_id, item, quantity, price) \
                  SELECT 1, 'pen', g, 1.50 FROM generate_series(1, 1200) AS g RETURNING quantity";
    let ran = conn.call_ok("run_sql", json!({"query": insert})).await;
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    let rows = ran["output"]["rows"].as_array().unwrap();
    assert_eq!((rows.len(), &rows[0], &rows[999]), (1000, &json!([1]), &json!([1000])), "{ran}");
    assert_eq!(ran["output"]["more_rows"], true);
    let count = conn.call_ok("run_sql", json!({"query": "SELECT count(*) AS n FROM orders"})).await;
    assert_eq!(count["output"]["rows"], json!([[1204]]), "every row was written: {count}");
}
