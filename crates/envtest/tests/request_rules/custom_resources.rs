//! Custom resources: names validated as DNS subdomains, generated names cut
//! to 63 characters, the body's apiVersion and kind checked against the URL,
//! Warnings for deprecated versions, no new objects while the CRD goes.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::common::{api_error, client, eventually, kubectl, namespace};
use crate::server;

/// A namespaced CRD serving `v1` (storage) and `v1beta1` (deprecated).
fn crd(group: &str) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true, "schema": schema},
            ],
        }
    })
}

/// Creates the CRD through kubectl and waits until kube-rs can use it.
async fn install(group: &str) -> kube::Client {
    let client = client().await;
    kubectl().ok_stdin(&["apply", "-f", "-"], &crd(group).to_string());
    kubectl().ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/gadgets.{group}"),
    ]);
    client
}

fn gadgets(client: &kube::Client, group: &str, version: &str, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, "Gadget");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "gadgets"),
    )
}

fn gadget(api_version: &str, kind: &str, metadata: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": {"size": 1}
    }))
    .expect("a DynamicObject")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_dns_subdomains_and_generated_names_fit_63_characters() {
    let group = format!("{}.names.example.com", server::unique_name("g"));
    let client = install(&group).await;
    let ns = namespace(&client, "cr-names").await;
    let api = gadgets(&client, &group, "v1", &ns);
    let av = format!("{group}/v1");
    let create = async |metadata: Value| {
        api.create(&PostParams::default(), &gadget(&av, "Gadget", metadata))
            .await
    };

    for bad in ["Bad_Name", "UPPER", &"a".repeat(254)] {
        let status = api_error(create(json!({"name": bad})).await);
        assert_eq!(status.code, 422, "{bad}: {status:?}");
        let detail = if bad.len() > 253 {
            "must be no more than 253 characters".to_string()
        } else {
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
                .to_string()
        };
        assert!(
            status.message.starts_with(&format!(
                "Gadget.{group} \"{bad}\" is invalid: metadata.name: Invalid value: \"{bad}\": {detail}"
            )),
            "{}",
            status.message
        );
    }
    for good in ["g.with.dots", &"b".repeat(253)] {
        let made = create(json!({"name": good}))
            .await
            .expect("a DNS subdomain");
        assert_eq!(made.metadata.name.as_deref(), Some(good));
    }

    // kube's name generator keeps 58 characters of generateName.
    let long = "x".repeat(70);
    let made = create(json!({"generateName": long}))
        .await
        .expect("generated");
    let name = made.metadata.name.expect("a name");
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&long[..58]), "{name}");
    assert_eq!(made.metadata.generate_name.as_deref(), Some(long.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_body_must_name_the_urls_group_version_and_kind() {
    let group = format!("{}.types.example.com", server::unique_name("g"));
    let client = install(&group).await;
    let ns = namespace(&client, "cr-types").await;
    let api = gadgets(&client, &group, "v1", &ns);
    let pp = PostParams::default();

    for wrong in [format!("{group}/v1beta1"), "example.com/v1".to_string()] {
        let status = api_error(
            api.create(&pp, &gadget(&wrong, "Gadget", json!({"name": "g"})))
                .await,
        );
        assert_eq!(
            (status.code, status.message.as_str()),
            (
                400,
                format!(
                    "the API version in the data ({wrong}) does not match the expected API version ({group}/v1)"
                )
                .as_str()
            )
        );
    }
    let status = api_error(
        api.create(
            &pp,
            &gadget(&format!("{group}/v1"), "Widget", json!({"name": "g"})),
        )
        .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        format!("Widget.{group} \"g\" is invalid: kind: Invalid value: \"Widget\": must be Gadget")
    );
    // A body without a kind is not even decoded.
    let raw = json!({"apiVersion": format!("{group}/v1"), "metadata": {"name": "g"}}).to_string();
    let refused = kubectl().fails_stdin(
        &[
            "create",
            "--raw",
            &format!("/apis/{group}/v1/namespaces/{ns}/gadgets"),
            "-f",
            "-",
        ],
        &raw,
    );
    assert!(
        refused.contains("Object 'Kind' is missing"),
        "kubectl said: {refused}"
    );
    // Nothing of that was stored.
    assert!(
        api.list(&Default::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deprecated_version_warns_every_client() {
    let group = format!("{}.old.example.com", server::unique_name("g"));
    let client = install(&group).await;
    let ns = namespace(&client, "cr-old").await;
    let warning = format!("{group}/v1beta1 Gadget is deprecated; use {group}/v1 Gadget");
    let manifest = json!({
        "apiVersion": format!("{group}/v1beta1"), "kind": "Gadget",
        "metadata": {"name": "old", "namespace": ns}, "spec": {"size": 2}
    });
    let created = kubectl().run_with_input(&["create", "-f", "-"], Some(&manifest.to_string()));
    assert!(created.success(), "{created:?}");
    assert!(
        created.stderr.contains(&format!("Warning: {warning}")),
        "kubectl create printed no deprecation warning: {created:?}"
    );
    let read = kubectl().run(&["get", &format!("gadgets.v1beta1.{group}"), "old", "-n", &ns]);
    assert!(read.success(), "{read:?}");
    assert!(
        read.stderr.contains(&format!("Warning: {warning}")),
        "{read:?}"
    );
    // Through v1 the same object comes without one.
    let current = kubectl().run(&["get", &format!("gadgets.v1.{group}"), "old", "-n", &ns]);
    assert!(
        current.success() && !current.stderr.contains("Warning"),
        "{current:?}"
    );
    // kube-rs reads it through the deprecated version too.
    let old = gadgets(&client, &group, "v1beta1", &ns)
        .get("old")
        .await
        .expect("readable");
    assert_eq!(old.data["spec"]["size"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_new_objects_while_the_crd_is_terminating() {
    let group = format!("{}.going.example.com", server::unique_name("g"));
    let client = install(&group).await;
    let ns = namespace(&client, "cr-going").await;
    let api = gadgets(&client, &group, "v1", &ns);
    let av = format!("{group}/v1");
    let held = gadget(
        &av,
        "Gadget",
        json!({"name": "held", "finalizers": ["example.com/hold"]}),
    );
    api.create(&PostParams::default(), &held)
        .await
        .expect("created");
    kubectl().ok(&["delete", &format!("crd/gadgets.{group}"), "--wait=false"]);

    // The CRD stays while `held` is held; creating is refused meanwhile.
    let status = eventually(
        "create refused while the CRD terminates",
        async || match api
            .create(
                &PostParams::default(),
                &gadget(&av, "Gadget", json!({"name": "late"})),
            )
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 405 => Some(*s),
            _ => None,
        },
    )
    .await;
    assert_eq!(
        status.message,
        "create not allowed while custom resource definition is terminating"
    );
    assert_eq!(status.reason, "MethodNotAllowed");
    // The held object can still be changed, and then let go.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("finalizer removed");
    eventually("the CRD gone", async || {
        let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
            Api::all(client.clone());
        crds.get_opt(&format!("gadgets.{group}"))
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await;
    let _ = api.delete("held", &DeleteParams::default()).await;
}
