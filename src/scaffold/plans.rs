//! The plans of `opctl init` and `opctl create api`: which templates make
//! which files, who owns each, and the values the templates see (the
//! webhook parts are in [`super::webhooks`]).

use std::collections::BTreeMap;
use std::path::Path;

use heck::ToSnakeCase;
use serde::Serialize;
use serde_json::{Value, json};

use super::templates::Renderer;
use super::webhooks::{self, WebhookKind};
use super::{IfExists, Owner, Plan};
use crate::manifests::crd::kustomization as crd_kustomization;
use crate::manifests::rbac::{Rules, rust_sources};
use crate::project::paths::{CRD_KUSTOMIZATION, ROLE_FILE, WEBHOOK_MANIFESTS, crd_base, crd_file};
use crate::project::{License, Project, Resource, names};

/// Scaffold-owned files made from one template each, for every project.
const PROJECT_TEMPLATES: &[(&str, &str)] = &[
    (".dockerignore", "dockerignore"),
    (".gitignore", "gitignore"),
    ("Dockerfile", "Dockerfile"),
    ("Makefile", "Makefile"),
    (
        "config/default/kustomization.yaml",
        "config/default/kustomization.yaml",
    ),
    (
        "config/default/metrics_service.yaml",
        "config/default/metrics_service.yaml",
    ),
    (
        "config/manager/kustomization.yaml",
        "config/manager/kustomization.yaml",
    ),
    ("config/manager/manager.yaml", "config/manager/manager.yaml"),
    (
        "config/rbac/kustomization.yaml",
        "config/rbac/kustomization.yaml",
    ),
    (
        "config/rbac/leader_election_role.yaml",
        "config/rbac/leader_election_role.yaml",
    ),
    (
        "config/rbac/leader_election_role_binding.yaml",
        "config/rbac/leader_election_role_binding.yaml",
    ),
    (
        "config/rbac/metrics_auth_role.yaml",
        "config/rbac/metrics_auth_role.yaml",
    ),
    (
        "config/rbac/metrics_auth_role_binding.yaml",
        "config/rbac/metrics_auth_role_binding.yaml",
    ),
    (
        "config/rbac/metrics_reader_role.yaml",
        "config/rbac/metrics_reader_role.yaml",
    ),
    (
        "config/rbac/role_binding.yaml",
        "config/rbac/role_binding.yaml",
    ),
    (
        "config/rbac/service_account.yaml",
        "config/rbac/service_account.yaml",
    ),
    (
        "config/samples/kustomization.yaml",
        "config/samples/kustomization.yaml",
    ),
    ("src/api/mod.rs", "src/api/mod.rs"),
    ("src/controller/mod.rs", "src/controller/mod.rs"),
    ("src/crdgen.rs", "src/crdgen.rs"),
    ("src/manager/backoff.rs", "src/manager/backoff.rs"),
    ("src/manager/cache.rs", "src/manager/cache.rs"),
    ("src/manager/conditions.rs", "src/manager/conditions.rs"),
    ("src/manager/context.rs", "src/manager/context.rs"),
    ("src/manager/controller.rs", "src/manager/controller.rs"),
    ("src/manager/http.rs", "src/manager/http.rs"),
    ("src/manager/leader.rs", "src/manager/leader.rs"),
    ("src/manager/metrics.rs", "src/manager/metrics.rs"),
    ("src/manager/metrics_auth.rs", "src/manager/metrics_auth.rs"),
    ("src/manager/mod.rs", "src/manager/mod.rs"),
    ("src/manager/options.rs", "src/manager/options.rs"),
    ("src/manager/readiness.rs", "src/manager/readiness.rs"),
    ("src/manager/self_signed.rs", "src/manager/self_signed.rs"),
    ("src/manager/shutdown.rs", "src/manager/shutdown.rs"),
    ("src/manager/telemetry.rs", "src/manager/telemetry.rs"),
    ("src/manager/tls.rs", "src/manager/tls.rs"),
    ("src/manager/writes.rs", "src/manager/writes.rs"),
];

/// User-owned files written once by `opctl init`.
const INIT_USER_TEMPLATES: &[(&str, &str)] = &[
    ("Cargo.toml", "Cargo.toml"),
    ("README.md", "README.md"),
    ("src/lib.rs", "src/lib.rs"),
    ("src/main.rs", "src/main.rs"),
    ("tests/e2e.rs", "tests/e2e.rs"),
];

