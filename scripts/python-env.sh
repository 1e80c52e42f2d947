#!/usr/bin/env bash
# Creates (or reuses) the Python environment the Python-side tests run in, and prints its python.
# The environment is .cache/python-env, or $SEARCHER_RL_VENV; it is rebuilt only when
# python/requirements.txt changes (its hash is kept in the environment).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${SEARCHER_RL_VENV:-$root/.cache/python-env}"
requirements="$root/python/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  start=$(date +%s)
  echo "python-env: installing python/requirements.txt into $venv (first time: several minutes)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  echo "$want" >"$stamp"
  echo "python-env: ready in $(($(date +%s) - start)) s" >&2
fi
echo "$venv/bin/python"
