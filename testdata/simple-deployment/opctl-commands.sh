#!/bin/sh
# The opctl commands that made this project, in order. Only the files that
# `opctl files --owner user` lists (the reconciler, src/main.rs, tests/e2e.rs,
# README.md, Cargo.toml, ...) were edited by hand afterwards.
#
# Replay them in an empty directory to regenerate the scaffold-owned files
# (CI does, and compares them byte for byte with this directory):
#   mkdir /tmp/simple-deployment && cd /tmp/simple-deployment
#   sh /path/to/testdata/simple-deployment/opctl-commands.sh
# then copy the user-owned files over and run `opctl manifests` once more.
set -eu

opctl init --domain example.com --project-name simple-deployment
opctl create api --group apps --version v1 --kind Deployment --resource=false
opctl manifests
