#!/usr/bin/env bash
# Installs Postgres MCP Pro (`postgres-mcp` 0.3.0, PyPI), the second server the side-by-side battery
# (examples/postgres/battery/run.py) compares sql/postgres with, into a virtual environment at
# target/reference/python. Idempotent: a second run checks the installed version and returns.
# On success, prints the entry point's path on its last line (run it as
# `postgres-mcp --access-mode restricted URL`, over stdio).
#
# postgres-mcp needs Python >= 3.12. Without one, it says so on stderr and exits 3: the battery then
# runs without Pro and says so. Any other failure (no index, a broken install) exits non-zero too.
set -euo pipefail
cd "$(dirname "$0")/../../.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/reference/python"
version="0.3.0"

installed() {
  [ -x "$venv/bin/postgres-mcp" ] && [ "$("$venv/bin/python" -c \
    'import importlib.metadata as m; print(m.version("postgres-mcp"))' 2>/dev/null)" = "$version" ]
}

# A Python that runs and is >= 3.12. `command -v` is not enough: a pyenv shim exists for every
# version pyenv holds and fails ("command not found") when that version is not the selected one.
find_python() {
  local roots=() candidates=(python3.13 python3.12 python3)
  [ -n "${PYENV_ROOT:-}" ] && roots+=("$PYENV_ROOT")
  command -v pyenv >/dev/null 2>&1 && roots+=("$(pyenv root 2>/dev/null || true)")
  roots+=("$HOME/.pyenv" /root/.pyenv)
  local root
  for root in "${roots[@]}"; do
    [ -n "$root" ] || continue
    candidates+=("$root"/versions/3.1[2-9]*/bin/python "$root"/versions/3.[2-9][0-9]*/bin/python)
  done
  local py
  for py in "${candidates[@]}"; do
    if "$py" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

if ! installed; then
  if ! python="$(find_python)"; then
    echo "Postgres MCP Pro not installed: it needs Python >= 3.12, and none was found (tried" \
      "python3.13, python3.12, python3 and the versions under the pyenv roots)." >&2
    exit 3
  fi
  echo "installing postgres-mcp $version with $python ($("$python" --version 2>&1)) into $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  # The exact pin first. postgres-mcp 0.3.0 pins pglast==7.2.0, which the package index of the
  # development machine does not offer, so there this step fails; then install postgres-mcp alone
  # and its dependencies as its metadata lists them, with pglast 7.22 (the same PostgreSQL 17
  # parser, a later release) and mcp below 2 (mcp 2 removed FastMCP, which postgres-mcp 0.3.0
  # imports). The fallback is what the battery's figures were measured with.
  if ! "${pip[@]}" "postgres-mcp==$version" >&2; then
    echo "postgres-mcp==$version with its own pins failed; installing it with pglast 7.22 instead" >&2
    "${pip[@]}" --no-deps "postgres-mcp==$version" >&2
    "${pip[@]}" "attrs>=25.3.0" "humanize>=4.8.0" "instructor>=1.7.9" "mcp[cli]>=1.5.0,<2" \
      "pglast==7.22" "psycopg-pool>=3.2.6" "psycopg[binary]>=3.2.6" >&2
  fi
  installed || { echo "postgres-mcp $version did not install into $venv" >&2; exit 1; }
fi
"$venv/bin/python" - >&2 <<'EOF'
import importlib.metadata as m, sys
print("Postgres MCP Pro", m.version("postgres-mcp"), "(pglast", m.version("pglast") + ", mcp",
      m.version("mcp") + ", psycopg", m.version("psycopg") + ") on Python", sys.version.split()[0])
EOF
echo "$venv/bin/postgres-mcp"
