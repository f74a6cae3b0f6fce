//! `opctl files` (hidden): every file the project's recorded commands make,
//! with its owner. Tools that regenerate a project and compare it with a
//! committed copy use it to skip the user-owned files.

use crate::project::Project;
use crate::scaffold::plans;

/// List the project's files and who owns each (user, scaffold, generated, vendored).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only files of this owner.
    #[arg(long, value_parser = ["user", "scaffold", "generated", "vendored"])]
    pub owner: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let root = super::current_dir()?;
    let project = Project::load(&root)?;
    for (path, owner) in plans::ownership(&project)? {
        match &args.owner {
            Some(only) if *only != owner.to_string() => {}
            Some(_) => println!("{path}"),
            None => println!("{owner}\t{path}"),
        }
    }
    Ok(())
}
