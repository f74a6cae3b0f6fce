//! What the e2e tests do on the cluster besides running the manager: fresh
//! namespaces and SidecarSets, Pods held back from scheduling until a test
//! lets them run (a kubelet, or `opctl envtest`'s simulated one, then
//! reports them Ready) or breaks them, waiting for a SidecarSet's status,
//! the Pod webhook's failure policy, `kubectl`, and the deployed manager of
//! an existing cluster.

// Each test uses a part of these helpers.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use sidecarset::api::apps::v1alpha1::{SidecarSet, SidecarSetStatus};

/// How long the operator and the cluster may take for what a test waits for
/// (envtest and the operator take milliseconds; a cluster deletes namespaces
/// and updates endpoints at its own pace).
pub const PATIENCE: Duration = Duration::from_secs(60);
/// How long the deployed manager may take to serve again once scaled up
/// (image pull, readiness probe, endpoints).
const RESTART_PATIENCE: Duration = Duration::from_secs(180);

/// The Pod webhook, as `opctl manifests` names it.
pub const POD_WEBHOOK: &str = "mpod-v1.core.kruise.io";
/// The SidecarSet validating webhook, as `opctl manifests` names it.
pub const VALIDATING_WEBHOOK: &str = "vsidecarset-v1alpha1.apps.kruise.io";
/// The MutatingWebhookConfiguration as config/default (and, under envtest,
/// tests/webhooks) installs it.
const MUTATING_CONFIGURATION: &str = "sidecarset-mutating-webhook-configuration";
/// The manager `make deploy` runs in an existing cluster.
const DEPLOYED_NAMESPACE: &str = "sidecarset-system";
const DEPLOYED_MANAGER: &str = "sidecarset-controller-manager";
const DEPLOYED_LABELS: &str = "app.kubernetes.io/name=sidecarset,control-plane=controller-manager";

/// Whether the tests run against an existing cluster rather than envtest.
pub fn existing_cluster() -> bool {
    std::env::var("E2E_USE_EXISTING_CLUSTER").is_ok_and(|v| v == "true")
}

pub async fn client() -> Client {
    Client::try_default()
        .await
        .expect("a cluster from the kubeconfig")
}

/// Polls `check` every 200 ms until it returns `Ok`, failing after
/// [`PATIENCE`] with `what` and the last `Err` (what it saw instead).
pub async fn eventually<T>(what: &str, check: impl AsyncFnMut() -> Result<T, String>) -> T {
    eventually_within(PATIENCE, what, check).await
}

async fn eventually_within<T>(
    patience: Duration,
    what: &str,
    mut check: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + patience;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => assert!(
                Instant::now() < deadline,
                "timed out after {patience:?} waiting for {what}; last seen: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Deletes `name` if it exists and waits until it is gone.
async fn delete_if_present<K>(api: &Api<K>, name: &str)
where
    K: Resource + Clone + std::fmt::Debug + DeserializeOwned,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => return,
        Err(err) => panic!("cannot delete {name}: {err}"),
    }
    eventually(&format!("{name} to be deleted"), async || {
        match api.get_opt(name).await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err("still there".to_owned()),
            Err(err) => Err(err.to_string()),
        }
    })
    .await
}

/// A new, empty namespace (one left over from an earlier run on a real
/// cluster is deleted first).
pub async fn fresh_namespace(client: &Client, name: &str) -> Api<Pod> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    delete_if_present(&namespaces, name).await;
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(name.to_owned());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create the namespace");
    // kube-apiserver refuses Pods until the namespace's default
    // ServiceAccount exists, which its controller makes a moment later.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), name);
    eventually("the default ServiceAccount", async || {
        match accounts.get_opt("default").await {
            Ok(Some(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    Api::namespaced(client.clone(), name)
}

/// Deletes the namespace at the end of a test, without waiting.
pub async fn remove_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the namespace");
}

/// A SidecarSet selecting `app=<app>` with one container per `(name, image)`.
pub fn sidecar_set(name: &str, app: &str, containers: &[(&str, &str)]) -> SidecarSet {
    let containers: Vec<serde_json::Value> = containers
        .iter()
        .map(|(name, image)| serde_json::json!({"name": name, "image": image}))
        .collect();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": app}},
            "containers": containers,
        },
    }))
    .expect("a SidecarSet")
}

