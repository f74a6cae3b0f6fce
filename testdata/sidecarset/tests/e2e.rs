//! End-to-end tests: they use the cluster the kubeconfig names and start the
//! manager binary as its own process, one test at a time.
//!
//! `make test-e2e` runs them under `opctl envtest run` (no cluster needed):
//! each manager serves the webhooks (tests/webhooks). `make deploy` then
//! `E2E_USE_EXISTING_CLUSTER=true make test-e2e` runs them against the
//! current kubeconfig, where the deployed manager serves the webhooks (the
//! failure-policy test scales it to zero and back). Plain `cargo test` lists
//! them as ignored.
//!
//! The Pods they create are held back from scheduling until a test lets
//! them run (tests/cluster): then the kubelet (under envtest, its
//! simulated one) reports them Ready, and a test that breaks a Pod's
//! container sees it go not Ready. No test writes a Pod's status.
//!
//! The manager runs as a ServiceAccount granted the roles config/rbac
//! grants the manager (role.yaml, what `opctl manifests` writes from the
//! `+opctl:rbac` markers; the leader-election and metrics-auth roles) by
//! impersonation, so a permission the markers lack fails the tests (tests/webhooks lets it, under envtest, put the CA of
//! `--webhook-self-signed` into the webhook configurations, which
//! cert-manager does on a cluster).

use std::time::Duration;

use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams,
};

use kube::ResourceExt;
use kube::api::{DeleteParams, PostParams};

use sidecarset::api::apps::v1alpha1::{INJECTED_ANNOTATION, SidecarSet};
use sidecarset::manager::conditions;

use process::{Manager, eventually, http_get};

mod cluster;
mod process;
mod webhooks;
// +opctl:scaffold:e2e-modules

/// The ServiceAccount the tests run the manager as, and its namespace.
const OPERATOR_ACCOUNT: &str = "sidecarset-e2e";
const OPERATOR_NAMESPACE: &str = "default";

/// Grants [`OPERATOR_ACCOUNT`] what config/rbac grants the manager's
/// ServiceAccount: the ClusterRole of role.yaml, the leader-election Role and the metrics-auth
/// ClusterRole, each under a name of its own (so a deployed manager keeps
/// its roles), and returns the user name to impersonate.
fn operator_account() -> String {
    run(async {
        let client = kube::Client::try_default().await?;
        let roles = [
            ("manager", include_str!("../config/rbac/role.yaml")),
            (
                "leader-election",
                include_str!("../config/rbac/leader_election_role.yaml"),
            ),
            (
                "metrics-auth",
                include_str!("../config/rbac/metrics_auth_role.yaml"),
            ),
        ];
        for (suffix, yaml) in roles {
            grant(&client, suffix, yaml).await?;
        }
        anyhow::Ok(())
    })
    .unwrap_or_else(|err| panic!("cannot grant the manager's RBAC: {err:#}"));
    format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_ACCOUNT}")
}

/// Applies the Role or ClusterRole in `yaml` as `<account>-<suffix>` and
/// binds it to [`OPERATOR_ACCOUNT`].
async fn grant(client: &kube::Client, suffix: &str, yaml: &str) -> anyhow::Result<()> {
    let mut role: DynamicObject = serde_saphyr::from_str(yaml)?;
    let cluster = role.types.as_ref().is_some_and(|t| t.kind == "ClusterRole");
    let (role_kind, binding_kind) = if cluster {
        ("ClusterRole", "ClusterRoleBinding")
    } else {
        ("Role", "RoleBinding")
    };
    let name = format!("{OPERATOR_ACCOUNT}-{suffix}");
    let namespace = (!cluster).then(|| OPERATOR_NAMESPACE.to_owned());
    role.metadata = ObjectMeta {
        name: Some(name.clone()),
        namespace: namespace.clone(),
        ..ObjectMeta::default()
    };
    let binding: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": binding_kind,
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": OPERATOR_NAMESPACE}],
    }))?;
    for object in [role, binding] {
        let types = object.types.clone().unwrap_or_default();
        let gvk = GroupVersionKind::try_from(&types)?;
        let resource = ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = match &namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let apply = PatchParams::apply(OPERATOR_ACCOUNT).force();
        api.patch(&name, &apply, &Patch::Apply(&object)).await?;
    }
    Ok(())
}

/// Runs `work` to completion on a runtime of its own (the tests may run
/// inside a tokio runtime).
fn run<T: Send + 'static>(
    work: impl Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(work)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the thread panicked"))?
}

