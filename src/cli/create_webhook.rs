//! `opctl create webhook`: adds admission webhooks (defaulting, validation)
//! for a kind of the project or a built-in kind, or the conversion webhook
//! of a kind with several versions.

use crate::project::{Project, Resource, builtin, names};
use crate::scaffold::replay::Step;
use crate::scaffold::webhooks::{self as plan_webhooks, WebhookKind};
use crate::scaffold::{self, IfExists};

const EXAMPLES: &str = "\
Examples:
  # Defaulting and validation for a kind of this project:
  opctl create webhook --group apps --version v1alpha1 --kind SidecarSet --defaulting --programmatic-validation
  # Later, the other kind of webhook for the same kind (your code is kept):
  opctl create webhook --group web --version v1 --kind Guestbook --defaulting
  # A defaulting webhook for a built-in kind:
  opctl create webhook --group core --version v1 --kind Pod --defaulting
  # Conversion between the versions of a kind, through the hub version v2:
  opctl create webhook --group zalando --version v2 --kind Database --conversion

Then: opctl manifests (config/webhook from the `+opctl:webhook` markers), cargo test,
make test-e2e (the webhooks are called under opctl envtest).";

/// Add admission webhooks (defaulting, validation) for a kind.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// API group of the kind: a kind of this project (<group>.<domain>) or a built-in group such as core or apps.
    #[arg(long)]
    pub group: String,

    /// API version of the kind, such as v1 or v1alpha1.
    #[arg(long)]
    pub version: String,

    /// Kind, in PascalCase (SidecarSet, Pod).
    #[arg(long)]
    pub kind: String,

    /// Scaffold a mutating webhook that fills in defaults.
    #[arg(long)]
    pub defaulting: bool,

    /// Scaffold a validating webhook (create, update, delete).
    #[arg(long)]
    pub programmatic_validation: bool,

    /// Scaffold the conversion webhook of a kind with several versions; the version given is the hub, every other version converts to and from it.
    #[arg(long)]
    pub conversion: bool,

    /// Scaffold a webhook the kind already has again, overwriting its handler file.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let root = super::current_dir()?;
    let mut project = Project::load(&root)?;
    let (resource, requested) = resolve(&project, &args)?;
    match project.resources.iter().position(|r| r.same_gvk(&resource)) {
        Some(i) => project.resources[i] = resource.clone(),
        None => project.resources.push(resource.clone()),
    }
    let mut plan =
        crate::scaffold::plans::create_webhook(&project, &resource, &requested, Some(&root))?;
    if args.force {
        plan.set_user_policy(IfExists::Overwrite);
    }
    let report = scaffold::apply(&root, &plan, "pass --force to overwrite them")?;
    scaffold::pristine::record(
        &root,
        &project,
        Some(Step::create_webhook(&resource, &requested, args.force)),
    )?;
    report.print();
    println!();
    let added: Vec<String> = requested
        .iter()
        .map(|k| format!("a {}", k.describe()))
        .collect();
    println!(
        "Added {} webhook for {}.",
        added.join(" and "),
        resource.gvk()
    );
    println!("Next:");
    for kind in &requested {
        let files = match kind {
            WebhookKind::Conversion => project
                .spokes(&resource)
                .map(|spoke| plan_webhooks::handler_file(spoke, *kind))
                .collect(),
            _ => vec![plan_webhooks::handler_file(&resource, *kind)],
        };
        for file in files {
            println!("  edit {file} ({}), then", kind.what_to_edit());
        }
    }
    println!("  opctl manifests          # config/webhook from the +opctl:webhook markers");
    println!("  cargo test && make test-e2e");
    if !plan_webhooks::has_e2e_test(&resource) {
        println!(
            "No e2e test was added: opctl envtest does not serve {}; test the webhook on a cluster.",
            resource.gvk()
        );
    }
    Ok(())
}

