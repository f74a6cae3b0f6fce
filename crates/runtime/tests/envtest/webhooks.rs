//! The webhook server as the API server calls it: with
//! `--webhook-self-signed` the manager makes its CA, injects it into the
//! configurations that call its Service (and only those), serves the
//! webhook over HTTPS, and keeps the CA in place when a configuration is
//! applied again without it.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    WebhookClientConfig,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use opctl_envtest::{Config, Envtest, WebhookRoute};
use opctl_runtime::webhook::{self, AdmissionRequest, AdmissionResponse};
use opctl_runtime::{Context, Manager, WatchScope};

use super::support::{PROJECT, admin, config_of, eventually, free_port, http_get, options};

/// Marks ConfigMaps as seen by the project.
async fn mark(_ctx: Context, request: AdmissionRequest<ConfigMap>) -> AdmissionResponse {
    let response = AdmissionResponse::from(&request);
    let Some(object) = request.object else {
        return response;
    };
    let mut marked = object.clone();
    marked
        .annotations_mut()
        .insert("example.com/seen-by".to_owned(), PROJECT.name().to_owned());
    webhook::patch(response, &object, &marked)
}

/// A mutating webhook on labelled ConfigMaps that calls `service`.
fn configuration(name: &str, service: &str) -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        webhooks: Some(vec![MutatingWebhook {
            name: format!("{name}.example.com"),
            admission_review_versions: vec!["v1".to_owned()],
            side_effects: "None".to_owned(),
            // Another operator's webhook, never served here, must not stop
            // the test's creates.
            failure_policy: Some(
                if service == "other-service" {
                    "Ignore"
                } else {
                    "Fail"
                }
                .to_owned(),
            ),
            object_selector: Some(LabelSelector {
                match_labels: Some([("webhook".to_owned(), "on".to_owned())].into()),
                ..LabelSelector::default()
            }),
            client_config: WebhookClientConfig {
                service: Some(ServiceReference {
                    name: service.to_owned(),
                    namespace: "runtime-test-system".to_owned(),
                    path: Some("/mutate-v1-configmap".to_owned()),
                    port: Some(443),
                }),
                ..WebhookClientConfig::default()
            },
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(vec![String::new()]),
                api_versions: Some(vec!["v1".to_owned()]),
                operations: Some(vec!["CREATE".to_owned()]),
                resources: Some(vec!["configmaps".to_owned()]),
                scope: Some("*".to_owned()),
            }]),
            ..MutatingWebhook::default()
        }]),
    }
}

#[tokio::test]
async fn a_self_signed_webhook_is_injected_and_called() {
    let port = free_port();
    let config = Config {
        simulation: opctl_envtest::Simulation::off(),
        webhook_routes: vec![WebhookRoute {
            namespace: "runtime-test-system".to_owned(),
            name: "runtime-test-webhook-service".to_owned(),
            port: 443,
            target: format!("127.0.0.1:{port}"),
        }],
        ..Config::default()
    };
    let env = Envtest::start(config).await.expect("envtest starts");
    let client = admin(&env).await;
    let configurations: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    for (name, service) in [
        ("ours", "runtime-test-webhook-service"),
        ("theirs", "other-service"),
    ] {
        configurations
            .create(&PostParams::default(), &configuration(name, service))
            .await
            .expect("a configuration");
    }

    let certs = std::env::temp_dir().join(format!("runtime-webhook-{}", std::process::id()));
    let cert_dir = format!("--webhook-cert-dir={}", certs.display());
    let mut options = options(&["--webhook-self-signed", &cert_dir]);
    options.webhook.webhook_bind_address = ([127, 0, 0, 1], port).into();
    let probes = options.health_probe_bind_address;
    let manager = Manager::with_config(
        PROJECT,
        options,
        WatchScope::AllNamespaces,
        config_of(&env).await,
    )
    .expect("a manager")
    .with_webhook("/mutate-v1-configmap", mark);
    let shutdown = manager.context().shutdown.clone();
    let running = tokio::spawn(manager.run());
    eventually(
        Duration::from_secs(20),
        "the manager to be ready",
        || async {
            http_get(probes, "/readyz")
                .await
                .is_some_and(|(status, _)| status == 200)
        },
    )
    .await;

    // Injected before the manager reported ready, into ours only.
    let bundle = |config: &MutatingWebhookConfiguration| {
        config
            .webhooks
            .as_ref()
            .and_then(|w| w[0].client_config.ca_bundle.clone())
    };
    let ours = configurations.get("ours").await.expect("ours");
    let ca = std::fs::read(certs.join("ca.crt")).expect("ca.crt written");
    assert_eq!(bundle(&ours).map(|b| b.0), Some(ca.clone()));
    assert_eq!(
        bundle(&configurations.get("theirs").await.expect("theirs")),
        None
    );

    // The API server calls the webhook over HTTPS, trusting the injected CA.
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut object = ConfigMap::default();
    object.metadata.name = Some("hooked".to_owned());
    object.metadata.labels = Some([("webhook".to_owned(), "on".to_owned())].into());
    let created = config_maps
        .create(&PostParams::default(), &object)
        .await
        .expect("admitted");
    assert_eq!(
        created
            .annotations()
            .get("example.com/seen-by")
            .map(String::as_str),
        Some("runtime-test")
    );

    // Applying the configuration again empties the bundle: the CA comes back.
    let mut reapplied = configuration("ours", "runtime-test-webhook-service");
    reapplied.metadata.managed_fields = None;
    let params = PatchParams::apply("kubectl").force();
    configurations
        .patch("ours", &params, &Patch::Apply(&reapplied))
        .await
        .expect("applied again");
    let mut emptied = configurations.get("ours").await.expect("ours");
    if let Some(webhooks) = emptied.webhooks.as_mut() {
        webhooks[0].client_config.ca_bundle = None;
    }
    configurations
        .replace("ours", &PostParams::default(), &emptied)
        .await
        .expect("the bundle emptied");
    eventually(
        Duration::from_secs(10),
        "the CA to be injected again",
        || async {
            let ours = configurations.get("ours").await.expect("ours");
            bundle(&ours).map(|b| b.0) == Some(ca.clone())
        },
    )
    .await;

    shutdown.trigger();
    running
        .await
        .expect("joined")
        .expect("the manager stops cleanly");
    let _ = std::fs::remove_dir_all(&certs);
}
