#!/usr/bin/env bash
# npm run test:python: the Python-side tests, each test folder in its pinned environment
# (scripts/python-env.sh). Every requirements file names an environment and a test folder:
#   python/requirements.txt       -> the main environment (transformers, TRL, OpenEnv, SkyRL, ...) -> python/tests
#   python/requirements-NAME.txt  -> environment NAME (verl: it pins an older transformers)       -> python/tests_NAME
# the main one first. A requirements file without its test folder is skipped. Arguments go to every
# pytest run; the status is the last failing run's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# This checkout's package first (an environment shared between checkouts has another one installed).
export PYTHONPATH="$root/python/src${PYTHONPATH:+:$PYTHONPATH}"
status=0
for requirements in python/requirements.txt python/requirements-*.txt; do
  [ -f "$requirements" ] || continue
  name="$(basename "$requirements" .txt)"
  name="${name#requirements}"
  name="${name#-}"
  tests="python/tests${name:+_$name}"
  if [ ! -d "$tests" ]; then
    echo "test-python: no $tests for $requirements; skipped" >&2
    continue
  fi
  python="$("$root/scripts/python-env.sh" ${name:+"$name"})"
  echo "test-python: $tests with $python" >&2
  SEARCHER_RL_PYTHON="$python" "$python" -m pytest "$tests" "$@" || status=$?
done
exit "$status"
