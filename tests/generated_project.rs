//! The generated project works: a namespaced kind, a cluster-scoped kind (its
//! controller with a finalizer) and a controller for apps/v1 Deployment, a
//! defaulting and a validating
//! webhook for the namespaced kind and a defaulting webhook for core/v1 Pod;
//! `opctl manifests` (twice: nothing changes), then in the project `cargo
//! test --workspace`, `cargo fmt --all --check` and `cargo clippy
//! --workspace --all-targets -- -D warnings`; the API types' crate (api/)
//! depends on neither kube's client nor its runtime; the webhook e2e tests pass under `opctl envtest run`; and
//! every YAML file parses as the Kubernetes kind it claims, including what
//! kustomize renders.
//!
//! This is the one test that builds a generated project with lints (a few
//! minutes the first time; generated_builtin_kinds.rs builds another for
//! its e2e tests only); it shares the workspace's target directory so the
//! dependencies are built once for every generated and reference project.

mod common;

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use common::{build_env, cargo, opctl_ok, project_dir, snapshot};

const PROJECT: &str = "opctl-build-check";

/// Deserializes `doc` as `K` and checks that nothing was lost or misplaced:
/// serialising it again gives the same document.
fn round_trip<K: DeserializeOwned + Serialize>(doc: &Value, file: &str) {
    let typed: K =
        serde_json::from_value(doc.clone()).unwrap_or_else(|err| panic!("{file}: {err}"));
    let back = serde_json::to_value(&typed).expect("serialises");
    assert_eq!(&back, doc, "{file} has fields its kind does not know");
}

/// Checks one YAML document of `file`; returns its kind.
fn check_document(doc: &Value, file: &str, crds: &[CustomResourceDefinition]) -> String {
    let kind = doc["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("{file}: no kind"))
        .to_owned();
    let api_version = doc["apiVersion"].as_str().unwrap_or_default();
    match (api_version, kind.as_str()) {
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            round_trip::<CustomResourceDefinition>(doc, file)
        }
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<ClusterRole>(doc, file),
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(doc, file),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            round_trip::<ClusterRoleBinding>(doc, file)
        }
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(doc, file),
        ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(doc, file),
        ("v1", "Service") => round_trip::<Service>(doc, file),
        ("v1", "Namespace") => round_trip::<Namespace>(doc, file),
        ("apps/v1", "Deployment") => round_trip::<Deployment>(doc, file),
        ("networking.k8s.io/v1", "NetworkPolicy") => round_trip::<NetworkPolicy>(doc, file),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            round_trip::<MutatingWebhookConfiguration>(doc, file)
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            round_trip::<ValidatingWebhookConfiguration>(doc, file)
        }
        // cert-manager's kinds (config/certmanager): no Rust types here.
        ("cert-manager.io/v1", "Issuer") => {
            assert!(doc["spec"]["selfSigned"].is_object(), "{file}");
        }
        ("cert-manager.io/v1", "Certificate") => {
            assert!(doc["spec"]["secretName"].is_string(), "{file}");
            assert!(doc["spec"]["dnsNames"].is_array(), "{file}");
        }
        ("kustomize.config.k8s.io/v1beta1", "Kustomization")
        | ("kustomize.config.k8s.io/v1alpha1", "Component") => {
            let dir = Path::new(file).parent().expect("parent");
            let resources = doc["resources"].as_array().expect("resources");
            let components = doc["components"].as_array().into_iter().flatten();
            let patches = doc["patches"].as_array().into_iter().flatten();
            let patches = patches.filter_map(|p| p.get("path"));
            for listed in resources.iter().chain(components).chain(patches) {
                let path = dir.join(listed.as_str().expect("a path"));
                assert!(
                    path.exists(),
                    "{file} lists {} which does not exist",
                    path.display()
                );
            }
        }
        _ => {
            // A sample: an object of one of the project's CRDs, with a served version.
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let crd = crds
                .iter()
                .find(|c| c.spec.group == group && c.spec.names.kind == kind)
                .unwrap_or_else(|| panic!("{file}: {api_version} {kind} is neither a known kind nor a CRD of the project"));
            assert!(
                crd.spec
                    .versions
                    .iter()
                    .any(|v| v.name == version && v.served),
                "{file}"
            );
            assert!(doc["metadata"]["name"].is_string(), "{file}: a name");
            assert!(doc["spec"].is_object(), "{file}: a spec");
        }
    }
    kind
}

