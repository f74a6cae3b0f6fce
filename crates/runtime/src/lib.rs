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

// Every bare `pub` item is public API (and listed in public-api.txt).
#![deny(unreachable_pub, missing_docs)]

mod backoff;
mod cache;
mod client;
pub mod conditions;
mod context;
mod controller;
mod events;
mod expectations;
mod http;
mod leader;
mod manager;
mod metrics;
mod metrics_auth;
mod options;
mod project;
mod projection;
mod readiness;
mod self_signed;
mod shutdown;
mod telemetry;
mod tls;
pub mod webhook;
mod writes;

pub use cache::{ApiScope, Cacheable, Cached, Scope, find};
pub use context::{Context, WatchScope};
pub use controller::Controller;
pub use manager::Manager;
pub use options::{LogFormat, Options};
pub use project::Project;
pub use projection::{Projected, Projection, ready_from_conditions};
pub use shutdown::Shutdown;
pub use writes::Batch;
