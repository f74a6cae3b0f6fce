//! HorizontalPodAutoscalers without a metrics server: replicas kept within
//! `[minReplicas, maxReplicas]` through the target's scale, and the
//! conditions and events a cluster without metrics-server reports.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::Api;
use serde_json::Value;

use crate::common::{WAIT, client, condition, get_json, kubectl, namespace, wait_for_field};

const NO_METRICS: &str = "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";

/// The autoscaler once `done` accepts it (read through kube-rs).
async fn autoscaler_when(
    api: &Api<HorizontalPodAutoscaler>,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let hpa = serde_json::to_value(api.get("web").await.expect("get hpa")).expect("json");
        if done(&hpa) {
            return hpa;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never as wanted: {hpa:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn reason<'a>(hpa: &'a Value, kind: &str) -> (&'a Value, &'a Value) {
    let c = condition(hpa, kind).unwrap_or(&Value::Null);
    (&c["status"], &c["reason"])
}

fn events(ns: &str) -> Vec<(String, String)> {
    get_json(&[
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        "involvedObject.kind=HorizontalPodAutoscaler",
    ])["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_autoscaler_without_metrics_keeps_replicas_within_its_bounds() {
    let ns = namespace("hpa");
    let k = kubectl();
    k.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        &ns,
        "--image=nginx:1.27",
        "--replicas=1",
    ]);
    k.ok(&[
        "autoscale",
        "deployment",
        "web",
        "-n",
        &ns,
        "--min=2",
        "--max=4",
        "--cpu-percent=50",
    ]);
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client().await, &ns);

    // Below minReplicas: scaled up to it, then metrics are found missing.
    wait_for_field(&ns, ("deployment", "web"), "{.spec.replicas}", |r| r == "2");
    let hpa = autoscaler_when(&api, |h| {
        reason(h, "ScalingActive").1 == "FailedGetResourceMetric"
            && h["status"]["currentReplicas"] == 2
    })
    .await;
    let status = &hpa["status"];
    assert_eq!(status["desiredReplicas"], 2, "{status:#}");
    assert!(status["lastScaleTime"].is_string(), "{status:#}");
    assert_eq!(
        status["currentMetrics"],
        serde_json::json!([{"type": ""}]),
        "{status:#}"
    );
    let active = condition(&hpa, "ScalingActive").expect("ScalingActive");
    assert_eq!(active["status"], "False");
    assert_eq!(
        active["message"],
        format!("the HPA was unable to compute the replica count: {NO_METRICS}")
    );
    assert!(active["lastTransitionTime"].is_string(), "{active}");
    let able = condition(&hpa, "AbleToScale").expect("AbleToScale");
    assert_eq!(
        (&able["status"], &able["reason"]),
        (&"True".into(), &"SucceededGetScale".into())
    );
    assert_eq!(
        able["message"],
        "the HPA controller was able to get the target's current scale"
    );
    // kubectl get shows the unknown utilization against its target.
    let table = k.table(&["get", "hpa", "web", "-n", &ns]);
    assert_eq!(
        table[0].join(" "),
        "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE"
    );
    assert_eq!(
        table[1][..7],
        [
            "web",
            "Deployment/web",
            "cpu:",
            "<unknown>/50%",
            "2",
            "4",
            "2"
        ]
    );
    let v1 = k.table(&[
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "web",
        "-n",
        &ns,
    ]);
    assert_eq!(v1[1][..7], table[1][..7]);
    let seen = events(&ns);
    for wanted in [
        (
            "SuccessfulRescale".to_string(),
            "New size: 2; reason: Current number of replicas below Spec.MinReplicas".to_string(),
        ),
        (
            "FailedGetResourceMetric".to_string(),
            NO_METRICS.to_string(),
        ),
        (
            "FailedComputeMetricsReplicas".to_string(),
            format!(
                "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: {NO_METRICS}"
            ),
        ),
    ] {
        assert!(seen.contains(&wanted), "{wanted:?} not in {seen:#?}");
    }

    // Above maxReplicas: brought back down to it.
    k.ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=7"]);
    wait_for_field(&ns, ("deployment", "web"), "{.spec.replicas}", |r| r == "4");
    autoscaler_when(&api, |h| h["status"]["currentReplicas"] == 4).await;
    assert!(events(&ns).contains(&(
        "SuccessfulRescale".to_string(),
        "New size: 4; reason: Current number of replicas above Spec.MaxReplicas".to_string()
    )));
    k.ok(&[
        "rollout",
        "status",
        "deployment/web",
        "-n",
        &ns,
        "--timeout=60s",
    ]);

    // A target scaled to zero turns autoscaling off; it stays at zero.
    k.ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=0"]);
    let hpa = autoscaler_when(&api, |h| reason(h, "ScalingActive").1 == "ScalingDisabled").await;
    assert_eq!(hpa["status"]["desiredReplicas"], 0, "{hpa:#}");
    let replicas = k.ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        &ns,
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(replicas, "0");
}
