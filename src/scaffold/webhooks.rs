//! The webhook parts of every plan (`opctl create webhook`'s among them):
//! the user-owned handler modules and their registration, the scaffold-owned
//! webhook server of the manager, config/webhook, config/certmanager and the
//! e2e support, and config/webhook/manifests.yaml from the markers.

use std::collections::BTreeMap;
use std::path::Path;

use super::templates::Renderer;
use super::values::{ResourceValues, Values, WebhookGroup, WebhookValues, WebhookVersion};
use super::{IfExists, Owner, Plan};
use crate::manifests::rbac::rust_sources;
use crate::manifests::webhook as webhook_manifests;
use crate::project::paths::{self, WEBHOOK_MANIFESTS};
use crate::project::{Project, Resource, Webhooks, builtin_samples, names};

/// The kinds of webhook `opctl create webhook` scaffolds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookKind {
    /// Mutating: fills in defaults (`--defaulting`).
    Defaulting,
    /// Validating: allows or denies (`--programmatic-validation`).
    Validation,
    /// Conversion between the versions of a kind through its hub
    /// (`--conversion`, given on the hub): one module per spoke.
    Conversion,
}

impl WebhookKind {
    pub const ALL: [WebhookKind; 3] = [
        WebhookKind::Defaulting,
        WebhookKind::Validation,
        WebhookKind::Conversion,
    ];
    /// The admission webhooks, named in a webhook configuration.
    const ADMISSION: [WebhookKind; 2] = [WebhookKind::Defaulting, WebhookKind::Validation];

    /// `defaulting` or `validation`: in messages and module names.
    pub fn describe(self) -> &'static str {
        match self {
            WebhookKind::Defaulting => "defaulting",
            WebhookKind::Validation => "validation",
            WebhookKind::Conversion => "conversion",
        }
    }

    /// What the user writes in the handler module.
    pub fn what_to_edit(self) -> &'static str {
        match self {
            WebhookKind::Defaulting => "the defaults",
            WebhookKind::Validation => "what is valid",
            WebhookKind::Conversion => "how the version converts to and from the hub",
        }
    }

    pub fn is_in(self, webhooks: &Webhooks) -> bool {
        match self {
            WebhookKind::Defaulting => webhooks.defaulting,
            WebhookKind::Validation => webhooks.validation,
            WebhookKind::Conversion => webhooks.conversion,
        }
    }

    pub fn set_in(self, webhooks: &mut Webhooks) {
        match self {
            WebhookKind::Defaulting => webhooks.defaulting = true,
            WebhookKind::Validation => webhooks.validation = true,
            WebhookKind::Conversion => webhooks.conversion = true,
        }
    }

    fn template(self) -> &'static str {
        match self {
            WebhookKind::Defaulting => "src/webhook/defaulting.rs",
            WebhookKind::Validation => "src/webhook/validation.rs",
            WebhookKind::Conversion => "src/webhook/conversion.rs",
        }
    }

    fn e2e_template(self) -> &'static str {
        match self {
            WebhookKind::Defaulting => "tests/e2e_defaulting.rs",
            WebhookKind::Validation => "tests/e2e_validation.rs",
            WebhookKind::Conversion => "tests/e2e_conversion.rs",
        }
    }
}

/// Scaffold-owned files of a project with webhooks, one template each.
const WEBHOOK_TEMPLATES: &[(&str, &str)] = &[
    (
        "config/certmanager/certificate.yaml",
        "config/certmanager/certificate.yaml",
    ),
    (
        "config/certmanager/kustomization.yaml",
        "config/certmanager/kustomization.yaml",
    ),
    (
        "config/default/manager_webhook_patch.yaml",
        "config/default/manager_webhook_patch.yaml",
    ),
    (
        "config/webhook/kustomization.yaml",
        "config/webhook/kustomization.yaml",
    ),
    ("config/webhook/service.yaml", "config/webhook/service.yaml"),
    (
        "config/network-policy/allow-webhook-traffic.yaml",
        "config/network-policy/allow-webhook-traffic.yaml",
    ),
    ("src/webhook/mod.rs", "src/webhook/mod.rs"),
    ("tests/webhooks/mod.rs", "tests/webhooks/mod.rs"),
];

