//! GET of `componentstatuses` (list and one by name), answered from the
//! probes of `crate::component_statuses` rather than from storage, in every
//! shape a client may ask for (object, Table, metadata only).

use std::sync::Arc;

use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use super::{Call, respond, transform_object};
use crate::api::read::Selectors;
use crate::app::App;
use crate::component_statuses;
use crate::error::{ApiError, ApiResult};
use crate::registry::Resource;
use crate::request::negotiate::{Endpoint, Shape};
use crate::request::path::ResourcePath;
use crate::request::query::{self, Query};
use crate::table::{IncludeObject, table};

pub(super) fn serve(
    app: &App,
    call: &Call<'_>,
    (p, q): (&ResourcePath, &Query),
    res: &Resource,
) -> ApiResult<Response> {
    if *call.method != Method::GET || p.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let opts = query::list_options(q, p.watch_prefix)?;
    if opts.watch || q.flag("watch").unwrap_or(false) {
        return Err(ApiError::method_not_allowed());
    }
    let acc = call.negotiate(Endpoint::Resource)?;
    let scheduler_runs = app.simulated_scheduler;
    if let Some(name) = &p.name {
        let obj = component_statuses::get(scheduler_runs, name)
            .ok_or_else(|| ApiError::not_found("", &res.plural, name))?;
        let body = transform_object(res, &Arc::new(obj), &acc, q)?;
        return Ok(respond::object(200, &body, &acc, &[]));
    }
    let selectors = Selectors::parse(res, &opts)?;
    let items: Vec<Arc<Value>> = component_statuses::all(scheduler_runs)
        .into_iter()
        .filter(|c| selectors.matches(c))
        .map(Arc::new)
        .collect();
    // The list is made on the spot: it has no resourceVersion.
    let list_meta = json!({});
    let body = match &acc.shape {
        Shape::Table(v) => table(
            res,
            &items,
            list_meta,
            v,
            IncludeObject::parse(q.get("includeObject")),
            true,
        ),
        shape => match crate::table::list_metadata(res, list_meta.clone(), &items, shape) {
            Some(metadata) => metadata?,
            None => {
                let bare: Vec<Value> = items
                    .iter()
                    .map(|c| {
                        let mut c = (**c).clone();
                        if let Value::Object(m) = &mut c {
                            m.remove("apiVersion");
                            m.remove("kind");
                        }
                        c
                    })
                    .collect();
                json!({"kind": res.list_kind, "apiVersion": "v1", "metadata": list_meta, "items": bare})
            }
        },
    };
    Ok(respond::object(200, &body, &acc, &[]))
}
