//! Custom resources in more than one version: what a CRD's
//! `spec.conversion` asks for, as kube-apiserver's apiextensions converter
//! does it.
//!
//! - `strategy: None`: versions differ only by `apiVersion`; the registry
//!   converts synchronously ([`CustomResource::read_as`] and
//!   [`CustomResource::storage_form`]).
//! - `strategy: Webhook`: every object that must change version is sent to
//!   the CRD's webhook in a `ConversionReview` (the first of
//!   `conversionReviewVersions` the server speaks, v1 or v1beta1) over the
//!   admission webhooks' transport: HTTPS checked against `caBundle`,
//!   Service references routed as theirs, `?timeout=30s`.
//!
//! The synchronous code of the server leaves objects of webhook-converted
//! resources in the version they are in; the API operations convert at their
//! edges, asynchronously:
//! - [`for_read`]: an object read from storage (get, list, watch, the answer
//!   of a write, the old object of an update) into the request's version;
//! - [`for_storage`]: an object written in a non-storage version into the
//!   storage version, before it is stored.
//!
//! Failures read as kube-apiserver's: `conversion webhook for
//! example.com/v1, Kind=Widget failed: <cause>` as a 500 without reason on
//! reads, `Internal error occurred: ...` (500 InternalError) on writes, and
//! an ERROR event that ends a watch.

mod review;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::admission::{CallError, ClientSpec, ReviewVersion, internal_error};
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::registry::{CustomResource, Resource, Webhook};

/// kube-apiserver's timeout for conversion webhooks (there is no field to change it).
const TIMEOUT: Duration = Duration::from_secs(30);

/// Go's `GroupVersionKind.String()` of an object.
fn gvk_of(obj: &Value) -> String {
    let (group, version) = meta::split_api_version(
        obj.get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    format!("{group}/{version}, Kind={kind}")
}

/// `obj` converted to `api_version` by the CRD's webhook, checked and with
/// its metadata restored; the error is kube-apiserver's message.
async fn convert(
    webhook: &Webhook,
    app: &App,
    obj: &Value,
    api_version: &str,
) -> Result<Value, String> {
    let gvk = gvk_of(obj);
    let failed = |cause: String| format!("conversion webhook for {gvk} failed: {cause}");
    let version = ReviewVersion::choose(&webhook.review_versions)
        .ok_or_else(|| "no supported conversion review versions".to_string())?;
    let client = webhook.client.get_or_init(|| {
        ClientSpec::compile(
            &format!("conversion_webhook_for_{}", webhook.crd_name),
            Some(&webhook.client_config),
        )
    });
    let uid = uuid::Uuid::new_v4().to_string();
    let body = review::request_body(version, &uid, api_version, &[obj]);
    let http = app
        .webhooks
        .post(client, TIMEOUT, body)
        .await
        .map_err(|e| match e {
            CallError::Client(e) => failed(format!("could not get REST client: {e}")),
            CallError::Transport(e) => failed(e),
        })?;
    let objects = review::converted_objects(&http, version, &uid).map_err(failed)?;
    let [converted] = <[Value; 1]>::try_from(objects).map_err(|objects| {
        format!(
            "conversion webhook for {gvk} returned {} objects, expected 1",
            objects.len()
        )
    })?;
    let invalid = |detail: String| {
        format!("conversion webhook for {gvk} returned invalid object at index 0: {detail}")
    };
    if !converted.is_object() {
        return Err(invalid("the object is not a JSON object".to_string()));
    }
    let (group, ver) = meta::split_api_version(api_version);
    let got = converted
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (got_group, got_ver) = meta::split_api_version(got);
    if (got_group, got_ver) != (group, ver) {
        return Err(invalid(format!(
            "invalid groupVersion (expected {group}/{ver}, received {got_group}/{got_ver})"
        )));
    }
    let (kind, got_kind) = (
        obj.get("kind").and_then(Value::as_str).unwrap_or_default(),
        converted
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    if kind != got_kind {
        return Err(invalid(format!(
            "invalid kind (expected {kind}, received {got_kind})"
        )));
    }
    review::check_identity(obj, &converted)
        .map_err(|e| format!("conversion webhook for {gvk} returned invalid object: {e}"))?;
    let mut converted = converted;
    review::restore_metadata(obj, &mut converted)
        .map_err(|e| format!("conversion webhook for {gvk} returned invalid metadata: {e}"))?;
    Ok(converted)
}

/// The webhook of `res` when objects of `res` are converted by one.
fn webhook_of(res: &Resource) -> Option<(&CustomResource, &Arc<Webhook>)> {
    let custom = res.custom()?;
    Some((custom, custom.conversion.webhook()?))
}

/// `obj` (as [`Resource::from_storage`] shows it) in the version of `res`.
/// Only objects of webhook-converted resources in another version change.
pub(crate) async fn for_read(app: &App, res: &Resource, obj: Arc<Value>) -> ApiResult<Arc<Value>> {
    let Some((custom, webhook)) = webhook_of(res) else {
        return Ok(obj);
    };
    let api_version = res.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str()) {
        return Ok(obj);
    }
    // The Status a delete answers with once the object is gone is no custom
    // resource: kube-apiserver never sends it to the webhook.
    if obj.get("kind").and_then(Value::as_str) != Some(res.kind.as_str()) {
        return Ok(obj);
    }
    let mut converted = convert(webhook, app, &obj, &api_version)
        .await
        .map_err(|message| ApiError::new(500, "", message))?;
    custom.prune_as(&mut converted, &res.version);
    Ok(Arc::new(converted))
}

/// `obj` (in the version of `res`, checked and admitted) in the storage
/// version, converted by the CRD's webhook when the versions differ.
pub(crate) async fn for_storage(app: &App, res: &Resource, obj: Value) -> ApiResult<Value> {
    let Some((custom, webhook)) = webhook_of(res) else {
        return Ok(obj);
    };
    let storage = meta::api_version(&custom.group, &custom.storage_version);
    if obj.get("apiVersion").and_then(Value::as_str) == Some(storage.as_str()) {
        return Ok(obj);
    }
    let mut converted = convert(webhook, app, &obj, &storage)
        .await
        .map_err(|message| internal_error(&message))?;
    custom.prune_as(&mut converted, &custom.storage_version);
    Ok(converted)
}

/// [`for_read`] of each object of a list, in order.
pub(crate) async fn all_for_read(
    app: &App,
    res: &Resource,
    objects: Vec<Arc<Value>>,
) -> ApiResult<Vec<Arc<Value>>> {
    if webhook_of(res).is_none() {
        return Ok(objects);
    }
    let mut out = Vec::with_capacity(objects.len());
    for obj in objects {
        out.push(for_read(app, res, obj).await?);
    }
    Ok(out)
}

/// Whether objects of `res` are converted by a webhook (and so by the
/// asynchronous functions of this module).
pub(crate) fn converts(res: &Resource) -> bool {
    webhook_of(res).is_some()
}

/// A stored object as a request through `res` sees it: unchanged for
/// resources without a conversion webhook (their synchronous conversion
/// happens later, in [`Resource::from_storage`]), converted otherwise.
pub(crate) async fn stored_as_requested(
    app: &App,
    res: &Resource,
    stored: Arc<Value>,
) -> ApiResult<Arc<Value>> {
    if !converts(res) {
        return Ok(stored);
    }
    for_read(app, res, res.from_storage(&stored)).await
}
