//! Admission webhook certificates checked as kube-apiserver (Go's
//! crypto/x509) checks them, seen by a kube-rs client creating Pods: the
//! self-signed CA-flagged certificate Kopf's webhook server makes, a
//! CA-signed one, IP and DNS names, and the refusals with kube-apiserver's
//! text in the webhook failure Status.

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, date_time_ymd,
};
use serde_json::json;

use crate::admission_support::{Pki, Reply, WebhookServer};
use crate::kube_support::{api_status, setup};
use crate::server;

/// A self-signed certificate for `names`, also marked as a CA (as Kopf's
/// webhook server makes it), trusted as itself.
fn self_signed_ca(names: &[&str]) -> Pki {
    let key = KeyPair::generate().expect("key");
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, names[0]);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = params.self_signed(&key).expect("certificate");
    Pki::from_parts(cert.pem(), cert.der().clone(), key.serialize_der())
}

/// A calendar day: (year, month, day).
type Day = (i32, u8, u8);

/// A serving certificate for `names` signed by a fresh CA, valid from
/// the first day to the second when given.
fn ca_signed(names: &[&str], validity: Option<(Day, Day)>) -> Pki {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "webhook test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");
    let key = KeyPair::generate().expect("key");
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params");
    if let Some(((y1, m1, d1), (y2, m2, d2))) = validity {
        params.not_before = date_time_ymd(y1, m1, d1);
        params.not_after = date_time_ymd(y2, m2, d2);
    }
    let cert = params.signed_by(&key, &ca).expect("certificate");
    Pki::from_parts(ca.pem(), cert.der().clone(), key.serialize_der())
}

/// Creates a Pod in a fresh namespace whose creation a Fail-policy webhook
/// at `https://<host>:<port>/validate` (trusting `pki`'s CA) must allow.
async fn create_pod_through(pki: &Pki, host: &str) -> (Result<Pod, kube::Error>, String, u16) {
    let (client, ns) = setup("tls").await;
    let server = WebhookServer::start(pki, Reply::allow).await;
    let name = format!("{ns}.tls.opctl.test");
    let url = format!("https://{host}:{}/validate", server.port);
    let configuration: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": server::unique_name("tls")},
        "webhooks": [{
            "name": name,
            "clientConfig": {"url": url, "caBundle": pki.ca_bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    }))
    .expect("configuration");
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let stored = configurations
        .create(&PostParams::default(), &configuration)
        .await
        .expect("configuration stored");
    let result = create_pod(&client, &ns).await;
    let _ = configurations
        .delete(
            stored.metadata.name.as_deref().unwrap_or_default(),
            &DeleteParams::default(),
        )
        .await;
    (
        result,
        format!(
            "failed calling webhook \"{name}\": failed to call webhook: Post \"{url}?timeout=10s\": "
        ),
        server.port,
    )
}

async fn create_pod(client: &Client, ns: &str) -> Result<Pod, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod).await
}

/// The webhook failure Status kube-apiserver gives for a refused certificate.
fn refused(result: Result<Pod, kube::Error>, prefix: &str, x509: &str) {
    let status = api_status(result);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError")
    );
    let expected =
        format!("Internal error occurred: {prefix}tls: failed to verify certificate: x509: {x509}");
    assert_eq!(status.message, expected);
}

#[tokio::test]
async fn a_self_signed_ca_certificate_trusted_as_itself_is_accepted() {
    let pki = self_signed_ca(&["localhost", "127.0.0.1"]);
    let (result, _, _) = create_pod_through(&pki, "localhost").await;
    result.expect("the webhook is called and allows the Pod");
    let (result, _, _) = create_pod_through(&pki, "127.0.0.1").await;
    result.expect("the webhook is called by IP and allows the Pod");
}

#[tokio::test]
async fn a_ca_signed_certificate_is_accepted_by_dns_and_ip_names() {
    let pki = ca_signed(&["localhost", "127.0.0.1"], None);
    create_pod_through(&pki, "localhost")
        .await
        .0
        .expect("by DNS name");
    create_pod_through(&pki, "127.0.0.1")
        .await
        .0
        .expect("by IP address");
}

#[tokio::test]
async fn names_the_certificate_lacks_are_refused_with_go_s_text() {
    let dns_only = ca_signed(&["localhost"], None);
    let (result, prefix, _) = create_pod_through(&dns_only, "127.0.0.1").await;
    refused(
        result,
        &prefix,
        "cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs",
    );
    let ip_only = ca_signed(&["127.0.0.1"], None);
    let (result, prefix, _) = create_pod_through(&ip_only, "localhost").await;
    refused(
        result,
        &prefix,
        "certificate is not valid for any names, but wanted to match localhost",
    );
    let other_host = ca_signed(&["webhook.example.com", "other.example.com"], None);
    let (result, prefix, _) = create_pod_through(&other_host, "localhost").await;
    refused(
        result,
        &prefix,
        "certificate is valid for webhook.example.com, other.example.com, not localhost",
    );
}

#[tokio::test]
async fn expired_and_untrusted_certificates_are_refused_with_go_s_text() {
    let expired = ca_signed(&["localhost"], Some(((2020, 1, 1), (2021, 1, 1))));
    let (result, prefix, _) = create_pod_through(&expired, "localhost").await;
    let status = api_status(result);
    let head = format!(
        "Internal error occurred: {prefix}tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time "
    );
    assert!(status.message.starts_with(&head), "{}", status.message);
    assert!(
        status.message.ends_with(" is after 2021-01-01T00:00:00Z"),
        "{}",
        status.message
    );

    // A certificate signed by a CA the caBundle does not hold.
    let served = ca_signed(&["localhost"], None);
    let (client, ns) = setup("tls-unknown").await;
    let server = WebhookServer::start(&served, Reply::allow).await;
    let other = ca_signed(&["localhost"], None);
    let name = format!("{ns}.tls.opctl.test");
    let url = format!("https://localhost:{}/validate", server.port);
    let configuration: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": server::unique_name("tls-unknown")},
        "webhooks": [{
            "name": name,
            "clientConfig": {"url": url, "caBundle": other.ca_bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    }))
    .expect("configuration");
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &configuration)
        .await
        .expect("configuration stored");
    let status = api_status(create_pod(&client, &ns).await);
    assert_eq!(
        status.message,
        format!(
            "Internal error occurred: failed calling webhook \"{name}\": failed to call webhook: Post \"{url}?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of \"x509: ECDSA verification failure\" while trying to verify candidate authority certificate \"webhook test CA\")"
        )
    );
}
