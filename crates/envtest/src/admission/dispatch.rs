//! The webhook registry and its two dispatchers.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::attributes::AdmissionAttributes;
use super::cluster::ClusterView;
use super::compiled_webhooks::{HookSet, HookType, Webhook};
use super::patching;
use super::review::{ResponseError, ReviewResponse, ReviewVersion, read_response, request_body};
use super::routes::WebhookRoutes;
use super::transport::{CallError, ClientSpec, HttpResponse};
use super::webhook_errors::{
    HookError, calling_failure, denial, dry_run_unsupported, internal_error,
};
use super::webhook_matching::should_call;
use crate::error::ApiResult;

/// The outcome of one admission phase: the result, and the warnings the
/// webhooks returned (to be sent as `Warning` headers whether or not the
/// request succeeds, as kube-apiserver does).
#[derive(Debug)]
pub struct Admission<T> {
    pub result: ApiResult<T>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Default)]
struct Hooks {
    mutating: HookSet,
    validating: HookSet,
}

/// The webhook configurations of a server and the means to call them.
///
/// Cheap to consult: the configurations are compiled when they change
/// ([`WebhookRegistry::set_configurations`]) and each request takes a
/// snapshot, so a server with no webhooks pays one lock read per request.
pub struct WebhookRegistry {
    hooks: RwLock<Arc<Hooks>>,
    routes: RwLock<Arc<WebhookRoutes>>,
    cluster: Arc<dyn ClusterView>,
}

impl std::fmt::Debug for WebhookRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookRegistry")
            .field("hooks", &self.snapshot())
            .field("routes", &self.routes())
            .finish()
    }
}

