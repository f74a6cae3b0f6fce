//! End-to-end tests: they use the cluster the kubeconfig names and start the
//! operator binary as its own process, watching namespaces made for each
//! test (so that they leave alone whatever else runs on the cluster,
//! including an operator deployed with `make deploy`).
//!
//! `make test-e2e` runs them under `opctl envtest run` (no cluster needed);
//! `E2E_USE_EXISTING_CLUSTER=true make test-e2e` runs them against the
//! current kubeconfig. Plain `cargo test` lists them as ignored.
//!
//! Waits are generous where the cluster sets the pace (garbage collection,
//! graceful Pod deletion) and short where the operator does: a Deployment
//! gets its Pod within 2 s.
//!
//! The operator runs as a ServiceAccount granted exactly the roles
//! config/rbac grants it (the ClusterRole of role.yaml, what `opctl
//! manifests` writes from the `+opctl:rbac` markers; the leader-election and
//! metrics-auth roles), by impersonation: a permission the markers lack
//! fails these tests, under envtest as on a cluster.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};

mod support;

use support::{
    CLUSTER_PACE, Operator, TestNamespace, client, deployment, eventually, http_get,
    is_controlled_by, unique_name,
};

/// How soon the operator must act on a change it watches: 2 s, or 15 s
/// under `make test-e2e-faults` (`opctl envtest run` sets
/// OPCTL_ENVTEST_FAULTS), where a refused write is retried after a backoff.
fn promptly() -> Duration {
    if std::env::var_os("OPCTL_ENVTEST_FAULTS").is_some() {
        Duration::from_secs(15)
    } else {
        Duration::from_secs(2)
    }
}
/// SIGTERM must end the operator within this.
const STOP_WITHIN: Duration = Duration::from_secs(10);

async fn create_deployment(client: &Client, namespace: &str, name: &str) -> Deployment {
    Api::<Deployment>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &deployment(name))
        .await
        .unwrap_or_else(|err| panic!("cannot create Deployment {namespace}/{name}: {err}"))
}

/// Waits (at most `timeout`) for a Pod named `name` that `owner` controls.
async fn wait_for_pod_of(client: &Client, owner: &Deployment, timeout: Duration) -> Pod {
    let name = owner.name_any();
    let namespace = owner.namespace().expect("a namespaced Deployment");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let what = format!("the Pod of Deployment {namespace}/{name}");
    eventually(timeout, &what, || async {
        let pod = pods.get_opt(&name).await.ok().flatten()?;
        is_controlled_by(&pod, owner).then_some(pod)
    })
    .await
}

/// The Pod is exactly what the operator promises for `owner`.
fn assert_is_the_pod_of(pod: &Pod, owner: &Deployment, image: &str) {
    let name = owner.name_any();
    assert_eq!(pod.namespace(), owner.namespace());
    assert_eq!(
        pod.labels(),
        &BTreeMap::from([("app".to_owned(), name.clone())]),
        "labels"
    );
    let references = pod.owner_references();
    assert_eq!(references.len(), 1, "{references:?}");
    let reference = &references[0];
    assert_eq!(reference.api_version, "apps/v1");
    assert_eq!(reference.kind, "Deployment");
    assert_eq!(reference.name, name);
    assert_eq!(Some(&reference.uid), owner.uid().as_ref());
    assert_eq!(reference.controller, Some(true));
    assert_eq!(reference.block_owner_deletion, Some(true));
    assert!(pod.finalizers().is_empty(), "{:?}", pod.finalizers());
    let spec = pod.spec.as_ref().expect("the Pod has a spec");
    assert_eq!(spec.containers.len(), 1, "one container");
    let container = &spec.containers[0];
    assert_eq!(container.name, "echo");
    assert_eq!(container.image.as_deref(), Some(image));
    let script = format!("while true ; do echo {name} ; sleep 1 ; done");
    assert_eq!(
        container.command,
        Some(vec!["bash".to_owned(), "-c".to_owned(), script])
    );
}

