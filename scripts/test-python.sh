#!/usr/bin/env bash
# npm run test:python: the Python-side tests (python/tests) with the pinned environment
# (scripts/python-env.sh). Arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$("$root/scripts/python-env.sh")"
cd "$root"
export SEARCHER_RL_PYTHON="$python"
exec "$python" -m pytest python/tests "$@"
