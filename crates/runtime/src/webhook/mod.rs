//! The admission webhook server: HTTPS on `--webhook-bind-address` (port
//! 9443 by default) with the certificate and key of `--webhook-cert-dir`,
//! reloaded when the files change, and one route per webhook registered with
//! [`Manager::with_webhook`](crate::Manager::with_webhook). The API server
//! posts an `AdmissionReview`; the webhook's handler answers with an
//! [`AdmissionResponse`] ([`patch`] and [`deny`] help to build it).
//!
//! In a cluster the certificate comes from cert-manager (config/certmanager,
//! mounted by config/default). For local runs and the e2e tests,
//! `--webhook-self-signed` makes a CA and a serving certificate at start-up
//! and injects the CA into the webhook configurations that call this
//! manager's Service.
//!
//! Conversions between the versions of a kind are served at
//! [`CONVERSION_PATH`], registered with
//! [`Manager::with_conversion`](crate::Manager::with_conversion).
//!
//! A defaulting webhook, registered with the manager:
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use opctl_runtime::webhook::{self, AdmissionRequest, AdmissionResponse};
//!
//! /// Labels every Pod it is asked about.
//! async fn label(_ctx: opctl_runtime::Context, request: AdmissionRequest<Pod>) -> AdmissionResponse {
//!     let response = AdmissionResponse::from(&request);
//!     let Some(pod) = request.object else {
//!         return response;
//!     };
//!     let mut labelled = pod.clone();
//!     labelled.metadata.labels.get_or_insert_default().insert("seen".into(), "yes".into());
//!     webhook::patch(response, &pod, &labelled)
//! }
//!
//! fn register(manager: opctl_runtime::Manager) -> opctl_runtime::Manager {
//!     manager.with_webhook("/mutate--v1-pod", label)
//! }
//! ```

mod convert;
mod inject;
mod options;
mod self_signed;

pub use convert::PATH as CONVERSION_PATH;
pub use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
pub use options::Options;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use futures::future::BoxFuture;
use k8s_openapi::ByteString;
use kube::core::DynamicObject;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::http::Server;
use crate::{Context, Project, Shutdown, tls};

/// The largest AdmissionReview accepted (an object and its old version).
const MAX_REVIEW_BYTES: usize = 16 * 1024 * 1024;

type Handler =
    Arc<dyn Fn(Context, Bytes) -> BoxFuture<'static, AdmissionReview<DynamicObject>> + Send + Sync>;

/// The webhooks registered with the manager, by path.
#[derive(Default)]
pub(crate) struct Webhooks {
    handlers: BTreeMap<&'static str, Handler>,
    duplicates: Vec<&'static str>,
    conversions: Arc<convert::Conversions>,
}

impl Webhooks {
    /// Serves `handle` at `path`: requests for objects of kind `K`.
    pub(crate) fn add<K, F, Fut>(&mut self, path: &'static str, handle: F)
    where
        K: kube::Resource + DeserializeOwned + Send + 'static,
        F: Fn(Context, AdmissionRequest<K>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResponse> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |context, body| {
            Box::pin(review::<K, F, Fut>(handle.clone(), context, body))
        });
        if self.handlers.insert(path, handler).is_some() {
            self.duplicates.push(path);
        }
    }

    /// Converts spoke `S` to and from hub `H` at [`convert::PATH`].
    pub(crate) fn add_conversion<S, H>(
        &mut self,
        to_hub: fn(S) -> Result<H, String>,
        from_hub: fn(H) -> Result<S, String>,
    ) where
        S: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
        H: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
    {
        // Registration happens before the server starts: nothing shares it yet.
        if let Some(conversions) = Arc::get_mut(&mut self.conversions) {
            conversions.add(to_hub, from_hub);
        }
    }

