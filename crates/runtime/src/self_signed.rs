//! A CA and a serving certificate made at start-up with rcgen, for given
//! DNS names, `localhost`, `127.0.0.1` and `::1`: the metrics endpoint's
//! certificate when no files are given, and the webhook server's with
//! `--webhook-self-signed`. A new CA each start: nothing to keep secret
//! between runs.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A CA and the serving certificate it signed, PEM.
pub(crate) struct Pki {
    pub(crate) ca_pem: String,
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

/// Makes a CA named `<owner> CA` and a serving certificate for `dns_names`
/// and the loopback names.
pub(crate) fn generate(owner: &str, dns_names: &[String]) -> anyhow::Result<Pki> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{owner} CA"));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;

    let mut names = dns_names.to_vec();
    names.extend(["localhost", "127.0.0.1", "::1"].map(str::to_owned));
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(names)?;
    let common_name = dns_names.first().map_or("localhost", String::as_str);
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &ca)?;
    Ok(Pki {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    #[test]
    fn the_serving_certificate_is_signed_by_the_ca_for_the_service() {
        let pki = generate("demo", &["webhook.system.svc".to_owned()]).expect("certificates");
        let ca = CertificateDer::from_pem_slice(pki.ca_pem.as_bytes()).expect("CA PEM");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca).expect("a CA");
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider,
        )
        .build()
        .expect("a verifier");
        let leaf = CertificateDer::from_pem_slice(pki.cert_pem.as_bytes()).expect("PEM");
        let now = rustls::pki_types::UnixTime::now();
        for name in ["webhook.system.svc", "localhost", "127.0.0.1"] {
            let server = rustls::pki_types::ServerName::try_from(name).expect("a name");
            verifier
                .verify_server_cert(&leaf, &[], &server, &[], now)
                .unwrap_or_else(|err| panic!("{name}: {err}"));
        }
        let other = rustls::pki_types::ServerName::try_from("other.system.svc").expect("a name");
        assert!(
            verifier
                .verify_server_cert(&leaf, &[], &other, &[], now)
                .is_err()
        );
    }
}