/// Creates `object` (after deleting one of that name left over from an
/// earlier run) and returns it as stored.
pub async fn create_fresh(api: &Api<SidecarSet>, object: &SidecarSet) -> SidecarSet {
    delete_if_present(api, &object.name_any()).await;
    api.create(&PostParams::default(), object)
        .await
        .expect("create the SidecarSet")
}

/// A Pod labelled `app=<app>` with one container, `app`. A scheduling gate
/// keeps it from being scheduled until [`release`] lets it run: until then
/// no kubelet runs it or writes its status.
pub fn pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
            "schedulingGates": [{"name": "kruise.io/e2e-never-scheduled"}],
        },
    }))
    .expect("a Pod")
}

/// The names and images of a Pod's containers.
pub fn containers(pod: &Pod) -> Vec<(String, String)> {
    let spec = pod.spec.as_ref().expect("a Pod spec");
    spec.containers
        .iter()
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .collect()
}

/// The scheduling gate of [`pod`].
const GATE: &str = "kruise.io/e2e-never-scheduled";

/// Removes the scheduling gate of [`pod`]: the scheduler binds it and the
/// kubelet (on a cluster, or `opctl envtest`'s simulated one) runs it and
/// reports it Ready.
pub async fn release(pods: &Api<Pod>, name: &str) {
    let pod = pods.get(name).await.expect("read the Pod");
    let gates = pod.spec.and_then(|spec| spec.scheduling_gates);
    assert_eq!(
        gates.map(|gates| gates.into_iter().map(|gate| gate.name).collect::<Vec<_>>()),
        Some(vec![GATE.to_owned()]),
        "the Pod {name} is held back by the test's gate only"
    );
    let patch = serde_json::json!([
        {"op": "test", "path": "/spec/schedulingGates/0/name", "value": GATE},
        {"op": "remove", "path": "/spec/schedulingGates"},
    ]);
    let patch: json_patch::Patch = serde_json::from_value(patch).expect("a JSON patch");
    pods.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .expect("remove the Pod's scheduling gate");
}

/// Makes the Pod's `app` container crash over and over (its image changed
/// in place to one no registry has; `opctl envtest`'s kubelet crash-loops
/// images tagged `envtest-crashloop`, a real one fails to pull it): the
/// Pod stays, no longer Ready.
pub async fn break_app_container(pods: &Api<Pod>, name: &str) {
    let patch = serde_json::json!({
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:envtest-crashloop"}]},
    });
    pods.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("change the Pod's image");
}

/// Sets the Pod's `Ready` condition through the `/status` subresource, as
/// a kubelet would (strategic merge: the other conditions stay). For the
/// benchmark, whose gated Pods no kubelet ever runs.
pub async fn set_ready(pods: &Api<Pod>, name: &str, ready: bool) {
    let status = if ready { "True" } else { "False" };
    let patch = serde_json::json!({
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    });
    pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patch the Pod's status");
}

/// Waits until the SidecarSet's status describes its current generation
/// with these counts (matched, updated, ready), and returns it.
pub async fn wait_for_counts(
    api: &Api<SidecarSet>,
    name: &str,
    expected: (i32, i32, i32),
) -> SidecarSetStatus {
    let what = format!("{name} to count (matched, updated, ready) = {expected:?}");
    eventually(&what, async || {
        let object = api.get(name).await.map_err(|e| e.to_string())?;
        let status = object.status.unwrap_or_default();
        let counts = (status.matched_pods, status.updated_pods, status.ready_pods);
        let current = status.observed_generation == object.metadata.generation;
        if counts == expected && current {
            Ok(status)
        } else {
            Err(format!(
                "{counts:?} at generation {:?} of {:?}",
                status.observed_generation, object.metadata.generation
            ))
        }
    })
    .await
}

