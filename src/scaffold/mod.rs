//! The scaffolding engine: a [`Plan`] of files (path, contents, owner and what
//! to do when the file exists) and insertions at `+opctl:scaffold:` markers,
//! checked as a whole before anything touches the disk, then applied
//! atomically: every file is staged next to its target and renamed into
//! place, and any failure puts the tree back as it was.

mod apply;
pub mod chart;
mod lifted_text;
pub mod lockfile;
pub mod markers;
pub mod plans;
pub mod pristine;
pub mod replay;
pub mod runtime;
pub mod templates;
pub mod values;
pub mod webhooks;

use std::collections::BTreeMap;
use std::fmt;

pub use apply::{Outcome, apply, apply_in_memory};

/// Who owns a generated file, which decides whether later commands may rewrite it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// Written once for the user to edit; never overwritten without `--force`,
    /// later commands only insert at markers.
    User,
    /// Regenerated identically from PROJECT by every command.
    Scaffold,
    /// Derived from the code by `opctl manifests` (CRDs, RBAC, their kustomizations).
    Generated,
    /// A copy of a crate the project builds with: the manager runtime under
    /// `.opctl/runtime/`, written by `opctl init` and `opctl upgrade` only.
    Vendored,
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Owner::User => "user",
            Owner::Scaffold => "scaffold",
            Owner::Generated => "generated",
            Owner::Vendored => "vendored",
        })
    }
}

/// What to do when a planned file already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfExists {
    /// Refuse the whole plan.
    Error,
    /// Keep the existing file.
    Skip,
    /// Replace it.
    Overwrite,
}

/// One file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Relative to the project root, with '/' separators.
    pub path: String,
    pub contents: String,
    pub owner: Owner,
    pub if_exists: IfExists,
}

/// A fragment to insert before the line holding a marker, unless the file
/// already contains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insertion {
    /// Relative to the project root.
    pub path: String,
    /// The marker's name: `controllers` for `// +opctl:scaffold:controllers`.
    pub marker: String,
    /// The text to insert; each line gets the marker line's indentation.
    pub fragment: String,
}

/// Everything one command will write.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    files: Vec<File>,
    insertions: Vec<Insertion>,
}

impl Plan {
    /// Adds a file; a later file with the same path replaces an earlier one.
    pub fn file(
        &mut self,
        path: impl Into<String>,
        contents: String,
        owner: Owner,
        if_exists: IfExists,
    ) {
        let path = path.into();
        self.files.retain(|f| f.path != path);
        self.files.push(File {
            path,
            contents,
            owner,
            if_exists,
        });
    }

    /// Adds an insertion.
    pub fn insert(
        &mut self,
        path: impl Into<String>,
        marker: impl Into<String>,
        fragment: impl Into<String>,
    ) {
        self.insertions.push(Insertion {
            path: path.into(),
            marker: marker.into(),
            fragment: fragment.into(),
        });
    }

    pub fn files(&self) -> &[File] {
        &self.files
    }

    pub fn insertions(&self) -> &[Insertion] {
        &self.insertions
    }

    /// Every planned file's owner, by path.
    pub fn owners(&self) -> BTreeMap<String, Owner> {
        self.files
            .iter()
            .map(|f| (f.path.clone(), f.owner))
            .collect()
    }

    /// Sets the if-exists policy of user-owned files (what `--force` changes).
    pub fn set_user_policy(&mut self, if_exists: IfExists) {
        for file in &mut self.files {
            if file.owner == Owner::User {
                file.if_exists = if_exists;
            }
        }
    }

    /// Sets the policy of every file (`opctl init` refuses to overwrite anything).
    pub fn set_policy(&mut self, if_exists: IfExists) {
        for file in &mut self.files {
            file.if_exists = if_exists;
        }
    }
}
