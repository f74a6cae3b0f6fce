//! Real HTTPS webhook servers for the admission tests: a CA and serving
//! certificate made with rcgen at test start, a loopback listener on a
//! random port, and a scripted handler that answers each AdmissionReview.

pub mod fixtures;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use opctl_envtest::testing::ClusterView;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// A CA and a serving certificate it signed.
pub struct Pki {
    ca_pem: String,
    cert: CertificateDer<'static>,
    key_der: Vec<u8>,
}

/// The names every test serving certificate carries.
pub const SERVICE_NAME: &str = "webhook-service.system.svc";

impl Pki {
    /// A fresh CA with a serving certificate for `localhost`, `127.0.0.1`
    /// and the test Service's DNS name.
    pub fn new() -> Pki {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "envtest test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");
        let key = KeyPair::generate().expect("serving key");
        let params = CertificateParams::new(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            SERVICE_NAME.to_string(),
        ])
        .expect("serving params");
        let cert = params.signed_by(&key, &ca).expect("serving certificate");
        Pki {
            ca_pem: ca.pem(),
            cert: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }

    /// A serving certificate (DER, with its PKCS#8 key) trusted through
    /// `ca_pem`, made by the caller. (Not every suite including this module uses it.)
    #[allow(dead_code)]
    pub fn from_parts(ca_pem: String, cert: CertificateDer<'static>, key_der: Vec<u8>) -> Pki {
        Pki {
            ca_pem,
            cert,
            key_der,
        }
    }

    /// The `caBundle` value: the CA certificate, PEM, base64.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    fn server_config(&self) -> Arc<ServerConfig> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone())),
            )
            .expect("server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
    pub delay: Duration,
}

impl Reply {
    fn review(review: &Value, response: Value) -> Reply {
        let mut response = response;
        if let (Some(map), Some(uid)) = (response.as_object_mut(), review.pointer("/request/uid")) {
            map.entry("uid").or_insert_with(|| uid.clone());
        }
        Reply::json(
            200,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
        )
    }

    /// Allowed, nothing else.
    pub fn allow(review: &Value) -> Reply {
        Reply::review(review, json!({"allowed": true}))
    }

    /// Allowed with a JSONPatch.
    pub fn patch(review: &Value, ops: Value) -> Reply {
        let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
        Reply::review(
            review,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}),
        )
    }

    /// Denied with a status.
    pub fn deny(review: &Value, status: Value) -> Reply {
        Reply::review(review, json!({"allowed": false, "status": status}))
    }

    /// Any AdmissionReview `response`; the request's uid is filled in unless given.
    pub fn response(review: &Value, response: Value) -> Reply {
        Reply::review(review, response)
    }

    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            content_type: Some("application/json"),
            body: body.to_string().into_bytes(),
            delay: Duration::ZERO,
        }
    }

    pub fn raw(status: u16, content_type: Option<&'static str>, body: &str) -> Reply {
        Reply {
            status,
            content_type,
            body: body.as_bytes().to_vec(),
            delay: Duration::ZERO,
        }
    }

    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// What a webhook server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Path and query, e.g. `/mutate?timeout=10s`.
    pub uri: String,
    pub host: String,
    pub content_type: String,
    pub review: Value,
}

type Script = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// An HTTPS webhook server on 127.0.0.1, stopped when dropped.
pub struct WebhookServer {
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    /// Serves every path with `script`.
    pub async fn start(
        pki: &Pki,
        script: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> WebhookServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let acceptor = TlsAcceptor::from(pki.server_config());
        let received = Arc::new(Mutex::new(Vec::new()));
        let script: Script = Arc::new(script);
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let script = Arc::clone(&script);
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    // Handshakes fail on purpose in the CA tests.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let script = Arc::clone(&script);
                        let log = Arc::clone(&log);
                        async move {
                            let uri = req.uri().to_string();
                            let header = |name: hyper::header::HeaderName| {
                                req.headers()
                                    .get(name)
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("")
                                    .to_string()
                            };
                            let host = header(hyper::header::HOST);
                            let content_type = header(hyper::header::CONTENT_TYPE);
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let review: Value =
                                serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let reply = script(&review);
                            log.lock().unwrap().push(Received {
                                uri,
                                host,
                                content_type,
                                review,
                            });
                            tokio::time::sleep(reply.delay).await;
                            let mut response = hyper::Response::builder().status(reply.status);
                            if let Some(ct) = reply.content_type {
                                response = response.header(hyper::header::CONTENT_TYPE, ct);
                            }
                            Ok::<_, Infallible>(
                                response
                                    .body(Full::new(Bytes::from(reply.body)))
                                    .expect("response"),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        WebhookServer {
            port,
            received,
            task,
        }
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    pub fn calls(&self) -> usize {
        self.received.lock().unwrap().len()
    }
}

/// A loopback port nothing listens on.
pub async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("address").port()
}

/// Namespaces and Services for selector and routing tests.
#[derive(Default)]
pub struct TestCluster {
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    pub services: BTreeMap<(String, String), Value>,
}

impl TestCluster {
    pub fn with_namespace(mut self, name: &str, labels: &[(&str, &str)]) -> Self {
        self.namespaces.insert(
            name.to_string(),
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        self
    }

    pub fn with_service(mut self, namespace: &str, name: &str, service: Value) -> Self {
        self.services
            .insert((namespace.to_string(), name.to_string()), service);
        self
    }
}

impl ClusterView for TestCluster {
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces.get(name).cloned()
    }

    fn service(&self, namespace: &str, name: &str) -> Option<Value> {
        self.services
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }
}
