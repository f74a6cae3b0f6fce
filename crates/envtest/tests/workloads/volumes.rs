//! PersistentVolume binding: the default StorageClass and its simulated
//! provisioner, WaitForFirstConsumer, static volumes and reclaiming.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::{client, get_json, kubectl, namespace, wait_for_field};

const CLAIM_AND_POD: &str = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  containers: [{name: db, image: "postgres:17", volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"#;

fn annotation<'a>(obj: &'a Value, key: &str) -> &'a Value {
    &obj["metadata"]["annotations"][key]
}

#[tokio::test]
async fn claims_of_the_default_class_get_provisioned_volumes() {
    let client = client().await;
    let class = Api::<StorageClass>::all(client.clone())
        .get("standard")
        .await
        .expect("the default StorageClass");
    assert_eq!(class.provisioner, "envtest.opctl.dev/simulated");
    assert_eq!(
        class.metadata.annotations.unwrap_or_default()["storageclass.kubernetes.io/is-default-class"],
        "true"
    );

    let ns = namespace("pvc");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], CLAIM_AND_POD);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=jsonpath={.status.phase}=Bound",
        "pvc/data",
        "--timeout=60s",
    ]);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/db",
        "--timeout=60s",
    ]);
    let claim = get_json(&["get", "-n", &ns, "pvc", "data"]);
    assert_eq!(claim["spec"]["storageClassName"], "standard");
    assert_eq!(
        claim["status"],
        json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}}),
    );
    for (key, value) in [
        ("pv.kubernetes.io/bind-completed", "yes"),
        ("pv.kubernetes.io/bound-by-controller", "yes"),
        (
            "volume.kubernetes.io/storage-provisioner",
            "envtest.opctl.dev/simulated",
        ),
        (
            "volume.beta.kubernetes.io/storage-provisioner",
            "envtest.opctl.dev/simulated",
        ),
    ] {
        assert_eq!(annotation(&claim, key), value, "{key}: {claim}");
    }
    let uid = claim["metadata"]["uid"].as_str().expect("uid");
    let volume = claim["spec"]["volumeName"].as_str().expect("volumeName");
    assert_eq!(volume, format!("pvc-{uid}"));

    let pv = serde_json::to_value(
        Api::<PersistentVolume>::all(client.clone())
            .get(volume)
            .await
            .expect("the provisioned volume"),
    )
    .expect("json");
    assert_eq!(pv["status"]["phase"], "Bound");
    assert_eq!(pv["spec"]["claimRef"]["uid"], uid);
    assert_eq!(pv["spec"]["claimRef"]["name"], "data");
    assert_eq!(pv["spec"]["capacity"]["storage"], "2Gi");
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert_eq!(pv["spec"]["storageClassName"], "standard");
    assert!(pv["spec"]["hostPath"]["path"].is_string(), "{pv}");
    assert_eq!(
        annotation(&pv, "pv.kubernetes.io/provisioned-by"),
        "envtest.opctl.dev/simulated"
    );
    assert!(annotation(&pv, "pv.kubernetes.io/bound-by-controller").is_null());

    // The claim's volume goes with it (reclaim policy Delete).
    k.ok(&["delete", "-n", &ns, "pod", "db", "--timeout=60s"]);
    k.ok(&["delete", "-n", &ns, "pvc", "data", "--timeout=60s"]);
    k.eventually(&["get", "pv", volume], crate::common::WAIT, |r| {
        r.stderr.contains("NotFound")
    });
}

const LATE_CLASS: &str = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: late-binding}
provisioner: envtest.opctl.dev/simulated
volumeBindingMode: WaitForFirstConsumer
"#;

#[test]
fn wait_for_first_consumer_binds_on_the_pods_node() {
    let ns = namespace("wffc");
    let k = kubectl();
    k.ok_stdin(&["apply", "-f", "-"], LATE_CLASS);
    let claim = CLAIM_AND_POD.replace(
        "accessModes: [ReadWriteOnce]",
        "accessModes: [ReadWriteOnce]\n  storageClassName: late-binding",
    );
    let (claim_only, pod) = claim.split_once("---").expect("two documents");
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], claim_only);
    k.eventually(
        &[
            "get",
            "-n",
            &ns,
            "events",
            "--field-selector",
            "reason=WaitForFirstConsumer",
        ],
        crate::common::WAIT,
        |r| r.stdout.contains("waiting for first consumer"),
    );
    let waiting = get_json(&["get", "-n", &ns, "pvc", "data"]);
    assert_eq!(waiting["status"]["phase"], "Pending", "{waiting}");
    assert!(waiting["spec"]["volumeName"].is_null());

    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], pod);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/db",
        "--timeout=60s",
    ]);
    let claim = get_json(&["get", "-n", &ns, "pvc", "data"]);
    assert_eq!(claim["status"]["phase"], "Bound");
    let node = get_json(&["get", "-n", &ns, "pod", "db"])["spec"]["nodeName"].clone();
    assert_eq!(
        annotation(&claim, "volume.kubernetes.io/selected-node"),
        &node
    );
    let volume = claim["spec"]["volumeName"].as_str().expect("volumeName");
    let pv = get_json(&["get", "pv", volume]);
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
            [0],
        node,
        "{pv}"
    );
}

#[tokio::test]
async fn claims_bind_to_fitting_static_volumes() {
    let ns = namespace("static");
    let client = client().await;
    let suffix = ns.clone();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let pv: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": format!("manual-{suffix}"), "labels": {"disk": suffix}},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
            "storageClassName": "manual",
            "hostPath": {"path": "/mnt/data"},
        },
    }))
    .expect("PersistentVolume");
    volumes
        .create(&PostParams::default(), &pv)
        .await
        .expect("create the volume");
    let pv_name = format!("manual-{suffix}");
    wait_for_field("", ("pv", &pv_name), "{.status.phase}", |v| {
        v == "Available"
    });

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "static"},
        "spec": {
            "storageClassName": "manual",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "selector": {"matchLabels": {"disk": suffix}},
        },
    }))
    .expect("PersistentVolumeClaim");
    claims
        .create(&PostParams::default(), &claim)
        .await
        .expect("create the claim");
    wait_for_field(&ns, ("pvc", "static"), "{.status.phase}", |v| v == "Bound");
    let claim = get_json(&["get", "-n", &ns, "pvc", "static"]);
    assert_eq!(claim["spec"]["volumeName"], pv_name.as_str());
    // The claim reports the volume's capacity and modes, not its request.
    assert_eq!(claim["status"]["capacity"]["storage"], "5Gi");
    assert_eq!(
        claim["status"]["accessModes"],
        json!(["ReadWriteOnce", "ReadOnlyMany"])
    );
    let pv = get_json(&["get", "pv", &pv_name]);
    assert_eq!(pv["status"]["phase"], "Bound");
    assert_eq!(
        annotation(&pv, "pv.kubernetes.io/bound-by-controller"),
        "yes"
    );
    assert_eq!(pv["spec"]["claimRef"]["namespace"], ns.as_str());

    // A manually made volume is retained: Released once its claim goes.
    kubectl().ok(&["delete", "-n", &ns, "pvc", "static", "--timeout=60s"]);
    wait_for_field("", ("pv", &pv_name), "{.status.phase}", |v| v == "Released");
}
