//! CertificateSigningRequests (`certificates.k8s.io/v1`) as kube-apiserver
//! v1.32 serves them: the registry strategies of the main resource and of
//! its `/status` and `/approval` subresources, validation, and the
//! CertificateApproval, CertificateSigning and CertificateSubjectRestriction
//! admission plugins. No signer runs: an approved request stays without a
//! certificate until a client writes one to `/status`, as on a cluster
//! whose signing controller does not handle the signer.

mod validation;

use serde_json::{Value, json};

use crate::authz::{self, Attributes};
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::store::Store;
use crate::user::UserInfo;
pub(crate) use validation::Path;

const GROUP: &str = "certificates.k8s.io";
const RESOURCE: &str = "certificatesigningrequests";

/// `PrepareForCreate`: the requestor is whoever creates the request, and a
/// request is never created approved.
pub(crate) fn set_requestor(csr: &mut Value, user: &UserInfo) {
    let Some(spec) = csr.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["username", "uid", "groups", "extra"] {
        spec.remove(key);
    }
    spec.insert("username".into(), json!(user.username));
    if !user.uid.is_empty() {
        spec.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

fn conditions_mut(csr: &mut Value) -> Option<&mut Vec<Value>> {
    csr.pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
}

/// `populateConditionTimestamps`: a condition without times gets now, or
/// the transition time of an old condition of the same type and status.
fn populate_timestamps(csr: &mut Value, old: &Value) {
    let now = meta::now_rfc3339();
    let old_conditions: Vec<Value> = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in conditions_mut(csr).into_iter().flatten() {
        let Some(c) = c.as_object_mut() else { continue };
        let missing = |v: Option<&Value>| v.is_none_or(|v| v.as_str().is_none_or(str::is_empty));
        if missing(c.get("lastUpdateTime")) {
            c.insert("lastUpdateTime".into(), json!(now));
        }
        if missing(c.get("lastTransitionTime")) {
            let earlier = old_conditions.iter().find(|o| {
                o.get("type") == c.get("type")
                    && o.get("status") == c.get("status")
                    && o.get("lastTransitionTime").is_some_and(|t| !t.is_null())
            });
            let time = earlier
                .and_then(|o| o.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            c.insert("lastTransitionTime".into(), time);
        }
    }
}

/// `preserveConditionInstances`: a status update keeps the old Approved
/// and Denied conditions when it has as many of them (else validation refuses it).
fn preserve_approval(csr: &mut Value, old: &Value) {
    for kind in ["Approved", "Denied"] {
        let old_ones: Vec<Value> = old
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some(kind))
            .cloned()
            .collect();
        let Some(conditions) = conditions_mut(csr) else {
            continue;
        };
        let slots: Vec<usize> = (0..conditions.len())
            .filter(|i| conditions[*i].get("type").and_then(Value::as_str) == Some(kind))
            .collect();
        if slots.len() == old_ones.len() {
            for (slot, old_one) in slots.into_iter().zip(old_ones) {
                conditions[slot] = old_one;
            }
        }
    }
}

/// `PrepareForUpdate` of the main resource (`None`), `/status` or `/approval`.
pub(crate) fn prepare_update(csr: &mut Value, old: &Value, subresource: Option<&str>) {
    let Some(root) = csr.as_object_mut() else {
        return;
    };
    let old_spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
    root.insert("spec".into(), old_spec);
    match subresource {
        Some("status") => {
            preserve_approval(csr, old);
            populate_timestamps(csr, old);
        }
        Some("approval") => {
            populate_timestamps(csr, old);
            let conditions = csr.pointer("/status/conditions").cloned();
            let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
            if let Some(status) = status.as_object_mut() {
                match conditions {
                    Some(c) => status.insert("conditions".into(), c),
                    None => status.remove("conditions"),
                };
            }
            csr["status"] = status;
        }
        _ => {
            csr["status"] = old.get("status").cloned().unwrap_or_else(|| json!({}));
        }
    }
}

/// Validation of a create (`old` is `None`) or of an update through `path`.
pub(crate) fn validate(csr: &Value, old: Option<&Value>, path: Path) -> Vec<Cause> {
    validation::validate(csr, old, path)
}

fn signer(csr: &Value) -> &str {
    csr.pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `IsAuthorizedForSignerName`: `verb` on the signer, or on every signer of
/// its domain (`example.com/*`).
fn may(store: &Store, user: &UserInfo, verb: &str, signer: &str) -> bool {
    let domain_wide = signer
        .split_once('/')
        .map(|(domain, _)| format!("{domain}/*"));
    std::iter::once(signer.to_string())
        .chain(domain_wide)
        .any(|name| {
            let attrs = Attributes {
                verb: verb.into(),
                resource_request: true,
                api_group: GROUP.into(),
                resource: "signers".into(),
                name,
                ..Attributes::default()
            };
            authz::authorize(store, user, &attrs).allowed
        })
}

/// The certificate admission plugins, after validation: on create, no
/// `system:masters` client certificates from the kube-apiserver-client
/// signer; on `/approval`, the `approve` permission for the signer; on a
/// `/status` that writes a certificate, the `sign` permission.
pub(crate) fn admit(
    store: &Store,
    user: &UserInfo,
    csr: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> ApiResult<()> {
    let name = meta::name(csr);
    let forbidden = |detail: String| ApiError::forbidden(GROUP, RESOURCE, name, &detail);
    let signer = signer(csr);
    match (old, subresource) {
        (None, _) if signer == "kubernetes.io/kube-apiserver-client" => {
            let organizations = validation::check_request(&validation::request_bytes(csr))
                .map_err(|e| forbidden(format!("failed to parse CSR: {e}")))?;
            if organizations.iter().any(|o| o == "system:masters") {
                return Err(forbidden(format!(
                    "use of {signer} signer with system:masters group is not allowed"
                )));
            }
            Ok(())
        }
        (Some(_), Some("approval")) if !may(store, user, "approve", signer) => Err(forbidden(
            format!("user not permitted to approve requests with signerName {signer:?}"),
        )),
        (Some(old), Some("status"))
            if csr.pointer("/status/certificate") != old.pointer("/status/certificate")
                && !may(store, user, "sign", signer) =>
        {
            Err(forbidden(format!(
                "user not permitted to sign requests with signerName {signer:?}"
            )))
        }
        _ => Ok(()),
    }
}
