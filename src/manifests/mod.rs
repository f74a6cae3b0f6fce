//! `opctl manifests`: everything derived from the code. CRDs come from the
//! project's own CRD generator (built and run with cargo), the manager's role
//! from the `+opctl:rbac` markers, the webhook configurations from the
//! `+opctl:webhook` markers, plus the kustomization listing the CRDs.

pub mod crd;
pub mod rbac;
pub mod webhook;

use std::path::Path;

use crate::project::Project;
use crate::scaffold::plans::{CRD_KUSTOMIZATION, ROLE_FILE, crd_kustomization};
use crate::scaffold::{self, IfExists, Owner, Plan, Report};

/// Regenerates the manifests of the project at `root`.
pub fn generate(root: &Path, project: &Project) -> anyhow::Result<Report> {
    let mut rules = rbac::Rules::default();
    rules.add_dir(root, "src")?;
    let mut webhooks = webhook::Markers::default();
    for (path, text) in rbac::rust_sources(root, "src")? {
        webhooks.add_source(&path, &text)?;
    }
    if !webhooks.is_empty() && !project.has_webhooks() {
        anyhow::bail!(
            "src/ has +opctl:webhook markers, but PROJECT records no webhook; scaffold webhooks with `opctl create webhook` (it records them and adds config/webhook)"
        );
    }
    let crds = crd::generate(root, project)?;

    let mut plan = Plan::default();
    let mut files = Vec::new();
    for crd in crds {
        plan.file(
            format!("config/crd/bases/{}", crd.file),
            crd.yaml,
            Owner::Generated,
            IfExists::Overwrite,
        );
        files.push(crd.file);
    }
    files.sort();
    plan.file(
        CRD_KUSTOMIZATION,
        crd_kustomization(&files),
        Owner::Generated,
        IfExists::Overwrite,
    );
    plan.file(
        ROLE_FILE,
        rules.to_yaml(project.namespaced),
        Owner::Generated,
        IfExists::Overwrite,
    );
    if project.has_webhooks() {
        plan.file(
            webhook::MANIFESTS_FILE,
            webhooks.to_yaml()?,
            Owner::Generated,
            IfExists::Overwrite,
        );
    }
    scaffold::apply(root, &plan, "")
}
