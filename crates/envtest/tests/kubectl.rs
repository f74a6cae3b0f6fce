//! The real kubectl (v1.32, on PATH) against envtest: what an operator author
//! does by hand or in scripts must work as on a real cluster.
//!
//! All tests share one server; each works in its own namespace.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use support::http::{Http, HttpRequest};
use support::kubectl::Kubectl;

const CRD_NAME: &str = "gadgets.kubectl.opctl.test";

/// A namespaced CRD with a status subresource, printer columns and a schema
/// with an enum, a required field, a default and a bound.
const GADGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.kubectl.opctl.test
spec:
  group: kubectl.opctl.test
  scope: Namespaced
  names:
    kind: Gadget
    plural: gadgets
    singular: gadget
    shortNames: [gd]
    categories: [opctl]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Color
      type: string
      jsonPath: .spec.color
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Ready
      type: boolean
      jsonPath: .status.ready
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color]
            properties:
              color:
                type: string
                enum: [red, blue]
              size:
                type: integer
                default: 3
                minimum: 1
          status:
            type: object
            properties:
              ready:
                type: boolean
"#;

fn kubectl() -> Kubectl {
    Kubectl::new(&server::shared().kubeconfig)
}

/// A fresh namespace for one test, created over plain HTTP so that a
/// kubectl problem with namespaces shows in the namespace test only.
fn namespace(prefix: &str) -> (Kubectl, String) {
    let k = kubectl();
    let ns = server::unique_name(prefix);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let body =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let request = HttpRequest::new("POST", "/api/v1/namespaces").json(&body);
    let response = runtime
        .block_on(Http::new(&server::shared().base_url).send(&request, Duration::from_secs(10)))
        .unwrap_or_else(|e| panic!("creating namespace {ns}: {e}"));
    assert_eq!(
        response.status,
        201,
        "creating namespace {ns}: {}",
        response.text()
    );
    (k, ns)
}

/// The Gadget CRD, applied once per test binary and Established.
fn gadget_crd(k: &Kubectl) {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let out = k.ok_stdin(&["apply", "-f", "-"], GADGET_CRD);
        assert!(
            out.contains(
                "customresourcedefinition.apiextensions.k8s.io/gadgets.kubectl.opctl.test created"
            ),
            "{out}"
        );
        let out = k.ok(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=30s",
            &format!("crd/{CRD_NAME}"),
        ]);
        assert!(out.contains("condition met"), "{out}");
    });
}

fn gadget(name: &str, ns: &str, color: &str) -> String {
    format!(
        "apiVersion: kubectl.opctl.test/v1\nkind: Gadget\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  color: {color}\n"
    )
}

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("kubectl printed no JSON ({e}):\n{out}"))
}

#[test]
fn namespaces_are_created_listed_and_deleted() {
    let k = kubectl();
    let ns = server::unique_name("kc-ns");
    let out = k.ok(&["create", "namespace", &ns]);
    assert_eq!(out.trim(), format!("namespace/{ns} created"));
    let object = json(&k.ok(&["get", "namespace", &ns, "-o", "json"]));
    assert_eq!(object["status"]["phase"], "Active", "{object}");
    assert_eq!(
        object["metadata"]["labels"]["kubernetes.io/metadata.name"],
        ns.as_str()
    );
    let list = k.ok(&["get", "namespaces"]);
    for expected in ["default", "kube-system", "kube-public", ns.as_str()] {
        assert!(
            list.lines()
                .any(|l| l.split_whitespace().next() == Some(expected)),
            "`kubectl get namespaces` lacks {expected}:\n{list}"
        );
    }
    let out = k.ok(&["delete", "namespace", &ns, "--timeout=30s"]);
    assert!(
        out.contains(&format!("namespace \"{ns}\" deleted")),
        "{out}"
    );
    let err = k.fails(&["get", "namespace", &ns]);
    assert!(
        err.contains(&format!("namespaces \"{ns}\" not found")),
        "{err}"
    );
}

