//! Webhook serving certificates checked as kube-apiserver checks them: Go's
//! `crypto/x509` `Certificate.Verify` (Go 1.23, which v1.32 is built with)
//! with the `caBundle` as roots and the webhook's host as the name, and the
//! error texts Go's TLS client reports.
//!
//! Where it differs from WebPKI: a certificate that is itself in the roots is
//! trusted as it is (so a self-signed serving certificate that is also marked
//! as a CA, which Kopf's webhook server makes, is accepted); validity is
//! checked first, then the name, then the chain; the Common Name is never a
//! host name; key usages only constrain through the extended key usage.
//! Name constraints are not checked.

use std::net::IpAddr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, SignatureScheme};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;
use x509_parser::x509::X509Version;

/// The full text of a failed verification (`tls: failed to verify
/// certificate: x509: ...`), carried through rustls to the caller.
#[derive(Debug)]
pub(crate) struct GoTlsError(pub String);

impl std::fmt::Display for GoTlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GoTlsError {}

/// Verifies server certificates against `roots` as Go does.
#[derive(Debug)]
pub(crate) struct GoVerifier {
    roots: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
}

impl GoVerifier {
    pub(crate) fn new(roots: Vec<CertificateDer<'static>>, provider: Arc<CryptoProvider>) -> Self {
        GoVerifier { roots, provider }
    }
}

fn go_error(text: String) -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(GoTlsError(
        text,
    )))))
}

impl ServerCertVerifier for GoVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let host = match server_name {
            ServerName::DnsName(name) => name.as_ref().to_string(),
            ServerName::IpAddress(ip) => IpAddr::from(*ip).to_string(),
            other => other.to_str().into_owned(),
        };
        let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        verify(end_entity, intermediates, &self.roots, &host, now)
            .map(|()| ServerCertVerified::assertion())
            .map_err(go_error)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn parse<'a>(der: &'a [u8]) -> Result<X509Certificate<'a>, String> {
    X509Certificate::from_der(der)
        .map(|(_, cert)| cert)
        .map_err(|e| format!("x509: malformed certificate: {e}"))
}

/// Go's `Certificate.Verify` for a TLS server: the full error text, or Ok.
pub(crate) fn verify(
    leaf_der: &[u8],
    intermediates: &[CertificateDer<'_>],
    roots: &[CertificateDer<'_>],
    host: &str,
    now: i64,
) -> Result<(), String> {
    let failed = |e: String| format!("tls: failed to verify certificate: {e}");
    let leaf = parse(leaf_der)
        .map_err(|e| format!("tls: failed to parse certificate from server: {e}"))?;
    let roots: Vec<X509Certificate<'_>> = roots.iter().filter_map(|r| parse(r).ok()).collect();
    let intermediates: Vec<X509Certificate<'_>> =
        intermediates.iter().filter_map(|r| parse(r).ok()).collect();
    check_time(&leaf, now).map_err(failed)?;
    verify_hostname(&leaf, host).map_err(failed)?;
    let chains = if roots.iter().any(|r| r.as_raw() == leaf.as_raw()) {
        vec![vec![&leaf]]
    } else {
        let pools = Pools {
            roots: &roots,
            intermediates: &intermediates,
            now,
        };
        let mut sig_checks = 0;
        pools
            .build_chains(vec![&leaf], &mut sig_checks)
            .map_err(failed)?
    };
    if chains.iter().any(|chain| chain_allows_server_auth(chain)) {
        Ok(())
    } else {
        Err(failed(
            "x509: certificate specifies an incompatible key usage".to_string(),
        ))
    }
}

fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

fn check_time(cert: &X509Certificate<'_>, now: i64) -> Result<(), String> {
    let not_before = cert.validity().not_before.timestamp();
    let not_after = cert.validity().not_after.timestamp();
    let detail = if now < not_before {
        format!(
            "current time {} is before {}",
            rfc3339(now),
            rfc3339(not_before)
        )
    } else if now > not_after {
        format!(
            "current time {} is after {}",
            rfc3339(now),
            rfc3339(not_after)
        )
    } else {
        return Ok(());
    };
    Err(format!(
        "x509: certificate has expired or is not yet valid: {detail}"
    ))
}

/// The DNS names and IP addresses of the SAN extension, and whether it exists.
fn sans(cert: &X509Certificate<'_>) -> (bool, Vec<String>, Vec<IpAddr>) {
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return (false, dns, ips);
    };
    for name in &san.value.general_names {
        match name {
            GeneralName::DNSName(d) => dns.push((*d).to_string()),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => ips.push(IpAddr::from(
                    <[u8; 4]>::try_from(*bytes).unwrap_or_default(),
                )),
                16 => ips.push(IpAddr::from(
                    <[u8; 16]>::try_from(*bytes).unwrap_or_default(),
                )),
                _ => {}
            },
            _ => {}
        }
    }
    (true, dns, ips)
}

fn common_name(cert: &X509Certificate<'_>) -> String {
    cert.subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or("")
        .to_string()
}

