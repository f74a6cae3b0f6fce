//! The Helm chart of `opctl edit --helm`, rendered in Rust (tests/helm: Go
//! templates through gtmpl, with Helm's functions the chart uses) and
//! compared object by object with `kubectl kustomize config/default`: a
//! release named after the project in its namespace must make the same
//! objects as dist/install.yaml, with every value switch matched by the
//! kustomization it stands for. The projects are copies of the reference
//! projects in testdata/ (sidecarset: a kind, its controller and both
//! webhooks, plus a Pod webhook; database: a kind with two versions, its
//! controller and a conversion webhook).

mod common;
mod helm;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use common::{opctl_fails, opctl_ok, project_dir, snapshot};
use helm::Release;

/// A copy of testdata/`name` (sources, config/, PROJECT), without builds.
fn reference_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = project_dir(name);
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    for (rel, contents) in snapshot(&source) {
        let target = dir.join(&rel);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(target, contents).expect("write");
    }
    (tmp, dir)
}

/// `kubectl kustomize config/default` after `edit` changed its kustomization
/// (restored afterwards); the Namespace is left out (helm's --create-namespace
/// makes it).
fn kustomize(dir: &Path, edit: impl Fn(&str) -> String) -> Vec<Value> {
    let file = dir.join("config/default/kustomization.yaml");
    let original = std::fs::read_to_string(&file).expect("kustomization");
    let changed = edit(&original);
    std::fs::write(&file, &changed).expect("write kustomization");
    let output = Command::new("kubectl")
        .args(["kustomize", "config/default"])
        .current_dir(dir)
        .output()
        .expect("kubectl is installed (the test compares the chart with kustomize's output)");
    std::fs::write(&file, original).expect("restore kustomization");
    assert!(
        output.status.success(),
        "kubectl kustomize config/default: {}\n{changed}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&text).expect("kustomize's YAML");
    docs.into_iter()
        .filter(|d| !d.is_null() && d["kind"] != "Namespace")
        .collect()
}

fn render(dir: &Path, release: &str, set: &[(&str, Value)]) -> Vec<Value> {
    helm::render(
        &dir.join("dist/chart"),
        &Release {
            name: release,
            namespace: &format!("{release}-system"),
        },
        set,
    )
}

type Key = (String, String, String, String);

fn key(doc: &Value) -> Key {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        s(&doc["apiVersion"]),
        s(&doc["kind"]),
        s(&doc["metadata"]["namespace"]),
        s(&doc["metadata"]["name"]),
    )
}

fn by_key(docs: Vec<Value>) -> BTreeMap<Key, Value> {
    let mut out = BTreeMap::new();
    for doc in docs {
        let k = key(&doc);
        assert!(out.insert(k.clone(), doc).is_none(), "{k:?} twice");
    }
    out
}

/// The chart's objects are kustomize's: the same set, each the same but for
/// the labels helm adds and the annotation that keeps CRDs on uninstall.
fn assert_same_objects(chart: Vec<Value>, kustomized: Vec<Value>) {
    let chart = by_key(chart);
    let kustomized = by_key(kustomized);
    assert_eq!(
        chart.keys().collect::<Vec<_>>(),
        kustomized.keys().collect::<Vec<_>>(),
        "the chart and config/default make different objects"
    );
    for (k, expected) in kustomized {
        let mut actual = chart[&k].clone();
        let mut expected = expected;
        let labels = actual["metadata"]["labels"].clone();
        for (name, value) in expected["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
        {
            assert_eq!(&labels[name], value, "{k:?}: label {name}");
        }
        for doc in [&mut actual, &mut expected] {
            let metadata = doc["metadata"].as_object_mut().expect("metadata");
            metadata.remove("labels");
            if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
                annotations.remove("helm.sh/resource-policy");
                if annotations.is_empty() {
                    metadata.remove("annotations");
                }
            }
        }
        assert!(
            actual == expected,
            "{k:?} differs:\n--- chart\n{}\n--- config/default\n{}",
            serde_saphyr::to_string(&actual).unwrap_or_default(),
            serde_saphyr::to_string(&expected).unwrap_or_default()
        );
    }
}

