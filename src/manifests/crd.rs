//! CRDs from the Rust types: `opctl manifests` builds and runs the project's
//! `<project>-crdgen` binary (cargo shows its progress), checks that every
//! document it prints is a CustomResourceDefinition, and renders one YAML
//! file per CRD. The generator lives in the API types' crate (api/), so only
//! that crate is built, not the manager: seconds instead of a minute in a
//! fresh project, a fraction of a second after a change to a type.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::project::Project;

/// One CRD, ready to be written under config/crd/bases.
#[derive(Debug)]
pub struct CrdFile {
    /// `<group>_<plural>.yaml`
    pub file: String,
    pub yaml: String,
}

/// Builds and runs the CRD generator; no CRD kinds means nothing to build.
pub fn generate(root: &Path, project: &Project) -> anyhow::Result<Vec<CrdFile>> {
    if project.crd_resources().next().is_none() {
        return Ok(Vec::new());
    }
    // A missing or doubled storage-version marker fails before the build.
    let storage = super::storage::from_sources(root, project)?;
    let bin = format!("{}-crdgen", project.project_name);
    let package = project.api_package();
    let command = format!("cargo run -p {package} --bin {bin}");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("Generating CRDs: building and running {bin} ({command})");
    // cargo finds the workspace and honours CARGO_TARGET_DIR by itself.
    let output = Command::new(&cargo)
        .args(["run", "-p", &package, "--bin", &bin, "--", "--json"])
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .context(
            "cannot run cargo; install Rust (https://rustup.rs) and run `opctl manifests` again",
        )?;
    if !output.status.success() {
        anyhow::bail!(
            "the project does not compile: `{command}` failed ({}); fix the errors cargo printed above and run `opctl manifests` again",
            output.status
        );
    }
    parse(&output.stdout, &storage)
        .with_context(|| format!("{bin} printed something other than CRDs"))
}

/// The CRDs in the generator's JSON output, sorted by file name, each
/// storing the version `storage` names for it (by CRD name).
pub fn parse(json: &[u8], storage: &BTreeMap<String, String>) -> anyhow::Result<Vec<CrdFile>> {
    let crds: Vec<CustomResourceDefinition> = serde_json::from_slice(json)?;
    let mut files = Vec::new();
    for mut crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if let Some(version) = storage.get(&name) {
            super::storage::set(&mut crd, version)?;
        }
        let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
        let body = serde_saphyr::to_string(&crd).context("cannot render a CRD as YAML")?;
        let yaml =
            format!("# Written by `opctl manifests` from api/src. DO NOT EDIT.\n---\n{body}");
        files.push(CrdFile { file, yaml });
    }
    files.sort_by(|a, b| a.file.cmp(&b.file));
    if let Some(pair) = files.windows(2).find(|w| w[0].file == w[1].file) {
        anyhow::bail!("two CRDs would both be written to {}", pair[0].file);
    }
    Ok(files)
}

/// config/crd/kustomization.yaml listing `files` (names under
/// config/crd/bases) and `patches` (paths relative to config/crd: the
/// conversion webhook of kinds that convert).
pub fn kustomization(files: &[String], patches: &[String]) -> String {
    let mut out = String::from(
        "# The CRDs of this project: kubectl apply -k config/crd\n\
         # Written by `opctl manifests` from api/src. DO NOT EDIT.\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n",
    );
    if files.is_empty() {
        out.push_str("resources: []\n");
    } else {
        out.push_str("resources:\n");
        for file in files {
            out.push_str(&format!("- bases/{file}\n"));
        }
    }
    if !patches.is_empty() {
        out.push_str("patches:\n");
        for patch in patches {
            out.push_str(&format!("- path: {patch}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRD: &str = r#"[{
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.zalando.org"},
        "spec": {
            "group": "zalando.org",
            "names": {"kind": "Database", "plural": "databases"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}]
        }
    }]"#;

    #[test]
    fn crds_become_yaml_files_that_parse_back() {
        let files = parse(CRD.as_bytes(), &BTreeMap::new()).expect("parses");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].file, "zalando.org_databases.yaml");
        let back: CustomResourceDefinition =
            serde_saphyr::from_str(&files[0].yaml).expect("YAML parses");
        assert_eq!(back.metadata.name.as_deref(), Some("databases.zalando.org"));
        assert_eq!(
            parse(CRD.as_bytes(), &BTreeMap::new()).expect("parses")[0].yaml,
            files[0].yaml,
            "deterministic"
        );
    }

    #[test]
    fn other_output_is_rejected() {
        assert!(parse(b"[{\"kind\": \"Pod\"}]", &BTreeMap::new()).is_err());
        assert!(parse(b"hello", &BTreeMap::new()).is_err());
    }
}
