//! Validation of CertificateSigningRequests as kube-apiserver v1.32 does it
//! (`pkg/apis/certificates/validation`): the PEM-encoded PKCS#10 request and
//! its signature, usages, the signer name, conditions, the issued
//! certificate, and what each update path may change.

use base64::Engine;
use serde_json::Value;
use x509_parser::prelude::{FromDer, X509CertificationRequest};

use crate::builtin::validation::go_syntax::invalid_raw;
use crate::error::Cause;
use crate::name_rules::{is_dns1123_label, is_dns1123_subdomain};

const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Condition types whose status may only be True.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];
const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Which update path a write takes: what it may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    Create,
    Update,
    Status,
    Approval,
}

/// The first PEM block of `data` (type and decoded bytes, headers refused
/// by the caller), as Go's `pem.Decode` finds it.
pub(crate) fn pem_block(data: &[u8]) -> Option<(String, Vec<u8>, bool, usize)> {
    let text = std::str::from_utf8(data).ok()?;
    let start = text.find("-----BEGIN ")?;
    let after = &text[start + 11..];
    let label_end = after.find("-----")?;
    let label = &after[..label_end];
    let body_start = start + 11 + label_end + 5;
    let end_marker = format!("-----END {label}-----");
    let end = text[body_start..].find(&end_marker)? + body_start;
    let body = &text[body_start..end];
    let has_headers = body.lines().any(|l| l.contains(':'));
    let b64: String = body
        .lines()
        .filter(|l| !l.contains(':'))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    Some((
        label.to_string(),
        bytes,
        has_headers,
        end + end_marker.len(),
    ))
}

/// `spec.request` as bytes (it travels base64-encoded in JSON).
pub(crate) fn request_bytes(csr: &Value) -> Vec<u8> {
    csr.pointer("/spec/request")
        .and_then(Value::as_str)
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default()
}

/// `certificates.ParseCSR` and `CheckSignature`.
pub(crate) fn check_request(request: &[u8]) -> Result<Vec<String>, String> {
    let der = match pem_block(request) {
        Some((label, der, _, _)) if label == "CERTIFICATE REQUEST" => der,
        _ => return Err("PEM block type must be CERTIFICATE REQUEST".into()),
    };
    let (rest, csr) = X509CertificationRequest::from_der(&der)
        .map_err(|_| "x509: malformed certificate request".to_string())?;
    if !rest.is_empty() {
        return Err("asn1: syntax error: trailing data".into());
    }
    if csr.verify_signature().is_err() {
        let algorithm = csr
            .certification_request_info
            .subject_pki
            .algorithm
            .algorithm
            .to_id_string();
        return Err(match algorithm.as_str() {
            "1.2.840.10045.2.1" => "x509: ECDSA verification failure".into(),
            "1.3.101.112" => "x509: Ed25519 verification failure".into(),
            _ => "crypto/rsa: verification error".into(),
        });
    }
    let organizations = csr
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Ok(organizations)
}

/// `[]byte{0x2d, ...}`: how a field error prints a byte slice.
fn go_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(|b| format!("0x{b:x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

/// `validateCertificate`: zero or more CERTIFICATE blocks, no headers.
fn check_certificate(data: &[u8]) -> Result<(), String> {
    if data.is_empty() {
        return Ok(());
    }
    let mut rest = data;
    let mut blocks = 0;
    while let Some((label, der, headers, used)) = pem_block(rest) {
        if label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {label:?}"
            ));
        }
        if headers {
            return Err("no PEM block headers are permitted".into());
        }
        x509_parser::parse_x509_certificate(&der)
            .map_err(|_| "x509: malformed certificate".to_string())?;
        blocks += 1;
        rest = &rest[used..];
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    Ok(())
}

fn certificate_bytes(csr: &Value) -> Vec<u8> {
    csr.pointer("/status/certificate")
        .and_then(Value::as_str)
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default()
}

