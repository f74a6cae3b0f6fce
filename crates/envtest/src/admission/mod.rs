//! Admission webhooks: envtest calls the webhooks of the stored
//! `MutatingWebhookConfiguration` and `ValidatingWebhookConfiguration`
//! objects as kube-apiserver does (its `admission/plugin/webhook` packages
//! are the model): AdmissionReview over HTTPS verified against `caBundle`,
//! JSONPatch responses, `failurePolicy`, selectors, `matchConditions`,
//! `timeoutSeconds`, `sideEffects` with dry run, `reinvocationPolicy`, and
//! the same errors for denials and failures. ValidatingAdmissionPolicies,
//! which run between the two webhook phases, are [`policy`]'s.
//!
//! # How the server uses it
//!
//! ```text
//! let registry = WebhookRegistry::new(cluster_view);       // once, at start-up
//! registry.set_routes(config.webhook_routes.clone());      // --webhook-route flags
//!
//! // writing a Mutating/ValidatingWebhookConfiguration (create / update):
//! //   defaulted and validated as any built-in kind (builtin::validation::
//! //   webhook_configurations), stored, then (also after a delete) every
//! //   stored configuration is handed over:
//! registry.set_configurations(&mutating, &validating);
//!
//! // create / update / delete (and subresources, CONNECT):
//! //   decode, then the server's own defaulting and preparation, then:
//! let attrs = AdmissionAttributes::new(op, kind, resource, namespace, name)
//!     .with_object(obj).with_old_object(old).with_dry_run(dry).with_options(opts);
//! let mutated = registry.admit_mutating(&attrs).await;     // warnings + Result<Option<Value>>
//! //   re-apply defaulting to the mutated object, then the server's validation, then:
//! let attrs = AdmissionAttributes { object: final_object, ..attrs };
//! let validated = registry.admit_validating(&attrs).await; // warnings + Result<()>
//! //   then store (unless dry run).
//! ```
//!
//! Both phases return the webhooks' warnings apart from the result, because
//! kube-apiserver sends them as `Warning` headers even when the request fails.
//! Errors are [`ApiError`](crate::error::ApiError)s ready to send:
//! - denial: the webhook's code (400 if below 400), reason and details, message
//!   `admission webhook "<name>" denied the request: <message>`;
//! - call failure under `failurePolicy: Fail`: 500 InternalError
//!   `Internal error occurred: failed calling webhook "<name>": failed to call webhook: Post "<url>?timeout=10s": <cause>`
//!   (and `received invalid webhook response: ...` for a bad AdmissionReview);
//!   under `Ignore` the webhook is skipped;
//! - a patch that does not apply: 500 InternalError whatever the failure policy;
//! - dry run reaching a webhook whose `sideEffects` is not `None`/`NoneOnDryRun`:
//!   400 `admission webhook "<name>" does not support dry run`;
//! - a failing `matchConditions` expression under `Fail`: 403 Forbidden;
//! - a namespaced request in a missing namespace with a `namespaceSelector`: 404.
//!
//! # Where envtest differs from kube-apiserver
//! - `matchPolicy: Equivalent` knows the versions of one custom resource as
//!   equivalents (the server fills `AdmissionAttributes::equivalents`), not
//!   the cross-group equivalences of built-in kinds (envtest serves one
//!   version of each); objects are converted by rewriting `apiVersion`, even
//!   for CRDs whose versions a conversion webhook converts.
//! - Validating webhooks run concurrently; when several fail, the first in
//!   call order is reported (kube-apiserver reports the first to finish).
//! - After a patch, kube-apiserver decodes the object into its Go type
//!   (dropping unknown fields of built-in kinds) and re-applies defaults;
//!   here the server must re-apply its defaulting to the returned object.
//! - Go's wording is reproduced for the common transport, TLS, JSON and
//!   patch errors; rarer ones carry Rust's description.
//! - `matchConditions` are evaluated with the `cel` crate; the `authorizer`
//!   variable is not supported (see [`conditions`]).
//! - Service references cannot reach a cluster network; see [`routes`] for
//!   how they are resolved (and `docs/envtest-webhooks.md`).

mod attributes;
mod cluster;
mod compiled_webhooks;
pub(crate) mod conditions;
mod dispatch;
mod goverify;
mod patching;
pub(crate) mod policy;
mod review;
pub(crate) mod routes;
mod transport;
mod webhook_errors;
mod webhook_matching;

#[cfg(test)]
mod proptests;

pub use attributes::{AdmissionAttributes, GroupVersionKind, GroupVersionResource, Operation};
pub use cluster::ClusterView;
pub use dispatch::WebhookRegistry;
pub(crate) use policy::{ParamScope, PolicyCluster, PolicyRegistry};
pub(crate) use review::{ReviewVersion, decode_body};
pub use routes::WebhookRoute;
#[cfg(any(test, feature = "testing"))]
pub use routes::WebhookRoutes;
pub(crate) use transport::{CallError, ClientSpec, HttpResponse};
pub(crate) use webhook_errors::internal_error;