/// Short names of built-in kinds, which a generated short name must avoid.
const BUILTIN_SHORT_NAMES: &[&str] = &[
    "cm", "cj", "crd", "crds", "csr", "deploy", "ds", "ep", "ev", "hpa", "ing", "limits", "netpol",
    "no", "ns", "pc", "pdb", "po", "psp", "pv", "pvc", "quota", "rc", "rs", "sa", "sc", "sts",
    "svc",
];

#[derive(Serialize)]
struct ProjectView<'a> {
    name: &'a str,
    #[serde(rename = "crate")]
    crate_name: String,
    domain: &'a str,
    namespace: String,
    namespaced: bool,
    license: &'static str,
    owner_toml: Option<String>,
}

#[derive(Serialize)]
pub(super) struct ResourceView {
    group: String,
    group_module: String,
    api_group: String,
    api_version: String,
    version: String,
    kind: String,
    kind_module: String,
    kind_lower: String,
    plural: String,
    namespaced: bool,
    builtin: bool,
    resource: bool,
    controller: bool,
    finalizer: bool,
    crd_name: String,
    crd_file: String,
    rbac_group: String,
    type_module: String,
    /// The Rust path of the type (`crate::api::...::Kind`, `k8s_openapi::...::Pod`).
    path: String,
    sample_file: String,
    shortname: Option<String>,
}

/// The values every template sees.
pub(super) struct Values {
    base: Value,
}

impl Values {
    pub(super) fn new(project: &Project) -> Self {
        let p = ProjectView {
            name: &project.project_name,
            crate_name: project.crate_name(),
            domain: &project.domain,
            namespace: format!("{}-system", project.project_name),
            namespaced: project.namespaced,
            license: match project.license {
                License::Apache2 => "apache2",
                License::None => "none",
            },
            owner_toml: project.owner.as_deref().map(toml_string),
        };
        let mut groups: BTreeMap<String, (String, BTreeMap<String, Vec<String>>)> = BTreeMap::new();
        let mut crds: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut samples = Vec::new();
        let mut controllers = BTreeMap::new();
        for r in &project.resources {
            let view = resource_view(project, r);
            if r.resource {
                let (_, versions) = groups
                    .entry(view.group_module.clone())
                    .or_insert_with(|| (view.api_group.clone(), BTreeMap::new()));
                versions
                    .entry(r.version.clone())
                    .or_default()
                    .push(view.kind_module.clone());
                crds.entry(view.crd_name.clone()).or_default().push(json!({
                    "path": r.path,
                    "gvk": r.gvk(),
                    "version": r.version,
                }));
                samples.push(view.sample_file.clone());
            }
            if r.controller {
                controllers.insert(
                    view.kind_module.clone(),
                    json!({ "module": view.kind_module }),
                );
            }
        }
        let groups: Vec<Value> = groups
            .into_iter()
            .map(|(module, (api_group, versions))| {
                let versions: Vec<Value> = versions
                    .into_iter()
                    .map(|(version, mut kinds)| {
                        kinds.sort();
                        json!({ "version": version, "kinds": kinds })
                    })
                    .collect();
                json!({ "module": module, "api_group": api_group, "versions": versions })
            })
            .collect();
        let multi_version = crds.values().any(|v| v.len() > 1);
        let crds: Vec<Value> = crds
            .into_iter()
            .map(|(name, versions)| {
                let storage = versions[0]["version"].clone();
                json!({ "name": name, "storage": storage, "versions": versions })
            })
            .collect();
        samples.sort();
        let controllers: Vec<Value> = controllers.into_values().collect();
        Self {
            base: json!({
                "p": p,
                "groups": groups,
                "crds": crds,
                "multi_version": multi_version,
                "samples": samples,
                "controllers": controllers,
                "has_webhooks": project.has_webhooks(),
                "webhook_groups": webhooks::webhook_groups(project),
            }),
        }
    }

    pub(super) fn context(&self, extra: &[(&str, Value)]) -> anyhow::Result<tera::Context> {
        let mut value = self.base.clone();
        if let Value::Object(map) = &mut value {
            for (key, v) in extra {
                map.insert((*key).to_owned(), v.clone());
            }
        }
        Ok(tera::Context::from_value(value)?)
    }
}

