//! ValidatingAdmissionPolicies through real clients (kube-rs and kubectl)
//! against one envtest server: writing policies and bindings (defaults,
//! validation, kubectl columns, `kubectl apply`, status), and the requests they admit or refuse:
//! Deny with message and messageExpression (creates, updates, deletes, dry
//! runs), Warn, Audit, params, selectors and matchConditions, failurePolicy,
//! custom resources and impersonated users. Each test selects only its own namespace (label `vap-test`), so
//! the tests share the server.

#[allow(dead_code)]
#[path = "support/kube.rs"]
mod kube_support;
#[allow(dead_code)]
#[path = "support/kubectl.rs"]
mod kubectl_support;
#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Error};
use serde_json::{Value, json};

use kube_support::{api_status, client_for, install_crd};
use kubectl_support::Kubectl;

/// A client of the shared server and a fresh namespace labelled
/// `vap-test: <namespace>` for the test's policies to select.
async fn setup(prefix: &str) -> (Client, String) {
    let shared = server::shared();
    let yaml = std::fs::read_to_string(&shared.kubeconfig).expect("kubeconfig");
    let client = client_for(&yaml).await;
    let ns = server::unique_name(prefix);
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns, "labels": {"vap-test": ns}}}))
            .expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");
    (client, ns)
}

fn kubectl() -> Kubectl {
    Kubectl::new(&server::shared().kubeconfig)
}

/// Resource rules for `resources` of `group`/v1 on `operations`.
fn rules(group: &str, resources: &[&str], operations: &[&str]) -> Value {
    json!([{"apiGroups": [group], "apiVersions": ["v1"], "resources": resources,
        "operations": operations}])
}

