//! `opctl create webhook` and the webhook part of `opctl manifests`: bad
//! input is refused with one line and nothing written; adding the other kind
//! of webhook later keeps the user's code; `--force`; the webhook
//! configurations, Service and kustomize output parse as their Kubernetes
//! kinds, and `opctl manifests` is idempotent. (Projects here have no CRD
//! kinds or never run `opctl manifests` on them, so nothing is compiled.)

mod common;

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde_json::Value;

use common::{opctl, opctl_fails, opctl_ok, project_dir, snapshot};

fn init(dir: &Path) {
    opctl_ok(dir, &["init", "--domain", "example.com"]);
}

fn api(dir: &Path, group: &str, version: &str, kind: &str, extra: &[&str]) {
    let mut args = vec![
        "create",
        "api",
        "--group",
        group,
        "--version",
        version,
        "--kind",
        kind,
    ];
    args.extend_from_slice(extra);
    opctl_ok(dir, &args);
}

fn webhook_args<'a>(
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "create",
        "webhook",
        "--group",
        group,
        "--version",
        version,
        "--kind",
        kind,
    ];
    args.extend_from_slice(extra);
    args
}

/// Runs a failing `create webhook` and checks that the tree did not change.
fn refused(dir: &Path, group: &str, version: &str, kind: &str, extra: &[&str]) -> String {
    let before = snapshot(dir);
    let line = opctl_fails(dir, &webhook_args(group, version, kind, extra));
    assert_eq!(snapshot(dir), before, "a refused command changed the tree");
    line
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|err| panic!("{file}: {err}"))
}

