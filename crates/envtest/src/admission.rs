//! The admission seam. kube-apiserver runs mutating admission webhooks after
//! an object is decoded and defaulted, and validating webhooks after the
//! object passed validation, just before it is stored. Webhook calls are a
//! later piece of work; these two functions are where they plug in, and they
//! are called at exactly those two points of every create and update.

use serde_json::Value;

use crate::error::ApiResult;
use crate::registry::Resource;

/// What is being admitted.
pub struct Attributes<'a> {
    pub resource: &'a Resource,
    pub namespace: &'a str,
    pub name: &'a str,
    pub subresource: Option<&'a str>,
    /// `CREATE` or `UPDATE`.
    pub operation: &'static str,
    pub old: Option<&'a Value>,
    pub dry_run: bool,
}

/// Mutating admission: may change `obj`.
pub fn mutate(attrs: &Attributes<'_>, obj: &mut Value) -> ApiResult<()> {
    let _ = (attrs, obj);
    Ok(())
}

/// Validating admission: may refuse `obj`.
pub fn validate(attrs: &Attributes<'_>, obj: &Value) -> ApiResult<()> {
    let _ = (attrs, obj);
    Ok(())
}