/// A policy on ConfigMaps in namespace `ns`, with the rest of the spec from `extra`.
fn policy(name: &str, ns: &str, resource_rules: Value, extra: Value) -> Value {
    let mut spec = json!({"matchConstraints": {
        "resourceRules": resource_rules,
        "namespaceSelector": {"matchLabels": {"vap-test": ns}}}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

async fn create_policy(client: &Client, policy: Value) -> ValidatingAdmissionPolicy {
    let typed: ValidatingAdmissionPolicy = serde_json::from_value(policy).expect("a policy");
    Api::<ValidatingAdmissionPolicy>::all(client.clone())
        .create(&PostParams::default(), &typed)
        .await
        .expect("policy stored")
}

async fn bind(client: &Client, name: &str, spec: Value) {
    let typed: ValidatingAdmissionPolicyBinding =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .expect("a binding");
    Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
        .create(&PostParams::default(), &typed)
        .await
        .expect("binding stored");
}

fn config_map(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("configmap")
}

/// Waits (20 s at most) until the policy `name` satisfies `condition`.
async fn eventually(
    api: Api<ValidatingAdmissionPolicy>,
    name: &str,
    condition: impl kube::runtime::wait::Condition<ValidatingAdmissionPolicy>,
) {
    let wait = kube::runtime::wait::await_condition(api, name, condition);
    tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("the status of {name} did not catch up within 20 s"))
        .unwrap_or_else(|e| panic!("waiting for {name}: {e}"));
}

fn api_error<T: std::fmt::Debug>(result: Result<T, Error>) -> kube::core::Status {
    *api_status(result)
}

#[tokio::test]
async fn policies_and_bindings_are_validated_defaulted_and_listed() {
    let (client, ns) = setup("vap-write").await;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let bad: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "bad-policy"},
        "spec": {"failurePolicy": "Sometimes", "validations": [
            {"expression": "object.data.size( > 1"}, {"expression": "true", "reason": "Teapot"}]}
    }))
    .expect("policy");
    let status = api_error(policies.create(&PostParams::default(), &bad).await);
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let causes: Vec<(String, String)> = status
        .details
        .expect("details")
        .causes
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect();
    let fields: Vec<&str> = causes.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.failurePolicy",
            "spec.matchConstraints",
            "spec.validations[0].expression",
            "spec.validations[1].reason",
        ]
    );
    assert!(
        causes[2].1.starts_with(
            "Invalid value: \"object.data.size( > 1\": compilation failed: ERROR: <input>:1:"
        ),
        "{causes:?}"
    );
    assert!(status.message.starts_with(
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"bad-policy\" is invalid: ["
    ));

    // Defaults as the v1 API fills them.
    let stored = create_policy(
        &client,
        policy(
            "write-ok",
            &ns,
            rules("", &["configmaps"], &["CREATE"]),
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "validations": [{"expression": "true"}]}),
        ),
    )
    .await;
    let stored = serde_json::to_value(stored).expect("json");
    assert_eq!(stored["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        stored["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(
        stored["spec"]["matchConstraints"]["objectSelector"],
        json!({})
    );
    assert_eq!(
        stored["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );
    assert_eq!(stored["metadata"]["generation"], 1);
    // The status controller catches up with each generation.
    let observed = |generation: i64| {
        move |p: Option<&ValidatingAdmissionPolicy>| {
            p.and_then(|p| p.status.as_ref()).is_some_and(|s| {
                s.observed_generation == Some(generation) && s.type_checking.is_some()
            })
        }
    };
    let policies_api: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    eventually(policies_api.clone(), "write-ok", observed(1)).await;
    let more = Patch::Merge(
        json!({"spec": {"validations": [{"expression": "true"}, {"expression": "1 < 2"}]}}),
    );
    let patched = policies_api
        .patch("write-ok", &PatchParams::default(), &more)
        .await
        .expect("patched");
    assert_eq!(patched.metadata.generation, Some(2));
    eventually(policies_api, "write-ok", observed(2)).await;

    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    let bad: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": "bad-binding"},
        "spec": {"validationActions": ["Deny", "Warn"],
            "paramRef": {"name": "limits", "selector": {}, "parameterNotFoundAction": "Allow"}}
    }))
    .expect("binding");
    let status = api_error(bindings.create(&PostParams::default(), &bad).await);
    assert_eq!(status.code, 422);
    let messages: Vec<String> = status
        .details
        .expect("details")
        .causes
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    assert_eq!(
        messages,
        [
            "spec.policyName: Required value",
            "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
            "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ]
    );
    bind(
        &client,
        "write-ok",
        json!({"policyName": "write-ok", "validationActions": ["Audit"],
            "paramRef": {"name": "limits", "parameterNotFoundAction": "Allow"}}),
    )
    .await;

    // kubectl finds both kinds by their names and prints their columns.
    let kubectl = kubectl();
    let rows = kubectl.table(&["get", "validatingadmissionpolicies", "write-ok"]);
    assert_eq!(rows[0], ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]);
    assert_eq!(rows[1][..3], ["write-ok", "2", "v1/ConfigMap"]);
    let rows = kubectl.table(&["get", "validatingadmissionpolicybindings", "write-ok"]);
    assert_eq!(rows[0], ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    assert_eq!(rows[1][..3], ["write-ok", "write-ok", "limits"]);
}

/// A policy and its binding as manifests: `kubectl apply` client-side,
/// then server-side, each changing a validation.
#[tokio::test]
async fn kubectl_applies_policies_and_bindings() {
    let (client, ns) = setup("vap-apply").await;
    let manifest = |message: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: applied
spec:
  matchConstraints:
    namespaceSelector: {{matchLabels: {{vap-test: {ns}}}}}
    resourceRules:
    - {{apiGroups: [''], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}}
  validations:
  - {{expression: 'false', message: '{message}'}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: applied
spec:
  policyName: applied
  validationActions: [Deny]
"
        )
    };
    let kubectl = kubectl();
    kubectl.ok_stdin(&["apply", "-f", "-"], &manifest("first"));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("a", json!({})))
            .await,
    );
    assert!(
        status.message.ends_with("denied request: first"),
        "{status:?}"
    );
    kubectl.ok_stdin(&["apply", "-f", "-"], &manifest("second"));
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("a", json!({})))
            .await,
    );
    assert!(
        status.message.ends_with("denied request: second"),
        "{status:?}"
    );
    kubectl.ok_stdin(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &manifest("third"),
    );
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("a", json!({})))
            .await,
    );
    assert!(
        status.message.ends_with("denied request: third"),
        "{status:?}"
    );
    let policy = Api::<ValidatingAdmissionPolicy>::all(client.clone())
        .get("applied")
        .await
        .expect("policy");
    assert_eq!(policy.metadata.generation, Some(3));
}

