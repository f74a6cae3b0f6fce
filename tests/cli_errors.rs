//! Bad input and unsafe situations: each one is refused with one clear line
//! that names the problem and the fix, a non-zero exit, and nothing written.

mod common;

use std::path::Path;

use common::{opctl, opctl_fails, opctl_ok, project_dir, snapshot};

fn init(dir: &Path) {
    opctl_ok(dir, &["init", "--domain", "example.com"]);
}

/// Runs a failing command and checks that the tree did not change.
fn refused(dir: &Path, args: &[&str]) -> String {
    let before = snapshot(dir);
    let line = opctl_fails(dir, args);
    assert_eq!(snapshot(dir), before, "opctl {args:?} changed the tree");
    line
}

fn api(dir: &Path, group: &str, version: &str, kind: &str, extra: &[&str]) -> String {
    let group = format!("--group={group}");
    let version = format!("--version={version}");
    let kind = format!("--kind={kind}");
    let mut args = vec!["create", "api", &group, &version, &kind];
    args.extend_from_slice(extra);
    refused(dir, &args)
}

#[test]
fn bad_domains_and_project_names() {
    let (_tmp, dir) = project_dir("demo");
    for domain in [
        "Example.com",
        "-x.com",
        "a..b",
        "a_b.com",
        "example.com.",
        "",
    ] {
        let line = refused(&dir, &["init", &format!("--domain={domain}")]);
        assert!(line.contains("invalid --domain"), "{line}");
        assert!(line.contains("for example --domain example.com"), "{line}");
    }
    for name in [
        "Demo",
        "1demo",
        "de_mo",
        "-demo",
        "std",
        "a-very-long-project-name-over-forty-chars-x",
    ] {
        let line = refused(
            &dir,
            &[
                "init",
                "--domain",
                "example.com",
                &format!("--project-name={name}"),
            ],
        );
        assert!(
            line.contains("project name") && line.contains("--project-name"),
            "{line}"
        );
    }
    let line = refused(
        &dir,
        &["init", "--domain", "example.com", "--owner", "a\u{7}b"],
    );
    assert!(line.contains("invalid --owner"), "{line}");
    assert!(snapshot(&dir).is_empty());
}

#[test]
fn a_directory_name_that_cannot_be_a_project_name_needs_the_flag() {
    let (_tmp, dir) = project_dir("9lives");
    let line = refused(&dir, &["init", "--domain", "example.com"]);
    assert!(line.contains("pass --project-name"), "{line}");
    opctl_ok(
        &dir,
        &["init", "--domain", "example.com", "--project-name", "lives"],
    );
}

#[test]
fn bad_groups_versions_kinds_and_plurals() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    for group in ["Web", "web_app", "-web", "1web", "type", ""] {
        let line = api(&dir, group, "v1", "Guestbook", &[]);
        assert!(line.contains("invalid --group"), "{line}");
    }
    for version in ["1", "v0", "V1", "v1alpha", "v1gamma1", "version1", "v1.0"] {
        let line = api(&dir, "web", version, "Guestbook", &[]);
        assert!(
            line.contains("invalid --version") && line.contains("v1alpha1"),
            "{line}"
        );
    }
    for kind in [
        "guestbook",
        "Guest-book",
        "Guest_book",
        "Self",
        "Context",
        "Error",
        "Result",
    ] {
        let line = api(&dir, "web", "v1", kind, &[]);
        assert!(line.contains("invalid --kind"), "{line}");
    }
    let line = api(&dir, "web", "v1", &"A".repeat(33), &[]);
    assert!(line.contains("at most 32 characters"), "{line}");
    for plural in ["Guestbooks", "guest_books", "-books", "9books"] {
        let line = api(
            &dir,
            "web",
            "v1",
            "Guestbook",
            &[&format!("--plural={plural}")],
        );
        assert!(line.contains("invalid --plural"), "{line}");
    }
}

