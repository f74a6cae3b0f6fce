//! kube-controller-manager's controllers as `--controllers` chooses them
//! (`Config::controllers`): a bare server, the transcripts' recording, one
//! controller left out; and what the controllers do beyond the recorded
//! objects of `kcm_objects.rs`: the quota controller's recalculations, the
//! storage protection finalizers, Job tracking finalizers and time to live,
//! adoption and release of orphans, and what a control plane without Nodes
//! shows for DaemonSets, claims without a class and budgets without Pods.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

#[path = "kcm_controllers/adoption.rs"]
mod adoption;
#[path = "kcm_controllers/api.rs"]
mod api;
#[path = "kcm_controllers/jobs.rs"]
mod jobs;
#[path = "kcm_controllers/no_nodes.rs"]
mod no_nodes;
#[path = "kcm_controllers/quotas.rs"]
mod quotas;
#[path = "kcm_controllers/selection.rs"]
mod selection;
#[path = "kcm_controllers/storage.rs"]
mod storage;