fn documents(text: &str, what: &str) -> Vec<Value> {
    let docs: Vec<Value> =
        serde_saphyr::from_str_multiple(text).unwrap_or_else(|err| panic!("{what}: {err}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

#[test]
fn bad_input_is_refused_with_one_line() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    api(&dir, "web", "v1", "Guestbook", &[]);

    let line = refused(&dir, "web", "v1", "Guestbook", &[]);
    assert!(
        line.contains("nothing to scaffold: pass --defaulting, --programmatic-validation, --conversion or several"),
        "{line}"
    );
    for (group, version, kind, expected) in [
        ("Web", "v1", "Guestbook", "invalid --group"),
        ("web", "1", "Guestbook", "invalid --version"),
        ("web", "v1", "guestbook", "invalid --kind"),
        ("web", "v1", "Shelf", "unknown kind web/v1 Shelf"),
        ("apps", "v1", "Deploy", "unknown kind apps/v1 Deploy"),
        (
            "web",
            "v2",
            "Guestbook",
            "Guestbook has no version v2 in this project",
        ),
        (
            "admissionregistration",
            "v1",
            "ValidatingWebhookConfiguration",
            "never sent to admission webhooks",
        ),
    ] {
        let line = refused(&dir, group, version, kind, &["--defaulting"]);
        assert!(line.contains(expected), "{group}/{version} {kind}: {line}");
    }
    let line = refused(&dir, "web", "v1", "Shelf", &["--defaulting"]);
    assert!(
        line.contains("opctl create api --group web --version v1 --kind Shelf"),
        "the fix is named: {line}"
    );

    // The same webhook twice needs --force.
    opctl_ok(
        &dir,
        &webhook_args("web", "v1", "Guestbook", &["--defaulting"]),
    );
    let line = refused(&dir, "web", "v1", "Guestbook", &["--defaulting"]);
    assert!(
        line.contains(
            "web.example.com/v1 Guestbook already has a defaulting webhook; pass --force"
        ),
        "{line}"
    );
    let line = refused(
        &dir,
        "web",
        "v1",
        "Guestbook",
        &["--defaulting", "--programmatic-validation"],
    );
    assert!(line.contains("already has a defaulting webhook"), "{line}");

    // Outside a project.
    let (_other, empty) = project_dir("empty");
    let line = refused(&empty, "core", "v1", "Pod", &["--defaulting"]);
    assert!(line.contains("not an opctl project root"), "{line}");
}

#[test]
fn a_removed_marker_is_reported_and_nothing_is_written() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let main = dir.join("src/main.rs");
    let text = read(&dir, "src/main.rs").replace("// +opctl:scaffold:webhooks\n", "");
    std::fs::write(&main, text).expect("write");
    let line = refused(&dir, "core", "v1", "Pod", &["--defaulting"]);
    assert!(
        line.contains("cannot find the `// +opctl:scaffold:webhooks` marker in src/main.rs"),
        "{line}"
    );
}

#[test]
fn adding_the_other_webhook_keeps_the_users_code() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    api(&dir, "web", "v1", "Guestbook", &[]);
    opctl_ok(
        &dir,
        &webhook_args("web", "v1", "Guestbook", &["--defaulting"]),
    );
    let handler = "src/webhook/web/v1/guestbook_defaulting.rs";
    let edited = read(&dir, handler).replace(
        "object.spec.foo = Some(\"default\".to_owned());",
        "object.spec.foo = Some(\"mine\".to_owned());",
    );
    assert!(edited.contains("\"mine\""));
    std::fs::write(dir.join(handler), &edited).expect("write");
    let main = read(&dir, "src/main.rs") + "// my note\n";
    std::fs::write(dir.join("src/main.rs"), &main).expect("write");
    let e2e = read(&dir, "tests/e2e.rs") + "// my test\n";
    std::fs::write(dir.join("tests/e2e.rs"), &e2e).expect("write");

    let run = opctl_ok(
        &dir,
        &webhook_args("web", "v1", "Guestbook", &["--programmatic-validation"]),
    );
    assert!(
        run.stdout
            .contains("created  src/webhook/web/v1/guestbook_validation.rs"),
        "{}",
        run.stdout
    );
    assert_eq!(
        read(&dir, handler),
        edited,
        "the defaulting handler is kept"
    );
    let main = read(&dir, "src/main.rs");
    assert!(main.ends_with("// my note\n"), "{main}");
    assert_eq!(main.matches("mod webhook;").count(), 1, "{main}");
    assert_eq!(
        main.matches("let manager = webhook::register(manager);")
            .count(),
        1,
        "{main}"
    );
    let e2e = read(&dir, "tests/e2e.rs");
    assert!(e2e.contains("// my test\n"), "{e2e}");
    assert_eq!(e2e.matches("mod webhooks;").count(), 1);
    assert_eq!(
        e2e.matches("webhooks::serve_locally(&mut command);")
            .count(),
        1
    );
    assert_eq!(
        e2e.matches("async fn the_defaulting_webhook_of_guestbook_v1_is_called")
            .count(),
        1
    );
    assert_eq!(
        e2e.matches("async fn the_validating_webhook_of_guestbook_v1_is_called")
            .count(),
        1
    );
    let modules = read(&dir, "src/webhook/web/v1/mod.rs");
    assert!(
        modules.contains("pub mod guestbook_defaulting;"),
        "{modules}"
    );
    assert!(
        modules.contains("pub mod guestbook_validation;"),
        "{modules}"
    );
    let project = read(&dir, "PROJECT");
    assert!(
        project.contains("  webhooks:\n    defaulting: true\n    validation: true\n"),
        "{project}"
    );
    let manifests = read(&dir, "config/webhook/manifests.yaml");
    assert!(
        manifests.contains("name: mguestbook-v1.web.example.com"),
        "{manifests}"
    );
    assert!(
        manifests.contains("name: vguestbook-v1.web.example.com"),
        "{manifests}"
    );

    // --force scaffolds a webhook again: its handler is rewritten, nothing
    // is registered twice.
    opctl_ok(
        &dir,
        &webhook_args("web", "v1", "Guestbook", &["--defaulting", "--force"]),
    );
    assert!(read(&dir, handler).contains("Some(\"default\".to_owned())"));
    let before = snapshot(&dir);
    opctl_ok(
        &dir,
        &webhook_args("web", "v1", "Guestbook", &["--defaulting", "--force"]),
    );
    assert_eq!(snapshot(&dir), before, "--force again changes nothing");
    let e2e = read(&dir, "tests/e2e.rs");
    assert_eq!(
        e2e.matches("async fn the_defaulting_webhook_of_guestbook_v1_is_called")
            .count(),
        1
    );
}