pub(super) fn resource_view(project: &Project, r: &Resource) -> ResourceView {
    let group_module = names::group_module(&r.group);
    let kind_module = names::kind_module(&r.kind);
    let kind_lower = r.kind.to_ascii_lowercase();
    let type_module = r
        .path
        .rsplit_once("::")
        .map(|(module, _)| module.to_owned())
        .unwrap_or_default();
    ResourceView {
        group: r.group.clone(),
        group_module,
        api_group: r.api_group.clone(),
        api_version: r.api_version(),
        version: r.version.clone(),
        kind: r.kind.clone(),
        kind_module,
        plural: r.plural.clone(),
        namespaced: r.namespaced,
        builtin: r.builtin,
        resource: r.resource,
        controller: r.controller,
        finalizer: r.finalizer,
        crd_name: format!("{}.{}", r.plural, r.api_group),
        crd_file: crd_file(r),
        rbac_group: if r.api_group.is_empty() {
            "core".to_owned()
        } else {
            r.api_group.clone()
        },
        type_module,
        path: r.path.clone(),
        sample_file: format!("{}_{}_{}.yaml", r.group, r.version, kind_lower),
        kind_lower,
        shortname: if project
            .resources
            .iter()
            .any(|o| o.resource && o.kind != r.kind && short_name(&o.kind) == short_name(&r.kind))
        {
            None
        } else {
            short_name(&r.kind)
        },
    }
}

/// The initials of a kind of two or more words (`ss` for `SidecarSet`),
/// unless a built-in kind already uses them.
fn short_name(kind: &str) -> Option<String> {
    let snake = kind.to_snake_case();
    let words: Vec<&str> = snake.split('_').filter(|w| !w.is_empty()).collect();
    if words.len() < 2 {
        return None;
    }
    let initials: String = words.iter().filter_map(|w| w.chars().next()).collect();
    (!BUILTIN_SHORT_NAMES.contains(&initials.as_str())).then_some(initials)
}

/// A TOML basic string (JSON's escaping is valid TOML for these characters).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Renders everything opctl owns for `project`: the files regenerated by
/// every command.
pub(super) fn scaffold_owned(
    project: &Project,
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    let values = Values::new(project);
    let context = values.context(&[])?;
    for (path, template) in PROJECT_TEMPLATES {
        plan.file(
            *path,
            renderer.render(template, &context)?,
            Owner::Scaffold,
            IfExists::Overwrite,
        );
    }
    plan.file(
        "PROJECT",
        project.to_yaml()?,
        Owner::Scaffold,
        IfExists::Overwrite,
    );
    for group in values.base["groups"].as_array().into_iter().flatten() {
        let module = group["module"].as_str().unwrap_or_default();
        let context = values.context(&[("g", group.clone())])?;
        plan.file(
            format!("src/api/{module}/mod.rs"),
            renderer.render("src/api/group.rs", &context)?,
            Owner::Scaffold,
            IfExists::Overwrite,
        );
        for version in group["versions"].as_array().into_iter().flatten() {
            let name = version["version"].as_str().unwrap_or_default();
            let context = values.context(&[("g", group.clone()), ("v", version.clone())])?;
            plan.file(
                format!("src/api/{module}/{name}/mod.rs"),
                renderer.render("src/api/version.rs", &context)?,
                Owner::Scaffold,
                IfExists::Overwrite,
            );
        }
    }
    webhooks::scaffold_owned(project, &values, renderer, plan)?;
    Ok(())
}

/// The user-owned files of one resource, and the insertions it needs. With
/// `keep_type`, an existing type module and sample are kept (a controller
/// added later to a kind scaffolded with `--controller=false`).
fn resource_files(
    project: &Project,
    r: &Resource,
    keep_type: bool,
    renderer: &mut Renderer,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    let type_policy = if keep_type {
        IfExists::Skip
    } else {
        IfExists::Error
    };
    let values = Values::new(project);
    let view = serde_json::to_value(resource_view(project, r))?;
    let context = values.context(&[("r", view.clone())])?;
    let group_module = names::group_module(&r.group);
    let kind_module = names::kind_module(&r.kind);
    if r.resource {
        plan.file(
            format!("src/api/{group_module}/{}/{kind_module}.rs", r.version),
            renderer.render("src/api/kind.rs", &context)?,
            Owner::User,
            type_policy,
        );
        plan.file(
            format!(
                "config/samples/{}",
                view["sample_file"].as_str().unwrap_or_default()
            ),
            renderer.render("config/samples/sample.yaml", &context)?,
            Owner::User,
            type_policy,
        );
    }
    if r.controller {
        let template = if r.builtin {
            "src/controller/builtin.rs"
        } else {
            "src/controller/custom.rs"
        };
        plan.file(
            format!("src/controller/{kind_module}.rs"),
            renderer.render(template, &context)?,
            Owner::User,
            IfExists::Error,
        );
        plan.insert(
            "src/main.rs",
            "controllers",
            format!("let manager = controller::{kind_module}::register(manager);\n"),
        );
        if !r.builtin {
            plan.insert(
                "tests/e2e.rs",
                "e2e",
                renderer.render("tests/e2e_kind.rs", &context)?,
            );
        }
    }
    Ok(())
}

