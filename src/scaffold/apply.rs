//! Applying a [`Plan`]: check everything, stage every file next to its
//! target, then rename the staged files into place; on any failure, undo.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::markers::{self, InsertError};
use super::{IfExists, Plan};
use crate::project::paths::target;

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Updated,
    /// Planned, and already holding exactly that content.
    Unchanged,
    /// Existing user file kept (policy `Skip`).
    Kept,
}

/// What [`apply`] did, by path.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub files: BTreeMap<String, Outcome>,
}

impl Report {
    /// Paths with the given outcome.
    pub fn with(&self, outcome: Outcome) -> Vec<&str> {
        self.files
            .iter()
            .filter(|(_, o)| **o == outcome)
            .map(|(p, _)| p.as_str())
            .collect()
    }

    /// Prints created and updated files, as kubebuilder does.
    pub fn print(&self) {
        for path in self.with(Outcome::Created) {
            println!("  created  {path}");
        }
        for path in self.with(Outcome::Updated) {
            println!("  updated  {path}");
        }
    }
}

/// One file's final state, worked out before anything is written.
struct Change {
    relative: String,
    target: PathBuf,
    contents: String,
    existed: bool,
}

/// Applies `plan` under `root` atomically. `force_hint` is how the error for
/// would-be-overwritten files tells the user to go ahead.
pub fn apply(root: &Path, plan: &Plan, force_hint: &str) -> anyhow::Result<Report> {
    let mut report = Report::default();
    let changes = changes_under(root, plan, force_hint, &mut report)?;
    write_all(&changes, &mut StdFs)?;
    Ok(report)
}

/// The changes `plan` makes to the files under `root`.
fn changes_under(
    root: &Path,
    plan: &Plan,
    force_hint: &str,
    report: &mut Report,
) -> anyhow::Result<Vec<Change>> {
    let read = |relative: &str| read_existing(&target(root, relative), relative);
    let changes = prepare(&read, plan, force_hint, report)?;
    Ok(changes
        .into_iter()
        .map(|(relative, contents, existed)| Change {
            target: target(root, &relative),
            relative,
            contents,
            existed,
        })
        .collect())
}

/// Applies `plan` to `files` (contents by path relative to the project
/// root), as [`apply`] applies it to a directory: for work that needs the
/// result and not the files (the pristine copies' replay).
pub fn apply_in_memory(
    files: &mut BTreeMap<String, String>,
    plan: &Plan,
    force_hint: &str,
) -> anyhow::Result<()> {
    let read = |relative: &str| Ok(files.get(relative).cloned());
    let changes = prepare(&read, plan, force_hint, &mut Report::default())?;
    for (relative, contents, _) in changes {
        files.insert(relative, contents);
    }
    Ok(())
}

/// The current text of a file by its relative path (`None`: no such file).
type Reader<'a> = dyn Fn(&str) -> anyhow::Result<Option<String>> + 'a;

