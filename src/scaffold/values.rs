//! The values templates see, typed: the project-wide values every template
//! gets ([`Values`]) and, per template family, what is added to them — an
//! API group (`g`) and version (`v`), a resource (`r`), a kind's webhooks
//! (`w`), a webhook group and version. The renderer refuses a template that
//! names a value its context lacks (see `templates.rs`).

use std::collections::BTreeMap;

use heck::ToSnakeCase;
use serde::Serialize;

use crate::project::paths::crd_file;
use crate::project::{DeployImage, License, Project, Resource, builtin_samples, names};

/// The project, as `p`.
#[derive(Debug, Serialize)]
pub struct ProjectValues {
    name: String,
    #[serde(rename = "crate")]
    crate_name: String,
    /// The package and crate of the API types (api/).
    api_package: String,
    api_crate: String,
    domain: String,
    namespace: String,
    namespaced: bool,
    /// Whether the project has a Helm chart (dist/chart).
    helm: bool,
    license: &'static str,
    owner_toml: Option<String>,
}

/// One API group of the project's kinds (`api/src/<module>/mod.rs`), as `g`.
#[derive(Debug, Serialize)]
pub struct ApiGroup {
    pub module: String,
    api_group: String,
    pub versions: Vec<ApiVersion>,
}

/// One version of an API group (`api/src/<group>/<version>/mod.rs`), as `v`.
#[derive(Debug, Serialize)]
pub struct ApiVersion {
    pub version: String,
    kinds: Vec<String>,
}

/// One CRD and the versions of its kind.
#[derive(Debug, Serialize)]
struct Crd {
    name: String,
    storage: String,
    versions: Vec<CrdVersion>,
}

#[derive(Debug, Serialize)]
struct CrdVersion {
    /// The type's path in the API crate, where the CRD generator runs.
    path: String,
    gvk: String,
    version: String,
}

#[derive(Debug, Serialize)]
struct Controller {
    module: String,
}

/// The webhook handler modules of one API group (`src/webhook/<module>/mod.rs`), as `g`.
#[derive(Debug, Serialize)]
pub struct WebhookGroup {
    pub module: String,
    pub versions: Vec<WebhookVersion>,
}

/// One version's handler modules (`src/webhook/<group>/<version>/mod.rs`), as `v`.
#[derive(Debug, Serialize)]
pub struct WebhookVersion {
    pub version: String,
    pub modules: Vec<String>,
}

/// One resource (kind), as `r`.
#[derive(Debug, Serialize)]
pub struct ResourceValues {
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
    /// Whether the example webhook handlers work on the object's metadata
    /// (an annotation) rather than on `spec.foo`: built-in kinds and kinds
    /// made with `--image` have no such field.
    metadata_example: bool,
    resource: bool,
    controller: bool,
    finalizer: bool,
    crd_name: String,
    crd_file: String,
    rbac_group: String,
    type_module: String,
    /// The Rust path of the type (`crate::api::...::Kind`, `k8s_openapi::...::Pod`).
    path: String,
    /// Under config/samples.
    pub sample_file: String,
    /// The sample object's name: `<kind>-sample` for the first version of
    /// a kind, `<kind>-sample-<version>` for the others, so that `kubectl
    /// apply -k config/samples` creates one object per version instead of
    /// writing the same object twice.
    sample_name: String,
    shortname: Option<String>,
    /// Whether the type module carries the storage-version marker: the
    /// first version of a kind does, later ones do not.
    storage_marker: bool,
    /// The e2e tests' sample object of a built-in kind, as JSON indented to
    /// sit inside a `json!` in a test; None for kinds of the project and
    /// built-in kinds without a sample.
    e2e_sample: Option<String>,
    /// The Deployment its controller runs, for a kind made with `--image`.
    deploy_image: Option<DeployImageValues>,
}

/// The Deployment a kind's controller runs (`create api --image`), as
/// `r.deploy_image`.
#[derive(Debug, Serialize)]
pub struct DeployImageValues {
    image: String,
    /// The manager's variable that overrides the image (`MEMCACHED_IMAGE`).
    env_var: String,
    /// The container's name: the kind in lowercase.
    container: String,
    /// The container port's name: the kind in lowercase, at most 15 characters.
    port_name: String,
    container_port: Option<u16>,
    run_as_user: Option<i64>,
    /// The command and its arguments as Rust string literals (empty: the image's entrypoint).
    command: Vec<String>,
}

impl DeployImageValues {
    fn new(kind: &str, deploy: &DeployImage) -> Self {
        let container = kind.to_ascii_lowercase();
        DeployImageValues {
            image: deploy.image.clone(),
            env_var: DeployImage::env_var(kind),
            port_name: container.chars().take(15).collect(),
            container,
            container_port: deploy.container_port,
            run_as_user: deploy.run_as_user,
            // JSON's escapes of a string without control characters are Rust's.
            command: deploy
                .container_command
                .iter()
                .map(|arg| serde_json::Value::from(arg.as_str()).to_string())
                .collect(),
        }
    }
}