    /// Whether no webhook is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.handlers.is_empty() && self.conversions.is_empty()
    }

    /// Whether conversions are registered (their CRDs get the CA injected).
    pub(crate) fn converts(&self) -> bool {
        !self.conversions.is_empty()
    }

    /// Checks that every webhook has its own plain URL path.
    fn check_paths(&self) -> anyhow::Result<()> {
        self.conversions.check()?;
        if self.handlers.contains_key(convert::PATH) {
            anyhow::bail!(
                "an admission webhook is registered at {}, the conversion webhook's path",
                convert::PATH
            );
        }
        if let Some(path) = self.duplicates.first() {
            anyhow::bail!("two webhooks are registered at {path}; give each webhook its own path");
        }
        for path in self.handlers.keys() {
            let valid = path.starts_with('/')
                && path
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'));
            if !valid {
                anyhow::bail!(
                    "the webhook path {path:?} is not a plain URL path (letters, digits, '/', '-', '_', '.')"
                );
            }
        }
        Ok(())
    }

    /// One POST route per webhook.
    fn router(self, context: Context) -> anyhow::Result<Router> {
        self.check_paths()?;
        let mut router = Router::new();
        for (path, handler) in self.handlers {
            router = router.route(
                path,
                post(
                    move |State(context): State<Context>, body: Bytes| async move {
                        let review = handler(context, body).await;
                        json(&review)
                    },
                ),
            );
        }
        if !self.conversions.is_empty() {
            let conversions = self.conversions;
            router = router.route(
                convert::PATH,
                post(move |body: Bytes| {
                    let conversions = conversions.clone();
                    async move { conversion_json(&conversions.review(&body)) }
                }),
            );
        }
        Ok(router
            .layer(DefaultBodyLimit::max(MAX_REVIEW_BYTES))
            .with_state(context))
    }
}

/// The review as JSON. The patch goes out base64-encoded, as the API
/// defines it (Go's `[]byte`); kube's `AdmissionResponse` would write it as
/// an array of numbers.
fn json(review: &AdmissionReview<DynamicObject>) -> axum::response::Response {
    let encoded = serde_json::to_value(review).and_then(|mut value| {
        let patch = review.response.as_ref().and_then(|r| r.patch.clone());
        if let Some(patch) = patch {
            value["response"]["patch"] = serde_json::to_value(ByteString(patch))?;
        }
        serde_json::to_vec(&value)
    });
    match encoded {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(err) => (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the AdmissionReview: {err}"),
        )
            .into_response(),
    }
}

/// The ConversionReview as JSON.
fn conversion_json(review: &kube::core::conversion::ConversionReview) -> axum::response::Response {
    match serde_json::to_vec(review) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(err) => (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the ConversionReview: {err}"),
        )
            .into_response(),
    }
}

/// Decodes one AdmissionReview, lets `handle` answer it, and logs the answer.
async fn review<K, F, Fut>(
    handle: F,
    context: Context,
    body: Bytes,
) -> AdmissionReview<DynamicObject>
where
    K: kube::Resource + DeserializeOwned,
    F: Fn(Context, AdmissionRequest<K>) -> Fut,
    Fut: Future<Output = AdmissionResponse>,
{
    let request = match decode::<K>(&body) {
        Ok(request) => request,
        Err(response) => {
            let response = *response;
            tracing::warn!(message = %response.result.message, "refused an AdmissionReview");
            return response.into_review();
        }
    };
    let uid = request.uid.clone();
    let operation = request.operation.clone();
    let name = request.name.clone();
    let namespace = request.namespace.clone().unwrap_or_default();
    let response = handle(context, request).await;
    if response.allowed {
        tracing::debug!(%uid, ?operation, %namespace, %name, "admission allowed");
    } else {
        let message = &response.result.message;
        tracing::info!(%uid, ?operation, %namespace, %name, %message, "admission denied");
    }
    response.into_review()
}

