//! The crate's documentation builds without a warning: every public item
//! documented (the crate denies `missing_docs`), no broken or private
//! intra-doc link, no bad code block. `cargo doc` is run here so that the
//! test suite (and CI) catches what `cargo test` alone would not.

use std::path::Path;
use std::process::Command;

/// `cargo doc -p opctl-runtime` with `features` after it succeeds with
/// warnings denied.
fn assert_documented(features: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // The workspace's target directory (the parent of the tests' scratch
    // directory): the dependencies' metadata is shared with other builds.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
        .to_path_buf();
    let out = Command::new(cargo)
        .args(["doc", "--locked", "--no-deps", "-p", "opctl-runtime"])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUSTDOCFLAGS", "-D warnings")
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo doc -p opctl-runtime {features:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_documentation_builds_without_a_warning() {
    assert_documented(&[]);
}

/// What an API crate's generator takes (`default-features = false`).
#[test]
fn the_documentation_of_crdgen_alone_builds_without_a_warning() {
    assert_documented(&["--no-default-features"]);
}
