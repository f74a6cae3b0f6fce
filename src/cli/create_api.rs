//! `opctl create api`: adds a kind (type module, CRD, sample) and/or a
//! controller to the project.

use clap::ArgAction;

use crate::project::{DeployImage, Project, Resource, builtin, names};
use crate::scaffold::replay::Step;
use crate::scaffold::{self, IfExists, plans};

const EXAMPLES: &str = "\
Examples:
  # A namespaced kind with its controller (CRD databases.zalando.org with --domain org):
  opctl create api --group zalando --version v1 --kind Database
  # A cluster-scoped kind, types only:
  opctl create api --group apps --version v1alpha1 --kind SidecarSet --namespaced=false --controller=false
  # A kind whose controller cleans up outside the cluster before an object goes:
  opctl create api --group infra --version v1 --kind Bucket --finalizer
  # A kind whose controller runs an image as a Deployment (kubebuilder's deploy-image plugin):
  opctl create api --group cache --version v1alpha1 --kind Memcached --image memcached:1.6 --image-container-port 11211 --run-as-user 1001
  # A controller for a built-in kind (no CRD, no types):
  opctl create api --group apps --version v1 --kind Deployment --resource=false
  opctl create api --group core --version v1 --kind Pod --resource=false";

/// The examples, then the built-in kinds from the table of kinds.
fn examples() -> String {
    let kinds = builtin::help_list();
    let mut text =
        format!("{EXAMPLES}\n\nBuilt-in kinds for --resource=false (group/version Kind):\n");
    let mut line = String::from(" ");
    for word in kinds.split(' ') {
        if line.len() + 1 + word.len() > 90 {
            text.push_str(&line);
            text.push('\n');
            line = String::from(" ");
        }
        line.push(' ');
        line.push_str(word);
    }
    text.push_str(&line);
    text
}

/// Add a kind (types, CRD, sample) and/or a controller for it.
#[derive(Debug, clap::Args)]
#[command(after_help = examples())]
pub struct Args {
    /// API group: the kind's group is <group>.<domain> (built-in groups such as apps or core with --resource=false).
    #[arg(long)]
    pub group: String,

    /// API version, such as v1, v1alpha1 or v2beta1.
    #[arg(long)]
    pub version: String,

    /// Kind, in PascalCase (CronTab).
    #[arg(long)]
    pub kind: String,

    /// Resource name [default: the kind, lowercase and in the plural: Policy → policies].
    #[arg(long)]
    pub plural: Option<String>,

    /// Whether objects of the kind live in namespaces (false: cluster-scoped).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "true", action = ArgAction::Set)]
    pub namespaced: bool,

    /// Define the kind in this project (types and CRD); false: the kind exists already.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "true", action = ArgAction::Set)]
    pub resource: bool,

    /// Scaffold a controller for the kind.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "true", action = ArgAction::Set)]
    pub controller: bool,

    /// Scaffold the controller with a finalizer, for kinds whose deletion needs cleanup outside the cluster (what the object owns through ownerReferences needs none).
    #[arg(long)]
    pub finalizer: bool,

    /// Scaffold the kind with a controller that runs this image as a Deployment of `spec.size` replicas (as kubebuilder's deploy-image plugin); the manager's <KIND>_IMAGE variable overrides it.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,

    /// With --image: the container's port (the default of `spec.containerPort`).
    #[arg(long, value_name = "PORT", allow_hyphen_values = true)]
    pub image_container_port: Option<String>,

    /// With --image: the container's command and arguments, separated by commas (e.g. memcached,-m=64,-o,modern,-v); the image's entrypoint without it.
    #[arg(long, value_name = "COMMAND", allow_hyphen_values = true)]
    pub image_container_command: Option<String>,

    /// With --image: the user id the container runs as (runAsUser).
    #[arg(long, value_name = "UID", allow_hyphen_values = true)]
    pub run_as_user: Option<String>,

