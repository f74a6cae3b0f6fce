//! Pristine copies of user-owned files: after every command, `.opctl/pristine/`
//! holds each user-owned file as opctl's templates made it, without the
//! user's edits, and `.opctl/history.yaml` the commands that made the
//! project. A later opctl merges its new version of a file with the user's
//! against this copy (`opctl upgrade`), so that it changes only what the
//! templates changed.

use std::path::Path;

use super::replay::{Step, history_text, load_history, replay};
use super::{IfExists, Owner, Plan, apply};
use crate::project::Project;
use crate::project::paths::{HISTORY_FILE, has_pristine_copy, pristine, target};

/// Records `step` (the command that just ran; none for `init`) and writes
/// the pristine copy of every user-owned file of `project` under `root`.
pub fn record(root: &Path, project: &Project, step: Option<Step>) -> anyhow::Result<()> {
    let mut history = load_history(root);
    // The same command again (`--force` twice) makes the same files: one
    // record of it is enough, and the project stays unchanged.
    if let Some(step) = step
        && history.last() != Some(&step)
    {
        history.push(step);
    }
    write(root, project, &history)
}

/// Writes `history` and the pristine copies it makes of `project`'s
/// user-owned files under `root`.
pub fn write(root: &Path, project: &Project, history: &[Step]) -> anyhow::Result<()> {
    let mut plan = Plan::default();
    for (path, file) in replay(project, history)? {
        if file.owner == Owner::User && has_pristine_copy(&path) {
            plan.file(
                pristine(&path),
                file.contents,
                Owner::Scaffold,
                IfExists::Overwrite,
            );
        }
    }
    plan.file(
        HISTORY_FILE,
        history_text(history)?,
        Owner::Scaffold,
        IfExists::Overwrite,
    );
    apply(root, &plan, "pristine copies are always rewritten")?;
    Ok(())
}

/// The pristine copy of `relative` under `root`, if there is one.
pub fn read(root: &Path, relative: &str) -> Option<String> {
    std::fs::read_to_string(target(root, &pristine(relative))).ok()
}
