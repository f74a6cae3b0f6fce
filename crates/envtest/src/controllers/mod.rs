//! The controllers a test cluster needs and kube-apiserver alone lacks: the
//! CRD registry (conditions and serving), the garbage collector, the
//! namespace lifecycle and the serviceaccount controller. They share one task
//! fed by an unbounded subscription to every change, so they react at once
//! and in order.

mod crds;
mod gc;
mod namespaces;

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::api::update::{Change, Fail, update_once, with_retries};
use crate::api::{App, WriteCtx};
use crate::error::ApiResult;
use crate::registry::Resource;
use crate::store::{Event, WatchFilter, WatcherTx};

/// Manager names of the server's own writes, as on a real cluster.
pub const APISERVER: &str = "kube-apiserver";
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";

struct Controllers {
    app: Arc<App>,
    gc: gc::GarbageCollector,
}

impl Controllers {
    fn handle(&mut self, ev: &Event) {
        crds::on_event(&self.app, ev);
        namespaces::on_event(&self.app, ev);
        self.gc.on_event(&self.app, ev);
    }
}

/// Starts the controllers; they first reconcile what already exists.
pub fn spawn(app: Arc<App>) -> JoinHandle<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Arc<Event>>();
    let since = app.store.current_rv();
    let sub = app.store.subscribe(
        WatchFilter::default(),
        Some(since),
        WatcherTx::Unbounded(tx),
    );
    let mut ctl = Controllers {
        app: app.clone(),
        gc: gc::GarbageCollector::default(),
    };
    crds::rebuild_registry(&app);
    for (res, obj) in app.store.all_objects() {
        let ev = Event {
            rv: 0,
            kind: crate::store::EventType::Added,
            resource: res,
            namespace: crate::meta::namespace(&obj).to_string(),
            name: crate::meta::name(&obj).to_string(),
            object: obj,
            prev: None,
        };
        ctl.handle(&ev);
    }
    tokio::spawn(async move {
        if sub.is_err() {
            return;
        }
        while let Some(ev) = rx.recv().await {
            ctl.handle(&ev);
        }
    })
}

/// Rewrites a stored object with `edit` (retrying on races) as `manager`.
/// `edit` returns false to leave the object alone.
pub(crate) fn modify(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    manager: &str,
    edit: impl Fn(&mut Value) -> bool,
) -> ApiResult<()> {
    let ctx = WriteCtx::internal(manager);
    let change = Change {
        res,
        ns,
        name,
        sub,
        ctx: &ctx,
        is_put: false,
        managed_done: false,
    };
    let result = with_retries(app, res, ns, name, |old| {
        let Some(old) = old else {
            return Err(Fail::Api(
                crate::api::read::get(app, res, ns, name)
                    .err()
                    .unwrap_or_else(|| {
                        crate::error::ApiError::not_found(&res.group, &res.plural, name)
                    }),
            ));
        };
        let mut obj = (*res.from_storage(&old)).clone();
        if !edit(&mut obj) {
            return Ok(crate::api::Written {
                code: 200,
                body: obj,
                warnings: Vec::new(),
            });
        }
        update_once(app, &change, obj, &[], &old)
    });
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The served resource for a storage key.
pub(crate) fn resource_for(app: &App, key: &str) -> Option<Arc<Resource>> {
    app.registry.load().by_store_key(key)
}
