#!/bin/sh
# The opctl commands that made this project, in order. Only the files that
# `opctl files --owner user` lists (the types, the reconciler, the webhook
# handlers, src/main.rs, tests/e2e.rs, README.md, Cargo.toml, ...) were
# edited by hand afterwards.
#
# Replay them in an empty directory to regenerate the scaffold-owned files
# (CI does, and compares them byte for byte with this directory):
#   mkdir /tmp/sidecarset && cd /tmp/sidecarset
#   sh /path/to/testdata/sidecarset/opctl-commands.sh
# then copy the user-owned files over and run `opctl manifests` once more.
set -eu

opctl init --domain kruise.io --project-name sidecarset
opctl create api --group apps --version v1alpha1 --kind SidecarSet --namespaced=false
opctl create webhook --group apps --version v1alpha1 --kind SidecarSet --defaulting --programmatic-validation
opctl create webhook --group core --version v1 --kind Pod --defaulting
opctl manifests