#[tokio::test]
async fn deny_refuses_creates_and_updates_with_the_policys_message() {
    let (client, ns) = setup("vap-deny").await;
    create_policy(
        &client,
        policy(
            "deny-cm",
            &ns,
            rules("", &["configmaps"], &["CREATE", "UPDATE"]),
            json!({"validations": [
                {"expression": "!has(object.data) || !('forbidden' in object.data)",
                 "message": "the forbidden key is forbidden", "reason": "Forbidden"},
                {"expression": "!has(object.data) || size(object.data) <= 2"}]}),
        ),
    )
    .await;
    bind(
        &client,
        "deny-cm",
        json!({"policyName": "deny-cm", "validationActions": ["Deny"]}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let status = api_error(
        cms.create(
            &PostParams::default(),
            &config_map("c1", json!({"forbidden": "x"})),
        )
        .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "configmaps \"c1\" is forbidden: ValidatingAdmissionPolicy 'deny-cm' with binding 'deny-cm' denied request: the forbidden key is forbidden"
    );
    // A dry run is refused all the same.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let status = api_error(
        cms.create(&dry, &config_map("c1", json!({"forbidden": "x"})))
            .await,
    );
    assert_eq!(status.code, 403);

    // An update is judged on the new object; no message: the expression.
    cms.create(&PostParams::default(), &config_map("c2", json!({"a": "1"})))
        .await
        .expect("admitted");
    let patch = Patch::Merge(json!({"data": {"b": "2", "c": "3"}}));
    let status = api_error(cms.patch("c2", &PatchParams::default(), &patch).await);
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "configmaps \"c2\" is forbidden: ValidatingAdmissionPolicy 'deny-cm' with binding 'deny-cm' denied request: failed expression: !has(object.data) || size(object.data) <= 2"
    );

    // A Deployment update refused with its messageExpression.
    create_policy(
        &client,
        policy(
            "replica-limit",
            &ns,
            rules("apps", &["deployments"], &["UPDATE"]),
            json!({"validations": [{"expression": "object.spec.replicas <= oldObject.spec.replicas + 1",
                "messageExpression": "'from ' + string(oldObject.spec.replicas) + ' to ' + string(object.spec.replicas) + ' is too many'"}]}),
        ),
    )
    .await;
    bind(
        &client,
        "replica-limit",
        json!({"policyName": "replica-limit", "validationActions": ["Deny"]}),
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    }))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("creates are not matched");
    let scale = Patch::Merge(json!({"spec": {"replicas": 5}}));
    let status = api_error(
        deployments
            .patch("web", &PatchParams::default(), &scale)
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request: from 1 to 5 is too many"
    );
    let scale = Patch::Merge(json!({"spec": {"replicas": 2}}));
    deployments
        .patch("web", &PatchParams::default(), &scale)
        .await
        .expect("one more replica is admitted");
}

#[tokio::test]
async fn a_delete_is_judged_on_the_stored_object() {
    let (client, ns) = setup("vap-delete").await;
    create_policy(
        &client,
        policy(
            "keep-protected",
            &ns,
            rules("", &["configmaps"], &["DELETE"]),
            json!({"validations": [{
                "expression": "object == null && !(has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels)",
                "messageExpression": "request.operation + ' of ' + oldObject.metadata.name + ' refused'"}]}),
        ),
    )
    .await;
    bind(
        &client,
        "keep-protected",
        json!({"policyName": "keep-protected", "validationActions": ["Deny"]}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let protected: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "kept", "labels": {"protected": "yes"}}}),
    )
    .expect("configmap");
    cms.create(&PostParams::default(), &protected)
        .await
        .expect("creates are not matched");
    cms.create(&PostParams::default(), &config_map("gone", json!({})))
        .await
        .expect("created");
    let status = api_error(cms.delete("kept", &Default::default()).await);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "configmaps \"kept\" is forbidden: ValidatingAdmissionPolicy 'keep-protected' with binding 'keep-protected' denied request: DELETE of kept refused"
    );
    assert!(cms.get_opt("kept").await.expect("get").is_some());
    cms.delete("gone", &Default::default())
        .await
        .expect("an unprotected ConfigMap goes");
}

