//! `kubectl get` of the objects the simulation writes, with the columns
//! kube-apiserver v1.32's printers give them: PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses and EndpointSlices.

use crate::common::{get_json, kubectl, namespace};

const OBJECTS: &str = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: waiting}
spec:
  storageClassName: missing
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: web, image: "nginx:1.27", ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: nobody}
  ports: [{port: 80}]
"#;

/// The header of a `kubectl get` output, with single spaces between cells.
fn header(rows: &[Vec<String>]) -> String {
    rows[0].join(" ")
}

/// The row whose first cell is `name`, without its last cell (the age).
fn row_of(rows: &[Vec<String>], name: &str) -> Vec<String> {
    let row = rows
        .iter()
        .find(|r| r.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name}: {rows:?}"));
    row[..row.len() - 1].to_vec()
}

#[test]
fn kubectl_get_prints_claims_volumes_classes_and_slices_as_kube_apiserver_does() {
    let ns = namespace("tables");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], OBJECTS);
    for (what, condition) in [
        ("pvc/data", "--for=jsonpath={.status.phase}=Bound"),
        ("pod/web", "--for=condition=Ready"),
    ] {
        k.ok(&["wait", "-n", &ns, condition, what, "--timeout=60s"]);
    }
    let volume = get_json(&["get", "-n", &ns, "pvc", "data"])["spec"]["volumeName"]
        .as_str()
        .expect("a volume")
        .to_string();

    let claims = k.table(&["get", "-n", &ns, "pvc"]);
    assert_eq!(
        header(&claims),
        "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE"
    );
    assert_eq!(
        row_of(&claims, "data"),
        [
            "data", "Bound", &volume, "2Gi", "RWO", "standard", "<unset>"
        ]
    );
    // Volume, capacity and modes are empty until a volume is bound.
    assert_eq!(
        row_of(&claims, "waiting"),
        ["waiting", "Pending", "missing", "<unset>"]
    );
    let wide = k.table(&["get", "-n", &ns, "pvc", "data", "-o", "wide"]);
    assert_eq!(
        header(&wide),
        "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE VOLUMEMODE"
    );
    assert_eq!(wide[1].last().map(String::as_str), Some("Filesystem"));

    let volumes = k.table(&["get", "pv", &volume, "-o", "wide"]);
    assert_eq!(
        header(&volumes),
        "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE VOLUMEMODE"
    );
    let claim_ref = format!("{ns}/data");
    // REASON is empty, so the row has one cell fewer than the header; AGE is left out.
    let mut row = volumes[1].clone();
    row.remove(8);
    assert_eq!(
        row,
        [
            volume.as_str(),
            "2Gi",
            "RWO",
            "Delete",
            "Bound",
            &claim_ref,
            "standard",
            "<unset>",
            "Filesystem"
        ]
    );

    let classes = k.table(&["get", "storageclass", "standard"]);
    assert_eq!(
        header(&classes),
        "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE"
    );
    assert_eq!(
        row_of(&classes, "standard"),
        [
            "standard",
            "(default)",
            "envtest.opctl.dev/simulated",
            "Delete",
            "Immediate",
            "false"
        ]
    );

    let pod_ip = get_json(&["get", "-n", &ns, "pod", "web"])["status"]["podIP"]
        .as_str()
        .expect("a Pod IP")
        .to_string();
    let slices_of = |service: &str| {
        k.eventually(
            &[
                "get",
                "-n",
                &ns,
                "endpointslices",
                "-l",
                &format!("kubernetes.io/service-name={service}"),
            ],
            crate::common::WAIT,
            |r| r.stdout.lines().count() == 2 && (service != "web" || r.stdout.contains(&pod_ip)),
        );
        k.table(&[
            "get",
            "-n",
            &ns,
            "endpointslices",
            "-l",
            &format!("kubernetes.io/service-name={service}"),
        ])
    };
    let slices = slices_of("web");
    assert_eq!(header(&slices), "NAME ADDRESSTYPE PORTS ENDPOINTS AGE");
    let name = slices[1][0].clone();
    assert!(name.starts_with("web-"), "{name}");
    assert_eq!(
        row_of(&slices, &name),
        [name.as_str(), "IPv4", "8080", &pod_ip]
    );
    // A Service selecting nothing keeps a slice without ports or endpoints.
    let empty = slices_of("nobody");
    let name = empty[1][0].clone();
    assert_eq!(
        row_of(&empty, &name),
        [name.as_str(), "IPv4", "<unset>", "<unset>"]
    );
}

/// `kubectl get nodes`: the Node printer's columns for the simulated Nodes
/// (one of them tainted, none cordoned), and `-o wide` their addresses and
/// system info.
#[test]
fn kubectl_get_nodes_prints_status_roles_and_version() {
    let k = kubectl();
    let rows = k.table(&["get", "nodes"]);
    assert_eq!(header(&rows), "NAME STATUS ROLES AGE VERSION");
    for node in ["envtest-node-1", "envtest-node-2"] {
        let row = rows
            .iter()
            .find(|r| r[0] == node)
            .unwrap_or_else(|| panic!("no row {node}: {rows:?}"));
        assert_eq!(row[1..3], ["Ready", "<none>"], "{rows:?}");
        assert!(row[4].starts_with("v1.32."), "{rows:?}");
    }
    let wide = k.table(&["get", "nodes", "envtest-node-1", "-o", "wide"]);
    assert_eq!(
        header(&wide),
        "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME"
    );
    let address = wide[1][5].parse::<std::net::Ipv4Addr>();
    assert!(address.is_ok(), "an internal IP: {wide:?}");
    assert_eq!(wide[1][6], "<none>");
}