#[test]
fn flags_that_contradict_each_other_or_the_project() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let line = api(&dir, "apps", "v1", "Deployment", &[]);
    assert!(
        line.contains("built-in Kubernetes kind") && line.contains("--resource=false"),
        "{line}"
    );
    let line = api(&dir, "apps", "v1", "Gadget", &["--resource=false"]);
    assert!(line.contains("unknown kind apps/v1 Gadget"), "{line}");
    let line = api(
        &dir,
        "apps",
        "v1",
        "Deployment",
        &["--resource=false", "--controller=false"],
    );
    assert!(line.contains("nothing to scaffold"), "{line}");
    let line = api(
        &dir,
        "web",
        "v1",
        "Bucket",
        &["--finalizer", "--controller=false"],
    );
    assert!(
        line.contains("--finalizer") && line.contains("--controller=false"),
        "{line}"
    );
    let line = api(
        &dir,
        "apps",
        "v1",
        "Deployment",
        &["--resource=false", "--finalizer"],
    );
    assert!(
        line.contains("built-in kind apps/v1 Deployment") && line.contains("drop --finalizer"),
        "{line}"
    );

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
    let line = api(&dir, "web", "v1", "Guestbook", &[]);
    assert!(
        line.contains("already in this project") && line.contains("--force"),
        "{line}"
    );
    let line = api(
        &dir,
        "web",
        "v2",
        "Guestbook",
        &["--plural", "guestbookz", "--controller=false"],
    );
    assert!(
        line.contains("shares it: pass --plural guestbooks"),
        "{line}"
    );
    let line = api(
        &dir,
        "web",
        "v2",
        "Guestbook",
        &["--namespaced=false", "--controller=false"],
    );
    assert!(line.contains("pass --namespaced=true"), "{line}");
    let line = api(&dir, "web", "v2", "Guestbook", &[]);
    assert!(
        line.contains("already holds the controller") && line.contains("--controller=false"),
        "{line}"
    );
    let line = api(&dir, "web", "v1", "GuestbookSpec", &[]);
    assert!(
        line.contains("collides with the types of Guestbook"),
        "{line}"
    );
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "web-app",
            "--version",
            "v1",
            "--kind",
            "Thing",
        ],
    );
    let line = api(&dir, "web.app", "v1", "Other", &[]);
    assert!(
        line.contains("would share the Rust module api::web_app"),
        "{line}"
    );
}

#[test]
fn names_a_group_has_taken_or_a_group_with_the_domain_are_refused() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
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
    // Plurals, given or derived, and singulars are the resource names of
    // the group (one CRD each): kube-apiserver's PluralConflict and
    // SingularConflict.
    let line = api(&dir, "web", "v1", "Guestbooks", &[]);
    assert!(
        line.contains("--kind Guestbooks has the plural guestbooks, already the plural of Guestbook in web.example.com")
            && line.contains("choose another kind, or give Guestbooks another plural with --plural"),
        "{line}"
    );
    let line = api(&dir, "web", "v2", "Visitor", &["--plural=guestbooks"]);
    assert!(
        line.contains("--plural guestbooks is already the plural of Guestbook in web.example.com")
            && line.contains("choose another --plural"),
        "{line}"
    );
    let line = api(&dir, "web", "v1", "Entry", &["--plural=guestbook"]);
    assert!(
        line.contains("already the singular name of Guestbook"),
        "{line}"
    );
    // Kinds and list kinds (KindConflict, ListKindConflict).
    let line = api(&dir, "web", "v1", "GuestbookList", &[]);
    assert!(
        line.contains("the list kind of Guestbook in web.example.com"),
        "{line}"
    );
    // In another group the same names are free.
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "shop",
            "--version",
            "v1",
            "--kind",
            "Visitor",
            "--plural",
            "guestbooks",
        ],
    );

    // The domain is appended to --group, as in kubebuilder: a group that
    // already ends with it is refused with the group to give instead.
    let line = api(&dir, "web.example.com", "v1", "Site", &[]);
    assert!(
        line.contains("--group web.example.com already ends with the project's domain example.com")
            && line.contains("web.example.com.example.com")
            && line.contains("pass --group web for the API group web.example.com"),
        "{line}"
    );
    let line = api(&dir, "example.com", "v1", "Site", &[]);
    assert!(line.contains("is the project's domain"), "{line}");
    let line = api(
        &dir,
        "web.example.com",
        "v1",
        "Guestbook",
        &["--resource=false"],
    );
    assert!(line.contains("pass --group web"), "{line}");
    let line = refused(
        &dir,
        &[
            "create",
            "webhook",
            "--group=web.example.com",
            "--version=v1",
            "--kind=Guestbook",
            "--defaulting",
        ],
    );
    assert!(line.contains("pass --group web"), "{line}");

    // The same kind in another group: the message is about groups, not
    // versions.
    let line = api(&dir, "infra", "v1", "Guestbook", &[]);
    assert!(
        line.contains("the controller of Guestbook in group web")
            && line.contains("one controller per kind name, whatever its group")
            && line.contains("--controller=false for Guestbook in group infra"),
        "{line}"
    );
    assert!(!line.contains("version"), "{line}");
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "infra",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--controller=false",
        ],
    );
}