#[test]
fn a_crd_becomes_established_and_is_discovered() {
    let k = kubectl();
    gadget_crd(&k);
    let out = k.ok(&["api-resources", "--api-group=kubectl.opctl.test"]);
    let row = out
        .lines()
        .find(|l| l.starts_with("gadgets"))
        .unwrap_or_else(|| panic!("api-resources lacks gadgets:\n{out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["gadgets", "gd", "kubectl.opctl.test/v1", "true", "Gadget"],
        "{out}"
    );
    let crd = json(&k.ok(&["get", "crd", CRD_NAME, "-o", "json"]));
    let conditions = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for wanted in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|c| c["type"] == wanted && c["status"] == "True"),
            "condition {wanted} not True: {conditions:?}"
        );
    }
}

#[test]
fn apply_get_patch_label_and_delete_a_configmap() {
    let (k, ns) = namespace("kc-crud");
    let cm = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\n  namespace: {ns}\ndata:\n  a: \"{value}\"\n"
        )
    };
    assert_eq!(
        k.ok_stdin(&["apply", "-f", "-"], &cm("1")).trim(),
        "configmap/cm1 created"
    );
    assert_eq!(
        k.ok_stdin(&["apply", "-f", "-"], &cm("1")).trim(),
        "configmap/cm1 unchanged"
    );
    assert_eq!(
        k.ok_stdin(&["apply", "-f", "-"], &cm("2")).trim(),
        "configmap/cm1 configured"
    );
    assert_eq!(
        k.ok(&["get", "cm", "cm1", "-n", &ns, "-o", "jsonpath={.data.a}"]),
        "2"
    );

    for (kind, patch, key, value) in [
        ("strategic", r#"{"data":{"b":"s"}}"#, "b", "s"),
        ("merge", r#"{"data":{"c":"m"}}"#, "c", "m"),
        (
            "json",
            r#"[{"op":"add","path":"/data/d","value":"j"}]"#,
            "d",
            "j",
        ),
    ] {
        let out = k.ok(&["patch", "cm", "cm1", "-n", &ns, "--type", kind, "-p", patch]);
        assert_eq!(out.trim(), "configmap/cm1 patched", "--type {kind}");
        let got = k.ok(&[
            "get",
            "cm",
            "cm1",
            "-n",
            &ns,
            "-o",
            &format!("jsonpath={{.data.{key}}}"),
        ]);
        assert_eq!(got, value, "--type {kind} did not set data.{key}");
    }
    let err = k.fails(&[
        "patch",
        "cm",
        "cm1",
        "-n",
        &ns,
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/a","value":"nope"}]"#,
    ]);
    // kube-apiserver answers a failed `test` with a 422 Invalid Status whose
    // details are empty; kubectl prints that as a generic invalid request.
    assert_eq!(
        err.trim(),
        "The request is invalid: the server rejected our request due to an error in our request"
    );
    assert_eq!(
        k.ok(&["get", "cm", "cm1", "-n", &ns, "-o", "jsonpath={.data.a}"]),
        "2",
        "a failed test changes nothing"
    );

    assert_eq!(
        k.ok(&["label", "cm", "cm1", "-n", &ns, "tier=web"]).trim(),
        "configmap/cm1 labeled"
    );
    let names = k.ok(&["get", "cm", "-n", &ns, "-l", "tier=web", "-o", "name"]);
    assert_eq!(names.trim(), "configmap/cm1");
    assert_eq!(
        // Every namespace also holds the root-CA publisher's ConfigMap.
        k.ok(&[
            "get",
            "cm",
            "-n",
            &ns,
            "-l",
            "tier!=web",
            "--field-selector",
            "metadata.name!=kube-root-ca.crt",
            "-o",
            "name"
        ])
        .trim(),
        ""
    );
    assert_eq!(
        k.ok(&["label", "cm", "cm1", "-n", &ns, "tier-"]).trim(),
        "configmap/cm1 unlabeled"
    );
    assert_eq!(
        k.ok(&["get", "cm", "-n", &ns, "-l", "tier", "-o", "name"])
            .trim(),
        ""
    );

    assert_eq!(
        k.ok(&["delete", "cm", "cm1", "-n", &ns]).trim(),
        "configmap \"cm1\" deleted"
    );
    let err = k.fails(&["get", "cm", "cm1", "-n", &ns]);
    assert!(err.contains("configmaps \"cm1\" not found"), "{err}");
}

#[test]
fn strategic_merge_patch_merges_deployment_containers_by_name() {
    let (k, ns) = namespace("kc-smp");
    let deployment = format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {ns}
spec:
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1
      - name: sidecar
        image: busybox:1
"#
    );
    k.ok_stdin(&["apply", "-f", "-"], &deployment);
    k.ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        &ns,
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}"#,
    ]);
    let images = k.ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        &ns,
        "-o",
        "jsonpath={.spec.template.spec.containers[*].image}",
    ]);
    assert_eq!(
        images, "nginx:2 busybox:1",
        "strategic merge must merge containers by name"
    );
    k.ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        &ns,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"only","image":"alpine"}]}}}}"#,
    ]);
    let names = k.ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        &ns,
        "-o",
        "jsonpath={.spec.template.spec.containers[*].name}",
    ]);
    assert_eq!(names, "only", "a JSON merge patch replaces the list");
}