/// Go's `validHostname`: letters, digits, `-`, `_`, `:` (and `*` as a whole
/// first label in a pattern); an input may end with one dot.
fn valid_hostname(host: &str, is_pattern: bool) -> bool {
    let host = if is_pattern {
        host
    } else {
        host.strip_suffix('.').unwrap_or(host)
    };
    if host.is_empty() {
        return false;
    }
    host.split('.').enumerate().all(|(i, part)| {
        if part.is_empty() {
            return false;
        }
        if is_pattern && i == 0 && part == "*" {
            return true;
        }
        part.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
    })
}

fn match_hostnames(pattern: &str, host: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if pattern.is_empty() || host.is_empty() {
        return false;
    }
    let p: Vec<&str> = pattern.split('.').collect();
    let h: Vec<&str> = host.split('.').collect();
    p.len() == h.len()
        && p.iter()
            .zip(&h)
            .enumerate()
            .all(|(i, (pp, hp))| (i == 0 && *pp == "*") || pp == hp)
}

fn verify_hostname(cert: &X509Certificate<'_>, host: &str) -> Result<(), String> {
    let (has_san, dns, ips) = sans(cert);
    let candidate_ip = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let wanted_ip = candidate_ip.parse::<IpAddr>().ok();
    let host_shown = if wanted_ip.is_some() {
        candidate_ip
    } else {
        host
    };
    let ok = match wanted_ip {
        Some(ip) => ips.contains(&ip),
        None => {
            let lower = host.to_ascii_lowercase();
            let valid_input = valid_hostname(&lower, false);
            dns.iter().any(|pattern| {
                if valid_input && valid_hostname(pattern, true) {
                    match_hostnames(pattern, &lower)
                } else {
                    !pattern.is_empty()
                        && pattern != "."
                        && !lower.is_empty()
                        && lower != "."
                        && pattern.to_ascii_lowercase() == lower
                }
            })
        }
    };
    if ok {
        return Ok(());
    }
    // HostnameError.Error()
    if !has_san && match_hostnames(&common_name(cert), host_shown) {
        return Err(
            "x509: certificate relies on legacy Common Name field, use SANs instead".to_string(),
        );
    }
    let valid = if wanted_ip.is_some() {
        if ips.is_empty() {
            return Err(format!(
                "x509: cannot validate certificate for {host_shown} because it doesn't contain any IP SANs"
            ));
        }
        ips.iter()
            .map(IpAddr::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        dns.join(", ")
    };
    if valid.is_empty() {
        return Err(format!(
            "x509: certificate is not valid for any names, but wanted to match {host_shown}"
        ));
    }
    Err(format!(
        "x509: certificate is valid for {valid}, not {host_shown}"
    ))
}

fn basic_constraints(cert: &X509Certificate<'_>) -> Option<(bool, Option<u32>)> {
    match cert.basic_constraints() {
        Ok(Some(bc)) => Some((bc.value.ca, bc.value.path_len_constraint)),
        _ => None,
    }
}

fn key_id(cert: &X509Certificate<'_>, subject: bool) -> Option<Vec<u8>> {
    cert.extensions()
        .iter()
        .find_map(|ext| match ext.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(id) if subject => Some(id.0.to_vec()),
            ParsedExtension::AuthorityKeyIdentifier(aki) if !subject => {
                aki.key_identifier.as_ref().map(|id| id.0.to_vec())
            }
            _ => None,
        })
}

/// Go's `CheckSignatureFrom`: the parent may sign, and its signature holds.
fn check_signature_from(
    child: &X509Certificate<'_>,
    parent: &X509Certificate<'_>,
) -> Result<(), String> {
    let bc = basic_constraints(parent);
    let v3 = parent.version() == X509Version::V3;
    if (v3 && bc.is_none()) || bc.is_some_and(|(ca, _)| !ca) {
        return Err(
            "x509: invalid signature: parent certificate cannot sign this kind of certificate"
                .to_string(),
        );
    }
    if let Ok(Some(ku)) = parent.key_usage()
        && ku.value.flags != 0
        && !ku.value.key_cert_sign()
    {
        return Err(
            "x509: invalid signature: parent certificate cannot sign this kind of certificate"
                .to_string(),
        );
    }
    child
        .verify_signature(Some(parent.public_key()))
        .map_err(|_| {
            match parent
                .public_key()
                .algorithm
                .algorithm
                .to_id_string()
                .as_str()
            {
                "1.2.840.113549.1.1.1" => "crypto/rsa: verification error".to_string(),
                "1.3.101.112" => "x509: Ed25519 verification failure".to_string(),
                _ => "x509: ECDSA verification failure".to_string(),
            }
        })
}

/// Go's `isValid` for a CA candidate (the time, then what a CA must be).
fn check_ca(
    cert: &X509Certificate<'_>,
    intermediate: bool,
    chain_len: usize,
    now: i64,
) -> Result<(), String> {
    check_time(cert, now)?;
    let bc = basic_constraints(cert);
    if intermediate && !bc.is_some_and(|(ca, _)| ca) {
        return Err("x509: certificate is not authorized to sign other certificates".to_string());
    }
    if let Some((_, Some(max))) = bc
        && chain_len.saturating_sub(1) > max as usize
    {
        return Err("x509: too many intermediates for path length constraint".to_string());
    }
    Ok(())
}

