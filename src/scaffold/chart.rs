//! The Helm chart of a project (dist/chart), turned on by `opctl edit --helm`
//! and recorded in PROJECT. Three kinds of files, owned as the rest of the
//! project's: Chart.yaml and values.yaml are the user's (written once); the
//! helpers and the templates of the fixed objects are regenerated from
//! PROJECT by every command; the templates of the CRDs, the manager's role
//! and the webhook configurations are derived from config/ (see
//! [`crate::manifests::chart`]) by `opctl edit --helm`, `opctl manifests` and the `create`
//! commands, whichever last wrote config/.

use super::templates::Renderer;
use super::{IfExists, Owner, Plan};
use crate::project::Project;
use crate::project::paths::chart_file as path;

/// Templates of every chart: (path under dist/chart, template).
const SCAFFOLD_TEMPLATES: &[(&str, &str)] = &[
    (".helmignore", "chart/helmignore"),
    ("templates/_helpers.tpl", "chart/templates/_helpers.tpl"),
    (
        "templates/manager/manager.yaml",
        "chart/templates/manager/manager.yaml",
    ),
    (
        "templates/metrics/metrics_service.yaml",
        "chart/templates/metrics/metrics_service.yaml",
    ),
    (
        "templates/network-policy/allow-metrics-traffic.yaml",
        "chart/templates/network-policy/allow-metrics-traffic.yaml",
    ),
    (
        "templates/rbac/leader_election_role.yaml",
        "chart/templates/rbac/leader_election_role.yaml",
    ),
    (
        "templates/rbac/leader_election_role_binding.yaml",
        "chart/templates/rbac/leader_election_role_binding.yaml",
    ),
    (
        "templates/rbac/metrics_auth_role.yaml",
        "chart/templates/rbac/metrics_auth_role.yaml",
    ),
    (
        "templates/rbac/metrics_auth_role_binding.yaml",
        "chart/templates/rbac/metrics_auth_role_binding.yaml",
    ),
    (
        "templates/rbac/metrics_reader_role.yaml",
        "chart/templates/rbac/metrics_reader_role.yaml",
    ),
    (
        "templates/rbac/role_binding.yaml",
        "chart/templates/rbac/role_binding.yaml",
    ),
    (
        "templates/rbac/service_account.yaml",
        "chart/templates/rbac/service_account.yaml",
    ),
];

/// Templates of a chart whose project has webhooks.
const WEBHOOK_TEMPLATES: &[(&str, &str)] = &[
    (
        "templates/certmanager/certificate.yaml",
        "chart/templates/certmanager/certificate.yaml",
    ),
    (
        "templates/network-policy/allow-webhook-traffic.yaml",
        "chart/templates/network-policy/allow-webhook-traffic.yaml",
    ),
    (
        "templates/webhook/service.yaml",
        "chart/templates/webhook/service.yaml",
    ),
];

/// The user's files, written once.
const USER_TEMPLATES: &[(&str, &str)] = &[
    ("Chart.yaml", "chart/Chart.yaml"),
    ("values.yaml", "chart/values.yaml"),
];

/// Adds the chart's scaffold-owned templates when the project has a chart.
pub fn scaffold_owned(
    project: &Project,
    context: &tera::Context,
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    if !project.helm {
        return Ok(());
    }
    let webhooks: &[(&str, &str)] = if project.has_webhooks() {
        WEBHOOK_TEMPLATES
    } else {
        &[]
    };
    for (file, template) in SCAFFOLD_TEMPLATES.iter().chain(webhooks) {
        plan.file(
            path(file),
            renderer.render(template, context)?,
            Owner::Scaffold,
            IfExists::Overwrite,
        );
    }
    Ok(())
}

/// Adds Chart.yaml and values.yaml, kept when they exist.
pub fn user_files(
    context: &tera::Context,
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    for (file, template) in USER_TEMPLATES {
        plan.file(
            path(file),
            renderer.render(template, context)?,
            Owner::User,
            IfExists::Skip,
        );
    }
    Ok(())
}
