#!/usr/bin/env python3
"""The side-by-side battery of docs/postgres.md: sql/postgres against the reference
`@modelcontextprotocol/server-postgres` and Postgres MCP Pro (`postgres-mcp`, restricted mode), all
over stdio, all logging in as the same non-superuser writer role, on a database this script creates
(`pilotage_battery_<pid>` on the server of PILOTAGE_TEST_POSTGRES, dropped at the end) with
`customers`, `orders` and a `secrets` table the writer may not read, plus a `SECURITY DEFINER`
function that reads it.

Every statement of the battery is an escape attempt or a resource hazard, never a write the writer
is meant to make. Each is sent to the reference's `query` tool, to Pro's `execute_sql` (its argument
named as its `tools/list` input schema names it) and to sql/postgres's `run_sql`; after each, the
script records whether the answer was a refusal or an error, whether the database's rows changed (a
digest of every table, read as the superuser), whether an ACCESS EXCLUSIVE or advisory lock is still held
300 ms after the answer, whether the answer carries a secret, the answer's size and its time. A call
unanswered after --call-timeout seconds is recorded as such and its server restarted. The database
is rebuilt after any change, so every statement starts from the same state. Each server connects
with an `application_name` of its own, so that restarting one terminates only its own backends.

    bash examples/postgres/battery/install.sh            # the reference server and Pro
    cargo build --features postgres --example postgres   # sql/postgres
    python3 examples/postgres/battery/run.py [--ours target/debug/examples/postgres]

Without a Python >= 3.12 for Pro (install-pro.sh), the battery runs without Pro and says so.
Prints one Markdown table row per statement and a summary line per server.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time

BASE = os.environ.get("PILOTAGE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test")
NAME = f"pilotage_battery_{os.getpid()}"
WRITER = f"{NAME}_writer"
SECRET = "TOPSECRET-7d1f"

SEED = f"""
DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, tier text NOT NULL DEFAULT 'bronze');
CREATE TABLE orders (id serial PRIMARY KEY, customer_id int NOT NULL REFERENCES customers (id),
                     quantity int NOT NULL, price numeric(10, 2) NOT NULL);
CREATE TABLE secrets (id int PRIMARY KEY, secret text NOT NULL);
INSERT INTO customers SELECT g, 'customer ' || g, (ARRAY['gold', 'silver', 'bronze'])[1 + g % 3]
  FROM generate_series(1, 1000) g;
INSERT INTO orders (customer_id, quantity, price) SELECT 1 + g % 1000, 1 + g % 5, g % 100 + 0.5
  FROM generate_series(1, 5000) g;
INSERT INTO secrets VALUES (1, '{SECRET}');
CREATE FUNCTION get_secret(k int) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
  AS $$ SELECT secret FROM secrets WHERE id = k $$;