/// A name for a certificate in Go's `UnknownAuthorityError` hint.
fn hint_name(cert: &X509Certificate<'_>) -> String {
    let cn = common_name(cert);
    if !cn.is_empty() {
        return cn;
    }
    if let Some(org) = cert
        .subject()
        .iter_organization()
        .next()
        .and_then(|o| o.as_str().ok())
    {
        return org.to_string();
    }
    format!("serial:{}", cert.tbs_certificate.serial)
}

/// Go's `%q` of a simple string.
fn quoted(text: &str) -> String {
    format!("{text:?}")
}

struct Pools<'p, 'a> {
    roots: &'p [X509Certificate<'a>],
    intermediates: &'p [X509Certificate<'a>],
    now: i64,
}

impl<'p, 'a> Pools<'p, 'a> {
    /// `findPotentialParents`: subject equal to the issuer, ordered by how
    /// well the key identifiers match.
    fn parents(
        pool: &'p [X509Certificate<'a>],
        child: &X509Certificate<'_>,
    ) -> Vec<&'p X509Certificate<'a>> {
        let aki = key_id(child, false);
        let mut ranked: Vec<(u8, &X509Certificate<'a>)> = pool
            .iter()
            .filter(|c| c.subject().as_raw() == child.issuer().as_raw())
            .map(|c| {
                let ski = key_id(c, true);
                let rank = match (&ski, &aki) {
                    (a, b) if a == b => 0,
                    (None, Some(_)) | (Some(_), None) => 1,
                    _ => 2,
                };
                (rank, c)
            })
            .collect();
        ranked.sort_by_key(|(rank, _)| *rank);
        ranked.into_iter().map(|(_, c)| c).collect()
    }

    fn build_chains(
        &self,
        chain: Vec<&'p X509Certificate<'a>>,
        sig_checks: &mut usize,
    ) -> Result<Vec<Vec<&'p X509Certificate<'a>>>, String>
    where
        'a: 'p,
    {
        let Some(current) = chain.last().copied() else {
            return Ok(Vec::new());
        };
        let mut chains = Vec::new();
        let mut err: Option<String> = None;
        let mut hint: Option<(String, String)> = None;
        let candidates = Self::parents(self.roots, current)
            .into_iter()
            .map(|c| (false, c))
            .chain(
                Self::parents(self.intermediates, current)
                    .into_iter()
                    .map(|c| (true, c)),
            );
        for (intermediate, candidate) in candidates {
            if chain.iter().any(|c| c.as_raw() == candidate.as_raw()) {
                continue;
            }
            *sig_checks += 1;
            if *sig_checks > 100 {
                err = Some(
                    "x509: signature check attempts limit reached while verifying certificate chain"
                        .to_string(),
                );
                continue;
            }
            if let Err(e) = check_signature_from(current, candidate) {
                hint.get_or_insert((e, hint_name(candidate)));
                continue;
            }
            if let Err(e) = check_ca(candidate, intermediate, chain.len(), self.now) {
                hint.get_or_insert((e.clone(), hint_name(candidate)));
                err = Some(e);
                continue;
            }
            err = None;
            let mut longer = chain.clone();
            longer.push(candidate);
            if intermediate {
                match self.build_chains(longer, sig_checks) {
                    Ok(found) => chains.extend(found),
                    Err(e) => err = Some(e),
                }
            } else {
                chains.push(longer);
            }
        }
        if !chains.is_empty() {
            return Ok(chains);
        }
        if let Some(e) = err {
            return Err(e);
        }
        let mut text = "x509: certificate signed by unknown authority".to_string();
        if let Some((e, name)) = hint {
            text.push_str(&format!(
                " (possibly because of {} while trying to verify candidate authority certificate {})",
                quoted(&e),
                quoted(&name)
            ));
        }
        Err(text)
    }
}

/// `checkChainForKeyUsage` for server authentication: every certificate
/// that lists extended key usages must allow it (or any usage).
fn chain_allows_server_auth(chain: &[&X509Certificate<'_>]) -> bool {
    chain.iter().all(|cert| match cert.extended_key_usage() {
        Ok(Some(eku)) => {
            let eku = eku.value;
            let listed = eku.any
                || eku.server_auth
                || eku.client_auth
                || eku.code_signing
                || eku.email_protection
                || eku.time_stamping
                || eku.ocsp_signing
                || !eku.other.is_empty();
            !listed || eku.any || eku.server_auth
        }
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_match_as_go_matches_them() {
        assert!(match_hostnames("*.example.com", "a.example.com"));
        assert!(!match_hostnames("*.example.com", "a.b.example.com"));
        assert!(!match_hostnames("*.example.com", "example.com"));
        assert!(match_hostnames("Svc.NS.svc", "svc.ns.svc."));
        assert!(valid_hostname("webhook.default.svc", false));
        assert!(!valid_hostname("a..b", false));
        assert!(valid_hostname("*.svc", true));
    }

    #[test]
    fn times_are_written_as_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    }
}
