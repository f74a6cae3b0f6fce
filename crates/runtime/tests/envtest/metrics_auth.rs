//! /metrics over HTTPS (the default): a caller's bearer token is
//! authenticated with a TokenReview and must be allowed to `get` /metrics
//! (a SubjectAccessReview): no token or an unknown one gets 401, a
//! ServiceAccount without the permission 403, one bound to a metrics-reader
//! ClusterRole 200.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::{Api, PostParams};
use opctl_runtime::{Manager, WatchScope};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::support::{
    PROJECT, admin, config_of, eventually, free_port, http_get, options, parse_response, start,
};

/// Trusts any certificate: the manager's is self-signed, made at start.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// GET /metrics over TLS with `token`: the status and body.
async fn get_metrics(addr: SocketAddr, token: Option<&str>) -> (u16, String) {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let name = ServerName::try_from("localhost").expect("a name");
    let mut tls = connector.connect(name, tcp).await.expect("a TLS handshake");
    let authorization = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    parse_response(&answer).expect("an HTTP response")
}

/// A token of the ServiceAccount `name` (created in `default`).
async fn token_of(client: &kube::Client, name: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let mut account = ServiceAccount::default();
    account.metadata.name = Some(name.to_owned());
    accounts
        .create(&PostParams::default(), &account)
        .await
        .expect("a ServiceAccount");
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let issued = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token");
    issued.status.expect("a token in the status").token
}

/// Lets the ServiceAccount `name` read /metrics, as config/rbac's
/// metrics-reader ClusterRole does.
async fn allow_metrics(client: &kube::Client, name: &str) {
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let mut role = ClusterRole::default();
    role.metadata.name = Some("metrics-reader".to_owned());
    role.rules = Some(vec![PolicyRule {
        non_resource_urls: Some(vec!["/metrics".to_owned()]),
        verbs: vec!["get".to_owned()],
        ..PolicyRule::default()
    }]);
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("a ClusterRole");
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let binding = ClusterRoleBinding {
        metadata: kube::api::ObjectMeta {
            name: Some("metrics-reader".to_owned()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: "metrics-reader".to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: name.to_owned(),
            namespace: Some("default".to_owned()),
            ..Subject::default()
        }]),
    };
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("a ClusterRoleBinding");
}

#[tokio::test]
async fn metrics_need_a_token_allowed_to_read_them() {
    let env = start().await;
    let client = admin(&env).await;
    let reader = token_of(&client, "prometheus").await;
    let stranger = token_of(&client, "stranger").await;
    allow_metrics(&client, "prometheus").await;

    let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut options = options(&[]);
    options.metrics_secure = true;
    options.metrics_bind_address = metrics;
    let probes = options.health_probe_bind_address;
    let manager = Manager::with_config(
        PROJECT,
        options,
        WatchScope::AllNamespaces,
        config_of(&env).await,
    )
    .expect("a manager");
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

    assert_eq!(get_metrics(metrics, None).await.0, 401, "no token");
    assert_eq!(
        get_metrics(metrics, Some("not-a-token")).await.0,
        401,
        "an unknown token"
    );
    let (status, body) = get_metrics(metrics, Some(&stranger)).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("system:serviceaccount:default:stranger"),
        "{body}"
    );
    let (status, body) = get_metrics(metrics, Some(&reader)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");

    shutdown.trigger();
    running
        .await
        .expect("joined")
        .expect("the manager stops cleanly");
}
