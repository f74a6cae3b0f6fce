//! `apiregistration.k8s.io/v1` APIServices as kube-apiserver v1.32 keeps
//! them: a local, Available one for every served group version (built-in
//! ones at start, a CRD group's for as long as a CRD serves it), and for an
//! APIService that names a Service, the availability envtest can give it
//! (it proxies to no aggregated server).

use serde_json::{Value, json};

use crate::kubectl_support::Kubectl;
use crate::server;

fn get(k: &Kubectl, name: &str) -> Value {
    serde_json::from_str(&k.ok(&["get", "apiservice", name, "-o", "json"])).expect("JSON")
}

fn crd(group: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: probes.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: probes, singular: probe, kind: Probe, listKind: ProbeList}}
  versions:
  - {{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object}}}}}}
  - {{name: v1beta1, served: true, storage: false, schema: {{openAPIV3Schema: {{type: object}}}}}}
"#
    )
}

#[test]
fn every_served_group_version_has_a_local_available_apiservice() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let rows = k.table(&["get", "apiservices"]);
    assert_eq!(rows[0], ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
    for name in [
        "v1.",
        "v1.apps",
        "v1.certificates.k8s.io",
        "v1.flowcontrol.apiserver.k8s.io",
        "v2.autoscaling",
        "v1.autoscaling",
    ] {
        let row = rows
            .iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("{name}: {rows:?}"));
        assert_eq!(row[1..3], ["Local", "True"], "{rows:?}");
    }
    let apps = get(&k, "v1.apps");
    assert_eq!(
        apps["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    assert_eq!(
        apps["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    let available = &apps["status"]["conditions"][0];
    assert_eq!(
        (
            &available["type"],
            &available["status"],
            &available["reason"],
            &available["message"]
        ),
        (
            &json!("Available"),
            &json!("True"),
            &json!("Local"),
            &json!("Local APIServices are always available")
        )
    );

    // A CRD group gets its APIServices while a CRD serves it.
    let group = format!("{}.example.com", server::unique_name("agg"));
    k.ok_stdin(&["apply", "-f", "-"], &crd(&group));
    k.ok(&[
        "wait",
        "--for=condition=established",
        "--timeout=30s",
        &format!("crd/probes.{group}"),
    ]);
    let v1 = format!("v1.{group}");
    k.eventually(
        &["get", "apiservice", &v1],
        std::time::Duration::from_secs(10),
        |r| r.success(),
    );
    let custom = get(&k, &v1);
    assert_eq!(
        custom["spec"],
        json!({"group": group, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(
        custom["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    k.ok(&["get", "apiservice", &format!("v1beta1.{group}")]);
    k.ok(&["delete", "crd", &format!("probes.{group}")]);
    k.eventually(
        &["get", "apiservice", &v1],
        std::time::Duration::from_secs(10),
        |r| r.stderr.contains("NotFound"),
    );
}

#[test]
fn an_apiservice_backed_by_a_service_is_not_available() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let ns = server::unique_name("agg-svc");
    k.ok(&["create", "namespace", &ns]);
    let group = format!("{ns}.example.com");
    let name = format!("v1alpha1.{group}");
    let apiservice = json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": name},
        "spec": {"group": group, "version": "v1alpha1", "groupPriorityMinimum": 100, "versionPriority": 10,
            "insecureSkipTLSVerify": true, "service": {"namespace": ns, "name": "metrics"}},
    });
    k.ok_stdin(&["create", "-f", "-"], &apiservice.to_string());
    assert_eq!(get(&k, &name)["spec"]["service"]["port"], 443);
    k.eventually(
        &["get", "apiservice", &name, "--no-headers"],
        std::time::Duration::from_secs(10),
        |r| {
            r.stdout
                .contains(&format!("{ns}/metrics   False (ServiceNotFound)"))
        },
    );
    let missing = &get(&k, &name)["status"]["conditions"][0];
    assert_eq!(
        missing["message"],
        format!("service/metrics in \"{ns}\" is not present")
    );
    k.ok(&[
        "create",
        "service",
        "clusterip",
        "metrics",
        "-n",
        &ns,
        "--tcp=443:8443",
    ]);
    k.eventually(
        &["get", "apiservice", &name, "--no-headers"],
        std::time::Duration::from_secs(10),
        |r| r.stdout.contains("False (FailedDiscoveryCheck)"),
    );

    let bad = json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("v2.{group}")},
        "spec": {"group": group, "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 10},
    });
    let err = k.fails_stdin(&["create", "-f", "-"], &bad.to_string());
    assert!(
        err.contains(&format!("metadata.name: Invalid value: \"v2.{group}\": must be `spec.version+\".\"+spec.group`: \"v1.{group}\""))
            && err.contains("spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"),
        "{err}"
    );
    k.ok(&["delete", "apiservice", &name]);
}
