//! Admission webhooks called by the envtest server, end to end: real HTTPS
//! webhook servers (rcgen + rustls), configurations created through kube-rs,
//! and the requests they admit sent through the server's HTTP API: mutation,
//! denial, failure policy, dry run, ordering, selectors, updates, deletes and
//! subresources, bad answers. Custom resources, `matchPolicy`, Service
//! routing and configuration writes: `webhooks_crd_and_routes.rs`.

#[allow(dead_code)]
mod admission_support;
#[allow(dead_code)]
mod support;
#[allow(dead_code)]
mod webhook_env;

use std::time::Duration;

use admission_support::fixtures::{
    add_label, hook, labels_of, mutating, url_client, validating, with,
};
use admission_support::{Pki, Reply, WebhookServer, closed_port};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use opctl_envtest::Config;
use serde_json::{Value, json};
use support::http::{Http, HttpRequest};
use webhook_env::{add_mutating, add_validating, api_error, denying, namespace, pod, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_create_is_mutated_and_defaulted_again() {
    let pki = Pki::new();
    // Adds a label and a sidecar container with nothing but a name and an image.
    let webhook = WebhookServer::start(&pki, |review| {
        Reply::patch(
            review,
            json!([
                {"op": "add", "path": "/metadata/labels/injected", "value": "yes"},
                {"op": "add", "path": "/spec/containers/-", "value": {"name": "sidecar", "image": "busybox:1.36"}},
            ]),
        )
    })
    .await;
    let (_env, client) = start(Config::default()).await;
    add_mutating(
        &client,
        mutating(
            "inject",
            vec![hook(
                "inject.example.com",
                url_client(&webhook, &pki, "/mutate"),
            )],
        ),
    )
    .await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("p1"))
        .await
        .expect("admitted");
    let created = serde_json::to_value(created).expect("json");
    assert_eq!(
        labels_of(&created),
        json!({"app": "web", "injected": "yes"})
    );
    // The injected container is defaulted as if the client had sent it.
    let sidecar = &created["spec"]["containers"][1];
    assert_eq!(sidecar["name"], "sidecar");
    assert_eq!(sidecar["imagePullPolicy"], "IfNotPresent");
    assert_eq!(sidecar["terminationMessagePath"], "/dev/termination-log");
    let stored = serde_json::to_value(pods.get("p1").await.expect("stored")).expect("json");
    assert_eq!(stored["spec"]["containers"][1]["name"], "sidecar");

    let received = webhook.received();
    assert_eq!(received.len(), 1);
    let request = &received[0].review["request"];
    assert_eq!(received[0].uri, "/mutate?timeout=10s");
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(request["namespace"], "default");
    assert_eq!(request["name"], "p1");
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["options"]["kind"], "CreateOptions");
    // The webhook sees the object defaulted, before the server's create-time preparation.
    assert_eq!(
        request["object"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert!(request["object"]["metadata"].get("uid").is_none());
}

/// kube-apiserver runs its own admission plugins (ServiceAccount, Priority,
/// DefaultTolerationSeconds) before the mutating webhooks, and once more
/// when a webhook changed the object: a webhook sees the Pod with its
/// service account token mounted, and a container it injects gets the token
/// too (the same volume, not a second one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_see_a_pod_after_the_servers_admission_plugins_which_run_again_after_them() {
    const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let pki = Pki::new();
    let webhook = WebhookServer::start(&pki, |review| {
        Reply::patch(
            review,
            json!([{"op": "add", "path": "/spec/containers/-", "value": {"name": "sidecar", "image": "busybox:1.36"}}]),
        )
    })
    .await;
    let (_env, client) = start(Config::default()).await;
    add_mutating(
        &client,
        mutating(
            "inject",
            vec![hook(
                "inject.example.com",
                url_client(&webhook, &pki, "/mutate"),
            )],
        ),
    )
    .await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("p1"))
        .await
        .expect("admitted");

    let received = webhook.received();
    assert_eq!(
        received.len(),
        1,
        "a webhook with reinvocationPolicy Never is called once"
    );
    let seen = &received[0].review["request"]["object"]["spec"];
    assert_eq!(seen["serviceAccountName"], "default");
    assert_eq!(seen["priority"], 0);
    let tolerations = seen["tolerations"].as_array().expect("default tolerations");
    assert_eq!(tolerations.len(), 2, "{tolerations:?}");
    let volumes = seen["volumes"].as_array().expect("the token volume");
    assert_eq!(volumes.len(), 1);
    let token = volumes[0]["name"].as_str().expect("a name");
    assert!(token.starts_with("kube-api-access-"), "{token}");
    let token_mount = json!([{"name": token, "readOnly": true, "mountPath": TOKEN_PATH}]);
    assert_eq!(seen["containers"][0]["volumeMounts"], token_mount);

    let created = serde_json::to_value(created).expect("json");
    let spec = &created["spec"];
    assert_eq!(spec["volumes"].as_array().map(Vec::len), Some(1));
    assert_eq!(spec["volumes"][0]["name"], token);
    assert_eq!(spec["containers"][0]["volumeMounts"], token_mount);
    assert_eq!(spec["containers"][1]["name"], "sidecar");
    assert_eq!(spec["containers"][1]["volumeMounts"], token_mount);
    assert_eq!(spec["tolerations"].as_array().map(Vec::len), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_reaches_the_client_with_the_webhooks_code_message_and_warnings() {
    let pki = Pki::new();
    let webhook = WebhookServer::start(&pki, |review| {
        Reply::response(
            review,
            json!({
                "allowed": false,
                "status": {"code": 403, "message": "pods named p-denied are not welcome", "reason": "Forbidden"},
                "warnings": ["checked by the policy webhook"],
            }),
        )
    })
    .await;
    let (env, client) = start(Config::default()).await;
    add_validating(
        &client,
        validating(
            "policy",
            vec![hook(
                "policy.example.com",
                url_client(&webhook, &pki, "/validate"),
            )],
        ),
    )
    .await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let err = api_error(pods.create(&PostParams::default(), &pod("p-denied")).await);
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, "Forbidden");
    assert_eq!(
        err.message,
        "admission webhook \"policy.example.com\" denied the request: pods named p-denied are not welcome"
    );
    assert!(pods.get_opt("p-denied").await.expect("get").is_none());

    // The webhook's warnings come as Warning headers, with the error.
    let http = Http::new(&env.base_url());
    let body = serde_json::to_value(pod("p-denied")).expect("json");
    let response = http
        .send(
            &HttpRequest::new("POST", "/api/v1/namespaces/default/pods").json(&body),
            Duration::from_secs(20),
        )
        .await
        .expect("answer");
    assert_eq!(response.status, 403);
    assert_eq!(
        response.warnings,
        vec!["299 - \"checked by the policy webhook\"".to_string()]
    );
    let status = response.json().expect("a Status");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policy_decides_when_the_webhook_is_down() {
    let pki = Pki::new();
    let port = closed_port().await;
    let down =
        json!({"url": format!("https://127.0.0.1:{port}/validate"), "caBundle": pki.ca_bundle()});
    let (_env, client) = start(Config::default()).await;
    add_validating(
        &client,
        validating(
            "down",
            vec![with(
                with(
                    hook("down.example.com", down),
                    "failurePolicy",
                    json!("Fail"),
                ),
                "objectSelector",
                json!({"matchLabels": {"policy": "fail"}}),
            )],
        ),
    )
    .await;
    add_validating(
        &client,
        validating(
            "down-ignored",
            vec![with(
                with(
                    hook(
                        "ignored.example.com",
                        json!({"url": format!("https://127.0.0.1:{port}/validate"), "caBundle": pki.ca_bundle()}),
                    ),
                    "failurePolicy",
                    json!("Ignore"),
                ),
                "objectSelector",
                json!({"matchLabels": {"policy": "ignore"}}),
            )],
        ),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    let mut failing = pod("fails");
    failing
        .metadata
        .labels
        .get_or_insert_default()
        .insert("policy".into(), "fail".into());
    let err = api_error(pods.create(&PostParams::default(), &failing).await);
    assert_eq!(err.code, 500);
    assert_eq!(err.reason, "InternalError");
    assert!(
        err.message.starts_with(&format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/validate?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )),
        "{}",
        err.message
    );

    let mut ignored = pod("ignored");
    ignored
        .metadata
        .labels
        .get_or_insert_default()
        .insert("policy".into(), "ignore".into());
    pods.create(&PostParams::default(), &ignored)
        .await
        .expect("failurePolicy Ignore admits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_is_passed_to_webhooks_and_nothing_is_stored() {
    let pki = Pki::new();
    let webhook = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("seen", "yes"))).await;
    let (_env, client) = start(Config::default()).await;
    add_mutating(
        &client,
        mutating(
            "dry",
            vec![hook("dry.example.com", url_client(&webhook, &pki, "/"))],
        ),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let created = pods.create(&params, &pod("dry")).await.expect("dry run");
    assert_eq!(
        created
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("seen"))
            .map(String::as_str),
        Some("yes")
    );
    assert!(pods.get_opt("dry").await.expect("get").is_none());
    let request = &webhook.received()[0].review["request"];
    assert_eq!(request["dryRun"], true);
    assert_eq!(request["options"]["dryRun"], json!(["All"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhooks_run_in_order_and_validating_ones_see_the_result() {
    let pki = Pki::new();
    let first = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("first", "1"))).await;
    let second = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("second", "2"))).await;
    let check = WebhookServer::start(&pki, Reply::allow).await;
    let (_env, client) = start(Config::default()).await;
    // Configurations run in name order whatever order they were created in.
    add_validating(
        &client,
        validating(
            "a-check",
            vec![hook("check.example.com", url_client(&check, &pki, "/"))],
        ),
    )
    .await;
    add_mutating(
        &client,
        mutating(
            "b-second",
            vec![hook("second.example.com", url_client(&second, &pki, "/"))],
        ),
    )
    .await;
    add_mutating(
        &client,
        mutating(
            "a-first",
            vec![hook("first.example.com", url_client(&first, &pki, "/"))],
        ),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod("ordered"))
        .await
        .expect("admitted");
    assert_eq!(
        labels_of(&second.received()[0].review["request"]["object"]),
        json!({"app": "web", "first": "1"})
    );
    let validated = &check.received()[0].review["request"]["object"];
    assert_eq!(
        labels_of(validated),
        json!({"app": "web", "first": "1", "second": "2"})
    );
    // Validation runs after the server's own create-time preparation.
    assert!(validated["metadata"]["uid"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_and_object_selectors_choose_the_requests() {
    let pki = Pki::new();
    let webhook = WebhookServer::start(&pki, denying("namespace is guarded", 403)).await;
    let (_env, client) = start(Config::default()).await;
    namespace(&client, "guarded", json!({"webhooks": "on"})).await;
    namespace(&client, "free", json!({})).await;
    add_validating(
        &client,
        validating(
            "guard",
            vec![with(
                with(
                    hook("guard.example.com", url_client(&webhook, &pki, "/")),
                    "namespaceSelector",
                    json!({"matchLabels": {"webhooks": "on"}}),
                ),
                "objectSelector",
                json!({"matchExpressions": [{"key": "exempt", "operator": "DoesNotExist"}]}),
            )],
        ),
    )
    .await;
    let guarded: Api<Pod> = Api::namespaced(client.clone(), "guarded");
    let err = api_error(guarded.create(&PostParams::default(), &pod("p")).await);
    assert!(
        err.message.ends_with("namespace is guarded"),
        "{}",
        err.message
    );
    let mut exempt = pod("exempt");
    exempt
        .metadata
        .labels
        .get_or_insert_default()
        .insert("exempt".into(), "true".into());
    guarded
        .create(&PostParams::default(), &exempt)
        .await
        .expect("objectSelector leaves it out");
    let free: Api<Pod> = Api::namespaced(client.clone(), "free");
    free.create(&PostParams::default(), &pod("p"))
        .await
        .expect("namespaceSelector leaves it out");
    assert_eq!(webhook.calls(), 1);

    // Labelling the namespace brings it under the webhook at once.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .patch(
            "free",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"webhooks": "on"}}})),
        )
        .await
        .expect("labelled");
    let err = api_error(free.create(&PostParams::default(), &pod("q")).await);
    assert_eq!(err.code, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_deletes_and_subresources_are_admitted() {
    let pki = Pki::new();
    // Denies deleting Pods labelled keep=true; records everything.
    let webhook = WebhookServer::start(&pki, |review| {
        let request = &review["request"];
        let keep = request["oldObject"]["metadata"]["labels"]["keep"] == "true";
        if request["operation"] == "DELETE" && keep {
            Reply::deny(review, json!({"message": "this Pod is kept"}))
        } else {
            Reply::allow(review)
        }
    })
    .await;
    let (_env, client) = start(Config {
        // Only the test's own requests are counted: no simulated kubelet
        // writes Pod statuses here.
        simulation: opctl_envtest::Simulation::off(),
        ..Config::default()
    })
    .await;
    let rules = json!([
        {"operations": ["UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "pods/status"]},
        {"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/scale"]},
    ]);
    add_validating(
        &client,
        validating(
            "lifecycle",
            vec![with(
                hook("lifecycle.example.com", url_client(&webhook, &pki, "/")),
                "rules",
                rules,
            )],
        ),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut kept = pod("kept");
    kept.metadata
        .labels
        .get_or_insert_default()
        .insert("keep".into(), "true".into());
    pods.create(&PostParams::default(), &kept)
        .await
        .expect("CREATE is not in the rules");
    assert_eq!(webhook.calls(), 0);

    pods.patch_status(
        "kept",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .expect("status update admitted");
    let status_call = &webhook.received()[0].review["request"];
    assert_eq!(status_call["operation"], "UPDATE");
    assert_eq!(status_call["subResource"], "status");
    assert_eq!(status_call["options"]["kind"], "UpdateOptions");
    assert_eq!(status_call["object"]["status"]["phase"], "Running");
    assert_eq!(status_call["oldObject"]["status"]["phase"], "Pending");

    let err = api_error(pods.delete("kept", &DeleteParams::default()).await);
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "admission webhook \"lifecycle.example.com\" denied the request: this Pod is kept"
    );
    assert!(pods.get_opt("kept").await.expect("get").is_some());
    let delete_call = &webhook.received()[1].review["request"];
    assert_eq!(delete_call["operation"], "DELETE");
    assert_eq!(delete_call["object"], Value::Null);
    assert_eq!(delete_call["oldObject"]["metadata"]["name"], "kept");
    assert_eq!(delete_call["options"]["kind"], "DeleteOptions");

    // A /scale write is admitted as the autoscaling/v1 Scale it is.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}},
        },
    }))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scaled");
    let scale_call = &webhook.received()[2].review["request"];
    assert_eq!(
        scale_call["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(scale_call["resource"]["resource"], "deployments");
    assert_eq!(scale_call["subResource"], "scale");
    assert_eq!(scale_call["object"]["spec"]["replicas"], 3);
    assert_eq!(scale_call["oldObject"]["spec"]["replicas"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_answers_and_slow_webhooks_fail_the_request() {
    let pki = Pki::new();
    // Answers by the Pod's "answer" label: malformed JSON, a wrong uid, or late.
    let webhook = WebhookServer::start(
        &pki,
        |review| match review["request"]["object"]["metadata"]["labels"]["answer"].as_str() {
            Some("malformed") => Reply::raw(200, Some("application/json"), "not json"),
            Some("wrong-uid") => {
                Reply::response(review, json!({"uid": "not-the-uid", "allowed": true}))
            }
            Some("late") => Reply::allow(review).after(Duration::from_secs(3)),
            _ => Reply::allow(review),
        },
    )
    .await;
    let (_env, client) = start(Config::default()).await;
    add_validating(
        &client,
        validating(
            "picky",
            vec![with(
                hook("picky.example.com", url_client(&webhook, &pki, "/v")),
                "timeoutSeconds",
                json!(1),
            )],
        ),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let create = |answer: &str| {
        let mut p = pod(answer);
        p.metadata
            .labels
            .get_or_insert_default()
            .insert("answer".into(), answer.into());
        p
    };
    let prefix = "Internal error occurred: failed calling webhook \"picky.example.com\": ";
    let reason = |err: kube::core::Status| -> String {
        assert_eq!(err.code, 500, "{}", err.message);
        err.message
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("unexpected message {:?}", err.message))
            .to_string()
    };

    let err = api_error(
        pods.create(&PostParams::default(), &create("malformed"))
            .await,
    );
    assert_eq!(
        reason(err),
        "failed to call webhook: couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u')"
    );
    let err = api_error(
        pods.create(&PostParams::default(), &create("wrong-uid"))
            .await,
    );
    assert!(
        reason(err).starts_with("received invalid webhook response: expected response.uid="),
        "wrong uid"
    );
    // The webhook would allow after 3 s: the request failed at timeoutSeconds.
    let err = api_error(pods.create(&PostParams::default(), &create("late")).await);
    assert_eq!(
        reason(err),
        format!(
            "failed to call webhook: Post \"https://127.0.0.1:{}/v?timeout=1s\": context deadline exceeded",
            webhook.port
        )
    );
    pods.create(&PostParams::default(), &create("fine"))
        .await
        .expect("a good answer admits");
    for name in ["malformed", "wrong-uid", "late"] {
        assert!(
            pods.get_opt(name).await.expect("get").is_none(),
            "{name} stored"
        );
    }
}

/// A webhook is told who asks: envtest's administrator, or the user a
/// request impersonates (with the groups kube-apiserver gives it), on
/// creates and deletes alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_see_the_impersonated_user() {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};

    let pki = Pki::new();
    let webhook = WebhookServer::start(&pki, Reply::allow).await;
    let (env, admin) = start(Config {
        // Only the test's own requests are counted: no simulated kubelet
        // writes Pod statuses here.
        simulation: opctl_envtest::Simulation::off(),
        ..Config::default()
    })
    .await;
    let rules = json!([{"operations": ["CREATE", "DELETE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["pods"]}]);
    add_validating(
        &admin,
        validating(
            "who",
            vec![with(
                hook("who.example.com", url_client(&webhook, &pki, "/")),
                "rules",
                rules,
            )],
        ),
    )
    .await;
    let role: ClusterRole = serde_json::from_value(json!({"metadata": {"name": "pods"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete"]}]}))
    .expect("role");
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("role");
    let binding: ClusterRoleBinding =
        serde_json::from_value(json!({"metadata": {"name": "bot-pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pods"},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]}))
        .expect("binding");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");

    Api::<Pod>::namespaced(admin, "default")
        .create(&PostParams::default(), &pod("by-admin"))
        .await
        .expect("the administrator creates");
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    config.auth_info.impersonate = Some("system:serviceaccount:default:bot".to_owned());
    let bot: Api<Pod> = Api::namespaced(kube::Client::try_from(config).expect("client"), "default");
    bot.create(&PostParams::default(), &pod("by-bot"))
        .await
        .expect("the account creates");
    bot.delete("by-bot", &DeleteParams::default())
        .await
        .expect("the account deletes");

    let users: Vec<Value> = webhook
        .received()
        .iter()
        .map(|call| call.review["request"]["userInfo"].clone())
        .collect();
    let bot_user = json!({"username": "system:serviceaccount:default:bot", "groups": [
        "system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]});
    assert_eq!(
        users,
        [
            json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}),
            bot_user.clone(),
            bot_user,
        ]
    );
}