fn without(line: &'static str) -> impl Fn(&str) -> String {
    move |text: &str| {
        assert!(text.contains(line), "{line:?} is in the kustomization");
        text.replace(line, "")
    }
}

#[test]
fn the_chart_with_its_defaults_makes_what_config_default_makes() {
    for name in ["sidecarset", "database"] {
        let (_tmp, dir) = reference_copy(name);
        opctl_ok(&dir, &["edit", "--helm"]);
        assert_same_objects(render(&dir, name, &[]), kustomize(&dir, str::to_owned));
    }
}

#[test]
fn a_namespaced_project_without_crds_gets_its_role_in_the_release_namespace() {
    let (_tmp, dir) = project_dir("watcher");
    opctl_ok(&dir, &["init", "--domain", "example.com", "--namespaced"]);
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
    opctl_ok(&dir, &["edit", "--helm"]);
    let chart = render(&dir, "watcher", &[]);
    assert!(
        chart
            .iter()
            .any(|d| d["kind"] == "Role" && d["metadata"]["name"] == "watcher-manager-role"),
        "{chart:?}"
    );
    assert_same_objects(chart, kustomize(&dir, str::to_owned));
}

#[test]
fn each_switch_of_the_values_matches_its_kustomization() {
    let (_tmp, dir) = reference_copy("sidecarset");
    opctl_ok(&dir, &["edit", "--helm"]);

    let policies = |text: &str| text.replace("#- ../network-policy", "- ../network-policy");
    assert_same_objects(
        render(&dir, "sidecarset", &[("networkPolicy.enable", json!(true))]),
        kustomize(&dir, policies),
    );

    assert_same_objects(
        render(&dir, "sidecarset", &[("crd.enable", json!(false))]),
        kustomize(&dir, without("- ../crd\n")),
    );

    // Without cert-manager: no Issuer or Certificate, no injection
    // annotation, and the CA from the values in every webhook.
    let mut expected = kustomize(&dir, without("components:\n- ../certmanager\n"));
    for doc in &mut expected {
        let webhooks = doc.get_mut("webhooks").and_then(Value::as_array_mut);
        for webhook in webhooks.into_iter().flatten() {
            webhook["clientConfig"]["caBundle"] = json!("Q0E=");
        }
    }
    let chart = render(
        &dir,
        "sidecarset",
        &[
            ("certManager.enable", json!(false)),
            ("webhook.caBundle", json!("Q0E=")),
        ],
    );
    assert_same_objects(chart, expected);
}

#[test]
fn the_names_follow_the_release_and_values_reach_the_deployment() {
    let (_tmp, dir) = reference_copy("database");
    opctl_ok(&dir, &["edit", "--helm"]);
    let docs = render(
        &dir,
        "prod",
        &[
            ("manager.replicas", json!(3)),
            ("manager.leaderElection", json!(false)),
            (
                "manager.image.repository",
                json!("registry.example.com/database"),
            ),
            ("manager.image.tag", json!("v1.2.3")),
            ("rbac.enable", json!(false)),
            ("metrics.enable", json!(false)),
            ("webhook.enable", json!(false)),
        ],
    );
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        ["CustomResourceDefinition", "Deployment"],
        "{kinds:?}"
    );
    let deployment = &docs[1];
    assert_eq!(deployment["metadata"]["name"], "prod-controller-manager");
    assert_eq!(deployment["metadata"]["namespace"], "prod-system");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example.com/database:v1.2.3");
    assert_eq!(
        container["args"],
        json!([
            "--health-probe-bind-address=:8081",
            "--metrics-bind-address=:8443",
            "--log-format=json"
        ])
    );
}