/// An image the manager's Deployment names in its environment, for a kind
/// scaffolded with `--image`.
#[derive(Debug, Serialize)]
struct ManagerImage {
    env_var: String,
    image: String,
}

/// The webhooks of one kind, as `w`.
#[derive(Debug, Serialize)]
pub struct WebhookValues {
    pub mutate_path: String,
    pub validate_path: String,
    pub mutating_name: String,
    pub validating_name: String,
    /// The group as a `+opctl:webhook` marker writes it (`""` for the core group).
    pub marker_group: String,
    pub defaulting_module: String,
    pub validation_module: String,
    /// The hub of a spoke's conversion module: its type's Rust path, version
    /// and apiVersion (empty otherwise).
    pub hub_path: String,
    pub hub_version: String,
    pub hub_api_version: String,
}

/// The values every template sees.
#[derive(Debug, Serialize)]
pub struct Values {
    p: ProjectValues,
    groups: Vec<ApiGroup>,
    crds: Vec<Crd>,
    multi_version: bool,
    samples: Vec<String>,
    controllers: Vec<Controller>,
    /// The images of the kinds made with `--image`, by variable name.
    images: Vec<ManagerImage>,
    has_webhooks: bool,
    /// Whether a kind converts between versions (`--conversion`).
    has_conversion: bool,
    /// The plurals of the CRDs with a conversion webhook (the e2e tests
    /// point them at the local manager).
    conversion_plurals: Vec<String>,
    webhook_groups: Vec<WebhookGroup>,
    /// What `Cargo.toml` requires of opctl-runtime (`0.1`).
    runtime_requirement: String,
}

/// The project-wide values with one family's additions beside them.
#[derive(Serialize)]
struct With<'a, E: Serialize> {
    #[serde(flatten)]
    values: &'a Values,
    #[serde(flatten)]
    extra: E,
}

#[derive(Serialize)]
struct Group<'a, G: Serialize> {
    g: &'a G,
}

#[derive(Serialize)]
struct GroupVersion<'a, G: Serialize, V: Serialize> {
    g: &'a G,
    v: &'a V,
}

#[derive(Serialize)]
struct OfResource<'a> {
    r: &'a ResourceValues,
}

#[derive(Serialize)]
struct OfWebhooks<'a> {
    r: &'a ResourceValues,
    w: &'a WebhookValues,
}

impl Values {
    /// The values of `project`; `webhook_groups` are its webhook handler
    /// modules (see `webhooks::webhook_groups`).
    pub fn new(project: &Project, webhook_groups: Vec<WebhookGroup>) -> Values {
        let p = ProjectValues {
            name: project.project_name.clone(),
            crate_name: project.crate_name(),
            api_package: project.api_package(),
            api_crate: project.api_crate(),
            domain: project.domain.clone(),
            namespace: format!("{}-system", project.project_name),
            namespaced: project.namespaced,
            helm: project.helm,
            license: match project.license {
                License::Apache2 => "apache2",
                License::None => "none",
            },
            owner_toml: project.owner.as_deref().map(toml_string),
        };
        let mut groups: BTreeMap<String, (String, BTreeMap<String, Vec<String>>)> = BTreeMap::new();
        let mut crds: BTreeMap<String, Vec<CrdVersion>> = BTreeMap::new();
        let mut samples = Vec::new();
        let mut controllers = BTreeMap::new();
        let mut images = BTreeMap::new();
        for r in &project.resources {
            if let Some(deploy) = &r.deploy_image {
                images.insert(
                    DeployImage::env_var(&r.kind),
                    ManagerImage {
                        env_var: DeployImage::env_var(&r.kind),
                        image: deploy.image.clone(),
                    },
                );
            }
            let view = ResourceValues::new(project, r);
            if r.resource {
                let (_, versions) = groups
                    .entry(view.group_module.clone())
                    .or_insert_with(|| (view.api_group.clone(), BTreeMap::new()));
                versions
                    .entry(r.version.clone())
                    .or_default()
                    .push(view.kind_module.clone());
                crds.entry(view.crd_name.clone())
                    .or_default()
                    .push(CrdVersion {
                        path: format!(
                            "{}::{}::{}::{}",
                            p.api_crate, view.group_module, r.version, r.kind
                        ),
                        gvk: r.gvk(),
                        version: r.version.clone(),
                    });
                samples.push(view.sample_file.clone());
            }
            if r.controller {
                controllers.insert(
                    view.kind_module.clone(),
                    Controller {
                        module: view.kind_module,
                    },
                );
            }
        }
        let groups: Vec<ApiGroup> = groups
            .into_iter()
            .map(|(module, (api_group, versions))| ApiGroup {
                module,
                api_group,
                versions: versions
                    .into_iter()
                    .map(|(version, mut kinds)| {
                        kinds.sort();
                        ApiVersion { version, kinds }
                    })
                    .collect(),
            })
            .collect();
        let multi_version = crds.values().any(|v| v.len() > 1);
        let crds: Vec<Crd> = crds
            .into_iter()
            .map(|(name, versions)| Crd {
                name,
                // The generator needs one; `opctl manifests` then stores the
                // version marked `+opctl:storageversion` (see manifests::storage).
                storage: versions[0].version.clone(),
                versions,
            })
            .collect();
        samples.sort();
        Values {
            p,
            groups,
            crds,
            multi_version,
            samples,
            controllers: controllers.into_values().collect(),
            images: images.into_values().collect(),
            has_webhooks: project.has_webhooks(),
            has_conversion: project.has_conversion(),
            conversion_plurals: project
                .resources
                .iter()
                .filter(|r| r.webhooks().conversion)
                .map(|r| r.plural.clone())
                .collect(),
            webhook_groups,
            runtime_requirement: super::runtime::requirement(),
        }
    }