impl Manager {
    /// Starts the manager as [`OPERATOR_ACCOUNT`], serving the webhooks
    /// (tests/webhooks), and waits until /readyz says ok.
    fn start(args: &[&str]) -> Manager {
        Manager::start_named("e2e", args)
    }

    /// [`Manager::start`] as the replica `name` (its POD_NAME: its identity
    /// in leader election and as the reporter of events).
    fn start_named(name: &str, args: &[&str]) -> Manager {
        let mut command = Manager::command();
        command
            // kube-rs sends every request as this user (`Impersonate-User`).
            .env("KUBE_RS_DEBUG_IMPERSONATE_USER", operator_account())
            .env_remove("KUBE_RS_DEBUG_IMPERSONATE_GROUP")
            .env("POD_NAME", name);
        webhooks::serve_locally(&mut command);
        // +opctl:scaffold:e2e-manager
        command.args(args);
        Manager::spawn(command)
    }
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn the_manager_serves_probes_and_metrics_and_stops_on_sigterm() {
    let client = cluster::client().await;
    let manager = Manager::start(&[]);
    let (status, _) = http_get(manager.health, "/healthz").expect("/healthz answers");
    assert_eq!(status, 200);

    // A reconcile shows in the metrics.
    let api: Api<SidecarSet> = Api::all(client);
    let name = "e2e-metrics";
    let object = cluster::sidecar_set(name, "e2e-metrics", &[("log", "busybox:1.36")]);
    cluster::create_fresh(&api, &object).await;
    cluster::wait_for_counts(&api, name, (0, 0, 0)).await;
    // The counts (0, 0, 0) can show before the reconcile that wrote them
    // is counted: wait for the count itself.
    let counter =
        r#"controller_runtime_reconcile_total{controller="sidecar_set",result="success"} "#;
    eventually(Duration::from_secs(30), "a successful reconcile", || {
        let (status, body) = http_get(manager.metrics, "/metrics").expect("/metrics answers");
        assert_eq!(status, 200, "{body}");
        let count = body.lines().find_map(|line| line.strip_prefix(counter));
        let count = count.and_then(|count| count.parse::<u64>().ok());
        count.is_some_and(|count| count >= 1)
    });

    webhooks::delete_and_wait(&api, name).await;
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

/// The holder of the Lease `name` in [`OPERATOR_NAMESPACE`], if any.
fn lease_holder(name: &str) -> Option<String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let name = name.to_owned();
    let lease = run(async move {
        let client = kube::Client::try_default().await?;
        let leases: Api<Lease> = Api::namespaced(client, OPERATOR_NAMESPACE);
        Ok(leases.get_opt(&name).await?)
    });
    let lease = lease.unwrap_or_else(|err| panic!("cannot read the Lease: {err:#}"));
    lease.and_then(|lease| lease.spec?.holder_identity)
}

#[test]
#[ignore = "needs a cluster: run `make test-e2e`"]
fn a_second_replica_is_ready_at_once_and_takes_over_when_the_first_stops() {
    // A Lease of this test's own, short so that the takeover is quick, and
    // long enough that a renewal refused by an injected fault (under `make
    // test-e2e-faults`) is tried again before the Lease runs out.
    let lease = format!("{}-rollout", OPERATOR_ACCOUNT);
    let flags = [
        "--leader-elect".to_owned(),
        format!("--leader-election-id={lease}"),
        format!("--leader-election-namespace={OPERATOR_NAMESPACE}"),
        "--leader-election-lease-duration-seconds=6".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let first = Manager::start_named("e2e-first", &flags);
    eventually(Duration::from_secs(30), "the first replica to lead", || {
        lease_holder(&lease).as_deref() == Some("e2e-first")
    });
    // Ready while the first one leads: a rolling update can go on.
    let second = Manager::start_named("e2e-second", &flags);
    assert_eq!(lease_holder(&lease).as_deref(), Some("e2e-first"));
    let exit = first.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the first replica exited with {exit}");
    eventually(
        Duration::from_secs(30),
        "the second replica to lead",
        || lease_holder(&lease).as_deref() == Some("e2e-second"),
    );
    let (status, _) = http_get(second.health, "/readyz").expect("/readyz answers");
    assert_eq!(status, 200);
    let exit = second.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the second replica exited with {exit}");
    // Given up on the way out, so that a next replica need not wait it out.
    assert_eq!(lease_holder(&lease), None);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn an_invalid_sidecar_set_is_refused_with_the_validating_webhooks_message() {
    let client = cluster::client().await;
    let manager = Manager::start(&[]);
    let api: Api<SidecarSet> = Api::all(client);
    let name = "e2e-invalid";
    let no_containers = cluster::sidecar_set(name, "e2e-invalid", &[]);
    let duplicates = cluster::sidecar_set(
        name,
        "e2e-invalid",
        &[("log", "busybox:1.36"), ("log", "busybox:1.37")],
    );
    let mut bad_selector = cluster::sidecar_set(name, "e2e-invalid", &[("log", "busybox:1.36")]);
    bad_selector.spec.selector = serde_json::from_value(serde_json::json!({
        "matchExpressions": [{"key": "app", "operator": "Exists", "values": ["web"]}],
    }))
    .expect("a LabelSelector");
    let mut bad_key = bad_selector.clone();
    bad_key.spec.selector = serde_json::from_value(serde_json::json!({
        "matchLabels": {"not a key": "web"},
    }))
    .expect("a LabelSelector");
    let cases = [
        (
            no_containers,
            "spec.containers: Required value: a SidecarSet needs at least one container to inject",
        ),
        (
            duplicates,
            "spec.containers[1].name: Duplicate value: \"log\"",
        ),
        (
            bad_selector,
            "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when \
             `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            bad_key,
            "spec.selector.matchLabels: Invalid value: \"not a key\": name part must consist of \
             alphanumeric characters",
        ),
    ];
    for (object, expected) in cases {
        let err = api
            .create(&PostParams::default(), &object)
            .await
            .expect_err("the validating webhook refuses the SidecarSet");
        let (code, message) = webhooks::api_error(err);
        assert_eq!(code, 403, "{message}");
        let prefix = format!(
            "admission webhook \"{}\" denied the request: ",
            cluster::VALIDATING_WEBHOOK
        );
        assert!(
            message.starts_with(&format!("{prefix}{expected}")),
            "expected {expected:?}, got {message:?}"
        );
    }
    assert!(api.get_opt(name).await.expect("read").is_none());
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_valid_sidecar_set_is_defaulted() {
    let client = cluster::client().await;
    let manager = Manager::start(&[]);
    let api: Api<SidecarSet> = Api::all(client);
    let name = "e2e-defaulted";
    let object = cluster::sidecar_set(
        name,
        "e2e-defaulted",
        &[("log", "busybox:1.36"), ("proxy", "envoyproxy/envoy")],
    );
    let created = cluster::create_fresh(&api, &object).await;
    let stored = api.get(name).await.expect("read the SidecarSet");
    assert_eq!(stored.spec, created.spec);
    let defaults: Vec<(Option<&str>, Option<&str>, Option<&str>)> = stored
        .spec
        .containers
        .iter()
        .map(|c| {
            (
                c.image_pull_policy.as_deref(),
                c.termination_message_path.as_deref(),
                c.termination_message_policy.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        defaults,
        [
            (
                Some("IfNotPresent"),
                Some("/dev/termination-log"),
                Some("File")
            ),
            (Some("Always"), Some("/dev/termination-log"), Some("File")),
        ],
        "a tagged image is pulled if not present, an untagged one (latest) always"
    );
    webhooks::delete_and_wait(&api, name).await;
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_matching_pod_gets_the_sidecars_once_and_other_pods_are_untouched() {
    let client = cluster::client().await;
    let manager = Manager::start(&[]);
    let sets: Api<SidecarSet> = Api::all(client.clone());
    let namespace = "e2e-inject";
    let pods = cluster::fresh_namespace(&client, namespace).await;
    let log = cluster::sidecar_set("e2e-inject-log", "e2e-web", &[("log", "busybox:1.36")]);
    let proxy = cluster::sidecar_set(
        "e2e-inject-proxy",
        "e2e-web",
        &[("proxy", "envoyproxy/envoy:v1.30.1")],
    );
    let other = cluster::sidecar_set("e2e-inject-other", "e2e-api", &[("other", "busybox:1.36")]);
    for set in [&proxy, &log, &other] {
        cluster::create_fresh(&sets, set).await;
    }

    // A matching Pod gets both SidecarSets' containers, after its own, as
    // defaulted in the SidecarSet, and the annotation names both.
    let created = pods
        .create(&PostParams::default(), &cluster::pod("web", "e2e-web"))
        .await
        .expect("create a matching Pod");
    let expected = [
        ("app", "registry.k8s.io/pause:3.10"),
        ("log", "busybox:1.36"),
        ("proxy", "envoyproxy/envoy:v1.30.1"),
    ]
    .map(|(n, i)| (n.to_owned(), i.to_owned()));
    assert_eq!(cluster::containers(&created), expected);
    let annotations = created.annotations();
    assert_eq!(
        annotations.get(INJECTED_ANNOTATION).map(String::as_str),
        Some("e2e-inject-log,e2e-inject-proxy")
    );
    let spec = created.spec.as_ref().expect("a spec");
    assert_eq!(
        spec.containers[1].image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
    let stored = pods.get("web").await.expect("read the Pod");
    assert_eq!(cluster::containers(&stored), expected);

    // A Pod made from the injected Pod's manifest is not injected again.
    let mut copy = cluster::pod("web-copy", "e2e-web");
    copy.spec = created.spec.clone();
    copy.metadata.annotations = created.metadata.annotations.clone();
    let copy = pods
        .create(&PostParams::default(), &copy)
        .await
        .expect("create a copy of the injected Pod");
    assert_eq!(cluster::containers(&copy), expected);
    assert_eq!(copy.annotations(), created.annotations());

    // A Pod no SidecarSet selects is untouched.
    let plain = pods
        .create(&PostParams::default(), &cluster::pod("plain", "e2e-plain"))
        .await
        .expect("create a Pod no SidecarSet selects");
    assert_eq!(
        cluster::containers(&plain),
        [("app".to_owned(), "registry.k8s.io/pause:3.10".to_owned())]
    );
    assert!(!plain.annotations().contains_key(INJECTED_ANNOTATION));

    cluster::remove_namespace(&client, namespace).await;
    for set in [&log, &proxy, &other] {
        webhooks::delete_and_wait(&sets, &set.name_any()).await;
    }
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn the_status_counts_follow_the_pods() {
    let client = cluster::client().await;
    let manager = Manager::start(&[]);
    let sets: Api<SidecarSet> = Api::all(client.clone());
    let namespace = "e2e-status";
    let pods = cluster::fresh_namespace(&client, namespace).await;
    let name = "e2e-status";
    let object = cluster::sidecar_set(name, "e2e-counted", &[("log", "busybox:1.36")]);
    cluster::create_fresh(&sets, &object).await;
    cluster::wait_for_counts(&sets, name, (0, 0, 0)).await;

    // Created: matched and updated (injected), not ready.
    for pod in ["one", "two"] {
        pods.create(&PostParams::default(), &cluster::pod(pod, "e2e-counted"))
            .await
            .expect("create a Pod");
    }
    cluster::wait_for_counts(&sets, name, (2, 2, 0)).await;

    // Let run, one after the other: ready when the kubelet says so.
    cluster::release(&pods, "one").await;
    cluster::wait_for_counts(&sets, name, (2, 2, 1)).await;
    cluster::release(&pods, "two").await;
    let status = cluster::wait_for_counts(&sets, name, (2, 2, 2)).await;
    assert_eq!(status.updated_ready_pods, 2);
    assert!(conditions::is_true(&status.conditions, conditions::READY));

    // A new sidecar image: the existing Pods are no longer up to date, a new
    // Pod gets the new image.
    let patch =
        serde_json::json!({"spec": {"containers": [{"name": "log", "image": "busybox:1.37"}]}});
    sets.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("change the sidecar image");
    let status = cluster::wait_for_counts(&sets, name, (2, 0, 2)).await;
    assert!(!conditions::is_true(&status.conditions, conditions::READY));
    let three = pods
        .create(
            &PostParams::default(),
            &cluster::pod("three", "e2e-counted"),
        )
        .await
        .expect("create a Pod");
    assert!(cluster::containers(&three).contains(&("log".to_owned(), "busybox:1.37".to_owned())));
    cluster::wait_for_counts(&sets, name, (3, 1, 2)).await;

    // Not ready any more (its app container crash-loops), then deleted.
    cluster::break_app_container(&pods, "one").await;
    cluster::wait_for_counts(&sets, name, (3, 1, 1)).await;
    pods.delete("one", &DeleteParams::default())
        .await
        .expect("delete a Pod");
    cluster::wait_for_counts(&sets, name, (2, 1, 1)).await;
    pods.delete("three", &DeleteParams::default())
        .await
        .expect("delete a Pod");
    cluster::wait_for_counts(&sets, name, (1, 0, 1)).await;

    // Relabelled out of the selector: no longer matched.
    let patch = serde_json::json!({"metadata": {"labels": {"app": "e2e-elsewhere"}}});
    pods.patch("two", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("relabel a Pod");
    cluster::wait_for_counts(&sets, name, (0, 0, 0)).await;

    cluster::remove_namespace(&client, namespace).await;
    webhooks::delete_and_wait(&sets, name).await;
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn kubectl_get_sidecarsets_prints_the_counts() {
    let client = cluster::client().await;
    let manager = Manager::start(&[]);
    let sets: Api<SidecarSet> = Api::all(client.clone());
    let namespace = "e2e-columns";
    let pods = cluster::fresh_namespace(&client, namespace).await;
    let name = "e2e-columns";
    let object = cluster::sidecar_set(name, "e2e-columns", &[("log", "busybox:1.36")]);
    cluster::create_fresh(&sets, &object).await;
    for pod in ["one", "two", "three"] {
        pods.create(&PostParams::default(), &cluster::pod(pod, "e2e-columns"))
            .await
            .expect("create a Pod");
    }
    cluster::release(&pods, "two").await;
    cluster::wait_for_counts(&sets, name, (3, 3, 1)).await;

    let output = cluster::kubectl(&["get", "sidecarsets", name]);
    let lines: Vec<Vec<&str>> = output
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 2, "{output}");
    assert_eq!(
        lines[0],
        ["NAME", "MATCHED", "UPDATED", "READY", "AGE"],
        "{output}"
    );
    assert_eq!(lines[1][..4], [name, "3", "3", "1"], "{output}");
    assert!(
        lines[1][4].ends_with('s') || lines[1][4].ends_with('m'),
        "{output}"
    );
    // The short name works too.
    let short = cluster::kubectl(&["get", "ss", name, "--no-headers"]);
    assert_eq!(
        short.split_whitespace().take(4).collect::<Vec<_>>(),
        [name, "3", "3", "1"]
    );

    cluster::remove_namespace(&client, namespace).await;
    webhooks::delete_and_wait(&sets, name).await;
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

/// With the webhook server stopped (under envtest the tests' manager, on a
/// cluster the deployed one, scaled to zero), Pod creation follows the Pod
/// webhook's failure policy: `Ignore`, as shipped, creates the Pod without
/// sidecars; `Fail`, set for this test in the installed configuration,
/// refuses it. The shipped policy is restored before anything else.
#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn with_the_webhook_server_stopped_pod_creation_follows_the_failure_policy() {
    let client = cluster::client().await;
    let manager = Manager::start(&[]);
    let sets: Api<SidecarSet> = Api::all(client.clone());
    let namespace = "e2e-failure-policy";
    let pods = cluster::fresh_namespace(&client, namespace).await;
    let name = "e2e-failure-policy";
    let object = cluster::sidecar_set(name, "e2e-failure-policy", &[("log", "busybox:1.36")]);
    cluster::create_fresh(&sets, &object).await;
    assert_eq!(cluster::pod_webhook_failure_policy(&client).await, "Ignore");

    // Stop the webhook server.
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
    if cluster::existing_cluster() {
        cluster::scale_deployed_manager(&client, 0).await;
    }

    let ignored = pods
        .create(
            &PostParams::default(),
            &cluster::pod("ignored", "e2e-failure-policy"),
        )
        .await;
    cluster::set_pod_webhook_failure_policy(&client, &pods, "Fail").await;
    let failed = pods
        .create(
            &PostParams::default(),
            &cluster::pod("failed", "e2e-failure-policy"),
        )
        .await;
    cluster::set_pod_webhook_failure_policy(&client, &pods, "Ignore").await;

    // Start it again.
    if cluster::existing_cluster() {
        cluster::scale_deployed_manager(&client, 1).await;
    }
    let manager = Manager::start(&[]);

    let ignored = ignored.expect("failurePolicy=Ignore: the Pod is created");
    assert_eq!(
        cluster::containers(&ignored),
        [("app".to_owned(), "registry.k8s.io/pause:3.10".to_owned())],
        "failurePolicy=Ignore: the Pod has no sidecar"
    );
    assert!(!ignored.annotations().contains_key(INJECTED_ANNOTATION));
    let (code, message) =
        webhooks::api_error(failed.expect_err("failurePolicy=Fail: the Pod is refused"));
    assert_eq!(code, 500, "{message}");
    let expected = format!("failed calling webhook \"{}\"", cluster::POD_WEBHOOK);
    assert!(message.contains(&expected), "{message}");
    assert!(pods.get_opt("failed").await.expect("read").is_none());

    // The Pod that missed its sidecar shows in the status.
    let status = cluster::wait_for_counts(&sets, name, (1, 0, 0)).await;
    let ready = conditions::find(&status.conditions, conditions::READY).expect("a Ready condition");
    assert_eq!(ready.reason, "PodsNotUpdated");

    cluster::remove_namespace(&client, namespace).await;
    webhooks::delete_and_wait(&sets, name).await;
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

// +opctl:scaffold:e2e
