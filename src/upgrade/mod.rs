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

use crate::project::paths::LOCK_FILE;
use crate::project::paths::{HISTORY_FILE, PRISTINE_DIR, pristine as pristine_path, target};
use crate::project::{LAYOUT, Project, layouts};
use crate::scaffold::replay::{load_history, replay};
use crate::scaffold::runtime;
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

/// Works out the upgrade of the project under `root` (as PROJECT there
/// says: `project`, of its own layout); writes nothing.
pub fn plan(root: &Path, project: &Project) -> anyhow::Result<Upgrade> {
    let layout = project.layout.as_str();
    let current = current_layout(project);
    let history = load_history(root);
    let mut upgrade = Upgrade::default();
    let mut runtime_copy = BTreeMap::new();
    for (path, theirs) in replay(&current, &history)? {
        // The record of the upgrade itself is written afterwards.
        if path.starts_with(PRISTINE_DIR)
            || path == HISTORY_FILE
            || theirs.owner == Owner::Generated
        {
            continue;
        }
        if theirs.owner == Owner::Vendored {
            runtime_copy.insert(path, theirs.contents);
            continue;
        }
        // A file the older layout kept elsewhere is read from there, and moved.
        let old = layouts::old_path(layout, &path);
        let mut ours = read(root, &path)?;
        let mut base = pristine::read(root, &path);
        let moved = old != path && target(root, &old).is_file();
        if moved {
            ours = ours.or(read(root, &old)?);
            base = base.or_else(|| pristine::read(root, &old));
            upgrade.changes.insert(old.clone(), Change::Remove);
        }
        let change = if path == LOCK_FILE {
            merge::decide_lock(ours.as_deref(), &theirs.contents)
        } else {
            merge::decide(
                theirs.owner,
                ours.as_deref(),
                base.as_deref(),
                &theirs.contents,
            )
        };
        match (change, ours) {
            (Some(change), _) => {
                upgrade.changes.insert(path, change);
            }
            // Unchanged, but in its new place.
            (None, Some(text)) if moved && !target(root, &path).is_file() => {
                upgrade.changes.insert(path, Change::Update(text));
            }
            (None, _) => {}
        }
    }
    for path in layouts::removed(layout) {
        if target(root, path).is_file() {
            upgrade.changes.insert(path.to_owned(), Change::Remove);
        }
    }
    vendor_runtime(root, &mut upgrade, &runtime_copy)?;
    Ok(upgrade)
}

/// Brings the copy of the manager runtime under `.opctl/runtime/` to this
/// opctl's (`copy`), files of an older copy removed, if the project's
/// `Cargo.toml` as the upgrade leaves it takes the runtime from there; a
/// project that points elsewhere (opctl's repository, crates.io) gets none.
fn vendor_runtime(
    root: &Path,
    upgrade: &mut Upgrade,
    copy: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let manifest = match upgrade.changes.get("Cargo.toml").and_then(Change::contents) {
        Some(text) => Some(text.to_owned()),
        None => read(root, "Cargo.toml")?,
    };
    if !manifest.is_some_and(|text| runtime::is_vendored(&text)) {
        return Ok(());
    }
    for (path, text) in copy {
        match read(root, path)? {
            Some(ours) if ours == *text => {}
            Some(_) => {
                upgrade
                    .changes
                    .insert(path.clone(), Change::Update(text.clone()));
            }
            None => {
                upgrade
                    .changes
                    .insert(path.clone(), Change::Create(text.clone()));
            }
        }
    }
    for path in files_under(root, runtime::DIR)? {
        if !copy.contains_key(&path) {
            upgrade.changes.insert(path, Change::Remove);
        }
    }
    Ok(())
}

/// Every file under the directory `relative` (paths relative to `root`).
fn files_under(root: &Path, relative: &str) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    let mut dirs = vec![relative.to_owned()];
    while let Some(dir) = dirs.pop() {
        let entries = match std::fs::read_dir(target(root, &dir)) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => anyhow::bail!("cannot read {dir}: {err}"),
        };
        for entry in entries {
            let entry = entry.map_err(|err| anyhow::anyhow!("cannot read {dir}: {err}"))?;
            let path = format!("{dir}/{}", entry.file_name().to_string_lossy());
            if entry.path().is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    Ok(files)
}

/// `project` as the current layout records it.
pub fn current_layout(project: &Project) -> Project {
    Project {
        layout: LAYOUT.to_owned(),
        ..project.clone()
    }
}

/// Writes `upgrade` under `root` in one step, removes what moved or went
/// away, then writes the new pristine copies (`project` in the current
/// layout).
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
    for (path, change) in &upgrade.changes {
        if *change == Change::Remove {
            remove(root, path)?;
            remove(root, &pristine_path(path))?;
        }
    }
    pristine::write(root, project, &load_history(root))
}

/// Lets cargo settle a lock merged from the scaffold's and the user's
/// (the versions of packages both need, what the user's dependencies need
/// of the new ones): as `cargo metadata` does when the lock lags the
/// manifests, offline first, from the registry if that is not enough.
pub fn settle_lock(root: &Path) -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let settle = |offline: bool| {
        let mut command = std::process::Command::new(&cargo);
        command.args(["metadata", "--format-version", "1", "--quiet"]);
        if offline {
            command.arg("--offline");
        }
        let output = command.current_dir(root).output();
        output.is_ok_and(|output| output.status.success())
    };
    anyhow::ensure!(
        settle(true) || settle(false),
        "Cargo.lock merged, but cargo could not settle it; run `cargo update --workspace` in the project"
    );
    Ok(())
}

/// Removes the file `relative` and the directories it leaves empty.
fn remove(root: &Path, relative: &str) -> anyhow::Result<()> {
    let path = target(root, relative);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => anyhow::bail!("cannot remove {relative}: {err}"),
    }
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| *d != root) {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}

fn read(root: &Path, relative: &str) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(target(root, relative)) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => anyhow::bail!("cannot read {relative}: {err}"),
    }
}