#[test]
fn a_namespaced_project_refuses_cluster_scoped_controllers() {
    let (_tmp, dir) = project_dir("demo");
    opctl_ok(&dir, &["init", "--domain", "example.com", "--namespaced"]);
    let line = api(&dir, "web", "v1", "Site", &["--namespaced=false"]);
    assert!(line.contains("initialised with --namespaced"), "{line}");
    let line = api(&dir, "core", "v1", "Namespace", &["--resource=false"]);
    assert!(line.contains("cluster-scoped"), "{line}");
    // Types alone are fine: no controller, no RBAC needed.
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
            "Site",
            "--namespaced=false",
            "--controller=false",
        ],
    );
}

#[test]
fn outside_a_project() {
    let (_tmp, dir) = project_dir("empty");
    for args in [
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ][..],
        &["manifests"][..],
        &["files"][..],
    ] {
        let line = refused(&dir, args);
        assert!(
            line.contains("no PROJECT file") && line.contains("opctl init"),
            "{line}"
        );
    }
    // From a subdirectory of a project, the error points at the root.
    let (_tmp2, root) = project_dir("demo");
    init(&root);
    let line = refused(&root.join("src"), &["manifests"]);
    assert!(
        line.contains("the project root seems to be") && line.contains("cd there"),
        "{line}"
    );
}

#[test]
fn a_damaged_project_file() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let project = dir.join("PROJECT");
    let good = std::fs::read_to_string(&project).expect("PROJECT");
    for damaged in [
        good.replace("domain: example.com", "domain: [oops"),
        good.replace("domain: example.com", "domain: Not_A_Domain"),
        format!("{good}unexpected: field\n"),
        "just some text\n".to_owned(),
        String::new(),
    ] {
        std::fs::write(&project, &damaged).expect("write");
        let line = refused(
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
        assert!(line.contains("the PROJECT file is damaged"), "{line}");
        assert!(line.contains("restore it from version control"), "{line}");
    }
    // A layout this opctl does not know is not damage: another opctl made it.
    std::fs::write(
        &project,
        good.replace("layout: opctl.rs/v4", "layout: someone-else/v4"),
    )
    .expect("write");
    let line = refused(&dir, &["manifests"]);
    assert!(
        line.contains("\"someone-else/v4\", which this opctl does not know"),
        "{line}"
    );
    assert!(
        line.contains("use the opctl that made the project"),
        "{line}"
    );
}