#[test]
fn custom_resources_take_merge_and_json_patches_but_not_strategic_ones() {
    let (k, ns) = namespace("kc-crpatch");
    gadget_crd(&k);
    k.ok_stdin(&["apply", "-f", "-"], &gadget("g1", &ns, "red"));
    // kubectl's default patch type is strategic: a custom resource refuses it.
    let err = k.fails(&[
        "patch",
        "gadget",
        "g1",
        "-n",
        &ns,
        "-p",
        r#"{"spec":{"size":4}}"#,
    ]);
    // kubectl names the patch type and the kind around the server's 415 message.
    assert_eq!(
        err.trim(),
        "error: application/strategic-merge-patch+json is not supported by \
         kubectl.opctl.test/v1, Kind=Gadget: the body of the request was in an unknown format - \
         accepted media types include: application/json-patch+json, \
         application/merge-patch+json, application/apply-patch+yaml"
    );
    k.ok(&[
        "patch",
        "gadget",
        "g1",
        "-n",
        &ns,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"size":4}}"#,
    ]);
    k.ok(&[
        "patch",
        "gd",
        "g1",
        "-n",
        &ns,
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/color","value":"blue"}]"#,
    ]);
    let spec = json(&k.ok(&["get", "gadget", "g1", "-n", &ns, "-o", "jsonpath={.spec}"]));
    assert_eq!(spec, serde_json::json!({"color": "blue", "size": 4}));
    // The status subresource: a main-resource patch cannot set status.
    k.ok(&[
        "patch",
        "gadget",
        "g1",
        "-n",
        &ns,
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true}}"#,
    ]);
    assert_eq!(
        k.ok(&[
            "get",
            "gadget",
            "g1",
            "-n",
            &ns,
            "-o",
            "jsonpath={.status.ready}"
        ]),
        ""
    );
    k.ok(&[
        "patch",
        "gadget",
        "g1",
        "-n",
        &ns,
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true}}"#,
    ]);
    let out = k.ok(&[
        "wait",
        "gadget/g1",
        "-n",
        &ns,
        "--for",
        "jsonpath={.status.ready}=true",
        "--timeout=10s",
    ]);
    assert!(out.contains("condition met"), "{out}");
    let generation = k.ok(&[
        "get",
        "gadget",
        "g1",
        "-n",
        &ns,
        "-o",
        "jsonpath={.metadata.generation}",
    ]);
    assert_eq!(
        generation, "3",
        "two spec changes bump generation to 3; status changes do not"
    );
}

#[test]
fn server_side_apply_reports_conflicts_and_forces_them() {
    let (k, ns) = namespace("kc-ssa");
    let cm = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: {ns}\ndata:\n  a: \"{value}\"\n"
        )
    };
    let out = k.ok_stdin(&["apply", "--server-side", "-f", "-"], &cm("1"));
    assert_eq!(out.trim(), "configmap/ssa serverside-applied");
    let err = k.fails_stdin(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &cm("2"),
    );
    assert!(
        err.contains("conflict with \"kubectl\"") && err.contains(".data.a"),
        "{err}"
    );
    assert_eq!(
        k.ok(&["get", "cm", "ssa", "-n", &ns, "-o", "jsonpath={.data.a}"]),
        "1"
    );
    let out = k.ok_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &cm("2"),
    );
    assert_eq!(out.trim(), "configmap/ssa serverside-applied");
    let object = json(&k.ok(&[
        "get",
        "cm",
        "ssa",
        "-n",
        &ns,
        "-o",
        "json",
        "--show-managed-fields",
    ]));
    assert_eq!(object["data"]["a"], "2");
    let managers: Vec<&str> = object["metadata"]["managedFields"]
        .as_array()
        .map(|m| m.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    assert!(managers.contains(&"other"), "managedFields: {managers:?}");
    // A field applied by nobody any more is removed.
    let out = k.ok_stdin(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: {ns}\ndata:\n  b: \"x\"\n"),
    );
    assert_eq!(out.trim(), "configmap/ssa serverside-applied");
    let data = json(&k.ok(&["get", "cm", "ssa", "-n", &ns, "-o", "jsonpath={.data}"]));
    assert_eq!(
        data,
        serde_json::json!({"b": "x"}),
        "data.a was owned by `other` alone and is no longer applied"
    );
}