/// `ValidateSignerName`.
fn signer_name(name: &str) -> Vec<Cause> {
    const FIELD: &str = "spec.signerName";
    if name.is_empty() {
        return vec![Cause::required(FIELD, "")];
    }
    let Some((domain, path)) = name.split_once('/').filter(|(_, p)| !p.contains('/')) else {
        return vec![Cause::invalid(
            FIELD,
            &Value::String(name.into()),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut causes = Vec::new();
    if domain.len() > 253 {
        causes.push(Cause::new(
            "FieldValueTooLong",
            FIELD,
            "Too long: may not be more than 253 bytes",
        ));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((label, errors)) = labels
        .iter()
        .map(|l| (*l, is_dns1123_label(l)))
        .find(|(_, e)| !e.is_empty())
    {
        for error in errors {
            causes.push(Cause::invalid(
                FIELD,
                &Value::String(domain.into()),
                &format!("validating label {label:?}: {error}"),
            ));
        }
    }
    if labels.len() < 2 {
        causes.push(Cause::invalid(
            FIELD,
            &Value::String(domain.into()),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    if let Some((label, errors)) = path
        .split('.')
        .map(|l| (l, is_dns1123_subdomain(l)))
        .find(|(_, e)| !e.is_empty())
    {
        for error in errors {
            causes.push(Cause::invalid(
                FIELD,
                &Value::String(path.into()),
                &format!("validating label {label:?}: {error}"),
            ));
        }
    }
    let max = 253 + (253 + 63 + 1) + 1;
    if name.len() > max {
        causes.push(Cause::new(
            "FieldValueTooLong",
            FIELD,
            format!("Too long: may not be more than {max} bytes"),
        ));
    }
    causes
}

fn conditions(csr: &Value) -> Vec<&Value> {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default()
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

fn of_type<'a>(csr: &'a Value, kind: &str) -> Vec<&'a Value> {
    conditions(csr)
        .into_iter()
        .filter(|c| condition_type(c) == kind)
        .collect()
}

/// What a stored object already breaks and later writes may therefore keep.
struct Tolerated {
    both_approved_and_denied: bool,
    duplicate_types: bool,
    empty_type: bool,
    legacy_signer: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
    arbitrary_certificate: bool,
}

impl Tolerated {
    fn of(new: &Value, old: Option<&Value>) -> Tolerated {
        let Some(old) = old else {
            return Tolerated {
                both_approved_and_denied: false,
                duplicate_types: false,
                empty_type: false,
                legacy_signer: false,
                unknown_usages: false,
                duplicate_usages: false,
                arbitrary_certificate: false,
            };
        };
        let types: Vec<&str> = conditions(old).into_iter().map(condition_type).collect();
        let usages: Vec<&str> = old
            .pointer("/spec/usages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut seen_types = types.clone();
        seen_types.sort_unstable();
        seen_types.dedup();
        let mut seen_usages = usages.clone();
        seen_usages.sort_unstable();
        seen_usages.dedup();
        let old_certificate = certificate_bytes(old);
        Tolerated {
            both_approved_and_denied: types.contains(&"Approved") && types.contains(&"Denied"),
            duplicate_types: seen_types.len() != types.len(),
            empty_type: types.contains(&""),
            legacy_signer: old.pointer("/spec/signerName").and_then(Value::as_str)
                == Some(LEGACY_SIGNER),
            unknown_usages: usages.iter().any(|u| !USAGES.contains(u)),
            duplicate_usages: seen_usages.len() != usages.len(),
            arbitrary_certificate: certificate_bytes(new) == old_certificate
                || check_certificate(&old_certificate).is_err(),
        }
    }
}

/// The request, usages, signer, expiration, conditions and certificate.
fn object(csr: &Value, ok: &Tolerated) -> Vec<Cause> {
    let mut causes = Vec::new();
    let request = request_bytes(csr);
    if let Err(e) = check_request(&request) {
        causes.push(invalid_raw("spec.request", &go_bytes(&request), &e));
    }
    let usages: Vec<&Value> = csr
        .pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|u| u.iter().collect())
        .unwrap_or_default();
    if usages.is_empty() {
        causes.push(Cause::required("spec.usages", ""));
    }
    if !ok.unknown_usages {
        for (i, usage) in usages.iter().enumerate() {
            if !usage.as_str().is_some_and(|u| USAGES.contains(&u)) {
                causes.push(Cause::not_supported(
                    format!("spec.usages[{i}]"),
                    usage,
                    USAGES,
                ));
            }
        }
    }
    if !ok.duplicate_usages {
        for (i, usage) in usages.iter().enumerate() {
            if usages[..i].contains(usage) {
                causes.push(Cause::duplicate(format!("spec.usages[{i}]"), usage));
            }
        }
    }
    let signer = csr
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if signer == LEGACY_SIGNER && !ok.legacy_signer {
        causes.push(Cause::invalid(
            "spec.signerName",
            &Value::String(signer.into()),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        causes.extend(signer_name(signer));
    }
    if let Some(seconds) = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        && seconds < 600
    {
        causes.push(Cause::invalid(
            "spec.expirationSeconds",
            &Value::from(seconds),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    causes.extend(condition_rules(csr, ok));
    if !ok.arbitrary_certificate
        && let Err(e) = check_certificate(&certificate_bytes(csr))
    {
        causes.push(invalid_raw(
            "status.certificate",
            "\"<certificate data>\"",
            &e,
        ));
    }
    causes
}

fn condition_rules(csr: &Value, ok: &Tolerated) -> Vec<Cause> {
    let mut causes = Vec::new();
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions(csr).into_iter().enumerate() {
        let path = format!("status.conditions[{i}]");
        let kind = condition_type(c);
        if kind.is_empty() && !ok.empty_type {
            causes.push(Cause::required(format!("{path}.type"), ""));
        }
        let status = c.get("status").and_then(Value::as_str).unwrap_or("");
        let allowed: &[&str] = if TRUE_ONLY.contains(&kind) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            causes.push(Cause::required(format!("{path}.status"), ""));
        } else if !allowed.contains(&status) {
            causes.push(Cause::not_supported(
                format!("{path}.status"),
                &Value::String(status.into()),
                allowed,
            ));
        }
        if !ok.both_approved_and_denied {
            let exclusive = match kind {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if exclusive {
                causes.push(Cause::invalid(
                    format!("{path}.type"),
                    &Value::String(kind.into()),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !ok.duplicate_types {
            if seen.contains(&kind) {
                causes.push(Cause::duplicate(
                    format!("{path}.type"),
                    &Value::String(kind.into()),
                ));
            }
            seen.push(kind);
        }
    }
    causes
}

/// Every rule of `path`; `old` is set on updates.
pub(crate) fn validate(csr: &Value, old: Option<&Value>, path: Path) -> Vec<Cause> {
    let ok = Tolerated::of(csr, old);
    let mut causes = object(csr, &ok);
    let Some(old) = old else {
        return causes;
    };
    for kind in ["Approved", "Denied", "Failed"] {
        if of_type(csr, kind).len() < of_type(old, kind).len() {
            causes.push(Cause::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    if path != Path::Approval {
        for kind in ["Approved", "Denied"] {
            let (new, before) = (of_type(csr, kind), of_type(old, kind));
            if new.len() > before.len() {
                causes.push(Cause::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {kind:?}"),
                ));
            } else if new.len() == before.len() && new != before {
                causes.push(Cause::forbidden(
                    "status.conditions",
                    &format!("updates may not modify a condition of type {kind:?}"),
                ));
            }
        }
    }
    let (new_cert, old_cert) = (certificate_bytes(csr), certificate_bytes(old));
    if new_cert != old_cert {
        if path != Path::Status {
            causes.push(Cause::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_cert.is_empty() {
            causes.push(Cause::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    causes
}