#[test]
fn init_refuses_an_existing_project_and_files_it_would_overwrite() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let line = refused(&dir, &["init", "--domain", "example.com"]);
    assert!(line.contains("already holds an opctl project"), "{line}");

    let (_tmp2, dir2) = project_dir("demo");
    std::fs::write(dir2.join("Makefile"), "all:\n").expect("write");
    std::fs::create_dir(dir2.join("src")).expect("mkdir");
    std::fs::write(dir2.join("src/main.rs"), "fn main() {}\n").expect("write");
    let line = refused(&dir2, &["init", "--domain", "example.com"]);
    assert!(
        line.contains("would overwrite Makefile, src/main.rs"),
        "{line}"
    );
    assert!(line.contains("empty directory"), "{line}");
}

#[test]
fn user_files_are_never_overwritten_without_force() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let controller = dir.join("src/controller/guestbook.rs");
    std::fs::create_dir_all(controller.parent().expect("parent")).expect("mkdir");
    std::fs::write(&controller, "// my own code\n").expect("write");
    let line = api(&dir, "web", "v1", "Guestbook", &[]);
    assert!(
        line.contains("would overwrite src/controller/guestbook.rs"),
        "{line}"
    );
    assert!(line.contains("pass --force"), "{line}");

    // With --force it goes ahead.
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
            "--force",
        ],
    );
    let text = std::fs::read_to_string(&controller).expect("read");
    assert!(text.contains("The Guestbook controller"), "{text}");

    // Edits to user files survive later commands; scaffold files are rewritten.
    let types = dir.join("api/src/web/v1/guestbook.rs");
    let edited = std::fs::read_to_string(&types)
        .expect("read")
        .replace("pub foo:", "pub bar:");
    std::fs::write(&types, &edited).expect("write");
    std::fs::write(dir.join("Makefile"), "changed\n").expect("write");
    let main = std::fs::read_to_string(dir.join("src/main.rs")).expect("read") + "// my note\n";
    std::fs::write(dir.join("src/main.rs"), &main).expect("write");
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Deployment",
            "--resource=false",
        ],
    );
    assert_eq!(std::fs::read_to_string(&types).expect("read"), edited);
    assert_ne!(
        std::fs::read_to_string(dir.join("Makefile")).expect("read"),
        "changed\n"
    );
    let main_after = std::fs::read_to_string(dir.join("src/main.rs")).expect("read");
    assert!(main_after.ends_with("// my note\n"), "{main_after}");
    assert!(main_after.contains("let manager = controller::deployment::register(manager);"));
}

#[test]
fn force_rescaffolds_without_registering_twice() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let args = [
        "create",
        "api",
        "--group",
        "web",
        "--version",
        "v1",
        "--kind",
        "Guestbook",
    ];
    opctl_ok(&dir, &args);
    let mut once = snapshot(&dir);
    opctl_ok(&dir, &[&args[..], &["--force"]].concat());
    let mut again = snapshot(&dir);
    // The history of commands (for `opctl upgrade`) records the second one.
    let history = ".opctl/history.yaml";
    let steps = |text: Option<Vec<u8>>| String::from_utf8(text.expect("a history")).expect("UTF-8");
    let (before, after) = (steps(once.remove(history)), steps(again.remove(history)));
    assert_eq!(after.matches("- command: create api").count(), 2, "{after}");
    assert!(after.starts_with(&before), "{before}\n---\n{after}");
    assert_eq!(
        again, once,
        "--force on an unchanged kind rewrites identical files"
    );
    let main = std::fs::read_to_string(dir.join("src/main.rs")).expect("read");
    assert_eq!(main.matches("controller::guestbook::register").count(), 1);
}

#[test]
fn a_controller_for_a_kind_scaffolded_without_one_keeps_its_types() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
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
            "--controller=false",
        ],
    );
    let types = dir.join("api/src/web/v1/guestbook.rs");
    let edited = std::fs::read_to_string(&types).expect("read") + "// mine\n";
    std::fs::write(&types, &edited).expect("write");
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
            "--resource=false",
        ],
    );
    assert_eq!(std::fs::read_to_string(&types).expect("read"), edited);
    assert!(dir.join("src/controller/guestbook.rs").is_file());
    let project = std::fs::read_to_string(dir.join("PROJECT")).expect("read");
    assert_eq!(project.matches("kind: Guestbook").count(), 1, "{project}");
    assert!(project.contains("controller: true"), "{project}");
}

