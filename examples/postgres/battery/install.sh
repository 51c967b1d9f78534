#!/usr/bin/env bash
# Installs the reference PostgreSQL MCP server (`@modelcontextprotocol/server-postgres`, npm) that
# the side-by-side battery (examples/postgres/battery/run.py) and `cargo bench --bench postgres`
# compare sql/postgres with, into target/reference/node. Idempotent: a second run checks the
# installed version and returns. Prints the entry point's path on its last line.
set -euo pipefail
cd "$(dirname "$0")/../../.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
node="$target/reference/node"
pkg="$node/node_modules/@modelcontextprotocol/server-postgres/package.json"
if [ ! -f "$pkg" ]; then
  mkdir -p "$node"
  [ -f "$node/package.json" ] || echo '{"name":"pilotage-reference-servers","private":true}' > "$node/package.json"
  npm install --silent --no-audit --no-fund --prefix "$node" '@modelcontextprotocol/server-postgres@0.6.2'
fi
node -e 'console.error("reference server-postgres", require(process.argv[1]).version)' "$pkg"
echo "$node/node_modules/@modelcontextprotocol/server-postgres/dist/index.js"