#[test]
fn an_existing_handler_file_is_not_overwritten() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let handler = dir.join("src/webhook/core/v1/pod_defaulting.rs");
    std::fs::create_dir_all(handler.parent().expect("parent")).expect("mkdir");
    std::fs::write(&handler, "// mine\n").expect("write");
    let line = refused(&dir, "core", "v1", "Pod", &["--defaulting"]);
    assert!(
        line.contains("would overwrite src/webhook/core/v1/pod_defaulting.rs"),
        "{line}"
    );
    assert!(line.contains("pass --force"), "{line}");
}

#[test]
fn a_controller_added_later_keeps_the_webhooks_recorded() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    opctl_ok(&dir, &webhook_args("core", "v1", "Pod", &["--defaulting"]));
    api(&dir, "core", "v1", "Pod", &["--resource=false"]);
    let project = read(&dir, "PROJECT");
    assert_eq!(project.matches("kind: Pod").count(), 1, "{project}");
    assert!(project.contains("controller: true"), "{project}");
    assert!(project.contains("    defaulting: true\n"), "{project}");
    // And a webhook for a kind that has a controller already.
    opctl_ok(
        &dir,
        &webhook_args("core", "v1", "Pod", &["--programmatic-validation"]),
    );
    let project = read(&dir, "PROJECT");
    assert!(project.contains("    validation: true\n"), "{project}");
    assert!(dir.join("src/controller/pod.rs").is_file());
}

/// Every built-in kind opctl offers is served by `opctl envtest`, so its
/// webhooks get an e2e test too.
#[test]
fn webhooks_of_a_built_in_kind_get_an_e2e_test() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let run = opctl_ok(
        &dir,
        &webhook_args("networking", "v1", "Ingress", &["--defaulting"]),
    );
    assert!(
        !run.stdout.contains("No e2e test was added"),
        "{}",
        run.stdout
    );
    let e2e = read(&dir, "tests/e2e.rs");
    assert!(e2e.contains("the_defaulting_webhook_of_ingress"), "{e2e}");
    assert!(e2e.contains("\"pathType\": \"Prefix\""), "{e2e}");
    assert!(
        dir.join("src/webhook/networking/v1/ingress_defaulting.rs")
            .is_file()
    );
}

/// `opctl manifests` in `dir` (no CRD kinds: nothing to compile).
fn manifests(dir: &Path) -> String {
    opctl_ok(dir, &["manifests"]).stdout
}