/// `sidecar_set_defaulting`: the handler module of one webhook of `r`.
pub fn handler_module(r: &Resource, kind: WebhookKind) -> String {
    format!("{}_{}", names::kind_module(&r.kind), kind.describe())
}

/// `src/webhook/apps/v1alpha1/sidecar_set_defaulting.rs`; for
/// [`WebhookKind::Conversion`], `r` is a spoke.
pub fn handler_file(r: &Resource, kind: WebhookKind) -> String {
    format!(
        "src/webhook/{}/{}/{}.rs",
        names::group_module(&r.group),
        r.version,
        handler_module(r, kind)
    )
}

/// The API group as a path segment: `apps-kruise-io`, `core` for the core group.
fn path_group(r: &Resource) -> String {
    if r.api_group.is_empty() {
        "core".to_owned()
    } else {
        r.api_group.replace('.', "-")
    }
}

/// The URL path of one webhook: `/mutate-apps-kruise-io-v1alpha1-sidecarset`;
/// `/convert` for every conversion (the review names the kind).
pub fn webhook_path(r: &Resource, kind: WebhookKind) -> String {
    let verb = match kind {
        WebhookKind::Defaulting => "mutate",
        WebhookKind::Validation => "validate",
        WebhookKind::Conversion => return "/convert".to_owned(),
    };
    format!(
        "/{verb}-{}-{}-{}",
        path_group(r),
        r.version,
        r.kind.to_ascii_lowercase()
    )
}

/// The webhook's name in its configuration, a fully qualified name:
/// `msidecarset-v1alpha1.apps.kruise.io`, `mpod-v1.core.example.com`.
pub fn webhook_name(project: &Project, r: &Resource, kind: WebhookKind) -> String {
    let letter = match kind {
        WebhookKind::Defaulting => 'm',
        WebhookKind::Validation => 'v',
        WebhookKind::Conversion => 'c',
    };
    format!(
        "{letter}{}-{}.{}.{}",
        r.kind.to_ascii_lowercase(),
        r.version,
        r.group,
        project.domain
    )
}

/// Checks that the webhooks of `resource` can be named and placed: a name
/// Kubernetes accepts, and no handler module shared with another kind.
pub fn check_names(project: &Project, resource: &Resource) -> anyhow::Result<()> {
    for kind in WebhookKind::ADMISSION {
        let name = webhook_name(project, resource, kind);
        if !names::is_dns1123_subdomain(&name) {
            anyhow::bail!(
                "the webhook name {name} would be longer than Kubernetes allows (253 characters, 63 per part); use a shorter domain or group"
            );
        }
        let file = handler_file(resource, kind);
        if let Some(other) = project
            .resources
            .iter()
            .find(|o| !o.same_gvk(resource) && o.webhooks().any() && handler_file(o, kind) == file)
        {
            anyhow::bail!(
                "{file} would hold the webhooks of both {} and {}; webhooks for one of them cannot be scaffolded",
                other.gvk(),
                resource.gvk()
            );
        }
    }
    Ok(())
}

/// What the webhook templates see about one kind, as `w`; `hub` is the
/// hub of a spoke's conversion module.
fn webhook_values(project: &Project, r: &Resource, hub: Option<&Resource>) -> WebhookValues {
    WebhookValues {
        hub_path: hub.map(|h| h.path.clone()).unwrap_or_default(),
        hub_version: hub.map(|h| h.version.clone()).unwrap_or_default(),
        hub_api_version: hub.map(Resource::api_version).unwrap_or_default(),
        mutate_path: webhook_path(r, WebhookKind::Defaulting),
        validate_path: webhook_path(r, WebhookKind::Validation),
        mutating_name: webhook_name(project, r, WebhookKind::Defaulting),
        validating_name: webhook_name(project, r, WebhookKind::Validation),
        marker_group: if r.api_group.is_empty() {
            "\"\"".to_owned()
        } else {
            r.api_group.clone()
        },
        defaulting_module: handler_module(r, WebhookKind::Defaulting),
        validation_module: handler_module(r, WebhookKind::Validation),
    }
}

