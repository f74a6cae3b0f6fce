//! `opctl upgrade` on projects made by "an earlier opctl": a project whose
//! files and pristine copies (`.opctl/pristine/`) are changed as older
//! templates would have made them, with the user's own edits on top. The
//! upgrade must bring in the templates' changes, keep the user's edits,
//! report overlapping changes as conflicts, and refuse to run on a tree it
//! cannot show its changes in. (Projects with controllers for built-in kinds
//! only: their `opctl manifests` builds nothing. Upgrading an old layout
//! that is built and tested end to end is in reference_projects.rs.)

mod common;

use std::path::Path;
use std::process::Command;

use common::{opctl, opctl_bin, opctl_fails, opctl_ok, project_dir, run_built, snapshot};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn write(dir: &Path, path: &str, text: &str) {
    std::fs::write(dir.join(path), text).unwrap_or_else(|e| panic!("{path}: {e}"));
}

/// Replaces `from` by `to` in `path`, which must hold `from`.
fn edit(dir: &Path, path: &str, from: &str, to: &str) {
    let text = read(dir, path);
    assert!(text.contains(from), "{path} lacks {from:?}");
    write(dir, path, &text.replacen(from, to, 1));
}

/// A committed project with a controller for Deployments and one for Pods.
fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project_dir("upgraded");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    for kind in ["Deployment", "Pod"] {
        let group = if kind == "Pod" { "core" } else { "apps" };
        opctl_ok(
            &dir,
            &[
                "create",
                "api",
                "--group",
                group,
                "--version",
                "v1",
                "--kind",
                kind,
                "--resource=false",
            ],
        );
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "scaffolded"]);
    (tmp, dir)
}

/// Makes `path` look as an older template made it: `from` where the current
/// template has `to`, in the file and in its pristine copy.
fn as_older_template(dir: &Path, path: &str, current: &str, older: &str) {
    edit(dir, path, current, older);
    edit(dir, &format!(".opctl/pristine/{path}"), current, older);
}

