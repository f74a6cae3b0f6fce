//! `opctl upgrade`: brings a project to the current scaffold. The commands
//! that made it (`.opctl/history.yaml`) are replayed with the current
//! templates; scaffold-owned files are replaced, user-owned files are
//! merged three ways against the pristine copy opctl made last time
//! (`.opctl/pristine/`), so that the user's edits survive and only what the
//! templates changed comes in. Files derived from the code are left to
//! `opctl manifests`.

mod git;
mod merge;

use std::collections::BTreeMap;
use std::path::Path;

pub use git::require_clean;
pub use merge::Change;

use crate::project::Project;
use crate::project::paths::{HISTORY_FILE, PRISTINE_DIR, target};
use crate::scaffold::replay::{load_history, replay};
use crate::scaffold::{IfExists, Owner, Plan, apply, pristine};

/// What an upgrade changes, by path.
#[derive(Debug, Default)]
pub struct Upgrade {
    pub changes: BTreeMap<String, Change>,
}

impl Upgrade {
    /// Paths written with conflict markers.
    pub fn conflicts(&self) -> Vec<&str> {
        let conflicts = self.changes.iter();
        let conflicts = conflicts.filter(|(_, c)| matches!(c, Change::Conflict(_)));
        conflicts.map(|(path, _)| path.as_str()).collect()
    }
}

/// Works out the upgrade of the project under `root`; writes nothing.
pub fn plan(root: &Path, project: &Project) -> anyhow::Result<Upgrade> {
    let history = load_history(root);
    let mut upgrade = Upgrade::default();
    for (path, theirs) in replay(project, &history)? {
        // The record of the upgrade itself is written afterwards.
        if path.starts_with(PRISTINE_DIR)
            || path == HISTORY_FILE
            || theirs.owner == Owner::Generated
        {
            continue;
        }
        let ours = read(root, &path)?;
        let base = pristine::read(root, &path);
        let change = merge::decide(
            theirs.owner,
            ours.as_deref(),
            base.as_deref(),
            &theirs.contents,
        );
        if let Some(change) = change {
            upgrade.changes.insert(path, change);
        }
    }
    Ok(upgrade)
}

/// Writes `upgrade` under `root` in one step, then the new pristine copies.
pub fn write(root: &Path, project: &Project, upgrade: &Upgrade) -> anyhow::Result<()> {
    let mut plan = Plan::default();
    for (path, change) in &upgrade.changes {
        if let Some(text) = change.contents() {
            plan.file(
                path.clone(),
                text.to_owned(),
                Owner::User,
                IfExists::Overwrite,
            );
        }
    }
    apply(root, &plan, "opctl upgrade rewrites files in place")?;
    pristine::write(root, project, &load_history(root))
}

fn read(root: &Path, relative: &str) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(target(root, relative)) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => anyhow::bail!("cannot read {relative}: {err}"),
    }
}
