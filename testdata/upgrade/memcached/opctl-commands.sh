#!/bin/sh
# How opctl made this project, with the scaffold layout opctl.rs/v1 (one
# crate; the API types under src/api). It is kept as that layout made it,
# plus two hand edits (a `size` field in src/api/cache/v1alpha1/memcached.rs
# and a step in src/controller/memcached.rs): tests/upgrade_project.rs
# upgrades a copy with `opctl upgrade` and checks that it builds, passes its
# tests and keeps the hand edits.
set -eu

opctl init --domain example.com --project-name memcached
opctl create api --group cache --version v1alpha1 --kind Memcached
opctl create webhook --group cache --version v1alpha1 --kind Memcached --programmatic-validation
opctl manifests
