//! What travels with one write: who writes and with which options, the
//! warnings raised on the way, what it answers, and whether it changes anything.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::request::query::{FieldValidation, WriteOptions};

/// A successful write.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub code: u16,
    pub body: Arc<Value>,
    pub warnings: Vec<String>,
}

impl Written {
    /// The answer of a write in the request's version (a custom resource
    /// converted by its CRD's webhook, if it has one).
    pub(crate) async fn for_read(
        mut self,
        app: &crate::app::App,
        res: &crate::registry::Resource,
    ) -> crate::error::ApiResult<Written> {
        self.body = crate::conversion::for_read(app, res, self.body).await?;
        Ok(self)
    }

    /// `{"kind": "Status", "status": "Success", "code": 201}`: what a create
    /// that stores nothing of its own answers (pods/binding, pods/eviction).
    pub(crate) fn created_status() -> Written {
        Written {
            code: 201,
            body: Arc::new(serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201
            })),
            warnings: Vec::new(),
        }
    }
}

/// Who writes and how.
#[derive(Debug, Clone)]
pub(crate) struct WriteCtx {
    pub manager: String,
    pub opts: WriteOptions,
    /// Who writes: the administrator, or the user it impersonates (sent to
    /// admission webhooks as `userInfo`).
    pub user: crate::user::UserInfo,
    /// Warnings raised on the way (admission webhooks' warnings), sent as
    /// `Warning` headers whether or not the request succeeds.
    pub warnings: Warnings,
}

impl WriteCtx {
    /// A write with `opts` by `manager`.
    pub(crate) fn new(manager: String, opts: WriteOptions) -> WriteCtx {
        WriteCtx {
            manager,
            opts,
            user: crate::user::UserInfo::default(),
            warnings: Warnings::default(),
        }
    }

    /// A controller's own write (no dry run, unknown fields ignored).
    pub(crate) fn internal(manager: &str) -> WriteCtx {
        WriteCtx::new(
            manager.to_string(),
            WriteOptions {
                dry_run: false,
                field_manager: None,
                field_validation: FieldValidation::Ignore,
                force: false,
            },
        )
    }
}

/// The warnings of one request, collected as they arise (kube-apiserver's
/// warning recorder): cloning shares the collection.
#[derive(Debug, Clone, Default)]
pub(crate) struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    pub(crate) fn extend(&self, warnings: impl IntoIterator<Item = String>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(warnings);
    }

    /// Everything collected so far, emptying the collection.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The default field manager: the product part of the User-Agent.
pub(crate) fn manager_from_user_agent(user_agent: Option<&str>) -> String {
    let ua = user_agent.unwrap_or("").trim();
    let product = ua.split('/').next().unwrap_or("").trim();
    let mut m: String = product.chars().filter(|c| !c.is_control()).collect();
    m.truncate(128);
    m
}

/// Compares two objects ignoring managedFields timestamps and resourceVersion:
/// equal means the write changes nothing and is skipped. Compares in place
/// (no copies): this runs on every update.
pub(crate) fn same_content(a: &Value, b: &Value) -> bool {
    fn maps_equal(
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        skip: &dyn Fn(&str) -> bool,
    ) -> bool {
        let keys = |m: &Map<String, Value>| m.keys().filter(|k| !skip(k)).count();
        keys(a) == keys(b)
            && a.iter()
                .filter(|(k, _)| !skip(k))
                .all(|(k, v)| b.get(k).is_some_and(|w| v == w))
    }
    fn managed_equal(a: Option<&Value>, b: Option<&Value>) -> bool {
        match (a, b) {
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                x.len() == y.len()
                    && x.iter().zip(y).all(|(e, f)| match (e, f) {
                        (Value::Object(e), Value::Object(f)) => maps_equal(e, f, &|k| k == "time"),
                        _ => e == f,
                    })
            }
            (x, y) => x == y,
        }
    }
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return a == b;
    };
    if !maps_equal(a, b, &|k| k == "metadata") {
        return false;
    }
    match (a.get("metadata"), b.get("metadata")) {
        (Some(Value::Object(ma)), Some(Value::Object(mb))) => {
            maps_equal(ma, mb, &|k| k == "resourceVersion" || k == "managedFields")
                && managed_equal(ma.get("managedFields"), mb.get("managedFields"))
        }
        (x, y) => x == y,
    }
}
