#!/bin/sh
# How opctl made this project. Replay it in an empty directory named
# `database` (with `opctl` on your PATH) to regenerate every scaffold-owned
# file; `cargo test --test reference_projects database` in the opctl
# repository does exactly that and compares the result byte for byte.
# The operator's behaviour was then written by hand in the user-owned files
# (`opctl files --owner user` lists them).
set -eu

opctl init --domain org --project-name database
opctl create api --group zalando --version v1 --kind Database

opctl create api --group zalando --version v2 --kind Database --controller=false
opctl create webhook --group zalando --version v1 --kind Database --conversion
opctl manifests
