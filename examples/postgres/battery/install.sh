#!/usr/bin/env bash
# Installs the reference PostgreSQL MCP server (`@modelcontextprotocol/server-postgres`, npm) that
# the side-by-side battery (examples/postgres/battery/run.py) and `cargo bench --bench postgres`
# compare sql/postgres with, into target/reference/node. Idempotent: a second run checks the
# installed version and returns. Prints the entry point's path on its last line.
# Then installs Postgres MCP Pro, the battery's third server, with install-pro.sh (its output goes to
# stderr here; run.py calls install-pro.sh itself for its path); without Python >= 3.12 that step
# says so and the battery runs without Pro.
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
bash examples/postgres/battery/install-pro.sh >&2 ||
  echo "install.sh: Postgres MCP Pro is not installed (above: why); the battery runs without it" >&2
node -e 'console.error("reference server-postgres", require(process.argv[1]).version)' "$pkg"
echo "$node/node_modules/@modelcontextprotocol/server-postgres/dist/index.js"
