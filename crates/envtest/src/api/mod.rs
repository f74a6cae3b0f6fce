//! The API operations (create, update, patch, delete, get, list, watch) on top
//! of the store, in the order kube-apiserver runs its steps. The HTTP layer
//! and the in-process controllers both call these.

pub(crate) mod access_reviews;
pub(crate) mod admit;
pub(crate) mod create;
pub(crate) mod default_storage_class;
pub(crate) mod delete;
pub(crate) mod eviction;
pub(crate) mod limit_ranger;
mod pod_object;
pub(crate) mod pod_subresources;
pub(crate) mod priority;
pub(crate) mod quota_admission;
pub(crate) mod read;
pub(crate) mod scale;
mod scale_view;
pub(crate) mod service_account;
pub(crate) mod storage_limit;
pub(crate) mod storage_protection_admission;
pub(crate) mod update;
pub(crate) mod update_steps;
pub(crate) mod watch;

#[cfg(test)]
mod tests;

mod alloc;
mod checks;
mod decode;
mod errors;
mod patched_kind;
mod write;

/// The manager name and event source of the writes kube-apiserver makes
/// itself (budget status on eviction, quota usage).
pub(crate) const APISERVER: &str = "kube-apiserver";
/// The manager name and event source of the simulated
/// kube-controller-manager's writes.
pub(crate) const CONTROLLER_MANAGER: &str = "kube-controller-manager";
pub(crate) use write::{Warnings, WriteCtx, Written, manager_from_user_agent};

pub(crate) use alloc::{
    allocate, generate_name, generated_name_base, is_service, restore_allocation,
};
pub(crate) use checks::{
    allows_unconditional_update, check_escalation, check_namespace_accepts_create, validate_create,
    validate_update,
};
pub(crate) use decode::{apply_defaults, check_type_meta, decode, field_validation, type_info};
pub(crate) use errors::{conflict, invalid, not_found, object_details};
pub(crate) use write::same_content;
