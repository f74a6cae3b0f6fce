//! `opctl init`: scaffolds a new operator project in the current directory.

mod vcs;

use std::path::Path;

use clap::ArgAction;

use crate::project::{License, PROJECT_FILE, Project, names};
use crate::scaffold::{self, IfExists, plans};

const EXAMPLES: &str = "\
Examples:
  mkdir memcached-operator && cd memcached-operator
  opctl init --domain example.com
  opctl init --domain org --project-name database --owner \"Jane Doe\"
  opctl init --domain example.com --namespaced   # Roles, and --namespace required
  opctl init --domain example.com --vcs none     # no git repository";

/// Scaffold a new operator project in the current directory.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Domain of the project's API groups: a kind in --group G gets the group G.<domain>.
    #[arg(long)]
    pub domain: String,

    /// Project name: crate, binaries and Kubernetes object prefixes [default: the directory's name].
    #[arg(long)]
    pub project_name: Option<String>,

    /// Copyright owner, recorded in Cargo.toml.
    #[arg(long)]
    pub owner: Option<String>,

    /// License of the generated code.
    #[arg(long, value_enum, default_value = "apache2")]
    pub license: License,

    /// Watch only the namespaces given to the manager, with Roles instead of ClusterRoles.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false", action = ArgAction::Set)]
    pub namespaced: bool,

    /// Start a git repository in the directory, unless it is in one already (as `cargo new`; no commit is made).
    #[arg(long, value_enum, default_value = "git")]
    pub vcs: vcs::Vcs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let root = super::current_dir()?;
    let vcs = args.vcs;
    let project = project_for(&root, args)?;
    let start_repository = vcs::repository_to_start(&root, vcs)?;
    let mut plan = plans::init(&project)?;
    plan.set_policy(IfExists::Error);
    let repository = start_repository.then(|| vcs::start_repository(&root));
    let scaffolded = scaffold::apply(
        &root,
        &plan,
        "opctl init only writes into a directory without these files; move them away or start in an empty directory",
    )
    .and_then(|report| {
        scaffold::pristine::record(&root, &project, None)?;
        Ok(report)
    });
    let report = match (scaffolded, repository) {
        (Ok(report), Some(repository)) => {
            repository.finish()?;
            report
        }
        (Ok(report), None) => report,
        (Err(err), repository) => {
            if let Some(repository) = repository {
                repository.undo();
            }
            return Err(err);
        }
    };
    report.print();
    println!();
    println!(
        "Scaffolded project {} (domain {}){}.",
        project.project_name,
        project.domain,
        if start_repository {
            ", in a new git repository"
        } else {
            ""
        }
    );
    println!("Next: add a kind and its controller, for example");
    println!("  opctl create api --group webapp --version v1 --kind Guestbook");
    println!("or a controller for a built-in kind:");
    println!("  opctl create api --group apps --version v1 --kind Deployment --resource=false");
    Ok(())
}

/// Validates every argument and makes the PROJECT record, before any write.
fn project_for(root: &Path, args: Args) -> anyhow::Result<Project> {
    names::validate_domain(&args.domain)?;
    let name = match args.project_name {
        Some(name) => name,
        None => {
            let dir = root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = names::project_name_from_dir(&dir);
            if names::validate_project_name(&name).is_err() {
                anyhow::bail!(
                    "cannot name the project after the directory {dir:?}; pass --project-name my-operator (lowercase letters, digits and '-')"
                );
            }
            name
        }
    };
    names::validate_project_name(&name)?;
    if let Some(owner) = &args.owner
        && (owner.trim().is_empty() || owner.chars().any(char::is_control))
    {
        anyhow::bail!(
            "invalid --owner {owner:?}: give a name without control characters, for example --owner \"Jane Doe\""
        );
    }
    if root.join(PROJECT_FILE).exists() {
        anyhow::bail!(
            "{} already holds an opctl project ({PROJECT_FILE} exists); add to it with `opctl create api`, or run `opctl init` in an empty directory",
            root.display()
        );
    }
    Ok(Project::new(
        &args.domain,
        &name,
        args.owner,
        args.license,
        args.namespaced,
    ))
}
