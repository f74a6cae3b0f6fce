//! Reads of the past: lists at an older resourceVersion (rolled back through
//! the history) and the snapshot a watch without resourceVersion starts with.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Event, EventType, Inner, ObjKey, ResKey, WatchFilter, collect_range};

/// The objects of one resource at a resourceVersion.
pub(super) type Snapshot = Vec<(ObjKey, Arc<Value>)>;

pub(super) fn list_at(
    inner: &Inner,
    res: &ResKey,
    ns: Option<&str>,
    after: Option<&ObjKey>,
    rv: u64,
) -> Result<Snapshot, u64> {
    let current = match inner.objects.get(res) {
        Some(map) => collect_range(map, ns, after),
        None => Vec::new(),
    };
    if rv >= inner.rv {
        return Ok(current);
    }
    if rv < inner.evicted_up_to {
        return Err(inner.evicted_up_to);
    }
    let mut state: BTreeMap<ObjKey, Arc<Value>> = current.into_iter().collect();
    let in_range =
        |key: &ObjKey| ns.is_none_or(|ns| key.0 == ns) && after.is_none_or(|after| key > after);
    // Undo, newest first, every change made after `rv`.
    for event in inner.history.iter().rev() {
        if event.rv <= rv {
            break;
        }
        if &event.resource != res {
            continue;
        }
        let key = (event.namespace.clone(), event.name.clone());
        if !in_range(&key) {
            continue;
        }
        match (&event.kind, &event.prev) {
            (EventType::Added, _) => {
                state.remove(&key);
            }
            (_, Some(prev)) => {
                state.insert(key, prev.clone());
            }
            (_, None) => {}
        }
    }
    Ok(state.into_iter().collect())
}

/// The current objects a filter selects, as ADDED changes.
pub(super) fn snapshot_events(inner: &Inner, filter: &WatchFilter) -> Vec<Arc<Event>> {
    let Some(res) = &filter.resource else {
        return Vec::new();
    };
    let Some(map) = inner.objects.get(res) else {
        return Vec::new();
    };
    collect_range(map, filter.namespace.as_deref(), None)
        .into_iter()
        .filter(|((_, name), _)| filter.name.as_ref().is_none_or(|n| n == name))
        .map(|((ns, name), obj)| {
            Arc::new(Event {
                rv: super::parse_rv(crate::meta::resource_version(&obj)),
                kind: EventType::Added,
                resource: res.clone(),
                namespace: ns,
                name,
                object: obj,
                prev: None,
            })
        })
        .collect()
}
