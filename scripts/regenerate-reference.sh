#!/usr/bin/env bash
# Rewrites the scaffold-owned files of a reference project in testdata/ from
# its recorded commands, after a template change. User-owned and generated
# files are left alone; run `opctl manifests` in the project afterwards if
# templates of generated files changed.
#
#   scripts/regenerate-reference.sh simple-deployment [database ...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --quiet --manifest-path "$root/Cargo.toml" --bin opctl
opctl="${CARGO_TARGET_DIR:-$root/target}/debug/opctl"
for name in "$@"; do
  project="$root/testdata/$name"
  [ -f "$project/opctl-commands.sh" ] || { echo "error: $project/opctl-commands.sh not found; name a directory of testdata/" >&2; exit 1; }
  work="$(mktemp -d)"
  mkdir "$work/$name"
  (cd "$work/$name" && grep '^opctl ' "$project/opctl-commands.sh" | grep -v '^opctl manifests' | while read -r _ args; do
    # shellcheck disable=SC2086 # recorded commands are plain words
    "$opctl" $args >/dev/null
  done)
  (cd "$work/$name" && "$opctl" files --owner scaffold) | while read -r rel; do
    mkdir -p "$(dirname "$project/$rel")"
    cp "$work/$name/$rel" "$project/$rel"
  done
  rm -rf "$work"
  echo "regenerated the scaffold-owned files of testdata/$name"
done
