//! The details real clients depend on, each through a real client against
//! the shared envtest server (one module per concern): metadata-only
//! requests on every verb, custom resources in several versions with one
//! storage version, admission webhook certificates checked as Go
//! checks them, Nodes, field selectors, ServiceAccount tokens, and the kinds
//! discovery lists beyond the common ones (ComponentStatuses,
//! CertificateSigningRequests, APIServices, API Priority and Fairness).

#[allow(dead_code)]
#[path = "../admission_support/mod.rs"]
mod admission_support;
#[allow(dead_code)]
#[path = "../support/kube.rs"]
mod kube_support;
#[allow(dead_code)]
#[path = "../support/kubectl.rs"]
mod kubectl_support;
#[allow(dead_code)]
#[path = "../support/server.rs"]
mod server;

mod api_services;
mod certificates;
mod component_statuses;
mod field_selectors;
mod flow_control;
mod metadata;
mod nodes;
mod pod_streams;
mod terminating;
mod tokens;
mod versions;
mod webhook_tls;
