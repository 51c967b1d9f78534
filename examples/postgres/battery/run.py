#!/usr/bin/env python3
"""The side-by-side battery of docs/postgres.md: sql/postgres against the reference
`@modelcontextprotocol/server-postgres`, both over stdio, both logging in as the same non-superuser
writer role, on a database this script creates (`pilotage_battery_<pid>` on the server of
PILOTAGE_TEST_POSTGRES, dropped at the end) with `customers`, `orders` and a `secrets` table the
writer may not read, plus a `SECURITY DEFINER` function that reads it.

Every statement of the battery is an escape attempt or a resource hazard, never a write the writer
is meant to make. Each is sent to the reference's `query` tool and to sql/postgres's `run_sql`; after
each, the script records whether the answer was a refusal or an error, whether the database's rows
changed (a digest of every table, read as the superuser), whether an ACCESS EXCLUSIVE lock is still
held 300 ms after the answer, whether the answer carries a secret, the answer's size and its time.
The database is rebuilt after any change, so every statement starts from the same state.

    bash examples/postgres/battery/install.sh            # the reference server
    cargo build --features postgres --example postgres   # sql/postgres
    python3 examples/postgres/battery/run.py [--ours target/debug/examples/postgres]

Prints one Markdown table row per statement and a summary line per server.
"""

import argparse
import json
import os
import subprocess
import sys
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


class Server:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "battery", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return {"error": {"message": "the server exited"}}
            message = json.loads(line)
            if message.get("id") == self.next:
                return message

    def close(self):
        self.proc.kill()
        self.proc.wait()


def verdict(answer, ours):
    """refused / error / ok, as the caller reads the answer."""
    if "error" in answer:
        return "error"
    result = answer.get("result", {})
    if ours:
        status = result.get("structuredContent", {}).get("outcome", {}).get("status")
        if status == "validation_error":
            return "refused"
        return "ok" if status == "success" else "error"
    return "error" if result.get("isError") else "ok"


def main():
    parser = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    parser.add_argument("--ours", default=os.path.join(target, "debug", "examples", "postgres"))
    parser.add_argument("--reference", default=None)
    args = parser.parse_args()
    reference = args.reference or subprocess.run(
        ["bash", os.path.join(here, "install.sh")], capture_output=True, text=True, check=True
    ).stdout.strip().splitlines()[-1]

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
                 f"WHERE d.datname = '{NAME}' AND l.mode = 'AccessExclusiveLock' AND l.locktype = 'relation'")
    rows = []
    totals = {"reference": [0, 0, 0], "sql/postgres": [0, 0, 0]}
    try:
        psql(admin, SEED)
        clean = psql(admin, digest_sql)
        sides = [
            ("reference", lambda: Server(["node", reference, writer]), "query", "sql", False),
            ("sql/postgres", lambda: Server([args.ours, "--database-url", writer]), "run_sql", "query", True),
        ]
        servers = {label: start() for label, start, _, _, _ in sides}
        for about, sql in BATTERY:
            cells = []
            for label, start, tool, arg, ours in sides:
                started = time.monotonic()
                answer = servers[label].request("tools/call", {"name": tool, "arguments": {arg: sql}})
                took = time.monotonic() - started
                text = json.dumps(answer)
                time.sleep(0.3)
                locked = int(psql(admin, locks_sql)) > 0
                changed = psql(admin, digest_sql) != clean
                leaked = SECRET in text
                cell = verdict(answer, ours)
                flags = [f for f, on in [("**changed the database**", changed), ("**lock held**", locked),
                                         ("**returned the secret**", leaked)] if on]
                cells.append(f"{cell}{'; ' + ', '.join(flags) if flags else ''} ({took:.2f} s, {len(text) // 1024} KiB)")
                t = totals[label]
                t[0] += changed
                t[1] += locked
                t[2] += leaked
                if changed or locked or answer.get("error", {}).get("message") == "the server exited":
                    servers[label].close()
                    psql(BASE, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               f"WHERE datname = '{NAME}' AND pid <> pg_backend_pid() AND usename = '{WRITER}'")
                    psql(admin, SEED)
                    clean = psql(admin, digest_sql)
                    servers[label] = start()
            shown = sql.replace("|", "\\|").replace("\n", " ")
            rows.append(f"| {about} | `{shown}` | {cells[0]} | {cells[1]} |")
        for s in servers.values():
            s.close()
    finally:
        psql(BASE, f"DROP DATABASE IF EXISTS {NAME} WITH (FORCE)")
        psql(BASE, f"DROP ROLE IF EXISTS {WRITER}")
    print("| attempt | statement | reference `query` | sql/postgres `run_sql` |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    for label, (changed, locked, leaked) in totals.items():
        print(f"\n{label}: changed the database {changed}, held a lock {locked}, returned the secret {leaked} "
              f"(of {len(BATTERY)} statements)")


if __name__ == "__main__":
    sys.exit(main())