/// The request in `body`, or the response that refuses it.
fn decode<K>(body: &[u8]) -> Result<AdmissionRequest<K>, Box<AdmissionResponse>>
where
    K: kube::Resource + DeserializeOwned,
{
    let refuse = |message: String| {
        let mut response = AdmissionResponse::invalid(message);
        // With the request's uid the API server reports the message as is.
        let uid = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.pointer("/request/uid")?.as_str().map(str::to_owned));
        if let Some(uid) = uid {
            response.uid = uid;
        }
        Box::new(response)
    };
    let review: AdmissionReview<K> = serde_json::from_slice(body)
        .map_err(|err| refuse(format!("cannot decode the AdmissionReview: {err}")))?;
    review
        .try_into()
        .map_err(|_| refuse("the AdmissionReview has no request".to_owned()))
}

/// Allows the request with the JSON patch that turns `original` into
/// `changed` (none when they are equal): what a defaulting webhook answers.
pub fn patch<K: Serialize>(
    response: AdmissionResponse,
    original: &K,
    changed: &K,
) -> AdmissionResponse {
    let (before, after) = match (
        serde_json::to_value(original),
        serde_json::to_value(changed),
    ) {
        (Ok(before), Ok(after)) => (before, after),
        (Err(err), _) | (_, Err(err)) => {
            return response.deny(format!("cannot encode the object: {err}"));
        }
    };
    let operations = json_patch::diff(&before, &after);
    if operations.0.is_empty() {
        return response;
    }
    match response.clone().with_patch(operations) {
        Ok(patched) => patched,
        Err(err) => response.deny(format!("cannot encode the patch: {err}")),
    }
}

/// Denies the request with `message`, which the client sees, as `403
/// Forbidden` (as controller-runtime's webhooks do).
pub fn deny(response: AdmissionResponse, message: impl ToString) -> AdmissionResponse {
    let mut response = response.deny(message);
    response.result.code = 403;
    response.result.reason = "Forbidden".to_owned();
    response
}