#[test]
fn a_crd_that_converts_calls_the_charts_webhook_service() {
    let (_tmp, dir) = reference_copy("database");
    opctl_ok(&dir, &["edit", "--helm"]);
    let crd = |set: &[(&str, Value)]| {
        render(&dir, "prod", set)
            .into_iter()
            .find(|d| d["kind"] == "CustomResourceDefinition")
            .expect("the CRD")
    };
    // cert-manager (the default) injects the CA of the chart's certificate;
    // CRDs are kept on uninstall by default.
    let with_cert_manager = crd(&[]);
    assert_eq!(
        with_cert_manager["metadata"]["annotations"],
        json!({
            "cert-manager.io/inject-ca-from": "prod-system/prod-serving-cert",
            "helm.sh/resource-policy": "keep",
        })
    );
    let conversion = &with_cert_manager["spec"]["conversion"];
    assert_eq!(conversion["strategy"], "Webhook");
    assert_eq!(
        conversion["webhook"],
        json!({
            "clientConfig": {"service": {
                "name": "prod-webhook-service", "namespace": "prod-system",
                "path": "/convert", "port": 443,
            }},
            "conversionReviewVersions": ["v1"],
        })
    );
    // Without cert-manager, the CA comes from the values.
    let without = crd(&[
        ("certManager.enable", json!(false)),
        ("webhook.caBundle", json!("Q0E=")),
    ]);
    assert_eq!(
        without["metadata"]["annotations"],
        json!({"helm.sh/resource-policy": "keep"})
    );
    let client = &without["spec"]["conversion"]["webhook"]["clientConfig"];
    assert_eq!(client["caBundle"], "Q0E=");
    // Without the chart's webhooks nothing serves /convert: no conversion.
    let off = crd(&[("webhook.enable", json!(false)), ("crd.keep", json!(false))]);
    assert_eq!(off["spec"]["conversion"], Value::Null);
    assert_eq!(off["metadata"]["annotations"], Value::Null);
}

#[test]
fn create_api_keeps_the_charts_role_in_sync() {
    let (_tmp, dir) = reference_copy("database");
    opctl_ok(&dir, &["edit", "--helm"]);
    let values = std::fs::read_to_string(dir.join("dist/chart/values.yaml")).expect("values");
    let edited = values.replace("replicas: 1", "replicas: 1 # mine");
    std::fs::write(dir.join("dist/chart/values.yaml"), &edited).expect("edit values");
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
    let role = std::fs::read_to_string(dir.join("config/rbac/role.yaml")).expect("role");
    assert!(role.contains("deployments"), "{role}");
    assert_same_objects(
        render(&dir, "database", &[]),
        kustomize(&dir, str::to_owned),
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("dist/chart/values.yaml")).expect("values"),
        edited,
        "values.yaml is the user's"
    );
    // Turning the chart on again keeps the user's files too.
    opctl_ok(&dir, &["edit", "--helm"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("dist/chart/values.yaml")).expect("values"),
        edited
    );
}

