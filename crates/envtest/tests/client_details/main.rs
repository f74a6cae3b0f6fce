//! The details real clients depend on, each through a real client against
//! the shared envtest server: metadata-only requests on every verb, the
//! bytes of answers and errors, ... (one module per concern).

#[allow(dead_code)]
#[path = "../support/kube.rs"]
mod kube_support;
#[allow(dead_code)]
#[path = "../support/server.rs"]
mod server;

mod metadata;