/// Prepares the webhook server: with `--webhook-self-signed` makes the
/// certificate, loads it, listens, and injects the CA; the returned server
/// runs until shutdown.
pub(crate) async fn serve(
    options: &Options,
    webhooks: Webhooks,
    context: Context,
    shutdown: Shutdown,
) -> anyhow::Result<Server> {
    let project: Project = context.project;
    let mut paths: Vec<&str> = webhooks.handlers.keys().copied().collect();
    let converts = webhooks.converts();
    if converts {
        paths.push(convert::PATH);
    }
    let ca = if options.webhook_self_signed {
        Some(self_signed::write(options, &project)?)
    } else {
        None
    };
    let certificates = tls::Certificates::load(
        "webhook",
        options.cert_path(),
        options.key_path(),
        "in a cluster cert-manager provides them (config/certmanager), for a local run pass --webhook-self-signed, or --enable-webhooks=false to run without webhooks",
    )?;
    let router = webhooks.router(context.clone())?;
    let listener = tls::Listener::bind(
        "webhook",
        options.webhook_bind_address,
        certificates.clone(),
    )
    .await?;
    tokio::spawn(certificates.reload_on_change(shutdown.clone()));
    tracing::info!(addr = %options.webhook_bind_address, ?paths, "serving admission webhooks");
    if let Some(ca) = ca {
        let client = context.client.clone();
        let injector = inject::Injector::new(client, options, &project, ca, converts);
        injector.inject_all().await?;
        tokio::spawn(injector.keep_injected(shutdown.clone()));
    }
    Ok(Box::pin(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.wait_owned())
            .await
            .context("the webhook server failed")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn review_body(uid: &str, object: serde_json::Value) -> Vec<u8> {
        serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                "name": "demo",
                "namespace": "default",
                "operation": "CREATE",
                "userInfo": {"username": "tester"},
                "object": object,
            },
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_review_decodes_into_a_typed_request() {
        let body = review_body(
            "1234",
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo"}}),
        );
        let request = decode::<ConfigMap>(&body).expect("decodes");
        assert_eq!(request.uid, "1234");
        assert_eq!(request.operation, Operation::Create);
        let object = request.object.expect("an object");
        assert_eq!(object.metadata.name.as_deref(), Some("demo"));
    }

    #[test]
    fn an_undecodable_object_is_refused_with_the_request_uid() {
        let body = review_body("5678", serde_json::json!({"metadata": {"name": 7}}));
        let response = decode::<ConfigMap>(&body).expect_err("refused");
        assert!(!response.allowed);
        assert_eq!(response.uid, "5678");
        assert!(
            response.result.message.contains("cannot decode"),
            "{}",
            response.result.message
        );
        let response = decode::<ConfigMap>(b"not json").expect_err("refused");
        assert!(!response.allowed);
        assert!(response.uid.is_empty());
    }

    fn response() -> AdmissionResponse {
        let body = review_body(
            "1",
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo"}}),
        );
        let request = decode::<ConfigMap>(&body).expect("decodes");
        AdmissionResponse::from(&request)
    }

    #[test]
    fn a_patch_turns_the_original_into_the_changed_object() {
        let original = ConfigMap::default();
        let mut changed = original.clone();
        changed.data = Some([("key".to_owned(), "value".to_owned())].into());
        let patched = patch(response(), &original, &changed);
        assert!(patched.allowed);
        let operations: json_patch::Patch =
            serde_json::from_slice(patched.patch.as_deref().expect("a patch")).expect("JSON patch");
        let mut document = serde_json::to_value(&original).expect("serialises");
        json_patch::patch(&mut document, &operations).expect("applies");
        assert_eq!(
            document,
            serde_json::to_value(&changed).expect("serialises")
        );

        let unchanged = patch(response(), &original, &original);
        assert!(unchanged.allowed);
        assert!(unchanged.patch.is_none());
    }

    #[test]
    fn the_patch_is_sent_base64_encoded() {
        let original = ConfigMap::default();
        let mut changed = original.clone();
        changed.data = Some([("key".to_owned(), "value".to_owned())].into());
        let review = patch(response(), &original, &changed).into_review();
        let body = json(&review).into_body();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let bytes = runtime
            .block_on(axum::body::to_bytes(body, usize::MAX))
            .expect("the body");
        let value: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        let encoded: ByteString =
            serde_json::from_value(value["response"]["patch"].clone()).expect("base64");
        let operations: json_patch::Patch = serde_json::from_slice(&encoded.0).expect("JSON patch");
        assert_eq!(operations.0.len(), 1);
        assert_eq!(value["response"]["patchType"], "JSONPatch");
        assert_eq!(value["response"]["uid"], "1");
    }

    #[test]
    fn a_denial_carries_its_message_as_forbidden() {
        let denied = deny(response(), "no, thanks");
        assert!(!denied.allowed);
        assert_eq!(denied.result.message, "no, thanks");
        assert_eq!(denied.result.code, 403);
    }

    #[test]
    fn webhooks_need_distinct_plain_paths() {
        async fn allow(_: Context, request: AdmissionRequest<ConfigMap>) -> AdmissionResponse {
            AdmissionResponse::from(&request)
        }
        let mut webhooks = Webhooks::default();
        assert!(webhooks.is_empty());
        webhooks.add("/validate", allow);
        webhooks.add("/mutate", allow);
        assert!(webhooks.check_paths().is_ok());
        webhooks.add("/validate", allow);
        let err = webhooks.check_paths().expect_err("a path used twice");
        assert!(
            err.to_string()
                .contains("two webhooks are registered at /validate"),
            "{err}"
        );
        let mut webhooks = Webhooks::default();
        webhooks.add("validate-{kind}", allow);
        let err = webhooks.check_paths().expect_err("not a plain path");
        assert!(err.to_string().contains("not a plain URL path"), "{err}");
    }
}