/// Whether the webhooks of `r` get e2e tests: kinds of the project do, and
/// the built-in kinds `opctl envtest` serves.
pub fn has_e2e_test(r: &Resource) -> bool {
    !r.builtin || builtin_samples::e2e_object(&r.api_group, &r.kind).is_some()
}

/// The webhook modules by group and version, for the scaffold-owned
/// `mod.rs` files of src/webhook.
pub fn webhook_groups(project: &Project) -> Vec<WebhookGroup> {
    let mut groups: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for r in &project.resources {
        let webhooks = r.webhooks();
        if webhooks.conversion {
            for spoke in project.spokes(r) {
                groups
                    .entry(names::group_module(&spoke.group))
                    .or_default()
                    .entry(spoke.version.clone())
                    .or_default()
                    .push(handler_module(spoke, WebhookKind::Conversion));
            }
        }
        for kind in WebhookKind::ADMISSION {
            if kind.is_in(&webhooks) {
                groups
                    .entry(names::group_module(&r.group))
                    .or_default()
                    .entry(r.version.clone())
                    .or_default()
                    .push(handler_module(r, kind));
            }
        }
    }
    groups
        .into_iter()
        .map(|(module, versions)| WebhookGroup {
            module,
            versions: versions
                .into_iter()
                .map(|(version, mut modules)| {
                    modules.sort();
                    WebhookVersion { version, modules }
                })
                .collect(),
        })
        .collect()
}

/// Adds the scaffold-owned webhook files of `project` (none without webhooks).
pub(super) fn scaffold_owned(
    project: &Project,
    values: &Values,
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    if !project.has_webhooks() {
        return Ok(());
    }
    let context = values.context()?;
    for (path, template) in WEBHOOK_TEMPLATES {
        plan.file(
            *path,
            renderer.render(template, &context)?,
            Owner::Scaffold,
            IfExists::Overwrite,
        );
    }
    for hub in project.resources.iter().filter(|r| r.webhooks().conversion) {
        let view = ResourceValues::new(project, hub);
        let context = values.resource_context(&view)?;
        for (file, template) in CRD_PATCH_TEMPLATES {
            plan.file(
                format!("config/crd/{}", paths::crd_patch_name(hub, file)),
                renderer.render(template, &context)?,
                Owner::Scaffold,
                IfExists::Overwrite,
            );
        }
    }
    for group in values.webhook_groups() {
        let module = &group.module;
        let context = values.group_context(group)?;
        plan.file(
            format!("src/webhook/{module}/mod.rs"),
            renderer.render("src/webhook/group.rs", &context)?,
            Owner::Scaffold,
            IfExists::Overwrite,
        );
        for version in &group.versions {
            let name = &version.version;
            let context = values.version_context(group, version)?;
            plan.file(
                format!("src/webhook/{module}/{name}/mod.rs"),
                renderer.render("src/webhook/version.rs", &context)?,
                Owner::Scaffold,
                IfExists::Overwrite,
            );
        }
    }
    Ok(())
}

/// The user-owned handler modules of `kinds` for `r`, their registration in
/// src/main.rs and their e2e tests.
pub fn handler_files(
    project: &Project,
    r: &Resource,
    kinds: &[WebhookKind],
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    if kinds.is_empty() {
        return Ok(());
    }
    let values = Values::new(project, webhook_groups(project));
    let view = ResourceValues::new(project, r);
    let context = values.webhook_context(&view, &webhook_values(project, r, None))?;
    plan.insert("src/main.rs", "modules", "mod webhook;\n");
    plan.insert(
        "src/main.rs",
        "webhooks",
        "let manager = webhook::register(manager);\n",
    );
    plan.insert("tests/e2e.rs", "e2e-modules", "mod webhooks;\n");
    plan.insert(
        "tests/e2e.rs",
        "e2e-manager",
        "webhooks::serve_locally(&mut command);\n",
    );
    for kind in kinds {
        if *kind == WebhookKind::Conversion {
            conversion_files(project, r, &values, renderer, plan)?;
            continue;
        }
        plan.file(
            handler_file(r, *kind),
            renderer.render(kind.template(), &context)?,
            Owner::User,
            IfExists::Error,
        );
        if has_e2e_test(r) {
            plan.insert(
                "tests/e2e.rs",
                "e2e",
                renderer.render(kind.e2e_template(), &context)?,
            );
        }
    }
    Ok(())
}