#[test]
fn manifests_are_valid_kubernetes_objects_and_idempotent() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    opctl_ok(
        &dir,
        &webhook_args(
            "core",
            "v1",
            "Pod",
            &["--defaulting", "--programmatic-validation"],
        ),
    );
    opctl_ok(
        &dir,
        &webhook_args("apps", "v1", "Deployment", &["--programmatic-validation"]),
    );
    // What create webhook wrote is what manifests writes.
    let before = snapshot(&dir);
    let out = manifests(&dir);
    assert!(out.contains("Manifests are up to date."), "{out}");
    assert_eq!(snapshot(&dir), before);

    let text = read(&dir, "config/webhook/manifests.yaml");
    let docs = documents(&text, "manifests.yaml");
    assert_eq!(docs.len(), 2, "{text}");
    let mutating: MutatingWebhookConfiguration =
        serde_json::from_value(docs[0].clone()).expect("a MutatingWebhookConfiguration");
    let validating: ValidatingWebhookConfiguration =
        serde_json::from_value(docs[1].clone()).expect("a ValidatingWebhookConfiguration");
    assert_eq!(
        serde_json::to_value(&mutating).expect("serialises"),
        docs[0]
    );
    assert_eq!(
        serde_json::to_value(&validating).expect("serialises"),
        docs[1]
    );

    let hooks = mutating.webhooks.expect("webhooks");
    assert_eq!(hooks.len(), 1);
    let pod = &hooks[0];
    assert_eq!(pod.name, "mpod-v1.core.example.com");
    assert_eq!(pod.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(pod.side_effects, "None");
    assert_eq!(pod.admission_review_versions, ["v1"]);
    let service = pod.client_config.service.as_ref().expect("a Service");
    assert_eq!(
        (service.name.as_str(), service.namespace.as_str()),
        ("webhook-service", "system")
    );
    assert_eq!(service.path.as_deref(), Some("/mutate-core-v1-pod"));
    let rule = &pod.rules.as_deref().expect("rules")[0];
    assert_eq!(rule.api_groups.as_deref(), Some(&[String::new()][..]));
    assert_eq!(rule.resources.as_deref(), Some(&["pods".to_owned()][..]));
    assert_eq!(
        rule.operations.as_deref(),
        Some(&["CREATE".to_owned(), "UPDATE".to_owned()][..])
    );

    let hooks = validating.webhooks.expect("webhooks");
    let names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "vdeployment-v1.apps.example.com",
            "vpod-v1.core.example.com"
        ],
        "sorted by name"
    );
    let rule = &hooks[0].rules.as_deref().expect("rules")[0];
    assert_eq!(rule.api_groups.as_deref(), Some(&["apps".to_owned()][..]));
    assert_eq!(
        rule.operations.as_deref(),
        Some(
            &[
                "CREATE".to_owned(),
                "UPDATE".to_owned(),
                "DELETE".to_owned()
            ][..]
        )
    );

    let service: Service =
        serde_saphyr::from_str(&read(&dir, "config/webhook/service.yaml")).expect("a Service");
    let ports = service.spec.and_then(|s| s.ports).expect("ports");
    assert_eq!(ports[0].port, 443);
    assert_eq!(
        serde_json::to_value(&ports[0].target_port).expect("serialises"),
        9443
    );

    // A changed marker is picked up; running again changes nothing.
    let handler = dir.join("src/webhook/core/v1/pod_defaulting.rs");
    let text = read(&dir, "src/webhook/core/v1/pod_defaulting.rs").replace(
        "failurePolicy=fail",
        "failurePolicy=ignore,timeoutSeconds=5",
    );
    std::fs::write(&handler, text).expect("write");
    let out = manifests(&dir);
    assert!(
        out.contains("updated  config/webhook/manifests.yaml"),
        "{out}"
    );
    let text = read(&dir, "config/webhook/manifests.yaml");
    assert!(text.contains("failurePolicy: Ignore"), "{text}");
    assert!(text.contains("timeoutSeconds: 5"), "{text}");
    let after = snapshot(&dir);
    assert!(manifests(&dir).contains("Manifests are up to date."));
    assert_eq!(snapshot(&dir), after);

    // A bad marker: one line naming the file and line, nothing written.
    let text = read(&dir, "src/webhook/core/v1/pod_defaulting.rs")
        .replace("failurePolicy=ignore", "failurePolicy=sometimes");
    std::fs::write(&handler, text).expect("write");
    let before = snapshot(&dir);
    let line = opctl_fails(&dir, &["manifests"]);
    assert!(
        line.contains("src/webhook/core/v1/pod_defaulting.rs:")
            && line.contains("bad `+opctl:webhook` marker")
            && line.contains("expected one of Fail, Ignore"),
        "{line}"
    );
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn a_stray_webhook_marker_needs_create_webhook() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let main = read(&dir, "src/main.rs")
        + "// +opctl:webhook:path=/x,mutating=true,failurePolicy=fail,sideEffects=None,groups=\"\",resources=pods,verbs=create,versions=v1,name=mpod.example.com,admissionReviewVersions=v1\n";
    std::fs::write(dir.join("src/main.rs"), main).expect("write");
    let before = snapshot(&dir);
    let line = opctl_fails(&dir, &["manifests"]);
    assert!(line.contains("PROJECT records no webhook"), "{line}");
    assert!(line.contains("opctl create webhook"), "{line}");
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn the_file_listing_names_the_webhook_files() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    opctl_ok(&dir, &webhook_args("core", "v1", "Pod", &["--defaulting"]));
    let listing = opctl_ok(&dir, &["files"]).stdout;
    for line in [
        "user\tsrc/webhook/core/v1/pod_defaulting.rs",
        "scaffold\tsrc/webhook/core/v1/mod.rs",
        "scaffold\tsrc/manager/mod.rs",
        "vendored\t.opctl/runtime/src/webhook/mod.rs",
        "scaffold\ttests/webhooks/mod.rs",
        "scaffold\tconfig/webhook/service.yaml",
        "scaffold\tconfig/certmanager/certificate.yaml",
        "generated\tconfig/webhook/manifests.yaml",
    ] {
        assert!(listing.lines().any(|l| l == line), "{line} in:\n{listing}");
    }
    // Every listed file exists, and every file of the tree is listed.
    let listed: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, p)| p))
        .collect();
    let files = snapshot(&dir);
    for path in &listed {
        assert!(files.contains_key(*path), "{path} is listed but missing");
    }
    for path in files.keys() {
        assert!(listed.contains(&path.as_str()), "{path} is not listed");
    }
}

