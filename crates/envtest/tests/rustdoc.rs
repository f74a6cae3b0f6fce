//! The crate's documentation builds without a warning: every public item
//! documented (the crate warns on `missing_docs`, which `-D warnings` makes
//! an error here), no broken or private intra-doc link, no bad code block;
//! both the public face and the `testing` face this crate's own suites use.
//! `cargo doc` is run here so that the test suite (and CI) catches what
//! `cargo test` alone would not, as `crates/runtime/tests/rustdoc.rs` does
//! for the runtime.

use std::path::Path;
use std::process::Command;

fn cargo_doc(extra: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // The workspace's target directory (the parent of the tests' scratch
    // directory): the dependencies' metadata is shared with other builds.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
        .to_path_buf();
    let out = Command::new(cargo)
        .args(["doc", "--locked", "--no-deps", "-p", "opctl-envtest"])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUSTDOCFLAGS", "-D warnings")
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo doc -p opctl-envtest {}:\n{}",
        extra.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_documentation_builds_without_a_warning() {
    cargo_doc(&[]);
}

#[test]
fn the_documentation_of_the_testing_face_builds_without_a_warning() {
    cargo_doc(&["--features", "testing"]);
}