#[tokio::test]
async fn warn_adds_a_warning_and_audit_admits() {
    let (client, ns) = setup("vap-warn").await;
    for (name, action) in [("warn-cm", "Warn"), ("audit-cm", "Audit")] {
        create_policy(
            &client,
            policy(
                name,
                &ns,
                rules("", &["configmaps"], &["CREATE"]),
                json!({"validations": [{"expression": "has(object.metadata.labels)",
                    "message": format!("{name}: label it")}]}),
            ),
        )
        .await;
        bind(
            &client,
            name,
            json!({"policyName": name, "validationActions": [action]}),
        )
        .await;
    }
    let yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unlabelled\n  namespace: {ns}\n"
    );
    let run = kubectl().run_with_input(&["create", "-f", "-"], Some(&yaml));
    assert!(run.success(), "{run:?}");
    assert!(
        run.stderr.contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'warn-cm' with binding 'warn-cm': warn-cm: label it"
        ),
        "{run:?}"
    );
    // Audit leaves no trace in the response.
    assert!(!run.stderr.contains("audit-cm"), "{run:?}");
    let labelled = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labelled\n  namespace: {ns}\n  labels: {{a: b}}\n"
    );
    let run = kubectl().run_with_input(&["create", "-f", "-"], Some(&labelled));
    assert!(run.success() && !run.stderr.contains("Warning"), "{run:?}");
}

#[tokio::test]
async fn params_come_from_a_config_map() {
    let (client, ns) = setup("vap-params").await;
    // The params live in a namespace of their own, which the policy does not select.
    let (_, params_ns) = setup("vap-params-store").await;
    create_policy(
        &client,
        policy(
            "max-keys",
            &ns,
            rules("", &["configmaps"], &["CREATE"]),
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConditions": [{"name": "not-exempt", "expression": "!(object.metadata.name in params.data.exempt.split(','))"}],
                "variables": [{"name": "max", "expression": "int(params.data.max)"}],
                "validations": [{"expression": "!has(object.data) || size(object.data) <= variables.max",
                    "messageExpression": "'at most ' + params.data.max + ' keys'"}]}),
        ),
    )
    .await;
    bind(
        &client,
        "max-keys",
        json!({"policyName": "max-keys", "validationActions": ["Deny"],
            "paramRef": {"name": "limits", "namespace": params_ns, "parameterNotFoundAction": "Deny"}}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let two = config_map("two", json!({"a": "1", "b": "2"}));
    let status = api_error(cms.create(&PostParams::default(), &two).await);
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "policy 'max-keys' with binding 'max-keys' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    Api::<ConfigMap>::namespaced(client.clone(), &params_ns)
        .create(
            &PostParams::default(),
            &config_map("limits", json!({"max": "1", "exempt": "big,huge"})),
        )
        .await
        .expect("the params are created");
    let status = api_error(cms.create(&PostParams::default(), &two).await);
    assert_eq!(status.code, 422);
    assert!(
        status.message.ends_with("denied request: at most 1 keys"),
        "{status:?}"
    );
    cms.create(
        &PostParams::default(),
        &config_map("one", json!({"a": "1"})),
    )
    .await
    .expect("within the limit");
    // The match condition reads the params too.
    cms.create(
        &PostParams::default(),
        &config_map("big", json!({"a": "1", "b": "2"})),
    )
    .await
    .expect("exempt by name");
}

#[tokio::test]
async fn selectors_conditions_and_exclusions_leave_objects_out() {
    let (client, ns) = setup("vap-select").await;
    create_policy(
        &client,
        policy(
            "no-cms",
            &ns,
            rules("", &["configmaps"], &["CREATE"]),
            json!({"matchConditions": [{"name": "not-exempt", "expression": "!object.metadata.name.startsWith('exempt-')"}],
                "validations": [{"expression": "false", "message": "no ConfigMaps here"}]}),
        ),
    )
    .await;
    let mut spec = json!({"policyName": "no-cms", "validationActions": ["Deny"],
        "matchResources": {"objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
            "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                "operations": ["CREATE"], "resourceNames": ["excluded"]}]}});
    spec["matchResources"]["namespaceSelector"] = json!({"matchLabels": {"vap-test": ns}});
    bind(&client, "no-cms", spec).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("plain", json!({})))
            .await,
    );
    assert!(status.message.ends_with("no ConfigMaps here"), "{status:?}");
    let skipped: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "skipped", "labels": {"skip": "yes"}}}))
            .expect("configmap");
    for cm in [
        skipped,
        config_map("exempt-1", json!({})),
        config_map("excluded", json!({})),
    ] {
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("left out of the policy");
    }
    // Other namespaces are not selected.
    let (_, other) = setup("vap-select-other").await;
    Api::<ConfigMap>::namespaced(client.clone(), &other)
        .create(&PostParams::default(), &config_map("plain", json!({})))
        .await
        .expect("another namespace");
}