/// What `kubectl kustomize DIR` renders in the project.
fn kustomize(dir: &Path, kustomization: &str) -> Vec<Value> {
    let out = Command::new("kubectl")
        .args(["kustomize", kustomization])
        .current_dir(dir)
        .output()
        .expect("kubectl is installed (the test renders config/ with kustomize)");
    assert!(
        out.status.success(),
        "kubectl kustomize {kustomization}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    documents(&String::from_utf8_lossy(&out.stdout), kustomization)
}

#[test]
fn config_default_deploys_the_webhooks_with_cert_manager() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    let without = kustomize(&dir, "config/default");
    assert!(without.iter().all(|d| d["kind"] != "Certificate"));
    opctl_ok(&dir, &webhook_args("core", "v1", "Pod", &["--defaulting"]));
    let docs = kustomize(&dir, "config/default");
    let find = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in config/default"))
            .clone()
    };
    let config: MutatingWebhookConfiguration =
        serde_json::from_value(find("MutatingWebhookConfiguration")).expect("parses");
    assert_eq!(
        config.metadata.name.as_deref(),
        Some("demo-mutating-webhook-configuration")
    );
    let annotations = config.metadata.annotations.expect("annotations");
    assert_eq!(
        annotations["cert-manager.io/inject-ca-from"],
        "demo-system/demo-serving-cert"
    );
    let service = config.webhooks.expect("webhooks")[0]
        .client_config
        .service
        .clone()
        .expect("a Service");
    assert_eq!(
        (service.name.as_str(), service.namespace.as_str()),
        ("demo-webhook-service", "demo-system")
    );
    let webhook_service: Service = docs
        .iter()
        .filter(|d| d["kind"] == "Service")
        .map(|d| serde_json::from_value(d.clone()).expect("a Service"))
        .find(|s: &Service| s.metadata.name.as_deref() == Some("demo-webhook-service"))
        .expect("the webhook Service");
    assert_eq!(
        webhook_service.metadata.namespace.as_deref(),
        Some("demo-system")
    );

    let certificate = find("Certificate");
    assert_eq!(certificate["metadata"]["name"], "demo-serving-cert");
    assert_eq!(certificate["metadata"]["namespace"], "demo-system");
    assert_eq!(certificate["spec"]["secretName"], "webhook-server-cert");
    assert_eq!(
        certificate["spec"]["dnsNames"][0],
        "demo-webhook-service.demo-system.svc"
    );
    let issuer = find("Issuer");
    assert_eq!(
        issuer["metadata"]["name"],
        certificate["spec"]["issuerRef"]["name"]
    );

    let deployment: Deployment = serde_json::from_value(find("Deployment")).expect("parses");
    let pod = deployment
        .spec
        .expect("spec")
        .template
        .spec
        .expect("pod spec");
    let container = &pod.containers[0];
    assert!(
        container
            .ports
            .iter()
            .flatten()
            .any(|p| p.container_port == 9443),
        "the webhook port"
    );
    let mount = &container.volume_mounts.as_deref().expect("mounts")[0];
    assert_eq!(mount.mount_path, "/tmp/k8s-webhook-server/serving-certs");
    let volume = &pod.volumes.as_deref().expect("volumes")[0];
    let secret = volume.secret.as_ref().expect("a Secret volume");
    assert_eq!(secret.secret_name.as_deref(), Some("webhook-server-cert"));
}