    /// Scaffold again over an existing group/version/kind, overwriting its files.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let root = super::current_dir()?;
    let mut project = Project::load(&root)?;
    let force = args.force;
    let mut resource = resolve(&project, &args)?;
    // A controller for a kind scaffolded earlier keeps its type module and sample.
    let keep_type = !args.resource && resource.resource && !force;
    match project.resources.iter().position(|r| r.same_gvk(&resource)) {
        Some(i) => {
            // The kind's webhooks (`opctl create webhook`) stay recorded.
            resource.webhooks = project.resources[i].webhooks.clone();
            project.resources[i] = resource.clone();
        }
        None => project.resources.push(resource.clone()),
    }
    let mut plan = plans::create_api(&project, &resource, keep_type, Some(&root))?;
    if force {
        plan.set_user_policy(IfExists::Overwrite);
    }
    let report = scaffold::apply(&root, &plan, "pass --force to overwrite them")?;
    scaffold::pristine::record(
        &root,
        &project,
        Some(Step::create_api(&resource, keep_type, force)),
    )?;
    report.print();
    println!();
    println!("{}", summary(&resource));
    println!("Next:");
    if resource.resource {
        println!(
            "  edit {} (the spec and status), then",
            crate::project::paths::kind_file(&resource)
        );
        let versions = project
            .crd_resources()
            .filter(|r| r.api_group == resource.api_group && r.kind == resource.kind)
            .count();
        if versions > 1 {
            println!(
                "  the API server stores the version marked `// +opctl:storageversion` (the first one scaffolded; move the line to change it)"
            );
            match project.hub_of(&resource) {
                Some(hub) if hub.version != resource.version => println!(
                    "  edit {} (how {} converts to and from the hub, {})",
                    crate::scaffold::webhooks::handler_file(
                        &resource,
                        crate::scaffold::webhooks::WebhookKind::Conversion
                    ),
                    resource.version,
                    hub.version
                ),
                Some(_) => {}
                None => println!(
                    "  to convert between the versions: opctl create webhook --group {} --version <hub> --kind {} --conversion",
                    resource.group, resource.kind
                ),
            }
        }
        println!("  opctl manifests          # CRD and RBAC from the code");
    } else {
        println!("  opctl manifests          # RBAC from the controller's markers");
    }
    if resource.controller {
        println!(
            "  edit src/controller/{}.rs (what reconciling means), then",
            names::kind_module(&resource.kind)
        );
        println!("  cargo test && make test-e2e");
    }
    Ok(())
}

fn summary(r: &Resource) -> String {
    match (r.resource, r.controller) {
        (true, true) => match &r.deploy_image {
            Some(deploy) => format!(
                "Added the kind {} with its controller, which runs {} as a Deployment.",
                r.gvk(),
                deploy.image
            ),
            None => format!("Added the kind {} with its controller.", r.gvk()),
        },
        (true, false) => format!("Added the kind {}.", r.gvk()),
        (false, _) => format!("Added a controller for {}.", r.gvk()),
    }
}

/// Validates the arguments against each other and the project, and makes
/// the PROJECT entry; nothing is written yet.
fn resolve(project: &Project, args: &Args) -> anyhow::Result<Resource> {
    names::validate_group(&args.group).or_else(|err| {
        // Built-in groups may be given in full (rbac.authorization.k8s.io) or as "core".
        if !args.resource && builtin::is_builtin_group(&args.group) {
            Ok(())
        } else {
            Err(err)
        }
    })?;
    names::validate_version(&args.version)?;
    // Built-in kinds are known good names (`Event`, `Role`, ...); the reserved
    // names only matter for types this project defines.
    if args.resource || builtin::find(&args.group, &args.version, &args.kind).is_none() {
        names::validate_kind(&args.kind)?;
    }
    if let Some(plural) = &args.plural {
        names::validate_plural(plural)?;
    }
    if !args.resource && !args.controller {
        anyhow::bail!(
            "nothing to scaffold: --resource=false and --controller=false; drop one of them"
        );
    }
    let deploy_image = deploy_image(args)?;
    if args.finalizer && !args.controller {
        anyhow::bail!(
            "--finalizer scaffolds a controller's cleanup, but --controller=false scaffolds no controller; drop one of them"
        );
    }

    let mut resource = if args.resource {
        own_kind(project, args)?
    } else {
        existing_kind(project, args)?
    };
    if deploy_image.is_some() {
        resource.deploy_image = deploy_image;
    }

    if let Some(existing) = project.resources.iter().find(|r| r.same_gvk(&resource))
        && !args.force
        && (args.resource || existing.controller)
    {
        anyhow::bail!(
            "{} is already in this project; pass --force to scaffold it again (its files are overwritten)",
            existing.gvk()
        );
    }
    if resource.controller {
        let module = names::kind_module(&resource.kind);
        if let Some(other) = project.resources.iter().find(|r| {
            r.controller && !r.same_gvk(&resource) && names::kind_module(&r.kind) == module
        }) {
            if other.kind != resource.kind {
                anyhow::bail!(
                    "--kind {} would share src/controller/{module}.rs with the controller of {}; choose another kind, or pass --controller=false",
                    resource.kind,
                    other.gvk()
                );
            }
            if other.api_group != resource.api_group {
                let fix = if resource.resource {
                    format!(
                        "choose another kind, or pass --controller=false for {} in group {} and write its controller by hand",
                        resource.kind, resource.group
                    )
                } else {
                    format!(
                        "write the controller of {} in group {} by hand",
                        resource.kind, resource.group
                    )
                };
                anyhow::bail!(
                    "src/controller/{module}.rs already holds the controller of {} in group {} ({}); a project has one controller per kind name, whatever its group: {fix}",
                    other.kind,
                    other.group,
                    other.gvk()
                );
            }
            anyhow::bail!(
                "src/controller/{module}.rs already holds the controller of {}; pass --controller=false (one controller reconciles a kind in all its versions)",
                other.gvk()
            );
        }
        if project.namespaced && !resource.namespaced {
            anyhow::bail!(
                "{} is cluster-scoped, but this project was initialised with --namespaced and its manager may only use Roles; pass --controller=false or use a project without --namespaced",
                resource.gvk()
            );
        }
    }
    Ok(resource)
}

