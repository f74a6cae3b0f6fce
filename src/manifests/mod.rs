//! `opctl manifests`: everything derived from the code. CRDs come from the
//! project's own CRD generator (built and run with cargo), the manager's role
//! from the `+opctl:rbac` markers, the webhook configurations from the
//! `+opctl:webhook` markers, plus the kustomization listing the CRDs. This
//! module computes them; the command writes them with the scaffold engine.

pub mod chart;
pub mod crd;
pub mod rbac;
pub mod storage;
pub mod webhook;

use std::path::Path;

use crate::project::Project;
use crate::project::paths::{CRD_KUSTOMIZATION, ROLE_FILE, WEBHOOK_MANIFESTS, crd_base};

/// One derived file: its path in the project and its contents.
#[derive(Debug)]
pub struct Manifest {
    pub path: String,
    pub contents: String,
}

/// The manifests of the project at `root`, as the code now says.
pub fn generate(root: &Path, project: &Project) -> anyhow::Result<Vec<Manifest>> {
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

    let mut out = Vec::new();
    let mut files = Vec::new();
    for crd in crds {
        out.push(Manifest {
            path: crd_base(&crd.file),
            contents: crd.yaml,
        });
        files.push(crd.file);
    }
    files.sort();
    out.push(Manifest {
        path: CRD_KUSTOMIZATION.to_owned(),
        contents: crd::kustomization(&files, &crate::project::paths::crd_patches(project)),
    });
    out.push(Manifest {
        path: ROLE_FILE.to_owned(),
        contents: rules.to_yaml(project.namespaced),
    });
    if project.has_webhooks() {
        out.push(Manifest {
            path: WEBHOOK_MANIFESTS.to_owned(),
            contents: webhooks.to_yaml()?,
        });
    }
    if project.helm {
        // The chart's copies follow the files just derived.
        let config = out
            .iter()
            .map(|m| (m.path.clone(), m.contents.clone()))
            .collect();
        out.extend(chart::generated(project, &config)?);
    }
    Ok(out)
}