/// Two permissive CRDs for cert-manager's kinds, as a cluster with
/// cert-manager has them (the installer of a project with webhooks holds a
/// Certificate and an Issuer).
const CERT_MANAGER_CRDS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: Certificate, listKind: CertificateList, plural: certificates, singular: certificate}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: issuers.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: Issuer, listKind: IssuerList, plural: issuers, singular: issuer}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

#[test]
fn build_installer_writes_one_file_that_a_cluster_applies_network_policies_included() {
    let (tmp, dir) = project_dir("demo");
    init(&dir);
    // Without webhooks, the network policies let only metrics in.
    let policies = kustomize(&dir, "config/network-policy");
    let names: Vec<&str> = policies
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["allow-metrics-traffic"]);
    opctl_ok(&dir, &webhook_args("core", "v1", "Pod", &["--defaulting"]));
    // The installer with the network policies turned on.
    let kustomization = dir.join("config/default/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).expect("read");
    assert!(text.contains("\n#- ../network-policy\n"), "{text}");
    let text = text.replace("\n#- ../network-policy\n", "\n- ../network-policy\n");
    std::fs::write(&kustomization, text).expect("write");
    let image = "registry.example.com/demo:v1.2.3";
    // `-o manifests`: the project has no kinds, nothing to regenerate.
    let out = Command::new("make")
        .args([
            "-o",
            "manifests",
            "build-installer",
            &format!("IMG={image}"),
        ])
        .current_dir(&dir)
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "make build-installer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.join("dist/install.yaml.tmp").exists());
    let installer = std::fs::read_to_string(dir.join("dist/install.yaml")).expect("written");
    let installed = documents(&installer, "dist/install.yaml");

    // Exactly config/default, with the image given.
    let mut expected = kustomize(&dir, "config/default");
    for doc in expected.iter_mut().filter(|d| d["kind"] == "Deployment") {
        for container in doc["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .expect("containers")
        {
            if container["image"] == "controller:latest" {
                container["image"] = Value::from(image);
            }
        }
    }
    assert_eq!(installed, expected);
    // Each policy selects the manager's Pods and opens one port.
    let deployment: Deployment = serde_json::from_value(
        installed
            .iter()
            .find(|d| d["kind"] == "Deployment")
            .expect("the manager")
            .clone(),
    )
    .expect("parses");
    let pod_labels = deployment
        .spec
        .expect("spec")
        .template
        .metadata
        .expect("meta")
        .labels;
    let mut ports = Vec::new();
    for doc in installed.iter().filter(|d| d["kind"] == "NetworkPolicy") {
        let policy: NetworkPolicy = serde_json::from_value(doc.clone()).expect("parses");
        assert_eq!(policy.metadata.namespace.as_deref(), Some("demo-system"));
        let spec = policy.spec.expect("spec");
        let selected = spec
            .pod_selector
            .expect("selector")
            .match_labels
            .expect("labels");
        let labels = pod_labels.clone().expect("labels");
        assert!(
            selected.iter().all(|(k, v)| labels.get(k) == Some(v)),
            "{selected:?}"
        );
        for rule in spec.ingress.expect("ingress") {
            for port in rule.ports.expect("ports") {
                ports.push(
                    policy.metadata.name.clone().expect("name")
                        + ":"
                        + &serde_json::to_string(&port.port).expect("port"),
                );
            }
        }
    }
    ports.sort();
    assert_eq!(
        ports,
        [
            "demo-allow-metrics-traffic:8443",
            "demo-allow-webhook-traffic:9443"
        ]
    );
    assert!(
        installer.contains(&format!("image: {image}")),
        "{installer}"
    );
    assert!(!installer.contains("controller:latest"), "{installer}");

    // A cluster with cert-manager's kinds takes it as it is.
    let crds = tmp.path().join("cert-manager-crds");
    std::fs::create_dir(&crds).expect("mkdir");
    std::fs::write(crds.join("crds.yaml"), CERT_MANAGER_CRDS).expect("write");
    let out = Command::new(common::opctl_bin())
        .arg("envtest")
        .arg("run")
        .arg("--crds")
        .arg(&crds)
        .args(["--", "kubectl", "apply", "-f", "dist/install.yaml"])
        .current_dir(&dir)
        .output()
        .expect("opctl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl apply -f dist/install.yaml: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for created in [
        "namespace/demo-system created",
        "deployment.apps/demo-controller-manager created",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/demo-mutating-webhook-configuration created",
        "certificate.cert-manager.io/demo-serving-cert created",
        "networkpolicy.networking.k8s.io/demo-allow-metrics-traffic created",
        "networkpolicy.networking.k8s.io/demo-allow-webhook-traffic created",
    ] {
        assert!(stdout.contains(created), "{created}:\n{stdout}");
    }
}

#[test]
fn help_names_the_flags_with_examples() {
    let (_tmp, dir) = project_dir("demo");
    let run = opctl(&dir, &["create", "webhook", "--help"]);
    assert!(run.ok);
    for text in [
        "--defaulting",
        "--programmatic-validation",
        "--force",
        "Examples:",
        "--group core --version v1 --kind Pod --defaulting",
    ] {
        assert!(run.stdout.contains(text), "{text}:\n{}", run.stdout);
    }
}

/// A project with Guestbook in v1 and v2 (v1 with the controller).
fn two_versions(dir: &Path) {
    init(dir);
    api(dir, "web", "v1", "Guestbook", &[]);
    api(dir, "web", "v2", "Guestbook", &["--controller=false"]);
}

#[test]
fn conversion_needs_a_kind_of_the_project_with_another_version_and_one_hub() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    api(&dir, "web", "v1", "Guestbook", &[]);
    let line = refused(&dir, "web", "v1", "Guestbook", &["--conversion"]);
    assert!(
        line.contains("has one version only")
            && line.contains("opctl create api --group web --version <version> --kind Guestbook"),
        "{line}"
    );
    let line = refused(&dir, "core", "v1", "Pod", &["--conversion"]);
    assert!(line.contains("is not defined in this project"), "{line}");
    api(&dir, "web", "v2", "Guestbook", &["--controller=false"]);
    opctl_ok(
        &dir,
        &webhook_args("web", "v2", "Guestbook", &["--conversion"]),
    );
    for hub in ["v1", "v2"] {
        let line = refused(&dir, "web", hub, "Guestbook", &["--conversion"]);
        assert!(
            line.contains("Guestbook already converts through its hub v2"),
            "{line}"
        );
    }
    let line = refused(&dir, "web", "v1", "Guestbook", &["--conversion", "--force"]);
    assert!(line.contains("its hub v2"), "{line}");
}