/// The settings of `--image` and the flags that go with it, checked.
fn deploy_image(args: &Args) -> anyhow::Result<Option<DeployImage>> {
    let Some(image) = &args.image else {
        for (flag, given) in [
            (
                "--image-container-port",
                args.image_container_port.is_some(),
            ),
            ("--run-as-user", args.run_as_user.is_some()),
            (
                "--image-container-command",
                args.image_container_command.is_some(),
            ),
        ] {
            if given {
                anyhow::bail!(
                    "{flag} sets up the Deployment of --image, but no --image was given; add --image <image> or drop {flag}"
                );
            }
        }
        return Ok(None);
    };
    if !args.resource || !args.controller {
        let flag = if args.resource {
            "--controller=false"
        } else {
            "--resource=false"
        };
        anyhow::bail!(
            "--image scaffolds a kind together with the controller that deploys the image, but {flag} leaves one out; drop {flag} or --image"
        );
    }
    if !args.namespaced {
        anyhow::bail!(
            "--image needs a namespaced kind (its Deployment lives in the object's namespace); drop --namespaced=false or --image"
        );
    }
    if args.finalizer {
        anyhow::bail!(
            "--image scaffolds a controller whose Deployment goes with its owner, without a finalizer; drop --finalizer or --image"
        );
    }
    let container_port = match &args.image_container_port {
        Some(port) => match port.parse::<u16>() {
            Ok(port) if port > 0 => Some(port),
            _ => anyhow::bail!(
                "--image-container-port {port:?} is not a port; give a number from 1 to 65535"
            ),
        },
        None => None,
    };
    let run_as_user = match &args.run_as_user {
        Some(user) => match user.parse::<i64>() {
            Ok(user) => Some(user),
            Err(_) => anyhow::bail!(
                "--run-as-user {user:?} is not a user id; give a number from 0 to {}",
                i32::MAX
            ),
        },
        None => None,
    };
    let container_command = match &args.image_container_command {
        Some(command) => command.split(',').map(str::to_owned).collect(),
        None => Vec::new(),
    };
    let deploy = DeployImage {
        image: image.clone(),
        container_port,
        run_as_user,
        container_command,
    };
    deploy.check()?;
    Ok(Some(deploy))
}

/// A kind this project defines: `<group>.<domain>`.
fn own_kind(project: &Project, args: &Args) -> anyhow::Result<Resource> {
    if let Some(known) = builtin::find(&args.group, &args.version, &args.kind) {
        anyhow::bail!(
            "{}/{} {} is a built-in Kubernetes kind; add --resource=false to scaffold a controller for it",
            known.short_group(),
            known.version,
            known.kind
        );
    }
    names::check_group_against_domain(&args.group, &project.domain)?;
    let api_group = format!("{}.{}", args.group, project.domain);
    if !names::is_dns1123_subdomain(&api_group) {
        anyhow::bail!(
            "the API group {api_group} is longer than 253 characters; choose a shorter --group"
        );
    }
    let plural = args
        .plural
        .clone()
        .unwrap_or_else(|| names::plural_of(&args.kind));
    let module = names::group_module(&args.group);
    for other in project.crd_resources() {
        if other.group != args.group && names::group_module(&other.group) == module {
            anyhow::bail!(
                "--group {} and the project's group {} would share the Rust module api::{module}; choose another group",
                args.group,
                other.group
            );
        }
        if other.api_group != api_group || other.version != args.version || other.kind == args.kind
        {
            continue;
        }
        for (a, b) in [(&args.kind, &other.kind), (&other.kind, &args.kind)] {
            if *b == format!("{a}Spec") || *b == format!("{a}Status") {
                anyhow::bail!(
                    "--kind {} collides with the types of {} in {}/{}; choose another kind",
                    args.kind,
                    other.kind,
                    api_group,
                    args.version
                );
            }
        }
    }
    check_names_are_free(
        project,
        &api_group,
        &args.kind,
        &plural,
        args.plural.is_some(),
    )?;
    if let Some(other) = project
        .crd_resources()
        .find(|r| r.api_group == api_group && r.kind == args.kind)
    {
        if other.plural != plural {
            anyhow::bail!(
                "{} already has the plural {:?} in version {}; every version of a kind shares it: pass --plural {}",
                args.kind,
                other.plural,
                other.version,
                other.plural
            );
        }
        if other.namespaced != args.namespaced {
            anyhow::bail!(
                "{} is {} in version {}; every version of a kind shares its scope: pass --namespaced={}",
                args.kind,
                if other.namespaced {
                    "namespaced"
                } else {
                    "cluster-scoped"
                },
                other.version,
                other.namespaced
            );
        }
    }
    Ok(Resource {
        group: args.group.clone(),
        path: format!(
            "{}::api::{}::{}::{}",
            project.crate_name(),
            names::group_module(&args.group),
            args.version,
            args.kind
        ),
        api_group,
        version: args.version.clone(),
        kind: args.kind.clone(),
        plural,
        namespaced: args.namespaced,
        resource: true,
        builtin: false,
        controller: args.controller,
        finalizer: args.finalizer,
        webhooks: None,
        deploy_image: None,
    })
}

