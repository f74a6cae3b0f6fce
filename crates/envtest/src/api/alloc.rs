//! What a write takes from the cluster: names generated from `generateName`,
//! and Services' cluster IPs and node ports, given back when the write fails.

use serde_json::Value;

use crate::error::ApiResult;
use crate::meta;
use crate::registry::Resource;

use super::errors::invalid;
use crate::app::App;

pub(crate) fn is_service(res: &Resource) -> bool {
    res.builtin()
        .is_some_and(|k| k.group.is_empty() && k.kind == "Service")
}

/// Cluster IPs and node ports of a Service (create and update), after the
/// kind's preparation and before validation; their causes are reported alone.
pub(crate) fn allocate(app: &App, res: &Resource, obj: &mut Value, dry_run: bool) -> ApiResult<()> {
    if !is_service(res) {
        return Ok(());
    }
    let mut alloc = app.allocator.lock().unwrap_or_else(|e| e.into_inner());
    alloc
        .allocate_service(obj, dry_run)
        .map_err(|causes| invalid(res, meta::name(obj), causes))
}

/// After a write that allocated for Service `obj` failed (validation,
/// admission, a name already taken): the Service's allocations go back to
/// what its stored object holds, or are released when none is stored.
pub(crate) fn restore_allocation(app: &App, res: &Resource, obj: &Value, dry_run: bool) {
    if dry_run || !is_service(res) {
        return;
    }
    let stored = app
        .store
        .get(&res.store_key, meta::namespace(obj), meta::name(obj));
    let mut alloc = app.allocator.lock().unwrap_or_else(|e| e.into_inner());
    match stored {
        Some(stored) => {
            let mut stored = (*stored).clone();
            // The stored values are this Service's own, so they are free for it.
            let _ = alloc.allocate_service(&mut stored, false);
        }
        None => alloc.release_service(obj),
    }
}

/// A name generated from `generateName`: the prefix cut to 58 bytes, so
/// that with the 5 random characters it fits 63 (kube's name generator).
pub(crate) fn generate_name(generate_name: &str) -> String {
    format!(
        "{}{}",
        generated_name_base(generate_name),
        meta::random_suffix()
    )
}

/// The part of `generateName` a generated name starts with.
pub(crate) fn generated_name_base(generate_name: &str) -> &str {
    const MAX_BASE: usize = 63 - 5;
    let mut cut = generate_name.len().min(MAX_BASE);
    while !generate_name.is_char_boundary(cut) {
        cut -= 1;
    }
    &generate_name[..cut]
}
