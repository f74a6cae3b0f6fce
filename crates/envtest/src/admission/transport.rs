//! HTTPS POST of an AdmissionReview to a webhook's `clientConfig`, verified
//! against its `caBundle`, with errors worded as Go's HTTP client words them
//! (`Post "<url>": dial tcp 127.0.0.1:9443: connect: connection refused`).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, USER_AGENT};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CertificateError, ClientConfig};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

use super::cluster::ClusterView;
use super::goverify::{GoTlsError, GoVerifier};
use super::routes::WebhookRoutes;

/// The system's trusted roots, read once: used by webhooks without a caBundle.
static NATIVE_ROOTS: LazyLock<Vec<CertificateDer<'static>>> =
    LazyLock::new(|| rustls_native_certs::load_native_certs().certs);

/// Largest webhook response read (a guard, not a kube-apiserver limit).
const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// Where a webhook lives.
#[derive(Debug, Clone)]
enum Target {
    /// `clientConfig.url`: `authority` as written (host and optional port).
    Url {
        authority: String,
        host: String,
        port: u16,
        path: String,
    },
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        port: u16,
        path: String,
    },
}

/// A webhook's `clientConfig`, checked and with its TLS configuration built
/// once. Errors surface when the webhook is called, as kube-apiserver's
/// `could not get REST client` failures.
#[derive(Debug)]
pub(crate) struct ClientSpec {
    target: Result<Target, String>,
    tls: Result<Arc<ClientConfig>, String>,
}

/// A webhook's HTTP answer.
#[derive(Debug)]
pub(crate) struct HttpResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
}

/// Why a call produced no HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallError {
    /// The client could not be built (`could not get REST client: ...`).
    Client(String),
    /// The request failed (`Post "<url>": <cause>`), the full text.
    Transport(String),
}

/// Go's `path.Join("/", p)`: a rooted, cleaned path.
fn clean_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

fn parse_url(url: &str) -> Result<Target, String> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| format!("Unparsable URL: parse {url:?}: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!(
            "Unparsable URL: {url:?}: 'https' is the only allowed URL scheme"
        ));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("Unparsable URL: {url:?}: host must be specified"))?;
    let host = authority.host();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .to_string();
    if host.is_empty() {
        return Err(format!("Unparsable URL: {url:?}: host must be specified"));
    }
    Ok(Target::Url {
        authority: authority.as_str().to_string(),
        host,
        port: authority.port_u16().unwrap_or(443),
        path: clean_path(uri.path()),
    })
}

fn parse_service(service: &Value) -> Result<Target, String> {
    let text = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or("");
    let port = match service.get("port") {
        None | Some(Value::Null) => 443,
        Some(p) => p
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("invalid service port {p}"))?,
    };
    if text("name").is_empty() || text("namespace").is_empty() {
        return Err("webhook service reference needs a name and a namespace".to_string());
    }
    Ok(Target::Service {
        namespace: text("namespace").to_string(),
        name: text("name").to_string(),
        port,
        path: clean_path(text("path")),
    })
}

/// `rootCertPool` of client-go: the caBundle's certificates, or the system
/// roots when there is no caBundle; verified as Go verifies them.
fn tls_config(ca_bundle: Option<&Value>) -> Result<Arc<ClientConfig>, String> {
    let bundle = match ca_bundle {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("caBundle is not valid base64: {e}"))?,
        Some(_) => return Err("caBundle must be a base64 string".to_string()),
    };
    let roots: Vec<CertificateDer<'static>> = if bundle.is_empty() {
        NATIVE_ROOTS.clone()
    } else {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bundle)
            .collect::<Result<_, _>>()
            .map_err(|_| {
                "unable to load root certificates: unable to parse bytes as PEM block".to_string()
            })?;
        if certs.is_empty() {
            return Err(
                "unable to load root certificates: unable to parse bytes as PEM block".to_string(),
            );
        }
        for cert in &certs {
            X509Certificate::from_der(cert).map_err(|e| {
                format!("unable to load root certificates: failed to parse certificate: {e}")
            })?;
        }
        certs
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = GoVerifier::new(roots, Arc::clone(&provider));
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    // kube-apiserver speaks HTTP/1.1 to webhooks.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

