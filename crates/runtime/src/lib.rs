//! The manager runtime of the operators opctl scaffolds, on
//! [kube-rs](https://kube.rs): what controller-runtime is to kubebuilder's
//! Go operators. A project keeps its own `main.rs`, controllers, webhooks
//! and API types, and gets from here:
//!
//! - a [`Manager`] that runs the controllers and webhooks registered with
//!   it, serves `/healthz`, `/readyz` and `/metrics` (controller-runtime's
//!   metric names, HTTPS with TokenReview and SubjectAccessReview), takes
//!   a Lease under `--leader-elect` and stops gracefully on SIGTERM, with
//!   the flags of [`Options`];
//! - caches ([`Scope::cache`], [`Scope::cache_trimmed`],
//!   [`Scope::cache_metadata`], and [`Scope::cache_projected`] of a
//!   [`Projection`] the project defines) that reconciles read instead of the API
//!   server, and a [`Controller`] built from them;
//! - writes that write only what differs and remember what they wrote
//!   until the caches show it ([`Context::apply_owned`],
//!   [`Context::apply_status_if_changed`], [`Context::create_if_absent`]),
//!   issued together with a [`Batch`], and events ([`Context::publish`]);
//! - status [`conditions`], and admission and conversion [`webhook`]s with
//!   their HTTPS server and, for local runs, a self-signed CA injected into
//!   their configurations.
//!
//! Everything project-specific comes from one [`Project`] value: its name
//! (field manager, `User-Agent`, event reporter, Lease), domain and version.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kube::runtime::controller::Action;
//! use kube::runtime::watcher;
//! use opctl_runtime::{Controller, Manager, Options, Project, Scope, WatchScope};
//!
//! const PROJECT: Project = Project::new("guestbook", "example.com", "0.1.0");
//!
//! fn setup(scope: &Scope) -> (Controller<Deployment>, opctl_runtime::Context) {
//!     let deployments = scope.cache::<Deployment>(watcher::Config::default());
//!     (deployments.controller(), scope.context().clone())
//! }
//!
//! async fn reconcile(
//!     deployment: Arc<Deployment>,
//!     ctx: Arc<opctl_runtime::Context>,
//! ) -> Result<Action, kube::Error> {
//!     tracing::info!(name = ?deployment.metadata.name, scope = %ctx.scope, "reconciling");
//!     Ok(Action::await_change())
//! }
//!
//! # async fn run(options: Options) -> anyhow::Result<()> {
//! Manager::new(PROJECT, options, WatchScope::AllNamespaces)
//!     .await?
//!     .with_controller("deployment", setup, reconcile)
//!     .run()
//!     .await
//! # }
//! ```
//!
//! The manager needs this RBAC besides what its controllers need:
//! `create` on `events.k8s.io` events, `get`, `create` and `update` on
//! `coordination.k8s.io` leases (with `--leader-elect`), `create` on
//! `authentication.k8s.io` tokenreviews and `authorization.k8s.io`
//! subjectaccessreviews (with `--metrics-secure`, the default), and `list`,
//! `watch` and `update` on the webhook configurations (and CRDs, when it
//! converts) with `--webhook-self-signed`.
//!
//! Everything above is the default feature `manager`. Without it
//! (`default-features = false`) the crate is only [`crdgen`], on
//! k8s-openapi and serde_json: what a project's API crate takes for its CRD
//! generator.

// Every bare `pub` item is public API (and listed in public-api.txt).
#![deny(unreachable_pub, missing_docs)]
// The overview above links the manager's items, which only exist with the
// feature `manager`: without it (an API crate's generator) they are text.
#![cfg_attr(not(feature = "manager"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "manager")]
mod backoff;
#[cfg(feature = "manager")]
mod cache;
#[cfg(feature = "manager")]
mod client;
#[cfg(feature = "manager")]
pub mod conditions;
#[cfg(feature = "manager")]
mod context;
#[cfg(feature = "manager")]
mod controller;
pub mod crdgen;
#[cfg(feature = "manager")]
mod events;
#[cfg(feature = "manager")]
mod expectations;
#[cfg(feature = "manager")]
mod http;
#[cfg(feature = "manager")]
mod leader;
#[cfg(feature = "manager")]
mod manager;
#[cfg(feature = "manager")]
mod metrics;
#[cfg(feature = "manager")]
mod metrics_auth;
#[cfg(feature = "manager")]
mod options;
#[cfg(feature = "manager")]
mod project;
#[cfg(feature = "manager")]
mod projection;
#[cfg(feature = "manager")]
mod readiness;
#[cfg(feature = "manager")]
mod self_signed;
#[cfg(feature = "manager")]
mod shutdown;
#[cfg(feature = "manager")]
mod telemetry;
#[cfg(feature = "manager")]
mod tls;
#[cfg(feature = "manager")]
pub mod webhook;
#[cfg(feature = "manager")]
mod writes;

#[cfg(feature = "manager")]
pub use cache::{ApiScope, Cacheable, Cached, Scope, find};
#[cfg(feature = "manager")]
pub use context::{Context, WatchScope};
#[cfg(feature = "manager")]
pub use controller::Controller;
#[cfg(feature = "manager")]
pub use manager::Manager;
#[cfg(feature = "manager")]
pub use options::{LogFormat, Options};
#[cfg(feature = "manager")]
pub use project::Project;
#[cfg(feature = "manager")]
pub use projection::{Projected, Projection, ready_from_conditions};
#[cfg(feature = "manager")]
pub use shutdown::Shutdown;
#[cfg(feature = "manager")]
pub use writes::Batch;