/// Sets the `failurePolicy` of the Pod webhook in the installed
/// MutatingWebhookConfiguration (a JSON patch that first tests that it
/// changes the right webhook), while the webhook server is down, and waits
/// until the API server applies it (kube-apiserver takes up to a second to
/// see a changed configuration): until a dry-run create in `pods` fails
/// under `Fail`, succeeds under `Ignore`.
pub async fn set_pod_webhook_failure_policy(client: &Client, pods: &Api<Pod>, policy: &str) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let config = api
        .get(MUTATING_CONFIGURATION)
        .await
        .expect("the MutatingWebhookConfiguration is installed");
    let webhooks = config.webhooks.unwrap_or_default();
    let index = webhooks
        .iter()
        .position(|w| w.name == POD_WEBHOOK)
        .expect("the Pod webhook is configured");
    let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "test", "path": format!("/webhooks/{index}/name"), "value": POD_WEBHOOK},
        {"op": "replace", "path": format!("/webhooks/{index}/failurePolicy"), "value": policy},
    ]))
    .expect("a JSON patch");
    api.patch(
        MUTATING_CONFIGURATION,
        &PatchParams::default(),
        &Patch::Json::<()>(patch),
    )
    .await
    .expect("patch the failure policy");

    let probe = self::pod("failure-policy-probe", "failure-policy-probe");
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let what = format!("failurePolicy={policy} to take effect");
    eventually(&what, async || {
        let result = pods.create(&params, &probe).await;
        match (policy, result) {
            ("Fail", Err(kube::Error::Api(status))) if status.code == 500 => Ok(()),
            ("Ignore", Ok(_)) => Ok(()),
            (_, other) => Err(format!("{other:?}")),
        }
    })
    .await
}

/// The failure policy of the Pod webhook as installed.
pub async fn pod_webhook_failure_policy(client: &Client) -> String {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let config = api
        .get(MUTATING_CONFIGURATION)
        .await
        .expect("the MutatingWebhookConfiguration is installed");
    let webhooks = config.webhooks.unwrap_or_default();
    let webhook = webhooks.iter().find(|w| w.name == POD_WEBHOOK);
    let webhook = webhook.expect("the Pod webhook is configured");
    webhook.failure_policy.clone().unwrap_or_default()
}

/// Scales the manager `make deploy` installed (existing cluster only) and
/// waits until that many of its Pods exist and, when up, until its webhooks
/// answer again.
pub async fn scale_deployed_manager(client: &Client, replicas: i32) {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), DEPLOYED_NAMESPACE);
    let patch = serde_json::json!({"spec": {"replicas": replicas}});
    deployments
        .patch(
            DEPLOYED_MANAGER,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .expect("scale the deployed manager (run `make deploy` first)");
    let pods: Api<Pod> = Api::namespaced(client.clone(), DEPLOYED_NAMESPACE);
    let what = format!("{replicas} Pods of the deployed manager");
    eventually_within(RESTART_PATIENCE, &what, async || {
        let list = pods
            .list(&ListParams::default().labels(DEPLOYED_LABELS))
            .await
            .map_err(|e| e.to_string())?;
        let count = i32::try_from(list.items.len()).unwrap_or(i32::MAX);
        if count == replicas {
            Ok(())
        } else {
            Err(format!("{count} Pods"))
        }
    })
    .await;
    if replicas > 0 {
        wait_for_webhooks(client).await;
    }
}

/// Waits until the validating webhook answers: a dry-run create of an
/// invalid SidecarSet is denied by it.
async fn wait_for_webhooks(client: &Client) {
    let api: Api<SidecarSet> = Api::all(client.clone());
    let invalid = sidecar_set("e2e-webhook-probe", "e2e-webhook-probe", &[]);
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    eventually_within(
        RESTART_PATIENCE,
        "the webhooks to answer",
        async || match api.create(&params, &invalid).await {
            Err(kube::Error::Api(status)) if status.message.contains(VALIDATING_WEBHOOK) => {
                if status.code == 403 {
                    Ok(())
                } else {
                    Err(status.message)
                }
            }
            other => Err(format!("{other:?}")),
        },
    )
    .await
}

/// `kubectl ARGS` (the binary in `KUBECTL`, else `kubectl` on the PATH),
/// with the kubeconfig of the tests; its standard output.
pub fn kubectl(args: &[&str]) -> String {
    let program = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_owned());
    let output = std::process::Command::new(&program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {program} (set KUBECTL to its path): {err}"));
    assert!(
        output.status.success(),
        "{program} {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("kubectl prints UTF-8")
}