/// Validates the arguments against the project; returns the kind's PROJECT
/// entry with its webhooks recorded, and the webhooks to scaffold now.
fn resolve(project: &Project, args: &Args) -> anyhow::Result<(Resource, Vec<WebhookKind>)> {
    if !builtin::is_builtin_group(&args.group) {
        names::validate_group(&args.group)?;
    }
    names::validate_version(&args.version)?;
    if builtin::find(&args.group, &args.version, &args.kind).is_none() {
        names::validate_kind(&args.kind)?;
    }
    let mut requested = Vec::new();
    if args.defaulting {
        requested.push(WebhookKind::Defaulting);
    }
    if args.programmatic_validation {
        requested.push(WebhookKind::Validation);
    }
    if args.conversion {
        requested.push(WebhookKind::Conversion);
    }
    if requested.is_empty() {
        anyhow::bail!(
            "nothing to scaffold: pass --defaulting, --programmatic-validation, --conversion or several"
        );
    }

    let mut resource = find_kind(project, args)?;
    // The example conversion copies the spec between versions: a kind whose
    // versions were made some with --image and some without has no spec in
    // common.
    if args.conversion {
        let versions = project
            .crd_resources()
            .filter(|r| r.api_group == resource.api_group && r.kind == resource.kind);
        let (with, without): (Vec<_>, Vec<_>) = versions.partition(|r| r.deploy_image.is_some());
        if let (Some(deployed), Some(other)) = (with.first(), without.first()) {
            anyhow::bail!(
                "{} was scaffolded with --image and {} without, so their specs differ and the scaffolded conversion cannot copy one into the other; scaffold the versions alike, or write the conversion by hand",
                deployed.gvk(),
                other.gvk()
            );
        }
    }
    if args.conversion {
        check_conversion(project, &resource, args.force)?;
    }
    let existing = resource.webhooks();
    for kind in &requested {
        if kind.is_in(&existing) && !args.force {
            anyhow::bail!(
                "{} already has a {} webhook; pass --force to scaffold it again (its handler file is overwritten)",
                resource.gvk(),
                kind.describe()
            );
        }
    }
    let mut webhooks = existing;
    for kind in &requested {
        kind.set_in(&mut webhooks);
    }
    resource.webhooks = Some(webhooks);
    plan_webhooks::check_names(project, &resource)?;
    Ok((resource, requested))
}

/// Checks that `hub`'s kind can convert through it: a kind of the project
/// with another version and no hub yet (the same hub again with `--force`).
fn check_conversion(project: &Project, hub: &Resource, force: bool) -> anyhow::Result<()> {
    if hub.builtin || !hub.resource {
        anyhow::bail!(
            "{} is not defined in this project: only kinds of this project (opctl create api) convert between versions",
            hub.gvk()
        );
    }
    if project.spokes(hub).next().is_none() {
        anyhow::bail!(
            "{} has one version only, nothing to convert; add another first with `opctl create api --group {} --version <version> --kind {} --controller=false`",
            hub.gvk(),
            hub.group,
            hub.kind
        );
    }
    if let Some(existing) = project.hub_of(hub)
        && (!existing.same_gvk(hub) || !force)
    {
        anyhow::bail!(
            "{} already converts through its hub {}; pass --force on that version to scaffold the conversion modules again",
            hub.kind,
            existing.version
        );
    }
    Ok(())
}

/// The kind the webhooks are for: one of this project's kinds (or a
/// built-in kind it already has a controller for), else a built-in kind.
fn find_kind(project: &Project, args: &Args) -> anyhow::Result<Resource> {
    let api_group = format!("{}.{}", args.group, project.domain);
    let known = builtin::find(&args.group, &args.version, &args.kind);
    if let Some(existing) = project.resources.iter().find(|r| {
        r.version == args.version
            && r.kind == args.kind
            && if r.builtin {
                known.is_some_and(|k| k.group == r.api_group)
            } else {
                r.api_group == api_group
            }
    }) {
        return Ok(existing.clone());
    }
    if known.is_none() {
        names::check_group_against_domain(&args.group, &project.domain)?;
    }
    if let Some(known) = known {
        if known.group == "admissionregistration.k8s.io" {
            anyhow::bail!(
                "{} objects are never sent to admission webhooks; choose another kind",
                known.kind
            );
        }
        return Ok(Resource::builtin(known, false));
    }
    if let Some(other) = project
        .crd_resources()
        .find(|r| r.api_group == api_group && r.kind == args.kind)
    {
        anyhow::bail!(
            "{} has no version {} in this project (it has {}); add it with `opctl create api --group {} --version {} --kind {}` first",
            args.kind,
            args.version,
            other.version,
            args.group,
            args.version,
            args.kind
        );
    }
    anyhow::bail!(
        "unknown kind {}/{} {}: it is neither a kind of this project (add it first with `opctl create api --group {} --version {} --kind {}`) nor a built-in kind opctl knows (see `opctl create api --help`)",
        args.group,
        args.version,
        args.kind,
        args.group,
        args.version,
        args.kind
    )
}
