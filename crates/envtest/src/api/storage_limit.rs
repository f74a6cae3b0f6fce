//! etcd's request size limit, as kube-apiserver meets it when it stores a
//! custom resource: etcd refuses a write whose request exceeds
//! `--max-request-bytes` (1.5 MiB by default) and kube-apiserver passes the
//! error on unwrapped, a 500 without a reason.
//!
//! Custom resources are stored as the JSON envtest stores, so their size is
//! known up to the few bytes of the request's framing. Built-in kinds are
//! stored by kube-apiserver as protobuf, smaller than their JSON by an amount
//! that depends on the object; their validation limits (1 MiB of ConfigMap or
//! Secret data, 256 KiB of annotations) keep them under etcd's limit, and
//! envtest does not guess further.

use serde_json::Value;

use crate::error::ApiError;
use crate::registry::Resource;

/// etcd's default `--max-request-bytes`.
const ETCD_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// A transaction names the key three times (compare, put, and the read of
/// the failure branch) around a few dozen bytes of framing.
const FRAMING_BYTES: usize = 64;

/// The error etcd's client reports, as kube-apiserver serves it.
pub(crate) fn too_large() -> ApiError {
    crate::error::ApiError::internal_no_reason("etcdserver: request is too large")
}

/// Refuses to store `stored` (the storage form) when etcd would refuse it.
pub(crate) fn check(res: &Resource, ns: &str, name: &str, stored: &Value) -> Result<(), ApiError> {
    if !res.is_custom() {
        return Ok(());
    }
    let key = format!("/registry/{}/{}/{ns}/{name}", res.group, res.plural).len();
    // The storage codec writes a trailing newline after the JSON.
    let request = crate::gofmt::encoded_len(stored) + 1 + 3 * key + FRAMING_BYTES;
    if request > ETCD_MAX_REQUEST_BYTES {
        return Err(too_large());
    }
    Ok(())
}
