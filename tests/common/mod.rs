//! Helpers shared by the CLI tests: run opctl in a directory, snapshot a tree.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The opctl binary cargo built for these tests.
pub fn opctl_bin() -> &'static str {
    env!("CARGO_BIN_EXE_opctl")
}

/// The result of one opctl run.
#[derive(Debug)]
pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Runs `opctl args...` in `dir`.
pub fn opctl(dir: &Path, args: &[&str]) -> Run {
    Command::new(opctl_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("opctl runs")
        .into()
}

/// Runs opctl and fails the test unless it succeeds.
pub fn opctl_ok(dir: &Path, args: &[&str]) -> Run {
    let run = opctl(dir, args);
    assert!(
        run.ok,
        "opctl {args:?} failed:\n{}\n{}",
        run.stdout, run.stderr
    );
    run
}

/// Runs opctl, expects failure with exactly one line on stderr, and returns it.
pub fn opctl_fails(dir: &Path, args: &[&str]) -> String {
    let run = opctl(dir, args);
    assert!(
        !run.ok,
        "opctl {args:?} should have failed:\n{}",
        run.stdout
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "one line on stderr for {args:?}, got:\n{}",
        run.stderr
    );
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    lines[0].to_owned()
}

/// A fresh directory named `name` inside a temporary directory (the name
/// becomes the default project name).
pub fn project_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join(name);
    std::fs::create_dir(&dir).expect("mkdir");
    (tmp, dir)
}

/// Every file under `root` (relative path with '/' → contents), skipping
/// `target/` and the git repository `opctl init` starts (`.git/`).
pub fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable dir") {
            let entry = entry.expect("dir entry");
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .expect("inside root")
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "target" || rel == ".git" {
                continue;
            }
            if entry.file_type().expect("file type").is_dir() {
                stack.push(path);
            } else {
                files.insert(rel, std::fs::read(&path).expect("readable file"));
            }
        }
    }
    files
}

/// The environment of every build of a generated or reference project: the
/// workspace's target directory, shared by all of them, no incremental
/// compilation (each project is built afresh in a temporary directory, so
/// its incremental state was never read again and filled gigabytes), and
/// line tables as the only debug info of the project's own crates, as in
/// this workspace (a test needs file and line in a backtrace, not a
/// debugger's types: the built-in-kinds project's binary is 104 MB so,
/// 278 MB with full debug info, most of it type names).
pub fn build_env() -> [(&'static str, std::ffi::OsString); 3] {
    [
        ("CARGO_TARGET_DIR", shared_target_dir().into_os_string()),
        ("CARGO_INCREMENTAL", "0".into()),
        ("CARGO_PROFILE_DEV_DEBUG", "line-tables-only".into()),
    ]
}

/// Runs cargo in a generated or reference project (with [`build_env`]):
/// whether it succeeded, and what it printed on stdout and stderr.
pub fn cargo(dir: &Path, args: &[&str]) -> (bool, String) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(args)
        .current_dir(dir)
        .envs(build_env())
        .output()
        .expect("cargo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs `program args` in `dir` with [`build_env`] (opctl commands that
/// build, make, cargo): fails the test unless it succeeds; what it printed
/// on stdout and stderr.
pub fn run_built(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(build_env())
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{program} {args:?}:\n{text}");
    text
}

/// The workspace's target directory, shared with generated projects' builds.
pub fn shared_target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().expect("target/tmp has a parent").to_path_buf()
}
