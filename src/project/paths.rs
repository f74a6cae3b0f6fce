//! Where a project's derived files live: the paths both the scaffolder (which
//! writes first versions) and `opctl manifests` (which regenerates them) use.

use std::path::{Path, PathBuf};

use super::Resource;

/// The manager's role, from the `+opctl:rbac` markers.
pub const ROLE_FILE: &str = "config/rbac/role.yaml";
/// The kustomization listing the CRDs.
pub const CRD_KUSTOMIZATION: &str = "config/crd/kustomization.yaml";
/// The webhook configurations, from the `+opctl:webhook` markers.
pub const WEBHOOK_MANIFESTS: &str = "config/webhook/manifests.yaml";

/// The crate of the API types and the CRD generator; see [`api_file`].
pub const API_DIR: &str = "api";

/// `api/<relative>`: a file of the API types' crate (`src/lib.rs`,
/// `src/<group>/<version>/<kind>.rs`).
pub fn api_file(relative: &str) -> String {
    format!("{API_DIR}/{relative}")
}

/// Where the pristine copies of user-owned files live: each as opctl last
/// generated it, the common base `opctl upgrade` merges from.
pub const PRISTINE_DIR: &str = ".opctl/pristine";

/// The project's lock file: the versions it builds with (at first, those
/// opctl tested).
pub const LOCK_FILE: &str = "Cargo.lock";

/// Whether the user-owned file `relative` gets a pristine copy: every one
/// but the lock, which `opctl upgrade` merges by package, not by line.
pub fn has_pristine_copy(relative: &str) -> bool {
    relative != LOCK_FILE
}

/// The scaffolding commands that made the project, in order.
pub const HISTORY_FILE: &str = ".opctl/history.yaml";

/// The pristine copy of the user-owned file `relative`.
pub fn pristine(relative: &str) -> String {
    format!("{PRISTINE_DIR}/{relative}")
}

/// Where the Helm chart lives in a project (`opctl edit --helm`).
pub const CHART_DIR: &str = "dist/chart";

/// `dist/chart/<relative>`: a file of the Helm chart.
pub fn chart_file(relative: &str) -> String {
    format!("{CHART_DIR}/{relative}")
}

/// `config/crd/bases/<file>`: where a CRD file is written.
pub fn crd_base(file: &str) -> String {
    format!("config/crd/bases/{file}")
}

/// The patches of config/crd a kind that converts has (`webhook_in`,
/// `cainjection_in`), each from the template of the same name.
pub const CRD_CONVERSION_PATCHES: &[&str] = &["webhook_in", "cainjection_in"];

/// `patches/webhook_in_databases.yaml`: a patch of config/crd, relative to it.
pub fn crd_patch_name(hub: &Resource, file: &str) -> String {
    format!("patches/{file}_{}.yaml", hub.plural)
}

/// The config/crd patches of every kind that converts (relative to config/crd).
pub fn crd_patches(project: &super::Project) -> Vec<String> {
    let hubs = project.resources.iter().filter(|r| r.webhooks().conversion);
    hubs.flat_map(|hub| {
        CRD_CONVERSION_PATCHES
            .iter()
            .map(|file| crd_patch_name(hub, file))
    })
    .collect()
}

/// `<api group>_<plural>.yaml`: a kind's CRD file under config/crd/bases.
pub fn crd_file(r: &Resource) -> String {
    format!("{}_{}.yaml", r.api_group, r.plural)
}

/// `api/src/<group>/<version>/<kind>.rs`: the user-owned module of a kind's type.
pub fn kind_file(r: &Resource) -> String {
    api_file(&format!(
        "src/{}/{}/{}.rs",
        super::names::group_module(&r.group),
        r.version,
        super::names::kind_module(&r.kind)
    ))
}

/// `root/relative` for a project path written with '/' separators.
pub fn target(root: &Path, relative: &str) -> PathBuf {
    relative
        .split('/')
        .fold(root.to_path_buf(), |path, part| path.join(part))
}