/// `opctl manifests` with a stand-in for cargo: the CRD generator's output
/// is the project's current CRDs (building the project here would take
/// minutes; tests/generated_project.rs runs the real one).
fn manifests_with_current_crds(dir: &Path) {
    let mut crds = Vec::new();
    for (rel, text) in snapshot(&dir.join("config/crd/bases")) {
        let crd: Value = serde_saphyr::from_str(&String::from_utf8(text).expect("utf-8"))
            .unwrap_or_else(|err| panic!("{rel}: {err}"));
        crds.push(crd);
    }
    let json = dir.join("crds.json");
    std::fs::write(&json, serde_json::to_string(&crds).expect("json")).expect("write");
    let cargo = dir.join("fake-cargo");
    std::fs::write(&cargo, format!("#!/bin/sh\ncat '{}'\n", json.display())).expect("write");
    Command::new("chmod")
        .arg("+x")
        .arg(&cargo)
        .status()
        .expect("chmod");
    let output = Command::new(common::opctl_bin())
        .arg("manifests")
        .env("CARGO", &cargo)
        .current_dir(dir)
        .output()
        .expect("opctl runs");
    assert!(
        output.status.success(),
        "opctl manifests: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::remove_file(json).expect("rm");
    std::fs::remove_file(cargo).expect("rm");
}

#[test]
fn opctl_manifests_rewrites_the_derived_templates_and_keeps_the_users_files() {
    let (_tmp, dir) = reference_copy("database");
    opctl_ok(&dir, &["edit", "--helm"]);
    let chart = dir.join("dist/chart");
    std::fs::write(chart.join("values.yaml"), "# mine\n").expect("edit values");
    std::fs::write(chart.join("Chart.yaml"), "# mine too\n").expect("edit Chart.yaml");
    let crd = chart.join("templates/crd/zalando.org_databases.yaml");
    std::fs::remove_file(&crd).expect("rm");
    let controller = dir.join("src/controller/database.rs");
    let code = std::fs::read_to_string(&controller).expect("controller");
    let marker = "// +opctl:rbac:groups=core,resources=pods,verbs=list;watch;create;patch;delete\n";
    assert!(code.contains(marker));
    std::fs::write(
        &controller,
        code.replace(
            marker,
            &format!("{marker}// +opctl:rbac:groups=core,resources=configmaps,verbs=get\n"),
        ),
    )
    .expect("add a marker");

    manifests_with_current_crds(&dir);

    let role = std::fs::read_to_string(chart.join("templates/rbac/role.yaml")).expect("role");
    assert!(role.contains("configmaps"), "{role}");
    assert!(crd.is_file(), "the CRD template is written again");
    assert_eq!(
        std::fs::read_to_string(chart.join("values.yaml")).expect("values"),
        "# mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(chart.join("Chart.yaml")).expect("chart"),
        "# mine too\n"
    );
    // With the chart's own files back, it makes what config/default makes.
    std::fs::remove_file(chart.join("values.yaml")).expect("rm");
    std::fs::remove_file(chart.join("Chart.yaml")).expect("rm");
    opctl_ok(&dir, &["edit", "--helm"]);
    assert_same_objects(
        render(&dir, "database", &[]),
        kustomize(&dir, str::to_owned),
    );
}

#[test]
fn opctl_upgrade_would_replace_the_charts_templates_and_keep_its_values() {
    let (_tmp, dir) = reference_copy("simple-deployment");
    opctl_ok(&dir, &["edit", "--helm"]);
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "scaffolded"]);
    let chart = dir.join("dist/chart");
    for file in ["values.yaml", "templates/manager/manager.yaml"] {
        let path = chart.join(file);
        let text = std::fs::read_to_string(&path).expect("chart file");
        std::fs::write(&path, format!("{text}# edited\n")).expect("edit");
    }
    git(&["commit", "-qam", "edited"]);
    let plan = opctl_ok(&dir, &["upgrade", "--dry-run"]).stdout;
    assert!(
        plan.contains("updated      dist/chart/templates/manager/manager.yaml"),
        "{plan}"
    );
    assert!(!plan.contains("values.yaml"), "{plan}");
}

#[test]
fn opctl_files_lists_the_chart_by_owner() {
    let (_tmp, dir) = reference_copy("sidecarset");
    opctl_ok(&dir, &["edit", "--helm"]);
    let listing = opctl_ok(&dir, &["files"]).stdout;
    for (owner, path) in [
        ("user", "dist/chart/Chart.yaml"),
        ("user", "dist/chart/values.yaml"),
        ("scaffold", "dist/chart/templates/_helpers.tpl"),
        ("scaffold", "dist/chart/templates/manager/manager.yaml"),
        ("scaffold", "dist/chart/templates/webhook/service.yaml"),
        (
            "generated",
            "dist/chart/templates/crd/apps.kruise.io_sidecarsets.yaml",
        ),
        ("generated", "dist/chart/templates/rbac/role.yaml"),
        ("generated", "dist/chart/templates/webhook/manifests.yaml"),
    ] {
        assert!(
            listing.contains(&format!("{owner}\t{path}\n")),
            "{owner} {path}:\n{listing}"
        );
    }
    // Every file of the chart is listed, and nothing listed is missing.
    let listed: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, p)| p))
        .filter(|p| p.starts_with("dist/chart/"))
        .collect();
    let on_disk: Vec<String> = snapshot(&dir.join("dist/chart"))
        .into_keys()
        .map(|p| format!("dist/chart/{p}"))
        .collect();
    assert_eq!(listed, on_disk);
}

