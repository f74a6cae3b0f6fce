//! The storage version of each CRD: with several versions of a kind, the
//! API server stores objects in exactly one of them, the one whose type
//! module carries the `// +opctl:storageversion` line. `opctl manifests`
//! reads the markers and sets `storage` on that version only (and `served`
//! on all), whatever the CRD generator chose.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::project::paths::{kind_file, target};
use crate::project::{Project, Resource};

/// The marker, as a line comment of its own.
pub const MARKER: &str = "// +opctl:storageversion";

/// Whether the Rust source `text` carries the marker on a line of its own.
pub fn is_marked(text: &str) -> bool {
    text.lines().any(|line| line.trim() == MARKER)
}

/// The storage version of every CRD of `project`, by CRD name, from the
/// type modules under `root`.
pub fn from_sources(root: &Path, project: &Project) -> anyhow::Result<BTreeMap<String, String>> {
    let mut marked = BTreeSet::new();
    for r in project.crd_resources() {
        let file = kind_file(r);
        let text = std::fs::read_to_string(target(root, &file))
            .with_context(|| format!("cannot read {file}"))?;
        if is_marked(&text) {
            marked.insert(file);
        }
    }
    choose(project, |r| marked.contains(&kind_file(r)))
}

/// The storage version of every CRD, given which versions are marked.
fn choose(
    project: &Project,
    is_marked: impl Fn(&Resource) -> bool,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut versions: BTreeMap<String, Vec<&Resource>> = BTreeMap::new();
    for r in project.crd_resources() {
        versions
            .entry(format!("{}.{}", r.plural, r.api_group))
            .or_default()
            .push(r);
    }
    let mut storage = BTreeMap::new();
    for (crd, versions) in versions {
        let marked: Vec<&Resource> = versions.iter().copied().filter(|r| is_marked(r)).collect();
        let chosen = match (versions.as_slice(), marked.as_slice()) {
            (_, [one]) => one,
            ([only], []) => only,
            (_, []) => anyhow::bail!(
                "{crd} has versions {} but none is marked as the storage version; add the line `{MARKER}` above the type of one of them (in {})",
                list(&versions),
                kind_file(versions[0])
            ),
            (_, several) => anyhow::bail!(
                "{crd} marks versions {} as the storage version; keep the line `{MARKER}` in one of them only",
                list(several)
            ),
        };
        storage.insert(crd, chosen.version.clone());
    }
    Ok(storage)
}

fn list(versions: &[&Resource]) -> String {
    let names: Vec<&str> = versions.iter().map(|r| r.version.as_str()).collect();
    names.join(", ")
}

/// Serves every version of `crd` and stores `version`.
pub fn set(crd: &mut CustomResourceDefinition, version: &str) -> anyhow::Result<()> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    if !crd.spec.versions.iter().any(|v| v.name == version) {
        anyhow::bail!("the CRD generator printed {name} without its storage version {version}");
    }
    for v in &mut crd.spec.versions {
        v.served = true;
        v.storage = v.name == version;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::License;

    fn project(versions: &[&str]) -> Project {
        let mut project = Project::new("org", "database", None, License::None, false);
        for version in versions {
            project.resources.push(Resource {
                group: "zalando".into(),
                api_group: "zalando.org".into(),
                version: (*version).into(),
                kind: "Database".into(),
                plural: "databases".into(),
                namespaced: true,
                resource: true,
                builtin: false,
                controller: false,
                finalizer: false,
                path: format!("database::api::zalando::{version}::Database"),
                webhooks: None,
                deploy_image: None,
            });
        }
        project
    }

    #[test]
    fn the_marker_is_a_line_of_its_own() {
        assert!(is_marked(
            "/// Doc.\n    // +opctl:storageversion\n#[derive(X)]\n"
        ));
        assert!(!is_marked("// +opctl:storageversion2\n"));
        assert!(!is_marked("// see +opctl:storageversion\n"));
    }

    #[test]
    fn the_marked_version_is_stored() {
        let project = project(&["v1", "v2"]);
        let storage = choose(&project, |r| r.version == "v2").expect("one marked");
        assert_eq!(storage["databases.zalando.org"], "v2");
    }

    #[test]
    fn a_single_version_needs_no_marker() {
        let storage = choose(&project(&["v1"]), |_| false).expect("implied");
        assert_eq!(storage["databases.zalando.org"], "v1");
    }

    #[test]
    fn none_or_two_marked_is_a_one_line_error() {
        let project = project(&["v1", "v2"]);
        let err = choose(&project, |_| false).expect_err("none").to_string();
        assert!(err.contains("versions v1, v2 but none is marked"), "{err}");
        assert!(err.contains("api/src/zalando/v1/database.rs") && !err.contains('\n'));
        let err = choose(&project, |_| true).expect_err("both").to_string();
        assert!(err.contains("marks versions v1, v2"), "{err}");
        assert!(err.contains("in one of them only") && !err.contains('\n'));
    }

    #[test]
    fn only_the_storage_version_is_stored_and_all_are_served() {
        let mut crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "databases.zalando.org"},
            "spec": {
                "group": "zalando.org",
                "names": {"kind": "Database", "plural": "databases"},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1", "served": true, "storage": true},
                    {"name": "v2", "served": false, "storage": false},
                ],
            },
        }))
        .expect("a CRD");
        set(&mut crd, "v2").expect("v2 exists");
        let flags: Vec<(bool, bool)> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.served, v.storage))
            .collect();
        assert_eq!(flags, [(true, false), (true, true)]);
        assert!(set(&mut crd, "v3").is_err());
    }
}
