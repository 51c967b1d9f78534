#!/usr/bin/env bash
# Installs the official MCP client SDKs the long-run client tests drive (tests/it/long_run_clients.rs):
# the Python SDK (`mcp` 2.x, PyPI) into a virtual environment at target/clients/py and the TypeScript
# SDK (`@modelcontextprotocol/sdk`, npm) into target/clients/node. Idempotent: a second run checks the
# installed versions and returns.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="target/clients"
mkdir -p "$root"

py="$root/py"
if ! "$py/bin/python" -c 'import mcp, importlib.metadata as m; assert m.version("mcp").startswith("2.")' 2>/dev/null; then
  python3 -m venv "$py"
  "$py/bin/python" -m pip install --quiet --disable-pip-version-check 'mcp>=2,<3'
fi
"$py/bin/python" -c 'import importlib.metadata as m; print("python mcp", m.version("mcp"))'

node="$root/node"
if [ ! -f "$node/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
  mkdir -p "$node"
  [ -f "$node/package.json" ] || echo '{"name":"pilotage-client-tests","private":true,"type":"module"}' > "$node/package.json"
  npm install --silent --no-audit --no-fund --prefix "$node" '@modelcontextprotocol/sdk@^1'
fi
node -e 'console.log("node sdk", require(process.argv[1]).version)' "$PWD/$node/node_modules/@modelcontextprotocol/sdk/package.json"