#[test]
fn edit_outside_a_project_or_without_a_setting_fails_and_writes_nothing() {
    let (_tmp, dir) = project_dir("empty");
    let err = opctl_fails(&dir, &["edit", "--helm"]);
    assert!(err.contains("opctl init"), "{err}");
    assert!(snapshot(&dir).is_empty());

    let (_tmp, dir) = reference_copy("database");
    let before = snapshot(&dir);
    let err = opctl_fails(&dir, &["edit"]);
    assert!(err.contains("pass --helm"), "{err}");
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn a_damaged_config_file_is_named_and_nothing_is_written() {
    let (_tmp, dir) = reference_copy("database");
    std::fs::write(
        dir.join("config/rbac/role.yaml"),
        "kind: Pod\nmetadata: {name: x}\n",
    )
    .expect("damage");
    let before = snapshot(&dir);
    let err = opctl_fails(&dir, &["edit", "--helm"]);
    assert!(err.contains("config/rbac/role.yaml"), "{err}");
    assert_eq!(snapshot(&dir), before);
}

mod functions {
    //! The Helm functions of tests/helm behave as Helm's.

    use serde_json::json;

    use super::helm;

    fn run(template: &str, dot: serde_json::Value) -> String {
        helm::set_defines(r#"{{- define "greet" -}}hi {{ .who }}{{- end -}}"#);
        helm::execute(template, &dot).unwrap_or_else(|e| panic!("{template}: {e}"))
    }

    #[test]
    fn each_function_gives_helms_result() {
        let dot =
            json!({"who": "you", "list": {"b": 1, "a": [2, "x"]}, "empty": "", "n": "abcdef-"});
        assert_eq!(run(r#"{{ include "greet" . }}"#, dot.clone()), "hi you");
        assert_eq!(run(r#"{{ template "greet" . }}"#, dot.clone()), "hi you");
        assert_eq!(
            run("{{ include \"greet\" . | nindent 2 }}", dot.clone()),
            "\n  hi you"
        );
        assert_eq!(run("{{ \"a\\nb\" | indent 3 }}", dot.clone()), "   a\n   b");
        assert_eq!(run("{{ toYaml .list }}", dot.clone()), "a:\n- 2\n- x\nb: 1");
        assert_eq!(run("{{ .who | quote }}", dot.clone()), "\"you\"");
        assert_eq!(run("{{ .empty | quote }}", dot.clone()), "\"\"");
        assert_eq!(run("{{ default \"d\" .empty }}", dot.clone()), "d");
        assert_eq!(run("{{ default \"d\" .missing }}", dot.clone()), "d");
        assert_eq!(run("{{ default \"d\" .who }}", dot.clone()), "you");
        assert_eq!(run("{{ .n | trunc 3 }}", dot.clone()), "abc");
        assert_eq!(run("{{ .n | trunc 63 }}", dot.clone()), "abcdef-");
        assert_eq!(run("{{ .n | trunc -2 }}", dot.clone()), "f-");
        assert_eq!(run("{{ .n | trimSuffix \"-\" }}", dot.clone()), "abcdef");
        assert_eq!(run("{{ .who | trimSuffix \"-\" }}", dot), "you");
    }

    #[test]
    fn a_function_helm_charts_may_use_but_these_lack_fails() {
        helm::set_defines("");
        assert!(helm::execute("{{ \"a\" | upper }}", &json!({})).is_err());
        assert!(helm::execute("{{ include \"nowhere\" . }}", &json!({})).is_err());
    }
}