/// The patches of config/crd for a kind that converts
/// (`paths::CRD_CONVERSION_PATCHES`, whose names `manifests` needs too), and
/// their templates.
const CRD_PATCH_TEMPLATES: &[(&str, &str)] = &[
    ("webhook_in", "config/crd/patches/webhook_in.yaml"),
    ("cainjection_in", "config/crd/patches/cainjection_in.yaml"),
];

/// The user-owned conversion module of each spoke of `hub`, and their e2e tests.
fn conversion_files(
    project: &Project,
    hub: &Resource,
    values: &Values,
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    for spoke in project.spokes(hub) {
        spoke_conversion(project, hub, spoke, values, renderer, plan, IfExists::Error)?;
    }
    Ok(())
}

/// For `opctl create api` of a new version of a kind that converts: the
/// version's conversion module and its e2e test, which the scaffold-owned
/// webhook modules then name (nothing for the hub or a kind that does not
/// convert). A module already there is kept: the command may be adding a
/// controller to a version scaffolded before.
pub fn new_version_conversion(
    project: &Project,
    r: &Resource,
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    let Some(hub) = project.hub_of(r).filter(|hub| hub.version != r.version) else {
        return Ok(());
    };
    let values = Values::new(project, webhook_groups(project));
    spoke_conversion(project, hub, r, &values, renderer, plan, IfExists::Skip)
}

fn spoke_conversion(
    project: &Project,
    hub: &Resource,
    spoke: &Resource,
    values: &Values,
    renderer: &mut Renderer,
    plan: &mut Plan,
    if_exists: IfExists,
) -> anyhow::Result<()> {
    let view = ResourceValues::new(project, spoke);
    let context = values.webhook_context(&view, &webhook_values(project, spoke, Some(hub)))?;
    plan.file(
        handler_file(spoke, WebhookKind::Conversion),
        renderer.render(WebhookKind::Conversion.template(), &context)?,
        Owner::User,
        if_exists,
    );
    plan.insert(
        "tests/e2e.rs",
        "e2e",
        renderer.render(WebhookKind::Conversion.e2e_template(), &context)?,
    );
    Ok(())
}

/// Adds config/webhook/manifests.yaml made from the `+opctl:webhook` markers
/// of the Rust files on disk under `root` (if any) as the plan leaves them;
/// nothing for a project without webhooks.
pub fn add_manifests(
    project: &Project,
    root: Option<&Path>,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    if !project.has_webhooks() {
        return Ok(());
    }
    let mut sources: BTreeMap<String, String> = match root {
        Some(root) => rust_sources(root, "src")?.into_iter().collect(),
        None => BTreeMap::new(),
    };
    for file in plan.files() {
        if file.path.starts_with("src/") && file.path.ends_with(".rs") {
            sources.insert(file.path.clone(), file.contents.clone());
        }
    }
    let mut markers = webhook_manifests::Markers::default();
    for (path, text) in &sources {
        markers.add_source(path, text)?;
    }
    plan.file(
        WEBHOOK_MANIFESTS,
        markers.to_yaml()?,
        Owner::Generated,
        IfExists::Overwrite,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::CRD_PATCH_TEMPLATES;
    use crate::project::paths::CRD_CONVERSION_PATCHES;

    #[test]
    fn every_conversion_patch_has_its_template() {
        let patches: Vec<&str> = CRD_PATCH_TEMPLATES.iter().map(|(file, _)| *file).collect();
        assert_eq!(patches, CRD_CONVERSION_PATCHES);
    }
}
