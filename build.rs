//! Rebuilds opctl when a template or the runtime crate changes:
//! `include_dir!` embeds templates/ and crates/runtime/src in the binary,
//! but cargo cannot see files a macro reads. Also tells the code the
//! runtime's version (`OPCTL_RUNTIME_VERSION`), which a project requires.

fn main() {
    println!("cargo::rerun-if-changed=templates");
    println!("cargo::rerun-if-changed=crates/runtime/src");
    println!("cargo::rerun-if-changed=crates/runtime/Cargo.toml");
    println!("cargo::rerun-if-changed=crates/runtime/README.md");
    println!("cargo::rerun-if-changed=crates/runtime/CHANGELOG.md");
    let manifest = std::fs::read_to_string("crates/runtime/Cargo.toml")
        .expect("crates/runtime/Cargo.toml is readable");
    // The first `version = "..."` is the package's: [package] comes first.
    let version = manifest
        .lines()
        .find_map(|line| line.strip_prefix("version = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("crates/runtime/Cargo.toml starts with [package] and its version");
    println!("cargo::rustc-env=OPCTL_RUNTIME_VERSION={version}");
}