/// Refuses a kind whose names are taken in its API group by another kind.
/// kube-apiserver accepts a CRD's names only if its plural and singular are
/// no other CRD's plural or singular in the group, and its kind and list
/// kind no other's kind or list kind (NamesAccepted, PluralConflict ...);
/// `opctl manifests` would otherwise merge the two kinds into one CRD.
fn check_names_are_free(
    project: &Project,
    api_group: &str,
    kind: &str,
    plural: &str,
    plural_given: bool,
) -> anyhow::Result<()> {
    let singular = kind.to_ascii_lowercase();
    let list_kind = format!("{kind}List");
    for other in project
        .crd_resources()
        .filter(|r| r.api_group == api_group && r.kind != kind)
    {
        let other_singular = other.kind.to_ascii_lowercase();
        let crd = format!("{}.{api_group}", other.plural);
        if plural == other.plural || plural == other_singular {
            let what = if plural == other.plural {
                "plural"
            } else {
                "singular name"
            };
            if plural_given {
                anyhow::bail!(
                    "--plural {plural} is already the {what} of {} in {api_group} (CRD {crd}), and every kind of a group needs resource names of its own; choose another --plural",
                    other.kind
                );
            }
            anyhow::bail!(
                "--kind {kind} has the plural {plural}, already the {what} of {} in {api_group} (CRD {crd}), and every kind of a group needs resource names of its own; choose another kind, or give {kind} another plural with --plural",
                other.kind
            );
        }
        if singular == other.plural {
            anyhow::bail!(
                "--kind {kind} has the singular name {singular}, already the plural of {} in {api_group} (CRD {crd}), and every kind of a group needs resource names of its own; choose another kind",
                other.kind
            );
        }
        if kind == format!("{}List", other.kind) {
            anyhow::bail!(
                "--kind {kind} is the name of the list kind of {} in {api_group}; choose another kind",
                other.kind
            );
        }
        if list_kind == other.kind {
            anyhow::bail!(
                "--kind {kind} would have the list kind {list_kind}, already a kind of {api_group}; choose another kind"
            );
        }
    }
    Ok(())
}

/// A kind that exists already: a built-in one, or one of this project's
/// kinds scaffolded earlier without a controller.
fn existing_kind(project: &Project, args: &Args) -> anyhow::Result<Resource> {
    if let Some(known) = builtin::find(&args.group, &args.version, &args.kind) {
        if args.finalizer {
            anyhow::bail!(
                "--finalizer is for controllers of kinds this project defines; opctl scaffolds none for the built-in kind {}/{} {}: drop --finalizer",
                known.short_group(),
                known.version,
                known.kind
            );
        }
        return Ok(Resource::builtin(known, args.controller));
    }
    names::check_group_against_domain(&args.group, &project.domain)?;
    let api_group = format!("{}.{}", args.group, project.domain);
    if let Some(own) = project
        .crd_resources()
        .find(|r| r.api_group == api_group && r.version == args.version && r.kind == args.kind)
    {
        let mut own = own.clone();
        own.controller = true;
        own.finalizer = args.finalizer;
        return Ok(own);
    }
    anyhow::bail!(
        "unknown kind {}/{} {}: it is neither a built-in kind opctl knows (see `opctl create api --help`) nor a kind of this project; drop --resource=false to define it here",
        args.group,
        args.version,
        args.kind
    )
}