#[test]
fn get_watch_prints_events_as_they_happen() {
    let (k, ns) = namespace("kc-watch");
    let mut watch = k.spawn(&[
        "get",
        "configmaps",
        "-n",
        &ns,
        "-w",
        "--output-watch-events",
    ]);
    // kubectl prints nothing until the first event; give it time to connect.
    std::thread::sleep(Duration::from_millis(700));
    k.ok(&["create", "configmap", "w1", "-n", &ns, "--from-literal=a=1"]);
    let lines = watch.read_until(Duration::from_secs(20), |l| l.contains("w1"));
    let added = lines.last().cloned().unwrap_or_default();
    assert!(added.starts_with("ADDED"), "first event for w1: {lines:?}");
    k.ok(&[
        "patch",
        "cm",
        "w1",
        "-n",
        &ns,
        "--type",
        "merge",
        "-p",
        r#"{"data":{"b":"2"}}"#,
    ]);
    let lines = watch.read_until(Duration::from_secs(20), |l| l.contains("w1"));
    let modified: Vec<&str> = lines
        .last()
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(modified.first().copied(), Some("MODIFIED"), "{lines:?}");
    assert_eq!(
        modified.get(2).copied(),
        Some("2"),
        "DATA column after the patch: {lines:?}"
    );
    k.ok(&["delete", "cm", "w1", "-n", &ns]);
    let lines = watch.read_until(Duration::from_secs(20), |l| l.contains("w1"));
    assert!(
        lines.last().is_some_and(|l| l.starts_with("DELETED")),
        "{lines:?}"
    );
}

#[test]
fn get_prints_the_crd_printer_columns() {
    let (k, ns) = namespace("kc-table");
    gadget_crd(&k);
    k.ok_stdin(&["apply", "-f", "-"], &gadget("g1", &ns, "red"));
    k.ok(&[
        "patch",
        "gadget",
        "g1",
        "-n",
        &ns,
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true}}"#,
    ]);
    let out = k.ok(&["get", "gadgets", "-n", &ns]);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines.first().cloned().unwrap_or_default(),
        ["NAME", "COLOR", "SIZE", "READY", "AGE"],
        "{out}"
    );
    let row = lines.get(1).cloned().unwrap_or_default();
    assert_eq!(row.get(..4), Some(&["g1", "red", "3", "true"][..]), "{out}");
    // Short name and category resolve too.
    assert!(k.ok(&["get", "gd", "-n", &ns]).contains("g1"));
    assert!(k.ok(&["get", "opctl", "-n", &ns]).contains("g1"));
    // Built-in tables: ConfigMaps show their data count.
    k.ok(&[
        "create",
        "configmap",
        "two",
        "-n",
        &ns,
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]);
    let out = k.ok(&["get", "configmaps", "two", "-n", &ns]);
    let cells: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        cells.first().cloned().unwrap_or_default(),
        ["NAME", "DATA", "AGE"],
        "{out}"
    );
    assert_eq!(
        cells.get(1).and_then(|r| r.get(..2)),
        Some(&["two", "2"][..]),
        "{out}"
    );
}

#[test]
fn describe_shows_custom_and_builtin_objects() {
    let (k, ns) = namespace("kc-describe");
    gadget_crd(&k);
    k.ok_stdin(&["apply", "-f", "-"], &gadget("g1", &ns, "blue"));
    let out = k.ok(&["describe", "gadget", "g1", "-n", &ns]);
    for expected in [
        "Name:",
        "g1",
        "Namespace:",
        ns.as_str(),
        "API Version:  kubectl.opctl.test/v1",
        "Kind:         Gadget",
        "Spec:",
        "Color:  blue",
        "Size:   3",
    ] {
        assert!(
            out.contains(expected),
            "describe lacks {expected:?}:\n{out}"
        );
    }
    k.ok(&[
        "create",
        "configmap",
        "cfg",
        "-n",
        &ns,
        "--from-literal=key=value",
    ]);
    let out = k.ok(&["describe", "configmap", "cfg", "-n", &ns]);
    for expected in ["Name:", "cfg", "Data", "====", "key:", "value", "Events:"] {
        assert!(
            out.contains(expected),
            "describe lacks {expected:?}:\n{out}"
        );
    }
}

