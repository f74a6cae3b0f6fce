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

/// `config/crd/bases/<file>`: where a CRD file is written.
pub fn crd_base(file: &str) -> String {
    format!("config/crd/bases/{file}")
}

/// `<api group>_<plural>.yaml`: a kind's CRD file under config/crd/bases.
pub fn crd_file(r: &Resource) -> String {
    format!("{}_{}.yaml", r.api_group, r.plural)
}

/// `root/relative` for a project path written with '/' separators.
pub fn target(root: &Path, relative: &str) -> PathBuf {
    relative
        .split('/')
        .fold(root.to_path_buf(), |path, part| path.join(part))
}
