#!/usr/bin/env bash
# npm run test:python: the Python-side tests with their pinned environments (scripts/python-env.sh):
# python/tests in the main one (transformers, TRL, OpenEnv, TensorBoard, MLflow, ONNX Runtime),
# python/tests_verl in verl's. Arguments go to both pytest runs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# This checkout's package first (an environment shared between checkouts has another one installed).
export PYTHONPATH="$root/python/src${PYTHONPATH:+:$PYTHONPATH}"
status=0
python="$("$root/scripts/python-env.sh")"
SEARCHER_RL_PYTHON="$python" "$python" -m pytest python/tests "$@" || status=$?
if [ -d python/tests_verl ]; then
  verl_python="$("$root/scripts/python-env.sh" verl)"
  SEARCHER_RL_PYTHON="$verl_python" "$verl_python" -m pytest python/tests_verl "$@" || status=$?
fi
exit "$status"
