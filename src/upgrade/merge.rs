//! What `opctl upgrade` does with one file: the user's text (ours), the
//! text the current templates make (theirs) and, for user-owned files, the
//! text opctl made last time (the pristine base).

use crate::scaffold::{Owner, lockfile};

/// The fate of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// New in the current layout.
    Create(String),
    /// Scaffold-owned, or user-owned and not edited by the user: replaced.
    Update(String),
    /// User-owned, edited by the user and by the templates: merged cleanly.
    Merge(String),
    /// Both changed the same lines: written with conflict markers.
    Conflict(String),
    /// User-owned, removed by the user: not brought back.
    KeepRemoved,
    /// Where an older layout kept a file the current one keeps elsewhere
    /// (or no longer has): removed.
    Remove,
}

impl Change {
    /// The text to write, if any.
    pub fn contents(&self) -> Option<&str> {
        match self {
            Change::Create(text)
            | Change::Update(text)
            | Change::Merge(text)
            | Change::Conflict(text) => Some(text),
            Change::KeepRemoved | Change::Remove => None,
        }
    }

    /// How the change is listed.
    pub fn label(&self) -> &'static str {
        match self {
            Change::Create(_) => "created",
            Change::Update(_) => "updated",
            Change::Merge(_) => "merged",
            Change::Conflict(_) => "CONFLICT",
            Change::KeepRemoved => "kept removed",
            Change::Remove => "removed",
        }
    }
}

/// What to do with a file of `owner`; `None` when nothing changes.
pub fn decide(
    owner: Owner,
    ours: Option<&str>,
    base: Option<&str>,
    theirs: &str,
) -> Option<Change> {
    let Some(ours) = ours else {
        // A user-owned file opctl made before and the user deleted stays deleted.
        return match (owner, base) {
            (Owner::User, Some(_)) => Some(Change::KeepRemoved),
            _ => Some(Change::Create(theirs.to_owned())),
        };
    };
    if ours == theirs {
        return None;
    }
    if owner != Owner::User {
        return Some(Change::Update(theirs.to_owned()));
    }
    match base {
        Some(base) if base == theirs => None,
        Some(base) if base == ours => Some(Change::Update(theirs.to_owned())),
        // Without a base (a project made before opctl kept pristine copies)
        // every difference is the user's to settle.
        base => match diffy::merge(base.unwrap_or_default(), ours, theirs) {
            Ok(merged) if merged == ours => None,
            Ok(merged) => Some(Change::Merge(merged)),
            Err(conflicted) => Some(Change::Conflict(conflicted)),
        },
    }
}

/// What to do with the project's `Cargo.lock` (ours) given the lock of the
/// current scaffold (theirs): the scaffold's tested versions come in, the
/// packages the user added stay ([`lockfile::merge`]). A lock opctl cannot
/// read is replaced: cargo made it, and cargo will add back what the
/// user's dependencies need.
pub fn decide_lock(ours: Option<&str>, theirs: &str) -> Option<Change> {
    let Some(ours) = ours else {
        return Some(Change::Create(theirs.to_owned()));
    };
    if ours == theirs {
        return None;
    }
    match lockfile::merge(ours, theirs) {
        Ok(merged) if merged == ours => None,
        Ok(merged) if merged == theirs => Some(Change::Update(merged)),
        Ok(merged) => Some(Change::Merge(merged)),
        Err(_) => Some(Change::Update(theirs.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "fn main() {\n    setup();\n    run();\n}\n";

    #[test]
    fn scaffold_files_are_replaced_and_equal_files_left_alone() {
        let change = decide(Owner::Scaffold, Some("old\n"), None, "new\n");
        assert_eq!(change, Some(Change::Update("new\n".into())));
        assert_eq!(
            decide(Owner::Scaffold, Some("same\n"), None, "same\n"),
            None
        );
    }

    #[test]
    fn user_files_follow_the_templates_only_where_the_user_did_not_edit() {
        let theirs = "fn main() {\n    setup();\n    run();\n    wait();\n}\n";
        // Not edited: replaced.
        let change = decide(Owner::User, Some(BASE), Some(BASE), theirs);
        assert_eq!(change, Some(Change::Update(theirs.into())));
        // Templates unchanged: the user's text stays.
        let ours = "fn main() {\n    setup_more();\n    run();\n}\n";
        assert_eq!(decide(Owner::User, Some(ours), Some(BASE), BASE), None);
        // Both changed, apart: merged.
        let merged = "fn main() {\n    setup_more();\n    run();\n    wait();\n}\n";
        let change = decide(Owner::User, Some(ours), Some(BASE), theirs);
        assert_eq!(change, Some(Change::Merge(merged.into())));
    }

    #[test]
    fn the_same_lines_changed_on_both_sides_are_a_conflict() {
        let ours = "fn main() {\n    setup();\n    run_fast();\n}\n";
        let theirs = "fn main() {\n    setup();\n    run_safely();\n}\n";
        let Some(Change::Conflict(text)) = decide(Owner::User, Some(ours), Some(BASE), theirs)
        else {
            panic!("a conflict");
        };
        assert!(
            text.contains("<<<<<<<") && text.contains(">>>>>>>"),
            "{text}"
        );
        assert!(
            text.contains("run_fast") && text.contains("run_safely"),
            "{text}"
        );
    }

    #[test]
    fn removed_user_files_stay_removed_and_new_files_are_created() {
        assert_eq!(
            decide(Owner::User, None, Some(BASE), BASE),
            Some(Change::KeepRemoved)
        );
        assert_eq!(
            decide(Owner::User, None, None, "new\n"),
            Some(Change::Create("new\n".into()))
        );
    }

    #[test]
    fn a_lock_the_user_left_alone_is_replaced_and_an_unreadable_one_too() {
        let theirs = "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n";
        assert_eq!(decide_lock(Some(theirs), theirs), None);
        assert_eq!(
            decide_lock(None, theirs),
            Some(Change::Create(theirs.into()))
        );
        assert_eq!(
            decide_lock(Some("garbage"), theirs),
            Some(Change::Update(theirs.into()))
        );
    }
}