/// The plan of `opctl init`.
pub fn init(project: &Project) -> anyhow::Result<Plan> {
    let mut renderer = Renderer::default();
    let mut plan = Plan::default();
    let context = Values::new(project).context(&[])?;
    for (path, template) in INIT_USER_TEMPLATES {
        plan.file(
            *path,
            renderer.render(template, &context)?,
            Owner::User,
            IfExists::Error,
        );
    }
    if project.license == License::Apache2 {
        plan.file(
            "LICENSE",
            renderer.render("LICENSE", &context)?,
            Owner::User,
            IfExists::Error,
        );
    }
    scaffold_owned(project, &mut renderer, &mut plan)?;
    plan.file(
        CRD_KUSTOMIZATION,
        crd_kustomization(&[]),
        Owner::Generated,
        IfExists::Overwrite,
    );
    add_role(project, None, &mut plan)?;
    Ok(plan)
}

/// The plan of `opctl create api`: `project` already holds `resource`;
/// `keep_type` as in [`resource_files`].
pub fn create_api(
    project: &Project,
    resource: &Resource,
    keep_type: bool,
    root: &Path,
) -> anyhow::Result<Plan> {
    let mut renderer = Renderer::default();
    let mut plan = Plan::default();
    resource_files(project, resource, keep_type, &mut renderer, &mut plan)?;
    scaffold_owned(project, &mut renderer, &mut plan)?;
    add_role(project, Some(root), &mut plan)?;
    Ok(plan)
}

/// Adds config/rbac/role.yaml made from the markers of the Rust files on disk
/// under `root` (if any) as the plan leaves them.
fn add_role(project: &Project, root: Option<&Path>, plan: &mut Plan) -> anyhow::Result<()> {
    let mut sources: BTreeMap<String, String> = match root {
        Some(root) => rust_sources(root, "src")?.into_iter().collect(),
        None => BTreeMap::new(),
    };
    for file in plan.files() {
        if file.path.starts_with("src/") && file.path.ends_with(".rs") {
            sources.insert(file.path.clone(), file.contents.clone());
        }
    }
    let mut rules = Rules::default();
    for (path, text) in &sources {
        rules.add_source(path, text)?;
    }
    plan.file(
        ROLE_FILE,
        rules.to_yaml(project.namespaced),
        Owner::Generated,
        IfExists::Overwrite,
    );
    Ok(())
}

/// Every file of `project` and its owner, as the commands recorded in
/// PROJECT would leave them after `opctl manifests`.
pub fn ownership(project: &Project) -> anyhow::Result<BTreeMap<String, Owner>> {
    let mut renderer = Renderer::default();
    let mut plan = Plan::default();
    for (path, _) in INIT_USER_TEMPLATES {
        plan.file(*path, String::new(), Owner::User, IfExists::Error);
    }
    if project.license == License::Apache2 {
        plan.file("LICENSE", String::new(), Owner::User, IfExists::Error);
    }
    scaffold_owned(project, &mut renderer, &mut plan)?;
    for r in &project.resources {
        resource_files(project, r, false, &mut renderer, &mut plan)?;
        let webhooks = r.webhooks();
        let kinds: Vec<WebhookKind> = WebhookKind::ALL
            .into_iter()
            .filter(|k| k.is_in(&webhooks))
            .collect();
        webhooks::handler_files(project, r, &kinds, &mut renderer, &mut plan)?;
    }
    let mut owners = plan.owners();
    if project.has_webhooks() {
        owners.insert(WEBHOOK_MANIFESTS.to_owned(), Owner::Generated);
    }
    owners.insert(ROLE_FILE.to_owned(), Owner::Generated);
    owners.insert(CRD_KUSTOMIZATION.to_owned(), Owner::Generated);
    for r in project.crd_resources() {
        owners.insert(crd_base(&crd_file(r)), Owner::Generated);
    }
    Ok(owners)
}