fn documents(text: &str, file: &str) -> Vec<Value> {
    let docs: Vec<Value> =
        serde_saphyr::from_str_multiple(text).unwrap_or_else(|err| panic!("{file}: {err}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

#[test]
fn a_generated_project_builds_tests_lints_and_has_valid_manifests() {
    let (_tmp, dir) = project_dir(PROJECT);
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
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "infra",
            "--version",
            "v1alpha1",
            "--kind",
            "ClusterPolicy",
            "--namespaced=false",
            "--finalizer",
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

    for args in [
        &["--group", "web", "--version", "v1", "--kind", "Guestbook"][..],
        &["--group", "core", "--version", "v1", "--kind", "Pod"][..],
    ] {
        let mut command = vec!["create", "webhook", "--defaulting"];
        command.extend_from_slice(args);
        if args.contains(&"Guestbook") {
            command.push("--programmatic-validation");
        }
        opctl_ok(&dir, &command);
    }

    // manifests builds the CRD generator; a second run changes nothing.
    let manifests = |dir: &Path| {
        let out = Command::new(common::opctl_bin())
            .arg("manifests")
            .current_dir(dir)
            .envs(build_env())
            .output()
            .expect("opctl runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "opctl manifests:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let first = manifests(&dir);
    assert!(
        first.contains("created  config/crd/bases/web.example.com_guestbooks.yaml"),
        "{first}"
    );
    assert!(
        first.contains("created  config/crd/bases/infra.example.com_clusterpolicies.yaml"),
        "{first}"
    );
    let after_first = snapshot(&dir);
    let second = manifests(&dir);
    assert!(second.contains("Manifests are up to date."), "{second}");
    assert_eq!(
        snapshot(&dir),
        after_first,
        "a second `opctl manifests` changed files"
    );

    // With the lock opctl wrote: the versions its CI tested.
    let (ok, out) = cargo(&dir, &["test", "--locked", "--workspace"]);
    assert!(ok, "cargo test failed:\n{out}");
    assert!(
        out.contains("guestbook::tests::the_sample_is_valid ... ok"),
        "the API types' unit tests run:\n{out}"
    );
    assert!(out.contains("test result: ok"), "{out}");
    assert!(
        out.contains("8 ignored"),
        "the e2e tests are listed as ignored:\n{out}"
    );
    assert!(
        out.contains("guestbook_defaulting::tests::a_missing_foo_gets_the_default ... ok"),
        "the webhook handlers' unit tests run:\n{out}"
    );
    let (ok, out) = cargo(&dir, &["fmt", "--all", "--check"]);
    assert!(ok, "cargo fmt --check:\n{out}");
    let (ok, out) = cargo(
        &dir,
        &[
            "clippy",
            "--locked",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    );
    assert!(ok, "cargo clippy:\n{out}");
    assert!(!out.contains("warning"), "{out}");

    // The API types' crate, all `opctl manifests` builds, stays small.
    let api = format!("{PROJECT}-api");
    let (ok, out) = cargo(
        &dir,
        &["tree", "-p", &api, "-e", "normal", "--prefix", "none"],
    );
    assert!(ok, "cargo tree:\n{out}");
    for heavy in [
        "kube-client ",
        "kube-runtime ",
        "hyper ",
        "tokio ",
        "rustls ",
    ] {
        assert!(
            !out.lines().any(|l| l.starts_with(heavy)),
            "{api} depends on {heavy}:\n{out}"
        );
    }

    // Every YAML file parses as the kind it claims.
    // Kustomize patches are partial objects: they are checked in what
    // kustomize renders below.
    let files: Vec<String> = snapshot(&dir)
        .into_keys()
        // .opctl/ holds opctl's own records (history, pristine copies), no
        // Kubernetes objects.
        .filter(|p| p.ends_with(".yaml") && !p.ends_with("_patch.yaml"))
        .filter(|p| !p.starts_with(".opctl/"))
        .collect();
    let mut crds = Vec::new();
    for file in files.iter().filter(|f| f.starts_with("config/crd/bases/")) {
        let text = std::fs::read_to_string(dir.join(file)).expect("read");
        for doc in documents(&text, file) {
            crds.push(serde_json::from_value::<CustomResourceDefinition>(doc).expect("a CRD"));
        }
    }
    let names: Vec<_> = crds
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "clusterpolicies.infra.example.com",
            "guestbooks.web.example.com"
        ]
    );
    let guestbook = crds
        .iter()
        .find(|c| c.spec.names.kind == "Guestbook")
        .expect("Guestbook");
    assert_eq!(guestbook.spec.scope, "Namespaced");
    let policy = crds
        .iter()
        .find(|c| c.spec.names.kind == "ClusterPolicy")
        .expect("ClusterPolicy");
    assert_eq!(policy.spec.scope, "Cluster");
    assert_eq!(
        policy.spec.names.short_names.as_deref(),
        Some(&["cp".to_owned()][..])
    );

    let mut kinds = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(dir.join(file)).expect("read");
        let path = dir.join(file);
        for doc in documents(&text, &path.to_string_lossy()) {
            kinds.push(check_document(&doc, &path.to_string_lossy(), &crds));
        }
    }
    for expected in [
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ServiceAccount",
        "Deployment",
        "Namespace",
        "Service",
        "Guestbook",
        "ClusterPolicy",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "Certificate",
        "Issuer",
    ] {
        assert!(
            kinds.iter().any(|k| k == expected),
            "no {expected} among {kinds:?}"
        );
    }

    // The role grants what the controllers' markers ask for.
    let role: ClusterRole = serde_saphyr::from_str(
        &std::fs::read_to_string(dir.join("config/rbac/role.yaml")).expect("read"),
    )
    .expect("a ClusterRole");
    let rules = role.rules.unwrap_or_default();
    let grants = |group: &str, resource: &str| {
        rules.iter().find(|r| {
            r.api_groups
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(|g| g == group)
                && r.resources
                    .as_deref()
                    .unwrap_or_default()
                    .iter()
                    .any(|x| x == resource)
        })
    };
    assert!(grants("apps", "deployments").is_some_and(|r| r.verbs == ["get", "list", "watch"]));
    assert!(grants("web.example.com", "guestbooks/status").is_some());
    // Only the kind scaffolded with --finalizer may update its finalizers.
    assert!(grants("infra.example.com", "clusterpolicies/finalizers").is_some());
    assert!(grants("web.example.com", "guestbooks/finalizers").is_none());
    assert!(grants("events.k8s.io", "events").is_some());

    // kubectl renders the kustomizations into valid objects.
    for kustomization in [
        "config/default",
        "config/crd",
        "config/samples",
        "config/rbac",
        "config/webhook",
    ] {
        let out = Command::new("kubectl")
            .args(["kustomize", kustomization])
            .current_dir(&dir)
            .output()
            .expect("kubectl is installed (the test checks that kustomize renders config/)");
        assert!(
            out.status.success(),
            "kubectl kustomize {kustomization}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        for doc in documents(&text, kustomization) {
            check_document(&doc, kustomization, &crds);
            if kustomization == "config/default"
                && doc["kind"] != "Namespace"
                && doc["kind"] != "CustomResourceDefinition"
                && doc["kind"] != "ClusterRole"
                && doc["kind"] != "ClusterRoleBinding"
                && doc["kind"] != "MutatingWebhookConfiguration"
                && doc["kind"] != "ValidatingWebhookConfiguration"
            {
                assert_eq!(
                    doc["metadata"]["namespace"],
                    format!("{PROJECT}-system"),
                    "{doc}"
                );
            }
        }
    }

    // Every e2e test passes under opctl envtest, with the manager running as
    // a ServiceAccount that holds only config/rbac/role.yaml: the kinds'
    // controllers, and the webhooks (each test installs config/webhook and
    // starts the manager with a self-signed certificate).
    let out = Command::new(common::opctl_bin())
        .args(["envtest", "run", "--crds", "config/crd/bases", "--"])
        .args(["cargo", "test", "--test", "e2e", "--", "--ignored"])
        .arg("--test-threads=1")
        .current_dir(&dir)
        .envs(build_env())
        .output()
        .expect("opctl runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the webhook e2e tests:\n{text}");
    for test in [
        "a_guestbook_becomes_ready_and_goes_away_on_delete ... ok",
        "a_cluster_policy_becomes_ready_and_goes_away_on_delete ... ok",
        "a_deployment_is_reconciled ... ok",
        "the_manager_serves_probes_and_metrics_and_stops_on_sigterm ... ok",
        "a_second_replica_is_ready_at_once_and_takes_over_when_the_first_stops ... ok",
        "the_defaulting_webhook_of_guestbook_v1_is_called ... ok",
        "the_validating_webhook_of_guestbook_v1_is_called ... ok",
        "the_defaulting_webhook_of_pod_v1_is_called ... ok",
    ] {
        assert!(text.contains(test), "{test}:\n{text}");
    }
    assert!(text.contains("8 passed"), "{text}");
    // Passing tests keep the manager's log to themselves: cargo captures it
    // with the test's output (no JSON log line, no kube-rs warning).
    assert!(
        !text.contains("impersonating user") && !text.contains("\"level\":\""),
        "the manager's log of passing tests is shown:\n{text}"
    );

    // A test that fails shows its manager's log. Here the role lacks what
    // the Guestbook controller writes (its status), and the log has the API
    // server's refusal, naming the user the manager runs as: its
    // ServiceAccount, holding only config/rbac/role.yaml.
    let role_file = dir.join("config/rbac/role.yaml");
    let role = std::fs::read_to_string(&role_file).expect("read role.yaml");
    let without_status = role.replace("  - guestbooks/status\n", "  - guestbooks/scale\n");
    assert_ne!(without_status, role, "role.yaml grants guestbooks/status");
    std::fs::write(&role_file, without_status).expect("write role.yaml");
    let out = Command::new(common::opctl_bin())
        .args(["envtest", "run", "--crds", "config/crd/bases", "--"])
        .args(["cargo", "test", "--test", "e2e", "--", "--ignored"])
        .arg("a_guestbook_becomes_ready_and_goes_away_on_delete")
        .current_dir(&dir)
        .envs(build_env())
        .output()
        .expect("opctl runs");
    std::fs::write(&role_file, &role).expect("restore role.yaml");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("the object did not become Ready"), "{text}");
    let refusal = text
        .lines()
        .find(|line| line.contains("reconcile failed") && line.contains("cannot patch resource"));
    let refusal = refusal.unwrap_or_else(|| panic!("the manager's log is shown:\n{text}"));
    for part in [
        "User \\\"system:serviceaccount:default:opctl-build-check-e2e\\\"",
        "guestbooks/status",
    ] {
        assert!(refusal.contains(part), "{part} in {refusal}");
    }

    // And under injected API faults (`make test-e2e-faults`: about one of
    // the manager's writes in ten fails, its watches are cut every 5 s):
    // the controllers converge all the same.
    let out = Command::new("make")
        .arg("test-e2e-faults")
        .arg(format!("OPCTL={}", common::opctl_bin()))
        .current_dir(&dir)
        .envs(build_env())
        .output()
        .expect("make runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "make test-e2e-faults:\n{text}");
    assert!(text.contains("8 passed"), "{text}");
    assert!(
        text.contains("injecting faults writes:500=4%,writes:429=3%,writes:409=3%,watch:cut=5s,watch:compact=20s into requests of system:serviceaccount:*"),
        "the default fault profile, on the manager's requests:\n{text}"
    );

    // A project that does not compile: cargo's errors, then one line from
    // opctl, and nothing written.
    let types = dir.join("api/src/web/v1/guestbook.rs");
    let good = std::fs::read_to_string(&types).expect("read");
    std::fs::write(
        &types,
        good.replace("pub foo: Option<String>,", "pub foo: Option<Strin>,"),
    )
    .expect("write");
    let before = snapshot(&dir);
    let out = Command::new(common::opctl_bin())
        .arg("manifests")
        .current_dir(&dir)
        .envs(build_env())
        .output()
        .expect("opctl runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot find type `Strin`"),
        "cargo's error is shown:\n{stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "error: the project does not compile: `cargo run -p opctl-build-check-api --bin opctl-build-check-crdgen` failed"
        ),
        "{last}"
    );
    assert!(
        last.contains("fix the errors cargo printed above"),
        "{last}"
    );
    assert_eq!(
        snapshot(&dir),
        before,
        "a failed `opctl manifests` wrote nothing"
    );
    std::fs::write(&types, good).expect("write");

    // The CRD generator is also usable by hand: a JSON array on stdout, the
    // CRDs as `opctl manifests` writes them (bar the storage version, which
    // opctl sets from the marker).
    let (ok, out) = cargo(
        &dir,
        &[
            "run",
            "--quiet",
            "-p",
            &format!("{PROJECT}-api"),
            "--bin",
            &format!("{PROJECT}-crdgen"),
        ],
    );
    assert!(ok, "{out}");
    let docs: Vec<Value> = serde_json::from_str(&out).expect("crdgen prints a JSON array");
    assert_eq!(docs.len(), 2);
    for doc in &docs {
        round_trip::<CustomResourceDefinition>(doc, "crdgen output");
    }
}