#[tokio::test]
async fn failure_policy_decides_on_evaluation_errors() {
    let (client, ns) = setup("vap-failure").await;
    for (name, failure) in [("fails-closed", "Fail"), ("fails-open", "Ignore")] {
        let label = name;
        let mut p = policy(
            name,
            &ns,
            rules("", &["configmaps"], &["CREATE"]),
            json!({"failurePolicy": failure,
                "validations": [{"expression": "object.data.size == 'x'"}]}),
        );
        p["spec"]["matchConstraints"]["objectSelector"] = json!({"matchLabels": {"policy": label}});
        create_policy(&client, p).await;
        bind(
            &client,
            name,
            json!({"policyName": name, "validationActions": ["Deny"]}),
        )
        .await;
    }
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let labelled = |name: &str, policy: &str| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"policy": policy}}, "data": {"a": "1"}}),
        )
        .expect("configmap")
    };
    let status = api_error(
        cms.create(&PostParams::default(), &labelled("closed", "fails-closed"))
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "configmaps \"closed\" is forbidden: ValidatingAdmissionPolicy 'fails-closed' with binding 'fails-closed' denied request: expression 'object.data.size == 'x'' resulted in error: no such key: size"
    );
    cms.create(&PostParams::default(), &labelled("open", "fails-open"))
        .await
        .expect("Ignore admits");
}

const GADGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gadgets.vap.example.com"},
  "spec": {
    "group": "vap.example.com", "scope": "Namespaced",
    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]
  }
}"#;

#[tokio::test]
async fn a_policy_applies_to_custom_resources() {
    let (client, ns) = setup("vap-crd").await;
    let crd: CustomResourceDefinition = serde_json::from_str(GADGET_CRD).expect("crd");
    install_crd(&client, &crd).await;
    create_policy(
        &client,
        policy(
            "small-gadgets",
            &ns,
            rules("vap.example.com", &["gadgets"], &["CREATE", "UPDATE"]),
            json!({"validations": [{"expression": "object.spec.size < 10",
                "messageExpression": "'size ' + string(object.spec.size) + ' of ' + request.kind.kind + ' is too big'"}]}),
        ),
    )
    .await;
    bind(
        &client,
        "small-gadgets",
        json!({"policyName": "small-gadgets", "validationActions": ["Deny"]}),
    )
    .await;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("vap.example.com", "v1", "Gadget"));
    let gadgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
    let gadget = |name: &str, size: i64| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "vap.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"size": size}}))
        .expect("gadget")
    };
    let status = api_error(
        gadgets
            .create(&PostParams::default(), &gadget("big", 12))
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "gadgets.vap.example.com \"big\" is forbidden: ValidatingAdmissionPolicy 'small-gadgets' with binding 'small-gadgets' denied request: size 12 of Gadget is too big"
    );
    gadgets
        .create(&PostParams::default(), &gadget("small", 3))
        .await
        .expect("admitted");
}

#[tokio::test]
async fn policies_see_the_impersonated_service_account() {
    use k8s_openapi::api::rbac::v1::RoleBinding;

    let (client, ns) = setup("vap-user").await;
    create_policy(
        &client,
        policy(
            "no-bots",
            &ns,
            rules("", &["configmaps"], &["CREATE"]),
            json!({"validations": [{"expression": "!request.userInfo.username.startsWith('system:serviceaccount:')",
                "messageExpression": "request.userInfo.username + ' may not create ' + request.resource.resource"}]}),
        ),
    )
    .await;
    bind(
        &client,
        "no-bots",
        json!({"policyName": "no-bots", "validationActions": ["Deny"]}),
    )
    .await;
    let binding: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "bot-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": ns}]}))
    .expect("binding");
    Api::<RoleBinding>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("role binding");
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &config_map("by-admin", json!({})))
        .await
        .expect("the administrator is admitted");

    let yaml = std::fs::read_to_string(&server::shared().kubeconfig).expect("kubeconfig");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    let user = format!("system:serviceaccount:{ns}:bot");
    config.auth_info.impersonate = Some(user.clone());
    let bot = Client::try_from(config).expect("client");
    let status = api_error(
        Api::<ConfigMap>::namespaced(bot, &ns)
            .create(&PostParams::default(), &config_map("by-bot", json!({})))
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        format!(
            "configmaps \"by-bot\" is forbidden: ValidatingAdmissionPolicy 'no-bots' with binding 'no-bots' denied request: {user} may not create configmaps"
        )
    );
}