#[test]
fn a_removed_marker_is_reported_and_nothing_is_written() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let main = dir.join("src/main.rs");
    let text = std::fs::read_to_string(&main)
        .expect("read")
        .replace("// +opctl:scaffold:controllers", "");
    std::fs::write(&main, text).expect("write");
    let line = api(&dir, "web", "v1", "Guestbook", &[]);
    assert!(
        line.contains("cannot find the `// +opctl:scaffold:controllers` marker in src/main.rs"),
        "{line}"
    );
}

/// Makes `path` unwritable even for root: `chattr +i` where the file system
/// supports it, otherwise (not root) a read-only mode. Returns an undo guard.
fn make_read_only(path: &Path) -> impl Drop {
    struct Undo(std::path::PathBuf, bool);
    impl Drop for Undo {
        fn drop(&mut self) {
            if self.1 {
                let _ = std::process::Command::new("chattr")
                    .arg("-i")
                    .arg(&self.0)
                    .status();
            }
            let mut perms = std::fs::metadata(&self.0).expect("metadata").permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            let _ = std::fs::set_permissions(&self.0, perms);
        }
    }
    let mut perms = std::fs::metadata(path).expect("metadata").permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(path, perms).expect("chmod");
    let chattr = std::process::Command::new("chattr")
        .arg("+i")
        .arg(path)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let probe = path.join(".probe");
    let writable = std::fs::write(&probe, "x").is_ok();
    let _ = std::fs::remove_file(&probe);
    assert!(
        !writable,
        "cannot make {} read-only here (root without chattr support); run this test as a normal user or on ext4",
        path.display()
    );
    Undo(path.to_path_buf(), chattr)
}

#[test]
fn a_read_only_directory_is_reported_and_left_as_it_was() {
    let (_tmp, dir) = project_dir("demo");
    {
        let _guard = make_read_only(&dir);
        let line = refused(&dir, &["init", "--domain", "example.com"]);
        assert!(
            line.contains("cannot write") && line.contains("make the project directory writable"),
            "{line}"
        );
        assert!(line.contains("nothing was changed"), "{line}");
    }
    // Atomicity: with one subdirectory read-only, create api writes nothing at all.
    init(&dir);
    let samples = dir.join("config/samples");
    let before = snapshot(&dir);
    {
        let _guard = make_read_only(&samples);
        let line = opctl_fails(
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
        assert!(line.contains("cannot write config/samples/"), "{line}");
    }
    assert_eq!(
        snapshot(&dir),
        before,
        "a failed command left the tree as it was"
    );
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
}

#[test]
fn the_file_listing_names_every_owner() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
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
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Deployment",
            "--resource=false",
        ],
    );
    let user = opctl_ok(&dir, &["files", "--owner", "user"]).stdout;
    let user: Vec<&str> = user.lines().collect();
    assert_eq!(
        user,
        [
            "Cargo.lock",
            "Cargo.toml",
            "LICENSE",
            "README.md",
            "api/Cargo.toml",
            "api/src/web/v1/guestbook.rs",
            "config/samples/web_v1_guestbook.yaml",
            "src/controller/deployment.rs",
            "src/controller/guestbook.rs",
            "src/lib.rs",
            "src/main.rs",
            "tests/e2e.rs",
        ]
    );
    let all = opctl_ok(&dir, &["files"]).stdout;
    assert!(all.contains("scaffold\tMakefile\n"), "{all}");
    assert!(all.contains("scaffold\tsrc/manager/mod.rs\n"), "{all}");
    assert!(all.contains("generated\tconfig/rbac/role.yaml\n"), "{all}");
    assert!(
        all.contains("generated\tconfig/crd/bases/web.example.com_guestbooks.yaml\n"),
        "{all}"
    );
    // Every file on disk is listed (the CRD appears after `opctl manifests`).
    let listed: Vec<&str> = all
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(_, p)| p)
        .collect();
    for path in snapshot(&dir).keys() {
        assert!(listed.contains(&path.as_str()), "{path} is not listed");
    }
}

