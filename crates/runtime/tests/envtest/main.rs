//! opctl-runtime against the embedded API server (opctl-envtest, in
//! process): the manager's identity on the wire, its caches, its writes
//! and their request budget, readiness, shutdown, leader election,
//! metrics authentication and the webhook server with CA injection.

mod caches;
mod identity;
mod lifecycle;
mod metrics_auth;
mod support;
mod webhooks;
mod widgets;
mod writes;
