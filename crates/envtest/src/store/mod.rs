//! In-memory object storage: one cluster-wide resourceVersion counter, the
//! objects of every resource, a bounded history of changes for watch
//! resumption and consistent reads, and the fan-out of changes to watchers.
//!
//! Everything sits behind one mutex held only for short, non-async critical
//! sections (a map insert, a history push, non-blocking channel sends), so
//! many concurrent clients never wait on one another for long and nothing
//! awaits while holding it.

mod history;
mod watch_cache;
mod watchers;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use crate::meta;

pub(crate) use watchers::{Subscription, WatchFilter, WatcherTx};

/// Names the storage of one resource: `configmaps`, `apps/deployments`,
/// `example.com/widgets`. Both Event APIs share `events`.
pub(crate) type ResKey = Arc<str>;

/// (namespace, name); the namespace is empty for cluster-scoped objects.
/// The map order (namespace, then name) is the order lists are served in.
pub(crate) type ObjKey = (String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as kept in the history and sent to watchers.
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub resource: ResKey,
    pub namespace: String,
    pub name: String,
    /// The new state; for DELETED the last state carrying the deletion's resourceVersion.
    pub object: Arc<Value>,
    /// The state before the change (MODIFIED and DELETED).
    pub prev: Option<Arc<Value>>,
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteError {
    NotFound,
    AlreadyExists,
    /// The stored object's resourceVersion differs from the expected one.
    Conflict {
        current: u64,
    },
    /// A delete precondition on the uid failed.
    UidMismatch {
        current: String,
    },
}

/// What must hold for a write to go ahead.
#[derive(Debug, Clone, Default)]
pub(crate) struct Preconditions {
    pub resource_version: Option<u64>,
    pub uid: Option<String>,
}

pub(crate) struct Inner {
    rv: u64,
    objects: HashMap<ResKey, BTreeMap<ObjKey, Arc<Value>>>,
    history: VecDeque<Arc<Event>>,
    /// Changes kept for reads of the past (etcd's revisions until compaction).
    history_cap: usize,
    /// How many of the newest changes a watch can resume through (the watch
    /// cache); never more than `history_cap`.
    watch_cap: usize,
    /// Every change ever evicted from the history has a resourceVersion <= this.
    evicted_up_to: u64,
    /// Watches cannot resume from before this (the history was dropped).
    compacted_to: u64,
    /// How far back each resource's watches reach (kube-apiserver's
    /// per-resource watch cache, however long `history` is).
    watch_caches: watch_cache::WatchCaches,
    watchers: watchers::Watchers,
}

pub(crate) struct Store {
    inner: Mutex<Inner>,
}

/// Parses a stored resourceVersion string (0 when absent or malformed).
pub(crate) fn parse_rv(rv: &str) -> u64 {
    rv.parse().unwrap_or(0)
}

impl Store {
    #[cfg(test)]
    /// A store whose watches and reads of the past reach back `history_cap` changes.
    pub(crate) fn new(history_cap: usize) -> Store {
        Store::with_windows(history_cap, history_cap)
    }

    /// A store where watches resume through the last `watch_cap` changes and
    /// lists at an older resourceVersion (`resourceVersionMatch=Exact`,
    /// continue tokens) reach back `read_cap` changes, as kube-apiserver's
    /// watch cache is shorter than etcd's history before compaction.
    pub(crate) fn with_windows(watch_cap: usize, read_cap: usize) -> Store {
        let watch_cap = watch_cap.max(1);
        let history_cap = read_cap.max(watch_cap);
        Store {
            inner: Mutex::new(Inner {
                rv: 0,
                objects: HashMap::new(),
                history: VecDeque::with_capacity(watch_cap.min(65_536)),
                history_cap,
                watch_cap,
                evicted_up_to: 0,
                compacted_to: 0,
                watch_caches: watch_cache::WatchCaches::default(),
                watchers: watchers::Watchers::default(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-written
        // (every mutation is a single insert/remove), so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The latest resourceVersion issued.
    pub(crate) fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    pub(crate) fn get(&self, res: &ResKey, ns: &str, name: &str) -> Option<Arc<Value>> {
        let inner = self.lock();
        inner
            .objects
            .get(res)
            .and_then(|m| m.get(&(ns.to_string(), name.to_string())))
            .cloned()
    }

    /// Objects of `res` (in `ns` when given) whose key is after `after`, in
    /// key order, with the resourceVersion the list is consistent with.
    pub(crate) fn list(
        &self,
        res: &ResKey,
        ns: Option<&str>,
        after: Option<&ObjKey>,
    ) -> (Vec<(ObjKey, Arc<Value>)>, u64) {
        let inner = self.lock();
        let items = match inner.objects.get(res) {
            Some(map) => collect_range(map, ns, after),
            None => Vec::new(),
        };
        (items, inner.rv)
    }

    /// The objects of `res` as they were right after resourceVersion `rv`;
    /// `Err(oldest)` when the history no longer reaches back that far.
    pub(crate) fn list_at(
        &self,
        res: &ResKey,
        ns: Option<&str>,
        after: Option<&ObjKey>,
        rv: u64,
    ) -> Result<Vec<(ObjKey, Arc<Value>)>, u64> {
        let inner = self.lock();
        history::list_at(&inner, res, ns, after, rv)
    }

    #[cfg(test)]
    /// Whether a watch may resume right after `rv` (the history holds every
    /// change since). On `Err` the value is the oldest resourceVersion a watch
    /// can still start from, for the `too old resource version` message.
    pub(crate) fn can_resume_from(&self, rv: u64) -> Result<(), u64> {
        let oldest = self.lock().watch_oldest();
        if rv >= oldest { Ok(()) } else { Err(oldest) }
    }

    /// Inserts a new object; its resourceVersion is assigned here.
    pub(crate) fn create(
        &self,
        res: &ResKey,
        ns: &str,
        name: &str,
        mut obj: Value,
    ) -> Result<Arc<Value>, WriteError> {
        let mut inner = self.lock();
        let key = (ns.to_string(), name.to_string());
        let map = inner.objects.entry(res.clone()).or_default();
        if map.contains_key(&key) {
            return Err(WriteError::AlreadyExists);
        }
        let rv = inner.rv + 1;
        inner.rv = rv;
        meta::set_meta(&mut obj, "resourceVersion", Value::String(rv.to_string()));
        let obj = Arc::new(obj);
        inner
            .objects
            .entry(res.clone())
            .or_default()
            .insert(key, obj.clone());
        inner.record(Event {
            rv,
            kind: EventType::Added,
            resource: res.clone(),
            namespace: ns.to_string(),
            name: name.to_string(),
            object: obj.clone(),
            prev: None,
        });
        Ok(obj)
    }

    /// Replaces a stored object if its resourceVersion is still `expected_rv`.
    pub(crate) fn update(
        &self,
        res: &ResKey,
        ns: &str,
        name: &str,
        expected_rv: u64,
        mut obj: Value,
    ) -> Result<Arc<Value>, WriteError> {
        let mut inner = self.lock();
        let key = (ns.to_string(), name.to_string());
        let prev = inner
            .objects
            .get(res)
            .and_then(|m| m.get(&key))
            .cloned()
            .ok_or(WriteError::NotFound)?;
        let current = parse_rv(meta::resource_version(&prev));
        if current != expected_rv {
            return Err(WriteError::Conflict { current });
        }
        let rv = inner.rv + 1;
        inner.rv = rv;
        meta::set_meta(&mut obj, "resourceVersion", Value::String(rv.to_string()));
        let obj = Arc::new(obj);
        inner
            .objects
            .entry(res.clone())
            .or_default()
            .insert(key, obj.clone());
        inner.record(Event {
            rv,
            kind: EventType::Modified,
            resource: res.clone(),
            namespace: ns.to_string(),
            name: name.to_string(),
            object: obj.clone(),
            prev: Some(prev),
        });
        Ok(obj)
    }

    /// Removes a stored object if the preconditions hold. Returns the stored
    /// state before the deletion (its resourceVersion unchanged) and the
    /// resourceVersion of the deletion.
    pub(crate) fn delete(
        &self,
        res: &ResKey,
        ns: &str,
        name: &str,
        pre: &Preconditions,
    ) -> Result<(Arc<Value>, u64), WriteError> {
        let mut inner = self.lock();
        let key = (ns.to_string(), name.to_string());
        let prev = inner
            .objects
            .get(res)
            .and_then(|m| m.get(&key))
            .cloned()
            .ok_or(WriteError::NotFound)?;
        if let Some(uid) = &pre.uid {
            let current = meta::uid(&prev);
            if current != uid {
                return Err(WriteError::UidMismatch {
                    current: current.to_string(),
                });
            }
        }
        if let Some(expected) = pre.resource_version {
            let current = parse_rv(meta::resource_version(&prev));
            if current != expected {
                return Err(WriteError::Conflict { current });
            }
        }
        if let Some(map) = inner.objects.get_mut(res) {
            map.remove(&key);
        }
        let rv = inner.rv + 1;
        inner.rv = rv;
        let mut last = (*prev).clone();
        meta::set_meta(&mut last, "resourceVersion", Value::String(rv.to_string()));
        inner.record(Event {
            rv,
            kind: EventType::Deleted,
            resource: res.clone(),
            namespace: ns.to_string(),
            name: name.to_string(),
            object: Arc::new(last),
            prev: Some(prev.clone()),
        });
        Ok((prev, rv))
    }

    /// Names every resource that currently holds at least one object in `ns`.
    pub(crate) fn resources_in_namespace(&self, ns: &str) -> Vec<(ResKey, usize)> {
        let inner = self.lock();
        inner
            .objects
            .iter()
            .filter_map(|(res, map)| {
                let n = collect_range(map, Some(ns), None).len();
                (n > 0).then(|| (res.clone(), n))
            })
            .collect()
    }

    /// Every stored object (for controllers that scan, e.g. at start).
    pub(crate) fn all_objects(&self) -> Vec<(ResKey, Arc<Value>)> {
        let inner = self.lock();
        inner
            .objects
            .iter()
            .flat_map(|(res, map)| map.values().map(move |o| (res.clone(), o.clone())))
            .collect()
    }

    /// Registers a watcher. Under the same lock, the changes after `since`
    /// (or, with `since = None`, a snapshot of the current objects as ADDED
    /// changes) are returned so that nothing falls between backlog and live
    /// changes. `Err(oldest)` when `since` is older than the history.
    pub(crate) fn subscribe(
        &self,
        filter: WatchFilter,
        since: Option<u64>,
        tx: WatcherTx,
    ) -> Result<Subscription, u64> {
        let mut inner = self.lock();
        let backlog = match since {
            Some(rv) => {
                let oldest = inner.watch_oldest();
                if rv < oldest {
                    return Err(oldest);
                }
                if let Some(res) = &filter.resource
                    && let Some(floor) = inner.watch_caches.floor(res)
                    && rv < floor
                {
                    return Err(floor);
                }
                inner
                    .history
                    .iter()
                    .filter(|e| e.rv > rv && filter.matches_event(e))
                    .cloned()
                    .collect()
            }
            None => history::snapshot_events(&inner, &filter),
        };
        let start_rv = inner.rv;
        let id = inner.watchers.add(filter, tx);
        Ok(Subscription {
            id,
            backlog,
            start_rv,
        })
    }

    pub(crate) fn unsubscribe(&self, id: u64) {
        self.lock().watchers.remove(id);
    }

    /// Drops the watch history (fault injection): a watch from before the
    /// current resourceVersion gets 410 Gone, as after kube-apiserver's
    /// watch cache moved on. Returns that resourceVersion.
    /// Makes every change the watch caches hold `by` older (tests of their
    /// time rules).
    #[cfg(test)]
    pub(crate) fn age_watch_caches(&self, by: std::time::Duration) {
        self.lock().watch_caches.age(by);
    }

    pub(crate) fn compact_watch_history(&self) -> u64 {
        let mut inner = self.lock();
        inner.compacted_to = inner.rv;
        inner.rv
    }
}

fn collect_range(
    map: &BTreeMap<ObjKey, Arc<Value>>,
    ns: Option<&str>,
    after: Option<&ObjKey>,
) -> Vec<(ObjKey, Arc<Value>)> {
    use std::ops::Bound;
    let lower = match after {
        Some(k) => Bound::Excluded(k.clone()),
        None => match ns {
            Some(ns) => Bound::Included((ns.to_string(), String::new())),
            None => Bound::Unbounded,
        },
    };
    map.range((lower, Bound::Unbounded))
        .take_while(|((kns, _), _)| ns.is_none_or(|ns| kns == ns))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl Inner {
    /// The oldest resourceVersion a watch can resume from: every change after
    /// it is among the last `watch_cap` changes.
    fn watch_oldest(&self) -> u64 {
        let len = self.history.len();
        let kept_from = if len > self.watch_cap {
            self.history
                .get(len - self.watch_cap - 1)
                .map_or(self.evicted_up_to, |e| e.rv)
        } else {
            self.evicted_up_to
        };
        kept_from.max(self.compacted_to)
    }

    /// Appends to the history (evicting the oldest change when full) and
    /// hands the change to every interested watcher without blocking.
    fn record(&mut self, event: Event) {
        let event = Arc::new(event);
        if self.history.len() >= self.history_cap
            && let Some(old) = self.history.pop_front()
        {
            self.evicted_up_to = old.rv;
        }
        self.watch_caches
            .record(&event.resource, event.rv, std::time::Instant::now());
        self.history.push_back(event.clone());
        self.watchers.dispatch(&event);
    }
}

#[cfg(test)]
mod tests;
