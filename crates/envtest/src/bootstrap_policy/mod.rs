//! The objects a kube-apiserver v1.32 cluster is born with, as facts: the
//! RBAC bootstrap policy, the API Priority and Fairness configuration and
//! the system PriorityClasses. `bootstrap/` creates them at start; the
//! validation of the kinds and the controllers that keep them read them
//! here, below both.

pub(crate) mod flowcontrol;
mod priority_classes;
mod rbac;

pub(crate) use priority_classes::{is_system_priority_class, priority_classes};
pub(crate) use rbac::policy_objects;