#[test]
fn a_version_added_after_the_conversion_gets_its_conversion_module() {
    let (_tmp, dir) = project_dir("demo");
    init(&dir);
    for version in ["v1", "v2"] {
        api(&dir, "web", version, "Guestbook", &["--controller=false"]);
    }
    opctl_ok(
        &dir,
        &webhook_args("web", "v2", "Guestbook", &["--conversion"]),
    );
    api(&dir, "web", "v3", "Guestbook", &["--controller=false"]);
    let module = read(&dir, "src/webhook/web/v3/guestbook_conversion.rs");
    assert!(
        module.contains("use demo::api::web::v2::Guestbook as Hub;"),
        "{module}"
    );
    assert!(read(&dir, "src/webhook/web/v3/mod.rs").contains("guestbook_conversion"));
    let e2e = read(&dir, "tests/e2e.rs");
    assert!(e2e.contains("fn a_guestbook_created_in_v3_reads_as_v2_and_back()"));
    // Adding a controller to that version later keeps the module as edited.
    let edited = format!("{module}// edited\n");
    std::fs::write(
        dir.join("src/webhook/web/v3/guestbook_conversion.rs"),
        &edited,
    )
    .expect("edit");
    api(
        &dir,
        "web",
        "v3",
        "Guestbook",
        &["--resource=false", "--controller"],
    );
    assert_eq!(
        read(&dir, "src/webhook/web/v3/guestbook_conversion.rs"),
        edited
    );
}