/// Works out every file's final contents (relative path, contents, whether
/// it existed) from what `read` says is there now; writes nothing.
fn prepare(
    read: &Reader<'_>,
    plan: &Plan,
    force_hint: &str,
    report: &mut Report,
) -> anyhow::Result<Vec<(String, String, bool)>> {
    let mut finals: BTreeMap<String, (String, bool)> = BTreeMap::new();
    let mut conflicts = Vec::new();
    for file in plan.files() {
        let existing = read(&file.path)?;
        match (&existing, file.if_exists) {
            (None, _) => {
                finals.insert(file.path.clone(), (file.contents.clone(), false));
            }
            (Some(_), IfExists::Error) => conflicts.push(file.path.as_str()),
            (Some(current), IfExists::Skip) => {
                report.files.insert(file.path.clone(), Outcome::Kept);
                finals.insert(file.path.clone(), (current.clone(), true));
            }
            (Some(_), IfExists::Overwrite) => {
                finals.insert(file.path.clone(), (file.contents.clone(), true));
            }
        }
    }
    if !conflicts.is_empty() {
        conflicts.sort_unstable();
        anyhow::bail!(
            "would overwrite {}: {} already there; {force_hint}",
            conflicts.join(", "),
            if conflicts.len() == 1 {
                "it is"
            } else {
                "they are"
            },
        );
    }

    for insertion in plan.insertions() {
        if !finals.contains_key(&insertion.path) {
            let current = read(&insertion.path)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "cannot register the new code: {} is missing; restore it (it holds the `{}` marker) and run the command again",
                    insertion.path,
                    markers::marker(&insertion.marker)
                )
            })?;
            finals.insert(insertion.path.clone(), (current, true));
        }
        let Some((text, _)) = finals.get_mut(&insertion.path) else {
            continue;
        };
        match markers::insert(text, &insertion.marker, &insertion.fragment) {
            Ok(updated) => *text = updated,
            Err(InsertError::MissingMarker) => anyhow::bail!(
                "cannot find the `// {}` marker in {}: put that comment line back where opctl should add code, then run the command again",
                markers::marker(&insertion.marker),
                insertion.path
            ),
        }
    }

    let mut changes = Vec::new();
    for (relative, (contents, existed)) in finals {
        let current = if existed { read(&relative)? } else { None };
        if current.as_deref() == Some(contents.as_str()) {
            report.files.entry(relative).or_insert(Outcome::Unchanged);
            continue;
        }
        report.files.insert(
            relative.clone(),
            if existed {
                Outcome::Updated
            } else {
                Outcome::Created
            },
        );
        changes.push((relative, contents, existed));
    }
    Ok(changes)
}

fn read_existing(path: &Path, relative: &str) -> anyhow::Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) if path.is_dir() => {
            anyhow::bail!(
                "cannot write {relative}: a directory is in the way ({err}); move it away"
            )
        }
        Err(err) => anyhow::bail!("cannot read {relative}: {err}"),
    }
}

/// The file-system operations [`write_all`] needs, so that tests can make any
/// one of them fail.
trait Fs {
    fn create_dir(&mut self, path: &Path) -> io::Result<()>;
    fn write(&mut self, path: &Path, contents: &str) -> io::Result<()>;
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&mut self, path: &Path) -> io::Result<()>;
    fn remove_dir(&mut self, path: &Path) -> io::Result<()>;
}

struct StdFs;

impl Fs for StdFs {
    fn create_dir(&mut self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }
    fn write(&mut self, path: &Path, contents: &str) -> io::Result<()> {
        fs::write(path, contents)
    }
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn remove_dir(&mut self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.opctl-{suffix}"))
}

/// Stages every change, then renames them into place; undoes everything on
/// the first failure.
fn write_all(changes: &[Change], fs: &mut dyn Fs) -> anyhow::Result<()> {
    let mut created_dirs: Vec<PathBuf> = Vec::new();
    let mut staged: Vec<PathBuf> = Vec::new();
    let mut backups: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut placed: Vec<PathBuf> = Vec::new();

    let result = (|| -> anyhow::Result<()> {
        for change in changes {
            if let Some(parent) = change.target.parent() {
                create_dirs(parent, fs, &mut created_dirs)
                    .map_err(|err| write_error(&change.relative, &err))?;
            }
            let temp = sibling(&change.target, "new");
            fs.write(&temp, &change.contents)
                .map_err(|err| write_error(&change.relative, &err))?;
            staged.push(temp);
        }
        for (change, temp) in changes.iter().zip(&staged) {
            if change.existed {
                let backup = sibling(&change.target, "old");
                fs.rename(&change.target, &backup)
                    .map_err(|err| write_error(&change.relative, &err))?;
                backups.push((backup, change.target.clone()));
            }
            fs.rename(temp, &change.target)
                .map_err(|err| write_error(&change.relative, &err))?;
            placed.push(change.target.clone());
        }
        Ok(())
    })();

    match result {
        Ok(()) => {
            for (backup, _) in &backups {
                let _ = fs.remove_file(backup);
            }
            Ok(())
        }
        Err(err) => {
            // Undo in reverse: new files out, old files back, staging and new directories gone.
            for path in placed.iter().rev() {
                let _ = fs.remove_file(path);
            }
            for (backup, original) in backups.iter().rev() {
                let _ = fs.rename(backup, original);
            }
            for temp in &staged {
                let _ = fs.remove_file(temp);
            }
            for dir in created_dirs.iter().rev() {
                let _ = fs.remove_dir(dir);
            }
            Err(err.context("nothing was changed"))
        }
    }
}

fn create_dirs(dir: &Path, fs: &mut dyn Fs, created: &mut Vec<PathBuf>) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent, fs, created)?;
    }
    fs.create_dir(dir)?;
    created.push(dir.to_path_buf());
    Ok(())
}