impl ClientSpec {
    pub(crate) fn compile(webhook: &str, client_config: Option<&Value>) -> ClientSpec {
        let empty = Value::Null;
        let cc = client_config.unwrap_or(&empty);
        let target = match (cc.get("url").and_then(Value::as_str), cc.get("service")) {
            (Some(url), _) => parse_url(url),
            (None, Some(service)) if service.is_object() => parse_service(service),
            _ => Err(format!(
                "failed calling webhook {webhook:?}: webhook configuration must have either service or URL"
            )),
        };
        ClientSpec {
            target,
            tls: tls_config(cc.get("caBundle")),
        }
    }

    /// POSTs `body` and returns the webhook's answer. `timeout` bounds the
    /// whole exchange; it is also sent as the `timeout` query parameter.
    pub(crate) async fn post(
        &self,
        routes: &WebhookRoutes,
        cluster: &dyn ClusterView,
        timeout: Duration,
        body: Vec<u8>,
    ) -> Result<HttpResponse, CallError> {
        let target = self
            .target
            .as_ref()
            .map_err(|e| CallError::Client(e.clone()))?;
        let tls = self
            .tls
            .as_ref()
            .map_err(|e| CallError::Client(e.clone()))?;
        let (authority, server_name, path) = match target {
            Target::Url {
                authority,
                host,
                path,
                ..
            } => (authority.clone(), host.clone(), path.clone()),
            Target::Service {
                namespace,
                name,
                port,
                path,
            } => {
                let server_name = format!("{name}.{namespace}.svc");
                (format!("{server_name}:{port}"), server_name, path.clone())
            }
        };
        let path_and_query = format!("{path}?timeout={}s", timeout.as_secs());
        let url = format!("https://{authority}{path_and_query}");
        let fail = |cause: String| CallError::Transport(format!("Post {url:?}: {cause}"));

        let (host, port) = match target {
            Target::Url { host, port, .. } => (host.clone(), *port),
            Target::Service {
                namespace,
                name,
                port,
                ..
            } => routes
                .resolve(cluster, namespace, name, *port)
                .map_err(|e| fail(e.to_string()))?,
        };
        let server_name = ServerName::try_from(server_name)
            .map_err(|e| fail(format!("invalid server name: {e}")))?;
        let exchange = exchange(
            tls,
            &host,
            port,
            server_name,
            &authority,
            &path_and_query,
            body,
        );
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result.map_err(fail),
            Err(_) => Err(fail("context deadline exceeded".to_string())),
        }
    }
}

async fn connect(host: &str, port: u16) -> Result<TcpStream, String> {
    let addrs: Vec<_> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| format!("dial tcp: lookup {host}: no such host"))?
        .collect();
    let mut last = format!("dial tcp: lookup {host}: no such host");
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("dial tcp {addr}: connect: {}", io_cause(&e)),
        }
    }
    Err(last)
}

/// Go's wording of common socket errors.
fn io_cause(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => "connection refused".to_string(),
        ConnectionReset => "connection reset by peer".to_string(),
        AddrNotAvailable => "cannot assign requested address".to_string(),
        NetworkUnreachable => "network is unreachable".to_string(),
        HostUnreachable => "no route to host".to_string(),
        TimedOut => "i/o timeout".to_string(),
        _ => e.to_string(),
    }
}

/// Go's wording of a failed TLS handshake.
fn tls_cause(e: &std::io::Error) -> String {
    let Some(rustls_error) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "EOF".to_string(),
            _ => io_cause(e),
        };
    };
    match rustls_error {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            match other.0.downcast_ref::<GoTlsError>() {
                Some(go) => go.0.clone(),
                None => format!("tls: failed to verify certificate: {other}"),
            }
        }
        rustls::Error::InvalidCertificate(other) => {
            format!("tls: failed to verify certificate: {other:?}")
        }
        rustls::Error::AlertReceived(alert) => {
            format!("remote error: tls: {}", format!("{alert:?}").to_lowercase())
        }
        other => format!("tls: {other}"),
    }
}

