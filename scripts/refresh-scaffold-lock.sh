#!/usr/bin/env bash
# Makes the newest compatible versions of every dependency a scaffold can
# have the ones opctl ships: scaffolds a project with every option, resolves
# its dependencies afresh, builds, lints and tests it, and only then copies
# its Cargo.lock to templates/Cargo.lock (what `opctl init` writes). Review
# the diff, move opctl's own lock and the reference projects' locks to the
# same releases (the scaffold_lock test names each one that differs, and the
# `cargo update --precise` that aligns it: tests build generated projects in
# the workspace's target directory, and a differing release rebuilds every
# crate above it), regenerate the golden trees, and run the whole suite.
#
#   scripts/refresh-scaffold-lock.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
OPCTL_REFRESH_LOCK=1 cargo test --locked --test scaffold_lock -- --ignored --exact newest_versions --nocapture
git --no-pager diff --stat -- templates/Cargo.lock