#[test]
fn an_owned_configmap_is_garbage_collected_after_its_owner() {
    let (k, ns) = namespace("kc-gc");
    gadget_crd(&k);
    k.ok_stdin(&["apply", "-f", "-"], &gadget("owner", &ns, "red"));
    let uid = k.ok(&[
        "get",
        "gadget",
        "owner",
        "-n",
        &ns,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert!(!uid.is_empty());
    let dependent = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  ownerReferences:\n  - apiVersion: kubectl.opctl.test/v1\n    kind: Gadget\n    name: owner\n    uid: {uid}\n    controller: true\n    blockOwnerDeletion: true\ndata:\n  a: \"1\"\n"
        )
    };
    k.ok_stdin(&["apply", "-f", "-"], &dependent("child"));
    k.ok(&["delete", "gadget", "owner", "-n", &ns]);
    k.eventually(
        &["get", "cm", "child", "-n", &ns],
        Duration::from_secs(20),
        |r| !r.success() && r.stderr.contains("not found"),
    );

    // Orphan: the dependent stays and loses its ownerReference.
    k.ok_stdin(&["apply", "-f", "-"], &gadget("owner2", &ns, "red"));
    let uid2 = k.ok(&[
        "get",
        "gadget",
        "owner2",
        "-n",
        &ns,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    k.ok_stdin(
        &["apply", "-f", "-"],
        &dependent("kept")
            .replace("name: owner\n", "name: owner2\n")
            .replace(&uid, &uid2),
    );
    k.ok(&["delete", "gadget", "owner2", "-n", &ns, "--cascade=orphan"]);
    k.eventually(
        &[
            "get",
            "cm",
            "kept",
            "-n",
            &ns,
            "-o",
            "jsonpath={.metadata.ownerReferences}",
        ],
        Duration::from_secs(20),
        |r| r.success() && r.stdout.trim().is_empty(),
    );
}

#[test]
fn a_finalizer_holds_deletion_until_it_is_removed() {
    let (k, ns) = namespace("kc-fin");
    gadget_crd(&k);
    let held = gadget("held", &ns, "red").replace(
        "  namespace:",
        "  finalizers: [kubectl.opctl.test/hold]\n  namespace:",
    );
    k.ok_stdin(&["apply", "-f", "-"], &held);
    // kubectl delete waits for the object to be gone; the finalizer keeps it.
    let err = k.fails(&["delete", "gadget", "held", "-n", &ns, "--timeout=2s"]);
    assert!(err.contains("timed out"), "{err}");
    let stamp = k.ok(&[
        "get",
        "gadget",
        "held",
        "-n",
        &ns,
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert!(
        !stamp.is_empty(),
        "a held object must carry a deletionTimestamp"
    );
    let wait = k.spawn(&[
        "wait",
        "--for=delete",
        "gadget/held",
        "-n",
        &ns,
        "--timeout=30s",
    ]);
    std::thread::sleep(Duration::from_millis(500));
    k.ok(&[
        "patch",
        "gadget",
        "held",
        "-n",
        &ns,
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let run = wait.finish(Duration::from_secs(40));
    assert!(run.success(), "kubectl wait --for=delete: {run:?}");
    let err = k.fails(&["get", "gadget", "held", "-n", &ns]);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn invalid_custom_resources_are_rejected_with_the_servers_message() {
    let (k, ns) = namespace("kc-invalid");
    gadget_crd(&k);
    let err = k.fails_stdin(&["apply", "-f", "-"], &gadget("bad", &ns, "green"));
    assert!(
        err.contains(r#"The Gadget "bad" is invalid: spec.color: Unsupported value: "green": supported values: "red", "blue""#),
        "{err}"
    );
    let no_color = format!(
        "apiVersion: kubectl.opctl.test/v1\nkind: Gadget\nmetadata:\n  name: bad\n  namespace: {ns}\nspec:\n  size: 2\n"
    );
    let err = k.fails_stdin(&["apply", "-f", "-"], &no_color);
    assert!(err.contains("spec.color: Required value"), "{err}");
    let small = gadget("bad", &ns, "red").replace("color: red", "color: red\n  size: 0");
    let err = k.fails_stdin(&["create", "-f", "-"], &small);
    assert!(
        err.contains(
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"
        ),
        "{err}"
    );
    let err = k.fails(&["get", "gadget", "bad", "-n", &ns]);
    assert!(
        err.contains("not found"),
        "nothing invalid may be stored: {err}"
    );
}

#[test]
fn get_all_lists_the_workload_and_service_kinds() {
    let (k, ns) = namespace("kc-all");
    k.ok(&["create", "deployment", "web", "-n", &ns, "--image=nginx"]);
    k.ok(&[
        "create",
        "service",
        "clusterip",
        "web",
        "-n",
        &ns,
        "--tcp=80:8080",
    ]);
    k.ok(&["create", "job", "once", "-n", &ns, "--image=busybox"]);
    let out = k.ok(&["get", "all", "-n", &ns]);
    for expected in ["service/web", "deployment.apps/web", "job.batch/once"] {
        assert!(
            out.contains(expected),
            "`kubectl get all` lacks {expected}:\n{out}"
        );
    }
    let ip = k.ok(&[
        "get",
        "service",
        "web",
        "-n",
        &ns,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    assert!(
        ip.parse::<std::net::Ipv4Addr>().is_ok(),
        "clusterIP allocated: {ip:?}"
    );
}

/// A kind whose CRD is not installed (here next to one that is, as in a
/// kustomization with cert-manager resources): kubectl validates it against
/// `/openapi/v2`, then reports the missing kind as against kube-apiserver,
/// and still applies the rest.
#[test]
fn a_kind_whose_crd_is_missing_is_reported_and_the_rest_applied() {
    let (k, ns) = namespace("kc-missing-kind");
    let docs = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {ns}\ndata:\n  a: b\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: serving-cert\n  namespace: {ns}\nspec:\n  secretName: tls\n"
    );
    let err = k.fails_stdin(&["apply", "-f", "-"], &docs);
    assert!(
        err.contains(r#"no matches for kind "Certificate" in version "cert-manager.io/v1""#)
            && err.contains("ensure CRDs are installed first"),
        "{err}"
    );
    let data = k.ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        &ns,
        "-o",
        "jsonpath={.data.a}",
    ]);
    assert_eq!(data, "b");
}

/// `kubectl auth can-i` and `--as`: the administrator may do anything; a
/// ServiceAccount only what its Role grants, in the Role's namespace, and
/// an impersonated request it may not make is refused as kube-apiserver
/// refuses it.
#[test]
fn auth_can_i_and_impersonation_follow_rbac() {
    let (k, ns) = namespace("kc-rbac");
    let bot = format!("system:serviceaccount:{ns}:bot");
    let as_bot = format!("--as={bot}");
    let can_i = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let run = k.run(&all);
        (run.status, run.stdout.trim().to_string())
    };
    assert_eq!(can_i(&["create", "pods"]), (Some(0), "yes".into()));
    assert_eq!(
        can_i(&["list", "pods", "-n", &ns, &as_bot]),
        (Some(1), "no".into())
    );

    k.ok(&[
        "create",
        "role",
        "pod-reader",
        "--verb=get,list,watch",
        "--resource=pods",
        "-n",
        &ns,
    ]);
    k.ok(&[
        "create",
        "rolebinding",
        "bot-reads",
        "--role=pod-reader",
        &format!("--serviceaccount={ns}:bot"),
        "-n",
        &ns,
    ]);
    assert_eq!(
        can_i(&["list", "pods", "-n", &ns, &as_bot]),
        (Some(0), "yes".into())
    );
    assert_eq!(
        can_i(&["delete", "pods", "-n", &ns, &as_bot]),
        (Some(1), "no".into())
    );
    assert_eq!(
        can_i(&["list", "pods", "-n", "default", &as_bot]),
        (Some(1), "no".into())
    );
    assert_eq!(
        can_i(&["get", "pods", "--subresource=log", "-n", &ns, &as_bot]),
        (Some(1), "no".into())
    );
    let rules = k.ok(&["auth", "can-i", "--list", "-n", &ns, &as_bot]);
    assert!(
        rules
            .lines()
            .any(|l| l.starts_with("pods ") && l.contains("[get list watch]")),
        "{rules}"
    );

    // Requests made as the account are held to the same rules.
    k.ok(&["get", "pods", "-n", &ns, &as_bot]);
    let err = k.fails(&[
        "create",
        "configmap",
        "x",
        "--from-literal=a=b",
        "-n",
        &ns,
        &as_bot,
    ]);
    assert!(
        err.contains(&format!(
            r#"configmaps is forbidden: User "{bot}" cannot create resource "configmaps" in API group "" in the namespace "{ns}""#
        )),
        "{err}"
    );
    let err = k.fails(&["get", "pods", "-A", &as_bot]);
    assert!(err.contains("at the cluster scope"), "{err}");

    let whoami = k.ok(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
        &as_bot,
    ]);
    assert_eq!(whoami, bot);
}

/// `kubectl explain` reads the schemas of `/openapi/v3`: k8s-openapi's for
/// built-in kinds, the CRD's `openAPIV3Schema` for custom resources.
#[test]
fn explain_shows_builtin_and_custom_schemas() {
    let k = kubectl();
    gadget_crd(&k);
    let out = k.ok(&["explain", "deployment.spec.replicas"]);
    for expected in [
        "GROUP:      apps",
        "KIND:       Deployment",
        "VERSION:    v1",
        "FIELD: replicas <integer>",
        "Number of desired pods.",
    ] {
        assert!(out.contains(expected), "{expected:?} missing from\n{out}");
    }
    let out = k.ok(&["explain", "pods.spec.containers.image"]);
    assert!(out.contains("FIELD: image <string>"), "{out}");
    let out = k.ok(&["explain", "gadgets.spec"]);
    for expected in [
        "GROUP:      kubectl.opctl.test",
        "KIND:       Gadget",
        "FIELD: spec <Object>",
        "color\t<string> -required-",
        "enum: red, blue",
        "size\t<integer>",
    ] {
        assert!(out.contains(expected), "{expected:?} missing from\n{out}");
    }
    let out = k.ok(&["explain", "gadgets"]);
    assert!(out.contains("metadata\t<ObjectMeta>"), "{out}");
    let err = k.fails(&["explain", "gadgets.spec.nosuchfield"]);
    assert!(
        err.contains("field \"nosuchfield\" does not exist"),
        "{err}"
    );
}

/// `kubectl get jobs` prints v1.32's columns, STATUS among them, from the
/// Job's conditions; a Namespace's phase cannot be written Terminating while
/// it is not being deleted.
#[test]
fn get_jobs_shows_their_status_and_a_namespace_phase_follows_its_deletion() {
    let (k, ns) = namespace("jobs");
    k.ok_stdin(
        &["apply", "-n", &ns, "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}"#,
    );
    let table = k.ok(&["get", "jobs", "-n", &ns]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        "{table}"
    );
    let row: Vec<&str> = lines.next().expect("a row").split_whitespace().collect();
    assert_eq!(&row[..3], ["once", "Running", "0/1"], "{table}");
    // A Job being deleted (held by a finalizer here) is Terminating.
    k.ok(&[
        "patch",
        "job",
        "once",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"metadata": {"finalizers": ["example.com/hold"]}}"#,
    ]);
    k.ok(&["delete", "job", "once", "-n", &ns, "--wait=false"]);
    let table = k.ok(&["get", "jobs", "-n", &ns, "--no-headers"]);
    let row: Vec<&str> = table.split_whitespace().collect();
    assert_eq!(&row[..3], ["once", "Terminating", "0/1"], "{table}");
    k.ok(&[
        "patch",
        "job",
        "once",
        "-n",
        &ns,
        "--type=json",
        "-p",
        r#"[{"op": "remove", "path": "/metadata/finalizers"}]"#,
    ]);

    let err = k.fails(&[
        "patch",
        "namespace",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status": {"phase": "Terminating"}}"#,
    ]);
    assert!(
        err.contains(&format!(
            "The Namespace \"{ns}\" is invalid: status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
        )),
        "{err}"
    );
    let phase = k.ok(&["get", "namespace", &ns, "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Active");
}