    pub fn groups(&self) -> &[ApiGroup] {
        &self.groups
    }

    pub fn webhook_groups(&self) -> &[WebhookGroup] {
        &self.webhook_groups
    }

    /// The context of the project-wide templates.
    pub fn context(&self) -> anyhow::Result<tera::Context> {
        Ok(tera::Context::from_serialize(self)?)
    }

    /// The context of a group's module template (`g`).
    pub fn group_context(&self, g: &impl Serialize) -> anyhow::Result<tera::Context> {
        self.with(Group { g })
    }

    /// The context of a version's module template (`g`, `v`).
    pub fn version_context(
        &self,
        g: &impl Serialize,
        v: &impl Serialize,
    ) -> anyhow::Result<tera::Context> {
        self.with(GroupVersion { g, v })
    }

    /// The context of a resource's templates (`r`).
    pub fn resource_context(&self, r: &ResourceValues) -> anyhow::Result<tera::Context> {
        self.with(OfResource { r })
    }

    /// The context of a kind's webhook templates (`r`, `w`).
    pub fn webhook_context(
        &self,
        r: &ResourceValues,
        w: &WebhookValues,
    ) -> anyhow::Result<tera::Context> {
        self.with(OfWebhooks { r, w })
    }

    fn with(&self, extra: impl Serialize) -> anyhow::Result<tera::Context> {
        Ok(tera::Context::from_serialize(With {
            values: self,
            extra,
        })?)
    }
}

impl ResourceValues {
    pub fn new(project: &Project, r: &Resource) -> ResourceValues {
        let group_module = names::group_module(&r.group);
        let kind_module = names::kind_module(&r.kind);
        let kind_lower = r.kind.to_ascii_lowercase();
        let first_version = project
            .crd_resources()
            .find(|o| o.api_group == r.api_group && o.kind == r.kind)
            .is_none_or(|first| first.same_gvk(r));
        let sample_name = if first_version {
            format!("{kind_lower}-sample")
        } else {
            format!("{kind_lower}-sample-{}", r.version)
        };
        let type_module = r
            .path
            .rsplit_once("::")
            .map(|(module, _)| module.to_owned())
            .unwrap_or_default();
        ResourceValues {
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
            metadata_example: r.builtin || r.deploy_image.is_some(),
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
            shortname: if project.resources.iter().any(|o| {
                o.resource && o.kind != r.kind && short_name(&o.kind) == short_name(&r.kind)
            }) {
                None
            } else {
                short_name(&r.kind)
            },
            storage_marker: r.resource && first_version,
            sample_name,
            e2e_sample: r
                .builtin
                .then(|| builtin_samples::e2e_object(&r.api_group, &r.kind))
                .flatten()
                .map(|sample| indent_json(&sample)),
            deploy_image: r
                .deploy_image
                .as_ref()
                .map(|deploy| DeployImageValues::new(&r.kind, deploy)),
        }
    }
}

/// Pretty JSON indented by four spaces, to sit inside a `json!` at an e2e
/// test's depth.
fn indent_json(value: &serde_json::Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    if value.serialize(&mut serializer).is_err() {
        return "{}".to_owned();
    }
    String::from_utf8_lossy(&out).replace('\n', "\n    ")
}

/// The initials of a kind of two or more words (`ss` for `SidecarSet`),
/// unless a built-in kind already uses them (its short names, from
/// envtest's table of the kinds a v1.32 server serves).
fn short_name(kind: &str) -> Option<String> {
    let snake = kind.to_snake_case();
    let words: Vec<&str> = snake.split('_').filter(|w| !w.is_empty()).collect();
    if words.len() < 2 {
        return None;
    }
    let initials: String = words.iter().filter_map(|w| w.chars().next()).collect();
    (!crate::project::builtin::is_builtin_short_name(&initials)).then_some(initials)
}

/// A TOML basic string (JSON's escaping is valid TOML for these characters).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn short_names_avoid_those_of_the_built_in_kinds() {
        assert_eq!(short_name("SidecarSet").as_deref(), Some("ss"));
        assert_eq!(short_name("Database"), None, "one word has no initials");
        // Taken by built-in kinds of the table: ComponentStatus, ConfigMap,
        // PersistentVolumeClaim.
        for kind in ["ConfigSet", "CacheMap", "PodVolumeClaim"] {
            assert_eq!(short_name(kind), None, "{kind}");
        }
        // PodSecurityPolicy is gone from v1.32, and so is its `psp`.
        assert_eq!(short_name("PodSecurityPolicy").as_deref(), Some("psp"));
    }
}
