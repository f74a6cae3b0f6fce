//! Endpoints and EndpointSlices from Services and the Pods they select.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use crate::common::{WAIT, client, get_json, kubectl, namespace, wait_for_field};

const BACKENDS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.27", ports: [{name: http, containerPort: 8080}]}
---
apiVersion: v1
kind: Pod
metadata: {name: broken, labels: {app: web}}
spec:
  containers:
  - {name: nginx, image: "example.com/web:envtest-crashloop", ports: [{name: http, containerPort: 9090}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {tier: front}}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: metrics, port: 9100, targetPort: 9100}
"#;

/// The Service's managed slices, once `done` accepts them.
async fn slices_when(api: &Api<EndpointSlice>, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let params = ListParams::default().labels(
        "kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io",
    );
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let list = api.list(&params).await.expect("list slices");
        let slices: Vec<Value> = list
            .items
            .into_iter()
            .map(|s| serde_json::to_value(s).expect("json"))
            .collect();
        if done(&slices) {
            return slices;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "slices never as wanted: {slices:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn endpoint_count(slices: &[Value]) -> usize {
    slices
        .iter()
        .map(|s| s["endpoints"].as_array().map_or(0, Vec::len))
        .sum()
}

fn port_numbers(slice: &Value) -> Vec<i64> {
    let mut ports: Vec<i64> = slice["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["port"].as_i64())
        .collect();
    ports.sort();
    ports
}

#[tokio::test]
async fn services_get_endpoints_and_slices_of_the_pods_they_select() {
    let ns = namespace("svc");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], BACKENDS);
    k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ]);
    let service = get_json(&["get", "-n", &ns, "service", "web"]);
    let slices_api: Api<EndpointSlice> = Api::namespaced(client().await, &ns);

    // The Deployment's Pods serve `http` on 8080, the broken one on 9090:
    // two port sets, two slices.
    let slices = slices_when(&slices_api, |s| s.len() == 2 && endpoint_count(s) == 3).await;
    let ready = slices
        .iter()
        .find(|s| port_numbers(s) == [8080, 9100])
        .unwrap_or_else(|| panic!("no slice for port 8080: {slices:#?}"));
    let slice_name = ready["metadata"]["name"].as_str().expect("name");
    assert!(slice_name.starts_with("web-"), "{slice_name}");
    assert_eq!(ready["addressType"], "IPv4");
    assert_eq!(
        ready["metadata"]["labels"]["tier"], "front",
        "service labels copied"
    );
    let owner = &ready["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            &owner["kind"],
            &owner["name"],
            &owner["uid"],
            &owner["controller"]
        ),
        (
            &json!("Service"),
            &json!("web"),
            &service["metadata"]["uid"],
            &json!(true)
        ),
        "{owner}"
    );
    let http = ready["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == "http")
        .expect("http port");
    assert_eq!(
        (&http["port"], &http["protocol"]),
        (&json!(8080), &json!("TCP"))
    );
    let eps = ready["endpoints"].as_array().expect("endpoints");
    assert_eq!(eps.len(), 2, "{eps:#?}");
    for ep in eps {
        assert_eq!(
            ep["conditions"],
            json!({"ready": true, "serving": true, "terminating": false}),
            "{ep}"
        );
        assert_eq!(ep["nodeName"], "envtest-node-1");
        assert!(ep["zone"].is_string(), "{ep}");
        assert_eq!(ep["targetRef"]["kind"], "Pod");
        let pod = ep["targetRef"]["name"].as_str().expect("pod name");
        let pod = get_json(&["get", "-n", &ns, "pod", pod]);
        assert_eq!(ep["addresses"][0], pod["status"]["podIP"]);
    }
    let broken = slices
        .iter()
        .find(|s| port_numbers(s) == [9090, 9100])
        .unwrap_or_else(|| panic!("no slice for the broken Pod: {slices:#?}"));
    assert_eq!(
        broken["endpoints"][0]["conditions"],
        json!({"ready": false, "serving": false, "terminating": false})
    );

    // Endpoints: the ready Pods' addresses, the broken one not ready.
    wait_for_field(
        &ns,
        ("endpoints", "web"),
        "{.subsets[*].addresses[*].ip}|{.subsets[*].notReadyAddresses[*].targetRef.name}",
        |v| {
            v.split('|').next().unwrap_or("").split_whitespace().count() == 2
                && v.ends_with("|broken")
        },
    );
    let endpoints = get_json(&["get", "-n", &ns, "endpoints", "web"]);
    assert_eq!(endpoints["metadata"]["labels"]["tier"], "front");
    assert!(
        endpoints["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"]
            .is_string(),
        "{endpoints}"
    );
    let subsets = endpoints["subsets"].as_array().expect("subsets");
    let serving = subsets
        .iter()
        .find(|s| s["addresses"].is_array())
        .expect("a subset with ready addresses");
    let mut ports: Vec<(String, i64)> = serving["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or("").to_string(),
                p["port"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    ports.sort();
    assert_eq!(
        ports,
        [("http".to_string(), 8080), ("metrics".to_string(), 9100)]
    );
    assert_eq!(serving["addresses"][0]["targetRef"]["kind"], "Pod");
    assert_eq!(serving["addresses"][0]["nodeName"], "envtest-node-1");
    let table = k.table(&["get", "-n", &ns, "endpoints", "web"]);
    assert_eq!(table[0][..2], ["NAME", "ENDPOINTS"], "{table:?}");
    assert!(table[1][1].contains(":8080"), "{table:?}");

    // Pods going away leave the Service a placeholder slice and empty Endpoints.
    k.ok(&["scale", "-n", &ns, "deployment/web", "--replicas=0"]);
    k.ok(&["delete", "-n", &ns, "pod", "broken", "--timeout=60s"]);
    let slices = slices_when(&slices_api, |s| s.len() == 1 && endpoint_count(s) == 0).await;
    assert!(slices[0]["ports"].is_null(), "{slices:#?}");
    wait_for_field(&ns, ("endpoints", "web"), "{.subsets}", |v| v.is_empty());

    // Without the Service, its Endpoints and slices go.
    k.ok(&["delete", "-n", &ns, "service", "web"]);
    k.eventually(&["get", "-n", &ns, "endpoints", "web"], WAIT, |r| {
        r.stderr.contains("NotFound")
    });
    slices_when(&slices_api, <[Value]>::is_empty).await;
}
