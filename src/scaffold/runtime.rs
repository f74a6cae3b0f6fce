//! The manager runtime a project depends on: the library `opctl-runtime`
//! (`crates/runtime` in opctl's repository), versioned with opctl. Until it
//! is published, `opctl init` and `opctl upgrade` put its source for this
//! opctl under `.opctl/runtime/` in the project, which `Cargo.toml` points
//! at with `[patch.crates-io]`, so that the project builds offline and in
//! its own Docker build context. Once the crate is on crates.io, removing
//! that patch line is all it takes.
//!
//! The copy is the crate as it would be published: its sources, README,
//! changelog and a manifest without workspace inheritance, dev-dependencies
//! or benches (what only opctl's own tests of the crate use).

use anyhow::Context as _;
use include_dir::{Dir, include_dir};

/// The sources of the runtime crate.
static SOURCES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/crates/runtime/src");
/// Its manifest, with `workspace = true` fields and dev-dependencies.
const MANIFEST: &str = include_str!("../../crates/runtime/Cargo.toml");
/// The workspace's manifest, whose `[workspace.package]` fills them in.
const WORKSPACE_MANIFEST: &str = include_str!("../../Cargo.toml");
const README: &str = include_str!("../../crates/runtime/README.md");
const CHANGELOG: &str = include_str!("../../crates/runtime/CHANGELOG.md");

/// Where a project keeps the copy.
pub const DIR: &str = ".opctl/runtime";

/// The runtime's version (that of this opctl's `crates/runtime`).
pub const VERSION: &str = env!("OPCTL_RUNTIME_VERSION");

/// The requirement a project's `Cargo.toml` writes for the runtime: the
/// version's compatible range (`0.1` for 0.1.x, `1` for 1.x).
pub fn requirement() -> String {
    let mut parts = VERSION.split('.');
    let (major, minor) = (parts.next().unwrap_or("0"), parts.next().unwrap_or("0"));
    if major == "0" {
        format!("0.{minor}")
    } else {
        major.to_owned()
    }
}

/// Whether a project's `Cargo.toml` takes the runtime from the copy under
/// [`DIR`] (and not, say, from opctl's repository or from crates.io).
pub fn is_vendored(cargo_toml: &str) -> bool {
    cargo_toml.contains(&format!("path = \"{DIR}\""))
}

/// Every file of the copy: its path in the project, its text.
pub fn files() -> anyhow::Result<Vec<(String, String)>> {
    let mut files = vec![
        (format!("{DIR}/Cargo.toml"), manifest()?),
        (format!("{DIR}/README.md"), README.to_owned()),
        (format!("{DIR}/CHANGELOG.md"), CHANGELOG.to_owned()),
    ];
    let mut dirs = vec![&SOURCES];
    while let Some(dir) = dirs.pop() {
        for file in dir.files() {
            let text = file
                .contents_utf8()
                .with_context(|| format!("{} is not UTF-8", file.path().display()))?;
            let path = file.path().to_string_lossy().replace('\\', "/");
            files.push((format!("{DIR}/src/{path}"), text.to_owned()));
        }
        dirs.extend(dir.dirs());
    }
    files.sort();
    Ok(files)
}

/// The manifest of the copy: the runtime's, with what it inherits from
/// opctl's workspace written out and what only opctl's tests use left out.
fn manifest() -> anyhow::Result<String> {
    let mut manifest: toml::Table =
        toml::from_str(MANIFEST).context("crates/runtime/Cargo.toml is broken")?;
    let workspace: toml::Table = toml::from_str(WORKSPACE_MANIFEST)?;
    let inherited = workspace
        .get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(toml::Value::as_table)
        .context("opctl's Cargo.toml has no [workspace.package]")?;
    let package = manifest
        .get_mut("package")
        .and_then(toml::Value::as_table_mut)
        .context("crates/runtime/Cargo.toml has no [package]")?;
    for (key, value) in package.iter_mut() {
        let from_workspace = value
            .as_table()
            .and_then(|t| t.get("workspace"))
            .and_then(toml::Value::as_bool)
            == Some(true);
        if from_workspace {
            *value = inherited
                .get(key)
                .with_context(|| format!("[workspace.package] lacks {key}"))?
                .clone();
        }
    }
    for opctl_only in ["dev-dependencies", "bench", "test", "example"] {
        manifest.remove(opctl_only);
    }
    // [package] first, as people write manifests (a table sorts its keys).
    let mut package = toml::Table::new();
    package.extend(manifest.remove_entry("package"));
    let body = format!(
        "{}\n{}",
        toml::to_string(&package)?,
        toml::to_string(&manifest)?
    );
    Ok(format!(
        "# opctl-runtime as opctl vendors it into a project until the crate is\n\
         # published: written by `opctl init` and `opctl upgrade`. Do not edit.\n\n{body}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_holds_the_sources_and_a_manifest_of_its_own() {
        let files = files().expect("the copy");
        let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        for path in [
            ".opctl/runtime/Cargo.toml",
            ".opctl/runtime/README.md",
            ".opctl/runtime/CHANGELOG.md",
            ".opctl/runtime/src/lib.rs",
            ".opctl/runtime/src/webhook/mod.rs",
        ] {
            assert!(paths.contains(&path), "{path} in {paths:?}");
        }
        let manifest = &files
            .iter()
            .find(|(p, _)| p.ends_with("Cargo.toml"))
            .expect("a manifest")
            .1;
        let parsed: toml::Table = toml::from_str(manifest).expect("valid TOML");
        let package = parsed["package"].as_table().expect("[package]");
        assert_eq!(package["name"].as_str(), Some("opctl-runtime"));
        assert_eq!(package["edition"].as_str(), Some("2024"));
        assert!(!manifest.contains("workspace = true"), "{manifest}");
        assert!(!parsed.contains_key("dev-dependencies"), "{manifest}");
        assert!(!parsed.contains_key("bench"), "{manifest}");
        assert!(
            parsed["dependencies"]
                .as_table()
                .unwrap()
                .contains_key("kube")
        );
    }

    #[test]
    fn a_project_requires_the_compatible_range() {
        let manifest: toml::Table = toml::from_str(MANIFEST).expect("TOML");
        assert_eq!(manifest["package"]["version"].as_str(), Some(VERSION));
        assert!(VERSION.starts_with(&requirement()), "{VERSION}");
    }

    #[test]
    fn only_a_patch_to_the_copy_counts_as_vendored() {
        assert!(is_vendored(
            "[patch.crates-io]\nopctl-runtime = { path = \".opctl/runtime\" }\n"
        ));
        assert!(!is_vendored(
            "[patch.crates-io]\nopctl-runtime = { path = \"../../crates/runtime\" }\n"
        ));
    }
}