async fn exchange(
    tls: &Arc<ClientConfig>,
    host: &str,
    port: u16,
    server_name: ServerName<'static>,
    authority: &str,
    path_and_query: &str,
    body: Vec<u8>,
) -> Result<HttpResponse, String> {
    let tcp = connect(host, port).await?;
    let connector = TlsConnector::from(Arc::clone(tls));
    let stream = connector
        .connect(server_name.clone(), tcp)
        .await
        .map_err(|e| tls_cause(&e))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let request = hyper::Request::post(path_and_query)
        .header(HOST, authority)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, */*")
        .header(USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let result = async {
        let response = sender.send_request(request).await.map_err(hyper_cause)?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| {
                format!(
                    "unexpected error when reading response body. Please retry. Original error: {e}"
                )
            })?
            .to_bytes();
        Ok(HttpResponse {
            status,
            content_type,
            body,
        })
    }
    .await;
    driver.abort();
    result
}

fn hyper_cause(e: hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        // What Go's transport reports when the server hangs up without answering.
        "EOF".to_string()
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_cleaned_like_go() {
        assert_eq!(clean_path(""), "/");
        assert_eq!(clean_path("/mutate"), "/mutate");
        assert_eq!(clean_path("mutate/"), "/mutate");
        assert_eq!(clean_path("//a/./b/../c"), "/a/c");
    }

    #[test]
    fn urls_and_services_are_checked() {
        let spec = ClientSpec::compile("w", Some(&json!({"url": "https://127.0.0.1:9443/x/"})));
        match spec.target.unwrap() {
            Target::Url {
                authority,
                host,
                port,
                path,
            } => {
                assert_eq!(
                    (authority.as_str(), host.as_str(), port, path.as_str()),
                    ("127.0.0.1:9443", "127.0.0.1", 9443, "/x")
                );
            }
            other => panic!("{other:?}"),
        }
        let spec = ClientSpec::compile("w", Some(&json!({"url": "https://[::1]/"})));
        assert!(
            matches!(spec.target.unwrap(), Target::Url { port: 443, ref host, .. } if host == "::1")
        );
        assert!(
            ClientSpec::compile("w", Some(&json!({"url": "http://x/"})))
                .target
                .is_err()
        );
        assert!(
            ClientSpec::compile("w", Some(&json!({"url": "not a url"})))
                .target
                .is_err()
        );
        assert!(
            ClientSpec::compile("w", Some(&json!({})))
                .target
                .unwrap_err()
                .contains("either service or URL")
        );
        let spec = ClientSpec::compile(
            "w",
            Some(&json!({"service": {"namespace": "ns", "name": "svc"}})),
        );
        assert!(
            matches!(spec.target.unwrap(), Target::Service { port: 443, ref path, .. } if path == "/")
        );
        assert!(
            ClientSpec::compile(
                "w",
                Some(&json!({"service": {"namespace": "ns", "name": "svc", "port": 70000}}))
            )
            .target
            .is_err()
        );
    }

    #[test]
    fn bad_ca_bundles_are_reported() {
        let not_pem = base64::engine::general_purpose::STANDARD.encode("hello");
        let spec = ClientSpec::compile(
            "w",
            Some(&json!({"url": "https://h/", "caBundle": not_pem})),
        );
        assert_eq!(
            spec.tls.unwrap_err(),
            "unable to load root certificates: unable to parse bytes as PEM block"
        );
        let spec = ClientSpec::compile("w", Some(&json!({"url": "https://h/", "caBundle": "%%%"})));
        assert!(spec.tls.unwrap_err().contains("base64"));
    }
}
