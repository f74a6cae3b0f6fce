#!/usr/bin/env bash
# Makes the newest compatible versions of every dependency a scaffold can
# have the ones opctl ships: scaffolds a project with every option, resolves
# its dependencies afresh, builds, lints and tests it, and only then copies
# its Cargo.lock to templates/Cargo.lock (what `opctl init` writes). Review
# the diff, regenerate the golden trees and the reference projects' locks if
# you want them on the same versions, and run the whole suite.
#
#   scripts/refresh-scaffold-lock.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
OPCTL_REFRESH_LOCK=1 cargo test --locked --test scaffold_lock -- --ignored --exact newest_versions --nocapture
git --no-pager diff --stat -- templates/Cargo.lock
