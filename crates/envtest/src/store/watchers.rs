//! Watcher registrations and the non-blocking fan-out of changes.
//!
//! HTTP watchers get a bounded channel: a watcher that falls that far behind
//! is dropped (its stream ends and the client re-watches from the last
//! resourceVersion it saw), as kube-apiserver's watch cache terminates
//! unresponsive watchers. In-process controllers use unbounded channels.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Event, ResKey};

/// Which changes a watcher receives. Selectors are applied later, by the
/// watcher itself, because entering/leaving a selector needs both states.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchFilter {
    /// `None`: every resource (controllers).
    pub resource: Option<ResKey>,
    pub namespace: Option<String>,
    /// Only the object of this name (single-object watches).
    pub name: Option<String>,
}

impl WatchFilter {
    pub(crate) fn matches_event(&self, e: &Event) -> bool {
        self.resource.as_ref().is_none_or(|r| *r == e.resource)
            && self.namespace.as_ref().is_none_or(|n| *n == e.namespace)
            && self.name.as_ref().is_none_or(|n| *n == e.name)
    }
}

pub(crate) enum WatcherTx {
    Bounded(mpsc::Sender<Arc<Event>>),
    Unbounded(mpsc::UnboundedSender<Arc<Event>>),
}

/// A registered watcher: the changes it must see first and where live ones start.
pub(crate) struct Subscription {
    pub id: u64,
    pub backlog: Vec<Arc<Event>>,
    /// The store's resourceVersion at registration: every later change is live.
    pub start_rv: u64,
}

struct Slot {
    id: u64,
    filter: WatchFilter,
    tx: WatcherTx,
}

#[derive(Default)]
pub(super) struct Watchers {
    next_id: u64,
    slots: Vec<Slot>,
}

impl Watchers {
    pub(super) fn add(&mut self, filter: WatchFilter, tx: WatcherTx) -> u64 {
        self.next_id += 1;
        self.slots.push(Slot {
            id: self.next_id,
            filter,
            tx,
        });
        self.next_id
    }

    pub(super) fn remove(&mut self, id: u64) {
        self.slots.retain(|s| s.id != id);
    }

    pub(super) fn dispatch(&mut self, event: &Arc<Event>) {
        self.slots.retain(|slot| {
            if !slot.filter.matches_event(event) {
                return true;
            }
            match &slot.tx {
                // Full or closed: drop the watcher; its stream then ends.
                WatcherTx::Bounded(tx) => tx.try_send(event.clone()).is_ok(),
                WatcherTx::Unbounded(tx) => tx.send(event.clone()).is_ok(),
            }
        });
    }
}