fn write_error(relative: &str, err: &io::Error) -> anyhow::Error {
    let hint = match err.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            "; make the project directory writable and run the command again"
        }
        _ => "",
    };
    anyhow::anyhow!("cannot write {relative}: {err}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaffold::Owner;

    /// Real file-system operations, failing the n-th rename once.
    struct FailingRename {
        renames_left: Option<usize>,
    }

    impl Fs for FailingRename {
        fn create_dir(&mut self, path: &Path) -> io::Result<()> {
            StdFs.create_dir(path)
        }
        fn write(&mut self, path: &Path, contents: &str) -> io::Result<()> {
            StdFs.write(path, contents)
        }
        fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
            match self.renames_left {
                Some(0) => {
                    self.renames_left = None;
                    return Err(io::Error::other("injected failure"));
                }
                Some(n) => self.renames_left = Some(n - 1),
                None => {}
            }
            StdFs.rename(from, to)
        }
        fn remove_file(&mut self, path: &Path) -> io::Result<()> {
            StdFs.remove_file(path)
        }
        fn remove_dir(&mut self, path: &Path) -> io::Result<()> {
            StdFs.remove_dir(path)
        }
    }

    fn snapshot(root: &Path) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).expect("readable") {
                let path = entry.expect("entry").path();
                let rel = path
                    .strip_prefix(root)
                    .expect("inside")
                    .display()
                    .to_string();
                if path.is_dir() {
                    out.insert(format!("{rel}/"), String::new());
                    stack.push(path);
                } else {
                    out.insert(rel, fs::read_to_string(&path).expect("text"));
                }
            }
        }
        out
    }

    #[test]
    fn a_failure_while_renaming_restores_the_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("keep.txt"), "old").expect("write");
        fs::create_dir(dir.path().join("src")).expect("mkdir");
        fs::write(dir.path().join("src/a.rs"), "old a").expect("write");
        let before = snapshot(dir.path());

        let mut plan = Plan::default();
        plan.file(
            "src/a.rs",
            "new a".into(),
            Owner::Scaffold,
            IfExists::Overwrite,
        );
        plan.file(
            "src/deep/b.rs",
            "new b".into(),
            Owner::User,
            IfExists::Error,
        );
        plan.file(
            "keep.txt",
            "new keep".into(),
            Owner::Scaffold,
            IfExists::Overwrite,
        );
        let mut report = Report::default();
        let changes = changes_under(dir.path(), &plan, "", &mut report).expect("plan is valid");
        assert_eq!(changes.len(), 3);

        // Fail at every possible rename: the tree always ends as it began.
        for fail_at in 0..5 {
            let err = write_all(
                &changes,
                &mut FailingRename {
                    renames_left: Some(fail_at),
                },
            )
            .expect_err("fails");
            assert!(
                format!("{err:#}").contains("nothing was changed"),
                "{err:#}"
            );
            assert_eq!(
                snapshot(dir.path()),
                before,
                "after failing rename #{fail_at}"
            );
        }
        write_all(&changes, &mut StdFs).expect("succeeds");
        assert_eq!(
            fs::read_to_string(dir.path().join("src/deep/b.rs")).expect("read"),
            "new b"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("keep.txt")).expect("read"),
            "new keep"
        );
        let after = snapshot(dir.path());
        assert!(
            after.keys().all(|k| !k.contains(".opctl-")),
            "no staging left: {after:?}"
        );
    }

    #[test]
    fn conflicts_are_all_named_and_nothing_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("a"), "mine").expect("write");
        fs::write(dir.path().join("b"), "mine").expect("write");
        let mut plan = Plan::default();
        plan.file("a", "x".into(), Owner::User, IfExists::Error);
        plan.file("b", "x".into(), Owner::User, IfExists::Error);
        plan.file("c", "x".into(), Owner::Scaffold, IfExists::Overwrite);
        let err = apply(dir.path(), &plan, "pass --force")
            .expect_err("conflict")
            .to_string();
        assert_eq!(
            err,
            "would overwrite a, b: they are already there; pass --force"
        );
        assert!(!dir.path().join("c").exists());
    }

    #[test]
    fn unchanged_files_are_not_rewritten_and_insertions_are_idempotent() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(
            dir.path().join("main.rs"),
            "fn main() {\n    // +opctl:scaffold:x\n}\n",
        )
        .expect("write");
        let mut plan = Plan::default();
        plan.file("same", "s".into(), Owner::Scaffold, IfExists::Overwrite);
        plan.insert("main.rs", "x", "a();\n");
        let first = apply(dir.path(), &plan, "").expect("applies");
        assert_eq!(first.with(Outcome::Created), ["same"]);
        assert_eq!(first.with(Outcome::Updated), ["main.rs"]);
        let second = apply(dir.path(), &plan, "").expect("applies");
        assert_eq!(second.with(Outcome::Unchanged), ["main.rs", "same"]);
        assert_eq!(
            fs::read_to_string(dir.path().join("main.rs")).expect("read"),
            "fn main() {\n    a();\n    // +opctl:scaffold:x\n}\n"
        );
    }

    #[test]
    fn a_plan_applies_in_memory_as_on_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let main = "fn main() {\n    // +opctl:scaffold:x\n}\n";
        fs::write(dir.path().join("main.rs"), main).expect("write");
        fs::write(dir.path().join("kept"), "mine").expect("write");
        let mut plan = Plan::default();
        plan.file("kept", "theirs".into(), Owner::User, IfExists::Skip);
        plan.file("new", "n".into(), Owner::Scaffold, IfExists::Overwrite);
        plan.insert("main.rs", "x", "a();\n");
        let mut files = BTreeMap::from([
            ("main.rs".to_owned(), main.to_owned()),
            ("kept".to_owned(), "mine".to_owned()),
        ]);
        apply_in_memory(&mut files, &plan, "").expect("applies in memory");
        apply(dir.path(), &plan, "").expect("applies");
        assert_eq!(files, snapshot(dir.path()));
        let mut conflicting = Plan::default();
        conflicting.file("kept", "x".into(), Owner::User, IfExists::Error);
        let err = apply_in_memory(&mut files, &conflicting, "pass --force").expect_err("conflict");
        assert!(err.to_string().contains("would overwrite kept"), "{err}");
    }

    #[test]
    fn a_missing_marker_fails_before_writing() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("main.rs"), "fn main() {}\n").expect("write");
        let mut plan = Plan::default();
        plan.file("new", "n".into(), Owner::Scaffold, IfExists::Overwrite);
        plan.insert("main.rs", "x", "a();\n");
        let err = apply(dir.path(), &plan, "")
            .expect_err("no marker")
            .to_string();
        assert!(
            err.contains("cannot find the `// +opctl:scaffold:x` marker in main.rs"),
            "{err}"
        );
        assert!(!dir.path().join("new").exists());
    }
}
