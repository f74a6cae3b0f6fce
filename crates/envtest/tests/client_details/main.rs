//! The details real clients depend on, each through a real client against
//! the shared envtest server (one module per concern): metadata-only
//! requests on every verb, custom resources in several versions with one
//! storage version, and admission webhook certificates checked as Go
//! checks them.

#[allow(dead_code)]
#[path = "../admission_support/mod.rs"]
mod admission_support;
#[allow(dead_code)]
#[path = "../support/kube.rs"]
mod kube_support;
#[allow(dead_code)]
#[path = "../support/server.rs"]
mod server;

mod metadata;
mod terminating;
mod versions;
mod webhook_tls;