/// The events recorded about `about` (either events API shows them; this
/// is the one kube's Recorder writes).
async fn events_about(client: &Client, about: &Deployment) -> Vec<Event> {
    let namespace = about.namespace().expect("a namespaced Deployment");
    let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
    let list = events
        .list(&ListParams::default())
        .await
        .expect("events can be listed");
    list.items
        .into_iter()
        .filter(|event| {
            event
                .regarding
                .as_ref()
                .is_some_and(|regarding| regarding.uid == about.uid())
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_deployment_gets_its_pod_at_once() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "create").await;
    let _operator = Operator::watching(&ns.name, &[]).await;

    let web = create_deployment(&client, &ns.name, "web").await;
    let pod = wait_for_pod_of(&client, &web, promptly()).await;
    assert_is_the_pod_of(&pod, &web, "ubi8");

    // No finalizer on the Deployment: deleting it is never held up.
    let web = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .get("web")
        .await
        .expect("the Deployment");
    assert!(web.finalizers().is_empty(), "{:?}", web.finalizers());
    let created = eventually(promptly(), "a PodCreated event", || async {
        let events = events_about(&client, &web).await;
        events
            .into_iter()
            .find(|event| event.reason.as_deref() == Some("PodCreated"))
    })
    .await;
    assert_eq!(created.type_.as_deref(), Some("Normal"));
}

/// Waits until every Pod of `pods` that `select` picks is Running and
/// Ready, and there are `count` of them.
async fn running_and_ready(
    pods: &Api<Pod>,
    what: &str,
    count: usize,
    select: impl Fn(&Pod) -> bool,
) {
    eventually(CLUSTER_PACE, what, || async {
        let list = pods.list(&ListParams::default()).await.ok()?;
        let chosen: Vec<&Pod> = list.items.iter().filter(|pod| select(pod)).collect();
        let running = chosen.iter().all(|pod| {
            let status = pod.status.as_ref();
            let phase = status.and_then(|status| status.phase.as_deref());
            let conditions = status.and_then(|status| status.conditions.as_deref());
            let ready = conditions
                .unwrap_or_default()
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True");
            phase == Some("Running") && ready
        });
        (chosen.len() == count && running).then_some(())
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn the_deployments_pods_and_the_operators_pod_all_run() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "run").await;
    let _operator = Operator::watching(&ns.name, &[]).await;

    let mut two = deployment("web");
    if let Some(spec) = two.spec.as_mut() {
        spec.replicas = Some(2);
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let web = deployments
        .create(&PostParams::default(), &two)
        .await
        .expect("create the Deployment");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    // The operator's Pod (named after the Deployment, controlled by it)...
    running_and_ready(&pods, "the operator's Pod to run", 1, |pod| {
        is_controlled_by(pod, &web)
    })
    .await;
    // ...and the Deployment's own, through its ReplicaSet.
    running_and_ready(&pods, "the Deployment's two Pods to run", 2, |pod| {
        pod.owner_references()
            .iter()
            .any(|owner| owner.kind == "ReplicaSet" && owner.controller == Some(true))
    })
    .await;
    eventually(CLUSTER_PACE, "the Deployment to be available", || async {
        let web = deployments.get("web").await.ok()?;
        let status = web.status?;
        (status.available_replicas == Some(2) && status.updated_replicas == Some(2)).then_some(())
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_deleted_pod_comes_back() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "recreate").await;
    // No resync within the test: only the watch of owned Pods can bring it back.
    let _operator = Operator::watching(&ns.name, &["--resync-seconds=3600"]).await;

    let web = create_deployment(&client, &ns.name, "web").await;
    let first = wait_for_pod_of(&client, &web, promptly()).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    pods.delete("web", &DeleteParams::default())
        .await
        .expect("the Pod can be deleted");

    // The cluster takes its time to delete a Pod (grace period); once it is
    // gone, the operator replaces it at once.
    eventually(CLUSTER_PACE, "the deleted Pod to be gone", || async {
        let pod = pods.get_opt("web").await.ok()?;
        pod.is_none_or(|pod| pod.uid() != first.uid()).then_some(())
    })
    .await;
    let replacement = eventually(
        promptly(),
        "a new Pod to replace the deleted one",
        || async {
            let pod = pods.get_opt("web").await.ok().flatten()?;
            (pod.uid() != first.uid()).then_some(pod)
        },
    )
    .await;
    assert!(is_controlled_by(&replacement, &web));
    assert_is_the_pod_of(&replacement, &web, "ubi8");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn deployments_in_other_namespaces_are_ignored() {
    let client = client().await;
    let watched = TestNamespace::create(&client, "watched").await;
    let other = TestNamespace::create(&client, "other").await;
    // The namespace through the environment variable this time; resync every second.
    let image = "registry.access.redhat.com/ubi8/ubi-minimal";
    let args = [format!("--image={image}"), "--resync-seconds=1".to_owned()];
    let _operator = Operator::start(&args, &[("WATCH_NAMESPACE", &watched.name)]).await;

    let elsewhere = create_deployment(&client, &other.name, "web").await;
    let web = create_deployment(&client, &watched.name, "web").await;
    let pod = wait_for_pod_of(&client, &web, promptly()).await;
    assert_is_the_pod_of(&pod, &web, image);

    // The operator has seen both Deployments' creation by now and resynced twice.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pods = Api::<Pod>::namespaced(client.clone(), &other.name)
        .list(&ListParams::default())
        .await
        .expect("Pods can be listed");
    let names: Vec<String> = pods.items.iter().map(ResourceExt::name_any).collect();
    assert!(
        names.is_empty(),
        "Pods in an unwatched namespace: {names:?}"
    );
    assert!(events_about(&client, &elsewhere).await.is_empty());
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn deleting_a_deployment_deletes_its_pod() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "delete").await;
    let _operator = Operator::watching(&ns.name, &["--resync-seconds=1"]).await;

    let web = create_deployment(&client, &ns.name, "web").await;
    wait_for_pod_of(&client, &web, promptly()).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .expect("the Deployment can be deleted");

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    eventually(CLUSTER_PACE, "the Deployment to be gone", || async {
        deployments
            .get_opt("web")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    eventually(
        CLUSTER_PACE,
        "the garbage collector to delete the Pod",
        || async { pods.get_opt("web").await.ok()?.is_none().then_some(()) },
    )
    .await;
    // And the operator does not bring it back (two resyncs later).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pod = pods.get_opt("web").await.expect("Pods can be read");
    assert!(pod.is_none(), "a Pod came back: {pod:?}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn restarting_the_operator_creates_no_duplicates() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "restart").await;
    let operator = Operator::watching(&ns.name, &["--resync-seconds=1"]).await;
    let web = create_deployment(&client, &ns.name, "web").await;
    let first = wait_for_pod_of(&client, &web, promptly()).await;
    let exit = operator.terminate(STOP_WITHIN).await;
    assert!(exit.success(), "the operator exited with {exit}");

    let _operator = Operator::watching(&ns.name, &["--resync-seconds=1"]).await;
    let api = create_deployment(&client, &ns.name, "api").await;
    wait_for_pod_of(&client, &api, promptly()).await;
    // The restarted operator listed both Deployments and resynced them twice.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let pods = Api::<Pod>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("Pods can be listed");
    let mut names: Vec<String> = pods.items.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["api", "web"]);
    let web_pod = pods
        .items
        .iter()
        .find(|pod| pod.name_any() == "web")
        .expect("the Pod of web");
    assert_eq!(web_pod.uid(), first.uid(), "the Pod of web was replaced");
    let created = events_about(&client, &web)
        .await
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("PodCreated"))
        .count();
    assert_eq!(created, 1, "PodCreated events about web");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_pod_it_does_not_own_is_left_alone_with_a_warning() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "unowned").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let squatter = Pod {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            labels: Some(BTreeMap::from([("app".to_owned(), "squatter".to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "squatter".to_owned(),
                image: Some("registry.k8s.io/pause:3.10".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    let squatter = pods
        .create(&PostParams::default(), &squatter)
        .await
        .expect("a Pod of our own");
    let _operator = Operator::watching(&ns.name, &["--resync-seconds=1"]).await;

    let web = create_deployment(&client, &ns.name, "web").await;
    let warning = eventually(
        Duration::from_secs(10),
        "a PodNameTaken warning",
        || async {
            let events = events_about(&client, &web).await;
            events
                .into_iter()
                .find(|event| event.reason.as_deref() == Some("PodNameTaken"))
        },
    )
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let note = warning.note.unwrap_or_default();
    assert!(note.contains("not controlled by this Deployment"), "{note}");

    // Retried (every second) and still never touched.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pod = pods.get("web").await.expect("the Pod is still there");
    assert_eq!(pod.uid(), squatter.uid());
    assert!(
        pod.owner_references().is_empty(),
        "{:?}",
        pod.owner_references()
    );
    assert_eq!(pod.labels(), squatter.labels());
    // Only the scheduler's binding (`nodeName`) may have changed the spec.
    let unbound = pod.spec.clone().map(|spec| PodSpec {
        node_name: None,
        ..spec
    });
    assert_eq!(unbound, squatter.spec);
    let managers: Vec<Option<String>> = pod
        .managed_fields()
        .iter()
        .map(|entry| entry.manager.clone())
        .collect();
    assert!(
        !managers.contains(&Some("simple-deployment".to_owned())),
        "the operator wrote to the Pod: {managers:?}"
    );

    // Once the name is free, the retry creates the Deployment's own Pod.
    pods.delete("web", &DeleteParams::default())
        .await
        .expect("the Pod can be deleted");
    eventually(CLUSTER_PACE, "the other Pod to be gone", || async {
        let pod = pods.get_opt("web").await.ok()?;
        pod.is_none_or(|pod| pod.uid() != squatter.uid())
            .then_some(())
    })
    .await;
    let pod = wait_for_pod_of(&client, &web, Duration::from_secs(1) + promptly()).await;
    assert_is_the_pod_of(&pod, &web, "ubi8");
}

/// The holder of the Lease `name` in the namespace `default`, if any.
async fn lease_holder(client: &Client, name: &str) -> Option<String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let lease = leases.get_opt(name).await.expect("read the Lease");
    lease.and_then(|lease| lease.spec?.holder_identity)
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_second_replica_is_ready_at_once_and_takes_over_when_the_first_stops() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "rollout").await;
    let lease = unique_name("rollout");
    let flags = vec![
        format!("--namespace={}", ns.name),
        "--leader-elect".to_owned(),
        format!("--leader-election-id={lease}"),
        "--leader-election-namespace=default".to_owned(),
        "--leader-election-lease-duration-seconds=6".to_owned(),
    ];
    let first = Operator::start(&flags, &[("POD_NAME", "e2e-first")]).await;
    eventually(CLUSTER_PACE, "the first replica to lead", || async {
        (lease_holder(&client, &lease).await.as_deref() == Some("e2e-first")).then_some(())
    })
    .await;
    // Ready while the first one leads: a rolling update can go on.
    let second = Operator::start(&flags, &[("POD_NAME", "e2e-second")]).await;
    assert_eq!(
        lease_holder(&client, &lease).await.as_deref(),
        Some("e2e-first")
    );
    let exit = first.terminate(STOP_WITHIN).await;
    assert!(exit.success(), "the first replica exited with {exit}");
    eventually(CLUSTER_PACE, "the second replica to lead", || async {
        (lease_holder(&client, &lease).await.as_deref() == Some("e2e-second")).then_some(())
    })
    .await;
    // Only the second one can have made this Pod.
    let web = create_deployment(&client, &ns.name, "web").await;
    let pod = wait_for_pod_of(&client, &web, CLUSTER_PACE).await;
    assert_is_the_pod_of(&pod, &web, "ubi8");
    let exit = second.terminate(STOP_WITHIN).await;
    assert!(exit.success(), "the second replica exited with {exit}");
    // Given up on the way out, so that a next replica need not wait it out.
    assert_eq!(lease_holder(&client, &lease).await, None);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn sigterm_stops_the_operator_cleanly() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "sigterm").await;
    let operator = Operator::watching(&ns.name, &[]).await;
    let web = create_deployment(&client, &ns.name, "web").await;
    wait_for_pod_of(&client, &web, promptly()).await;

    let (status, _) = http_get(operator.health, "/healthz").expect("/healthz answers");
    assert_eq!(status, 200);
    // Every reconcile asks to run again after the resync period. The Pod
    // may show before the reconcile that made it has been counted (and
    // under injected faults that reconcile may be retried): wait for it.
    let requeued = |body: &str| {
        body.lines()
            .find_map(|line| {
                line.strip_prefix(
                    r#"controller_runtime_reconcile_total{controller="deployment",result="requeue_after"} "#,
                )
            })
            .and_then(|count| count.parse::<u64>().ok())
    };
    eventually(promptly(), "a counted reconcile in /metrics", || async {
        let (status, body) = http_get(operator.metrics, "/metrics").expect("/metrics answers");
        assert_eq!(status, 200);
        requeued(&body).filter(|count| *count >= 1)
    })
    .await;

    let exit = operator.terminate(STOP_WITHIN).await;
    assert!(exit.success(), "the operator exited with {exit}");
}
