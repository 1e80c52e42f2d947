#!/usr/bin/env bash
# Creates (or reuses) a Python environment for the Python-side tests, and prints its python.
#   scripts/python-env.sh         python/requirements.txt      -> .cache/python-env       ($SEARCHER_RL_VENV)
#   scripts/python-env.sh verl    python/requirements-verl.txt -> .cache/python-env-verl  ($SEARCHER_RL_VENV_VERL)
# verl 0.9 pins transformers below 5.11, the rest of the stack (TRL 1.16's tool parsing) wants a newer
# one, so verl has an environment of its own. Each is rebuilt only when its requirements file
# changes (the hash is kept in the environment); the trainer-side package (python/) is installed
# into it, editable, so that its entry points (verl.plugins) are registered.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name="${1:-}"
if [ -z "$name" ]; then
  venv="${SEARCHER_RL_VENV:-$root/.cache/python-env}"
  requirements="$root/python/requirements.txt"
else
  var="SEARCHER_RL_VENV_$(echo "$name" | tr '[:lower:]-' '[:upper:]_')"
  venv="${!var:-$root/.cache/python-env-$name}"
  requirements="$root/python/requirements-$name.txt"
fi
[ -f "$requirements" ] || { echo "python-env: no $requirements" >&2; exit 2; }
stamp="$venv/.requirements.sha256"
want="$(cat "$requirements" "$root/python/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  start=$(date +%s)
  echo "python-env: installing $(basename "$requirements") into $venv (first time: several minutes)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -e "$root/python" >&2
  echo "$want" >"$stamp"
  echo "python-env: ready in $(($(date +%s) - start)) s" >&2
fi
echo "$venv/bin/python"