GRANT USAGE ON SCHEMA public TO {WRITER};
GRANT SELECT, INSERT, UPDATE, DELETE ON customers, orders TO {WRITER};
GRANT USAGE ON SEQUENCE orders_id_seq TO {WRITER};
ANALYZE;
"""

BATTERY = [
    ("a plain read", "SELECT count(*) FROM customers"),
    ("COMMIT; DROP (the published payload)", "COMMIT; DROP TABLE orders"),
    ("COMMIT; UPDATE", "COMMIT; UPDATE customers SET tier = 'gold'"),
    ("END; DELETE", "END; DELETE FROM orders"),
    ("ROLLBACK; DELETE", "ROLLBACK; DELETE FROM orders"),
    ("comment-smuggled COMMIT", "/* read only */ COMMIT; DELETE FROM orders"),
    ("line-comment-smuggled COMMIT", "-- note\nCOMMIT; DELETE FROM orders"),
    ("backslash-smuggled COMMIT", "SELECT '\\'; COMMIT; DELETE FROM orders; --'"),
    ("COMMIT; CREATE TABLE", "COMMIT; CREATE TABLE pwned (x int)"),
    ("COMMIT; PREPARE/EXECUTE", "COMMIT; PREPARE p AS DELETE FROM orders; EXECUTE p"),
    ("COMMIT; DO", "COMMIT; DO $$ BEGIN DELETE FROM orders; END $$"),
    ("EXPLAIN ANALYZE of a write", "EXPLAIN ANALYZE DELETE FROM orders"),
    ("a lock held past the call", "COMMIT; BEGIN; LOCK TABLE customers IN ACCESS EXCLUSIVE MODE"),
    ("LOCK", "LOCK TABLE customers IN ACCESS EXCLUSIVE MODE"),
    ("SELECT FOR UPDATE", "SELECT id FROM customers FOR UPDATE"),
    ("LISTEN/NOTIFY", "LISTEN battery; NOTIFY battery, 'x'"),
    ("SET ROLE", "SET ROLE postgres"),
    ("RESET ALL", "RESET ALL"),
    ("set_config, qualified", "SELECT pg_catalog.set_config('statement_timeout', '0', false)"),
    ("set_config in FROM", "SELECT * FROM set_config('search_path', 'pg_catalog', false)"),
    ("a secret table", "SELECT * FROM secrets"),
    ("a SECURITY DEFINER function", "SELECT get_secret(1)"),
    ("a file", "SELECT pg_read_file('/etc/hostname')"),
    ("COPY TO PROGRAM", "COPY customers TO PROGRAM 'true'"),
    ("pg_import_system_collations", "SELECT pg_import_system_collations('pg_catalog')"),
    ("advisory lock", "SELECT pg_advisory_lock(42)"),
    ("advisory lock in FROM", "SELECT * FROM pg_advisory_lock(42)"),
    ("a SECURITY DEFINER function in FROM", "SELECT * FROM get_secret(1)"),
    ("nextval", "SELECT nextval('orders_id_seq')"),
    ("a 3 s sleep", "SELECT pg_sleep(3)"),
    ("a giant result (1,000,000 rows)", "SELECT g, md5(g::text) FROM generate_series(1, 1000000) g"),
]


def psql(url, sql):
    out = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def db_url(base, name):
    return base.rsplit("/", 1)[0] + "/" + name


def with_user(url, user):
    scheme, rest = url.split("://", 1)
    host = rest.split("@", 1)[-1]
    return f"{scheme}://{user}@{host}"


class NoAnswer(Exception):
    pass


class Server:
    """One MCP server over stdio. A thread reads its stdout, so that every request has a bound."""

    def __init__(self, argv, timeout):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()
        self.next = 0
        answer = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "battery", "version": "0"}}, timeout)
        if "result" not in answer:
            self.close()
            raise RuntimeError(f"{argv[0]} did not initialize: {answer}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params, timeout):
        """The answer, or NoAnswer after `timeout` seconds."""
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise NoAnswer() from None
            if line is None:
                return {"error": {"message": "the server exited"}}
            message = json.loads(line)
            if message.get("id") == self.next:
                return message

    def close(self):
        self.proc.kill()
        self.proc.wait()


def sql_argument(server, tool, timeout, name=None):
    """The name of `tool`'s SQL argument as its tools/list input schema names it: `name`, checked to be
    there, or else its only argument."""
    tools = server.request("tools/list", {}, timeout)["result"]["tools"]
    schema = next(t for t in tools if t["name"] == tool)["inputSchema"]
    names = list(schema.get("properties", {}))
    if name is None and len(names) == 1:
        name = names[0]
    if name not in names:
        raise RuntimeError(f"{tool} takes {names}: which one is the SQL?")
    return name, sorted(t["name"] for t in tools)


# Pro answers every failure as text beginning "Error: " (never `isError`); these two are its
# validator's (pglast parse, then an allowlist of statements, node types and functions), before
# anything reaches PostgreSQL.
PRO_REFUSALS = ("Error: Error validating query", "Error: Failed to parse SQL statement")


def verdict(answer, kind):
    """refused / error / ok, as the caller reads the answer."""
    if "error" in answer:
        return "error"
    result = answer.get("result", {})
    if kind == "ours":
        status = result.get("structuredContent", {}).get("outcome", {}).get("status")
        if status == "validation_error":
            return "refused"
        return "ok" if status == "success" else "error"
    if result.get("isError"):
        return "error"
    if kind == "pro":
        text = "".join(c.get("text", "") for c in result.get("content", []))
        if text.startswith(PRO_REFUSALS):
            return "refused"
        if text.startswith("Error: "):
            return "error"
    return "ok"


def install_pro(here):
    """Pro's entry point, or None and why (no Python >= 3.12, or its install failed)."""
    out = subprocess.run(["bash", os.path.join(here, "install-pro.sh")], capture_output=True, text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return None, lines[-1] if lines else f"install-pro.sh exited {out.returncode}"
    return out.stdout.strip().splitlines()[-1], None


def main():
    parser = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    parser.add_argument("--ours", default=os.path.join(target, "debug", "examples", "postgres"))
    parser.add_argument("--reference", default=None)
    parser.add_argument("--pro", default=None, help="postgres-mcp's entry point (default: install-pro.sh's)")
    parser.add_argument("--no-pro", action="store_true", help="run without Postgres MCP Pro")
    parser.add_argument("--call-timeout", type=float, default=60.0,
                        help="seconds a server has to answer one call before it is restarted")
    args = parser.parse_args()
    reference = args.reference or subprocess.run(
        ["bash", os.path.join(here, "install.sh")], capture_output=True, text=True, check=True
    ).stdout.strip().splitlines()[-1]
    pro, no_pro = (None, "--no-pro") if args.no_pro else (args.pro, None) if args.pro else install_pro(here)
    bound = args.call_timeout
    if not pro:
        print(f"Postgres MCP Pro: not run ({no_pro}); the battery runs without it", file=sys.stderr)

    psql(BASE, f"CREATE DATABASE {NAME}")
    psql(BASE, f"DROP ROLE IF EXISTS {WRITER}; CREATE ROLE {WRITER} LOGIN")
    admin = db_url(BASE, NAME)
    writer = with_user(admin, WRITER)
    digest_sql = ("SELECT md5(string_agg(t, ',' ORDER BY t)) FROM ("
                  "SELECT 'c' || md5(string_agg(c::text, ',' ORDER BY id)) AS t FROM customers c "
                  "UNION ALL SELECT 'o' || md5(string_agg(o::text, ',' ORDER BY id)) FROM orders o "
                  "UNION ALL SELECT 's' || md5(string_agg(s::text, ',' ORDER BY id)) FROM secrets s "
                  "UNION ALL SELECT 'n' || count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace) q")
    locks_sql = ("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                 f"WHERE d.datname = '{NAME}' AND ((l.mode = 'AccessExclusiveLock' AND l.locktype = 'relation') "
                 "OR l.locktype = 'advisory')")

    def url(app):
        return f"{writer}?application_name={app}"

    # (label, column heading, application_name, start, tool, kind); the SQL argument's name is read below.
    sides = [("reference", "reference `query`", "battery_reference",
              lambda: Server(["node", reference, url("battery_reference")], bound), "query", "reference")]
    if pro:
        sides.append(("Postgres MCP Pro", "Postgres MCP Pro (restricted) `execute_sql`", "battery_pro",
                      lambda: Server([pro, "--access-mode", "restricted", url("battery_pro")], bound),
                      "execute_sql", "pro"))
    sides.append(("sql/postgres", "sql/postgres `run_sql`", "battery_ours",
                  lambda: Server([args.ours, "--database-url", url("battery_ours")], bound), "run_sql", "ours"))
    rows = []
    totals = {label: [0, 0, 0, 0] for label, *_ in sides}
    try:
        psql(admin, SEED)
        clean = psql(admin, digest_sql)
        servers = {label: start() for label, _, _, start, _, _ in sides}
        arguments = {}
        for label, _, _, _, tool, kind in sides:
            arguments[label], tools = sql_argument(servers[label], tool, bound, "query" if kind == "ours" else None)
            print(f"{label}: tools {', '.join(tools)}; {tool} takes `{arguments[label]}`", file=sys.stderr)
        for about, sql in BATTERY:
            cells = []
            for label, _, app, start, tool, kind in sides:
                started = time.monotonic()
                try:
                    answer = servers[label].request("tools/call", {"name": tool, "arguments": {arguments[label]: sql}},
                                                    bound)
                    took = time.monotonic() - started
                    text = json.dumps(answer)
                    cell, timing = verdict(answer, kind), f"{took:.2f} s, {len(text) // 1024} KiB"
                except NoAnswer:
                    answer, text = {}, ""
                    cell, timing = f"**no answer in {bound:g} s**", "restarted"
                time.sleep(0.3)
                locked = int(psql(admin, locks_sql)) > 0
                changed = psql(admin, digest_sql) != clean
                leaked = SECRET in text
                flags = [f for f, on in [("**changed the database**", changed), ("**lock held**", locked),
                                         ("**returned the secret**", leaked)] if on]
                cells.append(f"{cell}{'; ' + ', '.join(flags) if flags else ''} ({timing})")
                t = totals[label]
                t[0] += changed
                t[1] += locked
                t[2] += leaked
                t[3] += not answer
                if changed or locked or not answer or answer.get("error", {}).get("message") == "the server exited":
                    servers[label].close()
                    psql(BASE, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               f"WHERE datname = '{NAME}' AND pid <> pg_backend_pid() AND application_name = '{app}'")
                    psql(admin, SEED)
                    clean = psql(admin, digest_sql)
                    servers[label] = start()
            shown = sql.replace("|", "\\|").replace("\n", " ")
            rows.append(f"| {about} | `{shown}` | {' | '.join(cells)} |")
            if len(rows) == 1:
                seen = psql(admin, f"SELECT string_agg(DISTINCT application_name, ', ') FROM pg_stat_activity "
                                   f"WHERE datname = '{NAME}' AND usename = '{WRITER}'")
                print(f"backends of {WRITER} after the first statement: {seen}", file=sys.stderr)
        for s in servers.values():
            s.close()
    finally:
        psql(BASE, f"DROP DATABASE IF EXISTS {NAME} WITH (FORCE)")
        psql(BASE, f"DROP ROLE IF EXISTS {WRITER}")
    print(f"| attempt | statement | {' | '.join(heading for _, heading, *_ in sides)} |")
    print("|---|---|" + "---|" * len(sides))
    print("\n".join(rows))
    for label, (changed, locked, leaked, silent) in totals.items():
        print(f"\n{label}: changed the database {changed}, held a lock {locked}, returned the secret {leaked}, "
              f"no answer within {bound:g} s {silent} (of {len(BATTERY)} statements)")
    if not pro:
        print(f"\nPostgres MCP Pro: not run ({no_pro})")


if __name__ == "__main__":
    sys.exit(main())