#[test]
fn every_pristine_copy_is_what_the_commands_wrote() {
    let (_tmp, dir) = project();
    let files = snapshot(&dir);
    let pristine: Vec<&String> = files
        .keys()
        .filter(|p| p.starts_with(".opctl/pristine/"))
        .collect();
    // Cargo.toml, api/Cargo.toml, README.md, src/lib.rs, src/main.rs,
    // tests/e2e.rs, LICENSE and the two controllers.
    assert_eq!(pristine.len(), 9, "{pristine:?}");
    for path in pristine {
        let own = path.trim_start_matches(".opctl/pristine/");
        assert_eq!(
            files[path], files[own],
            "{own} and its pristine copy differ"
        );
    }
    let run = opctl_ok(&dir, &["upgrade", "--dry-run"]);
    assert!(run.stdout.contains("up to date"), "{}", run.stdout);
    // Applied, it changes nothing and says so (no "Upgraded.").
    let before = snapshot(&dir);
    let run = opctl_ok(&dir, &["upgrade", "--force"]);
    assert!(run.stdout.contains("up to date"), "{}", run.stdout);
    assert!(!run.stdout.contains("Upgraded."), "{}", run.stdout);
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn template_changes_come_in_and_the_users_edits_stay() {
    let (_tmp, dir) = project();
    // Older templates: main.rs ended differently and the Makefile (scaffold-owned) too.
    as_older_template(
        &dir,
        "src/main.rs",
        "manager.run().await",
        "manager.start().await",
    );
    edit(
        &dir,
        "Makefile",
        "## Regenerate CRDs",
        "## Old words: regenerate CRDs",
    );
    // The user's edits: main.rs elsewhere, a controller.
    edit(
        &dir,
        "src/main.rs",
        "async fn main() -> anyhow::Result<()> {\n",
        "async fn main() -> anyhow::Result<()> {\n    // the user's note\n",
    );
    let controller = "src/controller/pod.rs";
    let edited = format!("{}// the user's code\n", read(&dir, controller));
    write(&dir, controller, &edited);
    git(
        &dir,
        &["commit", "-qam", "older templates, the user's edits"],
    );

    let before = snapshot(&dir);
    let plan = opctl_ok(&dir, &["upgrade", "--dry-run"]);
    assert!(
        plan.stdout.contains("merged       src/main.rs"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("updated      Makefile"),
        "{}",
        plan.stdout
    );
    assert!(!plan.stdout.contains(controller), "{}", plan.stdout);
    assert_eq!(snapshot(&dir), before, "--dry-run writes nothing");

    let run = opctl_ok(&dir, &["upgrade"]);
    assert!(run.stdout.contains("Upgraded."), "{}", run.stdout);
    let main = read(&dir, "src/main.rs");
    assert!(main.contains("    // the user's note\n"), "{main}");
    assert!(
        main.contains("manager.run().await") && !main.contains("start()"),
        "{main}"
    );
    assert!(read(&dir, "Makefile").contains("## Regenerate CRDs"));
    assert_eq!(read(&dir, controller), edited);
    // The new base is what this opctl makes.
    assert!(read(&dir, ".opctl/pristine/src/main.rs").contains("manager.run().await"));
    let again = opctl_ok(&dir, &["upgrade", "--dry-run", "--force"]);
    assert!(again.stdout.contains("up to date"), "{}", again.stdout);
}

#[test]
fn overlapping_changes_are_written_with_conflict_markers_and_listed() {
    let (_tmp, dir) = project();
    as_older_template(
        &dir,
        "src/main.rs",
        "manager.run().await",
        "manager.start().await",
    );
    edit(
        &dir,
        "src/main.rs",
        "manager.start().await",
        "manager.start_mine().await",
    );
    git(&dir, &["commit", "-qam", "both change the same line"]);

    let run = opctl(&dir, &["upgrade"]);
    assert!(!run.ok, "a conflict makes the upgrade fail");
    assert!(
        run.stdout.contains("CONFLICT     src/main.rs"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr.trim_end(),
        "error: 1 file needs your hand: resolve the conflict markers (<<<<<<< ours ... >>>>>>> theirs) in src/main.rs, then run `opctl manifests`"
    );
    let main = read(&dir, "src/main.rs");
    for part in [
        "<<<<<<<",
        "start_mine()",
        "=======",
        "manager.run().await",
        ">>>>>>>",
    ] {
        assert!(main.contains(part), "{part} in {main}");
    }
}

#[test]
fn an_upgrade_wants_a_clean_git_tree_unless_forced() {
    let (_tmp, dir) = project();
    as_older_template(
        &dir,
        "src/main.rs",
        "manager.run().await",
        "manager.start().await",
    );
    let before = snapshot(&dir);
    let err = opctl_fails(&dir, &["upgrade"]);
    assert!(
        err.contains("uncommitted change") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(snapshot(&dir), before, "nothing written");
    opctl_ok(&dir, &["upgrade", "--force"]);
    assert!(read(&dir, "src/main.rs").contains("manager.run().await"));

    std::fs::remove_dir_all(dir.join(".git")).expect("remove .git");
    let err = opctl_fails(&dir, &["upgrade"]);
    assert!(
        err.contains("not in a git work tree") && err.contains("--force"),
        "{err}"
    );
}

#[test]
fn outside_a_project_upgrade_says_where_to_run() {
    let (_tmp, dir) = project_dir("empty");
    let err = opctl_fails(&dir, &["upgrade"]);
    assert!(err.contains("not an opctl project root"), "{err}");
}

/// A project of the layout before this one (`opctl.rs/v3`), whose CRD
/// generator serialized the CRDs itself and whose API crate did not depend
/// on opctl-runtime, upgrades with one command: the generator is rewritten,
/// `api/Cargo.toml` gains the dependency through the merge (keeping the
/// user's edit there), and the CRDs come out the same.
#[test]
fn a_v3_project_upgrades_to_the_generator_printing_through_the_runtime() {
    let (_tmp, dir) = project_dir("v3");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    let crd_file = "config/crd/bases/web.example.com_guestbooks.yaml";
    run_built(&dir, opctl_bin(), &["manifests"]);
    let crd = read(&dir, crd_file);
    // As opctl made it with the layout v3.
    edit(
        &dir,
        "PROJECT",
        "layout: opctl.rs/v4",
        "layout: opctl.rs/v3",
    );
    edit(
        &dir,
        "api/src/crdgen.rs",
        "    opctl_runtime::crdgen::print(&crds()?)?;\n",
        "    let crds = crds()?;\n    let mut out = std::io::stdout().lock();\n    \
         serde_json::to_writer(&mut out, &crds)?;\n    std::io::Write::flush(&mut out)?;\n",
    );
    as_older_template(
        &dir,
        "api/Cargo.toml",
        "opctl-runtime = { version = \"0.1\", default-features = false }\n",
        "",
    );
    // Its copy of the runtime was 0.1.0, which had no `crdgen`.
    edit(
        &dir,
        ".opctl/runtime/Cargo.toml",
        &format!("version = \"{}\"", env!("OPCTL_RUNTIME_VERSION")),
        "version = \"0.1.0\"",
    );
    std::fs::remove_file(dir.join(".opctl/runtime/src/crdgen.rs")).expect("rm");
    // The user's edit in api/Cargo.toml.
    edit(
        &dir,
        "api/Cargo.toml",
        "publish = false\n",
        "publish = false\n# Kept out of crates.io by our release policy.\n",
    );
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by the previous opctl"]);

    let err = opctl_fails(&dir, &["manifests"]);
    assert!(err.contains("run `opctl upgrade`"), "{err}");

    let plan = opctl_ok(&dir, &["upgrade", "--dry-run"]).stdout;
    for line in [
        "merged       api/Cargo.toml",
        "updated      api/src/crdgen.rs",
        "updated      .opctl/runtime/Cargo.toml",
        "created      .opctl/runtime/src/crdgen.rs",
    ] {
        assert!(plan.contains(line), "{line}:\n{plan}");
    }
    assert!(!plan.contains("CONFLICT"), "{plan}");
    let upgraded = run_built(&dir, opctl_bin(), &["upgrade"]);
    assert!(upgraded.contains("Upgraded."), "{upgraded}");
    assert!(read(&dir, "PROJECT").contains("layout: opctl.rs/v4"));
    let api = read(&dir, "api/Cargo.toml");
    assert!(
        api.contains("opctl-runtime = { version = \"0.1\", default-features = false }"),
        "{api}"
    );
    assert!(
        api.contains("# Kept out of crates.io by our release policy."),
        "the user's line stays:\n{api}"
    );
    assert!(read(&dir, "api/src/crdgen.rs").contains("opctl_runtime::crdgen::print"));
    assert_eq!(read(&dir, crd_file), crd, "the same CRD");
    let again = opctl_ok(&dir, &["upgrade", "--dry-run"]).stdout;
    assert!(again.contains("up to date"), "{again}");
}