#[test]
fn conversion_scaffolds_a_module_per_spoke_and_patches_the_crd() {
    let (_tmp, dir) = project_dir("demo");
    two_versions(&dir);
    api(&dir, "web", "v3", "Guestbook", &["--controller=false"]);
    // A CRD as `opctl manifests` writes it (its generator is not built here).
    std::fs::create_dir_all(dir.join("config/crd/bases")).expect("bases");
    std::fs::write(
        dir.join("config/crd/bases/web.example.com_guestbooks.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata:\n  name: guestbooks.web.example.com\nspec:\n  group: web.example.com\n  \
         names:\n    kind: Guestbook\n    plural: guestbooks\n  scope: Namespaced\n  versions: []\n",
    )
    .expect("a CRD");
    opctl_ok(
        &dir,
        &webhook_args("web", "v2", "Guestbook", &["--conversion"]),
    );

    let project = read(&dir, "PROJECT");
    assert!(
        project.contains("  webhooks:\n    conversion: true\n"),
        "{project}"
    );
    for spoke in ["v1", "v3"] {
        let module = read(
            &dir,
            &format!("src/webhook/web/{spoke}/guestbook_conversion.rs"),
        );
        assert!(module.contains("pub fn to_hub(") && module.contains("pub fn from_hub("));
        assert!(
            module.contains("use demo::api::web::v2::Guestbook as Hub;"),
            "{module}"
        );
    }
    assert!(
        !dir.join("src/webhook/web/v2").exists(),
        "the hub has no module"
    );
    let e2e = read(&dir, "tests/e2e.rs");
    assert!(e2e.contains("fn a_guestbook_created_in_v1_reads_as_v2_and_back()"));
    assert!(e2e.contains("fn a_guestbook_created_in_v3_reads_as_v2_and_back()"));

    // config/crd turns the conversion on, through the Service config/default names.
    let crds = kustomize(&dir, "config/crd");
    let crd = &crds[0];
    assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
    let webhook = &crd["spec"]["conversion"]["webhook"];
    assert_eq!(
        webhook["conversionReviewVersions"],
        serde_json::json!(["v1"])
    );
    let service = &webhook["clientConfig"]["service"];
    assert_eq!(service["name"], "demo-webhook-service");
    assert_eq!(service["namespace"], "demo-system");
    assert_eq!(service["path"], "/convert");
    assert_eq!(
        crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "demo-system/demo-serving-cert"
    );
    let deployed = kustomize(&dir, "config/default");
    let crd = deployed
        .iter()
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .expect("the CRD is deployed");
    let service = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
    assert_eq!(service["name"], "demo-webhook-service");
    assert_eq!(service["namespace"], "demo-system");
    let services: Vec<&Value> = deployed.iter().filter(|d| d["kind"] == "Service").collect();
    assert!(
        services
            .iter()
            .any(|s| s["metadata"]["name"] == "demo-webhook-service"
                && s["metadata"]["namespace"] == "demo-system"),
        "{services:?}"
    );
}
