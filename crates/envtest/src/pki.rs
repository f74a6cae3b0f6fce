//! What an HTTPS envtest is made of: a CA generated at start, a serving
//! certificate it signs for the loopback names (IP SAN 127.0.0.1 and ::1,
//! DNS localhost), and a random bearer token for the administrator. Nothing
//! is written to disk here; the kubeconfig carries the CA and the token.

use std::sync::Arc;

use anyhow::Context;
use rand::RngCore;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The CA, the serving certificate and the administrator's token of one server.
pub(crate) struct Identity {
    /// PEM of the CA certificate (the kubeconfig's `certificate-authority-data`,
    /// and `kube-root-ca.crt` in every namespace).
    pub ca_pem: String,
    /// The bearer token that makes a request envtest's administrator.
    pub admin_token: String,
    cert: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl Identity {
    /// A fresh CA, serving certificate and token.
    pub(crate) fn generate() -> anyhow::Result<Identity> {
        let ca_key = KeyPair::generate().context("cannot generate the CA key")?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "opctl-envtest-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key)
            .context("cannot make the CA certificate")?;
        let key = KeyPair::generate().context("cannot generate the serving key")?;
        // rcgen makes IP SANs of the names that parse as addresses.
        let mut params = CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            "::1".to_string(),
            "localhost".to_string(),
        ])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &ca)
            .context("cannot sign the serving certificate")?;
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        let admin_token = secret.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Identity {
            ca_pem: ca.pem(),
            admin_token,
            cert: cert.der().clone(),
            key_der: key.serialize_der(),
        })
    }

    /// rustls' server side: the serving certificate, HTTP/2 and HTTP/1.1
    /// offered by ALPN as kube-apiserver offers them.
    pub(crate) fn server_config(&self) -> anyhow::Result<Arc<ServerConfig>> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone())),
            )
            .context("the serving certificate")?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// Whether `token` is the administrator's, compared in constant time.
    pub(crate) fn is_admin_token(&self, token: &str) -> bool {
        let (a, b) = (token.as_bytes(), self.admin_token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}