/// Kinds kube-apiserver never sends to webhooks, so that a broken webhook
/// cannot lock out the configuration that would fix it.
fn is_exempt(attrs: &AdmissionAttributes) -> bool {
    attrs.kind.group == "admissionregistration.k8s.io"
        && matches!(
            attrs.kind.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

impl WebhookRegistry {
    /// A registry with no webhooks and no routes; `cluster` answers namespace
    /// label and Service look-ups.
    pub fn new(cluster: Arc<dyn ClusterView>) -> Self {
        WebhookRegistry {
            hooks: RwLock::new(Arc::new(Hooks::default())),
            routes: RwLock::new(Arc::new(WebhookRoutes::default())),
            cluster,
        }
    }

    /// Replaces the explicit Service routes.
    pub fn set_routes(&self, routes: WebhookRoutes) {
        let mut guard = self.routes.write().unwrap_or_else(|e| e.into_inner());
        *guard = Arc::new(routes);
    }

    /// Replaces the configurations: every stored `MutatingWebhookConfiguration`
    /// and `ValidatingWebhookConfiguration`, as stored. Call it whenever one
    /// is created, updated or deleted. Malformed parts never fail here; they
    /// fail the calls that reach them.
    pub fn set_configurations(&self, mutating: &[Value], validating: &[Value]) {
        let hooks = Hooks {
            mutating: HookSet::compile(mutating, HookType::Mutating),
            validating: HookSet::compile(validating, HookType::Validating),
        };
        let mut guard = self.hooks.write().unwrap_or_else(|e| e.into_inner());
        *guard = Arc::new(hooks);
    }

    /// Whether any mutating webhook is configured.
    pub fn has_mutating(&self) -> bool {
        !self.snapshot().mutating.hooks.is_empty()
    }

    /// Whether any validating webhook is configured.
    pub fn has_validating(&self) -> bool {
        !self.snapshot().validating.hooks.is_empty()
    }

    fn snapshot(&self) -> Arc<Hooks> {
        Arc::clone(&self.hooks.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn routes(&self) -> Arc<WebhookRoutes> {
        Arc::clone(&self.routes.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// POSTs `body` to another kind of webhook (a CRD's conversion webhook)
    /// through the same transport: TLS checked against its caBundle and
    /// Service references routed as for admission webhooks.
    pub(crate) async fn post(
        &self,
        client: &ClientSpec,
        timeout: std::time::Duration,
        body: Vec<u8>,
    ) -> Result<HttpResponse, CallError> {
        client
            .post(&self.routes(), self.cluster.as_ref(), timeout, body)
            .await
    }

    /// Runs the mutating webhooks that match `attrs` in order, each seeing
    /// the object as patched by those before it, then once more those with
    /// `reinvocationPolicy: IfNeeded` that ran before a later webhook changed
    /// the object. Returns the object to go on with (`attrs.object` when
    /// nothing changed; `None` when the request has no object).
    pub async fn admit_mutating(&self, attrs: &AdmissionAttributes) -> Admission<Option<Value>> {
        self.admit_mutating_with(attrs, &|_| {}).await
    }

    /// [`Self::admit_mutating`], running `in_tree` (the server's own
    /// mutating admission plugins) on the object before the second round
    /// when a webhook changed it: kube-apiserver reinvokes its in-tree
    /// plugins then, whatever the webhooks' `reinvocationPolicy`.
    pub async fn admit_mutating_with(
        &self,
        attrs: &AdmissionAttributes,
        in_tree: &(dyn Fn(&mut Value) + Sync),
    ) -> Admission<Option<Value>> {
        let mut warnings = Vec::new();
        let result = self.mutate(attrs, in_tree, &mut warnings).await;
        Admission { result, warnings }
    }

    /// Runs the validating webhooks that match `attrs` (whose `object` is the
    /// final object) concurrently. When several fail, the first in call
    /// order is returned (kube-apiserver returns whichever failed first in time).
    pub async fn admit_validating(&self, attrs: &AdmissionAttributes) -> Admission<()> {
        let mut warnings = Vec::new();
        let result = self.validate(attrs, &mut warnings).await;
        Admission { result, warnings }
    }

    async fn mutate(
        &self,
        attrs: &AdmissionAttributes,
        in_tree: &(dyn Fn(&mut Value) + Sync),
        warnings: &mut Vec<String>,
    ) -> ApiResult<Option<Value>> {
        let mut object = attrs.object.clone();
        let hooks = self.snapshot();
        if hooks.mutating.hooks.is_empty() || is_exempt(attrs) {
            return Ok(object);
        }
        let routes = self.routes();
        // Reinvocation bookkeeping, as kube-apiserver's webhookReinvokeContext.
        let mut invoked_reinvocable: HashSet<&str> = HashSet::new();
        let mut to_reinvoke: HashSet<&str> = HashSet::new();
        let mut reinvoke = false;
        for round in 0..2 {
            if round == 1 && !reinvoke {
                break;
            }
            if round == 1
                && let Some(object) = object.as_mut()
            {
                in_tree(object);
            }
            for hook in &hooks.mutating.hooks {
                let Some(invocation) =
                    should_call(hook, attrs, object.as_ref(), self.cluster.as_ref())?
                else {
                    continue;
                };
                if round == 1 && !to_reinvoke.contains(hook.uid.as_str()) {
                    continue;
                }
                let (view, sent) = invocation.view(attrs, object.as_ref());
                let outcome = self
                    .call_mutating(hook, &view, sent.as_deref(), &routes, warnings)
                    .await
                    .map(|patched| patched.map(|p| invocation.back(attrs, p)));
                if let Ok(Some(patched)) = &outcome
                    && object.as_ref() != Some(patched)
                {
                    // Webhooks that ran before this change see it on reinvocation;
                    // the webhook that made it is not reinvoked for its own change.
                    to_reinvoke.extend(invoked_reinvocable.drain());
                    reinvoke = true;
                }
                if hook.reinvoke_if_needed {
                    invoked_reinvocable.insert(hook.uid.as_str());
                }
                match outcome {
                    Ok(Some(patched)) => object = Some(patched),
                    Ok(None) => {}
                    Err(HookError::Calling(reason)) if hook.ignore_failures => {
                        tracing::warn!(webhook = %hook.name, "failed calling webhook, failing open: {reason}");
                    }
                    Err(HookError::Calling(reason)) => {
                        return Err(calling_failure(&hook.name, &reason));
                    }
                    Err(HookError::Fatal(error)) => return Err(error),
                }
            }
        }
        Ok(object)
    }

    async fn validate(
        &self,
        attrs: &AdmissionAttributes,
        warnings: &mut Vec<String>,
    ) -> ApiResult<()> {
        let hooks = self.snapshot();
        if hooks.validating.hooks.is_empty() || is_exempt(attrs) {
            return Ok(());
        }
        let mut relevant = Vec::new();
        for hook in &hooks.validating.hooks {
            if let Some(invocation) =
                should_call(hook, attrs, attrs.object.as_ref(), self.cluster.as_ref())?
            {
                relevant.push((hook, invocation));
            }
        }
        let routes = self.routes();
        let calls = relevant.iter().map(|(hook, invocation)| {
            let routes = Arc::clone(&routes);
            async move {
                let mut hook_warnings = Vec::new();
                let (view, sent) = invocation.view(attrs, attrs.object.as_ref());
                let outcome = self
                    .call(hook, &view, sent.as_deref(), false, &routes, &mut hook_warnings)
                    .await;
                let error = match outcome {
                    Ok(_) => None,
                    Err(HookError::Calling(reason)) if hook.ignore_failures => {
                        tracing::warn!(webhook = %hook.name, "failed calling webhook, failing open: {reason}");
                        None
                    }
                    Err(HookError::Calling(reason)) => Some(calling_failure(&hook.name, &reason)),
                    Err(HookError::Fatal(error)) => Some(error),
                };
                (error, hook_warnings)
            }
        });
        let mut first_error = None;
        for (error, hook_warnings) in futures::future::join_all(calls).await {
            warnings.extend(hook_warnings);
            if first_error.is_none() {
                first_error = error;
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// One mutating call: the patched object, or `None` when the webhook
    /// left it alone.
    async fn call_mutating(
        &self,
        hook: &Webhook,
        attrs: &AdmissionAttributes,
        object: Option<&Value>,
        routes: &WebhookRoutes,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Value>, HookError> {
        let response = self
            .call(hook, attrs, object, true, routes, warnings)
            .await?;
        if response.patch.is_empty() {
            return Ok(None);
        }
        let ops = patching::decode(&response.patch).map_err(|e| {
            HookError::Calling(format!(
                "received undecodable patch in webhook response: {e}"
            ))
        })?;
        if ops.is_empty() {
            return Ok(None);
        }
        let Some(object) = object else {
            return Err(HookError::Fatal(internal_error(&format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ))));
        };
        let patch_type = response.patch_type.as_deref().unwrap_or("");
        if patch_type != "JSONPatch" {
            return Err(HookError::Calling(format!(
                "unsupported patch type {patch_type:?}"
            )));
        }
        patching::apply(object, &ops)
            .map(Some)
            .map_err(|e| HookError::Fatal(internal_error(&e)))
    }

    /// Sends one AdmissionReview and checks the answer; a denial is an error.
    async fn call(
        &self,
        hook: &Webhook,
        attrs: &AdmissionAttributes,
        object: Option<&Value>,
        mutating: bool,
        routes: &WebhookRoutes,
        warnings: &mut Vec<String>,
    ) -> Result<ReviewResponse, HookError> {
        if attrs.dry_run {
            match hook.side_effects.as_deref() {
                None => return Err(HookError::Calling("Webhook SideEffects is nil".to_string())),
                Some("None" | "NoneOnDryRun") => {}
                Some(_) => return Err(HookError::Fatal(dry_run_unsupported(&hook.name))),
            }
        }
        let Some(version) = ReviewVersion::choose(&hook.review_versions) else {
            return Err(HookError::Calling(
                "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)".to_string(),
            ));
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let body = request_body(version, attrs.review_request(&uid, object));
        let http = hook
            .client
            .post(routes, self.cluster.as_ref(), hook.timeout, body)
            .await
            .map_err(|e| {
                HookError::Calling(match e {
                    CallError::Client(e) => format!("could not get REST client: {e}"),
                    CallError::Transport(e) => format!("failed to call webhook: {e}"),
                })
            })?;
        let response = read_response(&http, version, &uid, mutating).map_err(|e| {
            HookError::Calling(match e {
                ResponseError::Decode(e) => format!("failed to call webhook: {e}"),
                ResponseError::Verify(e) => format!("received invalid webhook response: {e}"),
            })
        })?;
        warnings.extend(response.warnings.iter().cloned());
        if !response.allowed {
            return Err(HookError::Fatal(denial(
                &hook.name,
                response.status.as_ref(),
            )));
        }
        Ok(response)
    }
}