#[test]
fn scaffolding_needs_no_network() {
    // A new network namespace has no interfaces but loopback (down): any
    // attempt to reach a registry or resolve a name fails.
    let probe = std::process::Command::new("unshare")
        .args(["--net", "--map-root-user", "true"])
        .status();
    assert!(
        probe.is_ok_and(|s| s.success()),
        "this test needs `unshare --net --map-root-user` (util-linux) to cut the network"
    );
    let (_tmp, dir) = project_dir("offline");
    for args in [
        &["init", "--domain", "example.com"][..],
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ][..],
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Deployment",
            "--resource=false",
        ][..],
    ] {
        let out = std::process::Command::new("unshare")
            .args(["--net", "--map-root-user", common::opctl_bin()])
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("unshare runs");
        assert!(
            out.status.success(),
            "{args:?} without network: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(dir.join("src/controller/guestbook.rs").is_file());
}

#[test]
fn help_version_and_completion() {
    let (_tmp, dir) = project_dir("x");
    for args in [
        &["--help"][..],
        &["init", "--help"],
        &["create", "api", "--help"],
        &["manifests", "--help"],
        &["completion", "--help"],
        &["version", "--help"],
    ] {
        let run = opctl(&dir, args);
        assert!(run.ok, "{args:?}");
        assert!(
            run.stdout.contains("Examples:"),
            "{args:?} has examples:\n{}",
            run.stdout
        );
    }
    let version = opctl_ok(&dir, &["version"]).stdout;
    assert_eq!(
        version.trim(),
        format!("opctl {}", env!("CARGO_PKG_VERSION"))
    );
    for shell in ["bash", "zsh", "fish"] {
        let script = opctl_ok(&dir, &["completion", shell]).stdout;
        assert!(
            script.contains("opctl") && script.contains("manifests"),
            "{shell}"
        );
    }
    let run = opctl(&dir, &["completion", "tcsh"]);
    assert!(!run.ok && run.stderr.contains("tcsh"), "{}", run.stderr);
}

#[test]
fn manifests_need_exactly_one_storage_version_of_a_kind_with_several() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let create = |version: &str| {
        let version = format!("--version={version}");
        let args = [
            "create",
            "api",
            "--group=web",
            &version,
            "--kind=Guestbook",
            "--controller=false",
        ];
        opctl_ok(&dir, &args);
    };
    create("v1");
    create("v2");
    let v1 = dir.join("api/src/web/v1/guestbook.rs");
    let v2 = dir.join("api/src/web/v2/guestbook.rs");
    let marked = std::fs::read_to_string(&v1).expect("v1");
    let unmarked = std::fs::read_to_string(&v2).expect("v2");
    assert!(marked.contains("\n// +opctl:storageversion\n"), "{marked}");
    assert!(!unmarked.contains("+opctl:storageversion"), "{unmarked}");

    // Both marked: refused before anything is built.
    let both = unmarked.replace(
        "#[derive(CustomResource",
        "// +opctl:storageversion\n#[derive(CustomResource",
    );
    std::fs::write(&v2, both).expect("mark v2");
    let line = refused(&dir, &["manifests"]);
    assert!(
        line.contains("guestbooks.web.example.com marks versions v1, v2 as the storage version")
            && line.contains("in one of them only"),
        "{line}"
    );

    // None marked.
    std::fs::write(&v1, marked.replace("// +opctl:storageversion\n", "")).expect("unmark v1");
    std::fs::write(&v2, &unmarked).expect("unmark v2");
    let line = refused(&dir, &["manifests"]);
    assert!(
        line.contains("has versions v1, v2 but none is marked")
            && line.contains("api/src/web/v1/guestbook.rs"),
        "{line}"
    );
}
