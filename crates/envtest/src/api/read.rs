//! Get and list: resourceVersion semantics (latest, any, exact, too large),
//! selectors, limit/continue paging and the list documents.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::not_found;
use crate::app::App;
use crate::error::{ApiError, ApiResult, Cause, Details};
use crate::field_selectors::{FieldSelector, Selectable, field_value};
use crate::registry::Resource;
use crate::request::query::{ListOptions, parse_resource_version};
use crate::selectors::LabelSelector;
use crate::store::ObjKey;

/// How long a read of a future resourceVersion waits before 504.
const TOO_LARGE_WAIT: Duration = Duration::from_secs(3);

pub(crate) fn get(app: &App, res: &Resource, ns: &str, name: &str) -> ApiResult<Arc<Value>> {
    app.store
        .get(&res.store_key, ns, name)
        .map(|o| res.from_storage(&o))
        .ok_or_else(|| not_found(res, name))
}

/// A GET with a `resourceVersion` parameter, served as the watch cache
/// serves it: a malformed one is the storage's 500, a future one is waited
/// for (then 504), anything else reads the current state.
pub(crate) async fn get_at(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    resource_version: Option<&str>,
) -> ApiResult<Arc<Value>> {
    if let Some(rv) = resource_version.filter(|rv| !rv.is_empty()) {
        let rv = parse_resource_version(rv)?;
        if rv > 0 {
            wait_for_rv(app, rv).await?;
        }
    }
    get(app, res, ns, name)
}

/// Parsed selectors of a list or watch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// The resource's group and plural, which say what a field's value is.
    group: String,
    plural: String,
}

impl Selectors {
    pub(crate) fn parse(res: &Resource, opts: &ListOptions) -> ApiResult<Selectors> {
        let labels = LabelSelector::parse(&opts.label_selector)?;
        let accepted = match res.custom() {
            Some(c) => Selectable::custom(
                res.namespaced,
                c.version(&res.version)
                    .map(|v| v.selectable_fields.as_slice())
                    .unwrap_or_default(),
            ),
            None => Selectable::builtin(&res.group, &res.plural),
        };
        let fields = FieldSelector::parse(&opts.field_selector)?.resolve(&accepted)?;
        Ok(Selectors {
            labels,
            fields,
            group: res.group.clone(),
            plural: res.plural.clone(),
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// `stored` is the object as stored (fields), `shown` as served (labels).
    pub(crate) fn matches(&self, stored: &Value) -> bool {
        self.labels.matches_object(stored)
            && self
                .fields
                .matches(|f| field_value(&self.group, &self.plural, stored, f))
    }
}

/// A continue token: where the next page starts and the list's resourceVersion.
pub(crate) fn encode_continue(rv: u64, last: &ObjKey) -> String {
    let start = format!("{}/{}\u{0}", last.0, last.1);
    let doc = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(doc.to_string())
}

fn bad_continue(detail: &str) -> ApiError {
    ApiError::bad_request(format!("invalid continue token: {detail}"))
}

pub(crate) fn decode_continue(token: &str) -> ApiResult<(u64, ObjKey)> {
    // Go's RawURLEncoding ignores non-zero trailing bits; so does this.
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let raw = engine.decode(token.trim_end_matches('=')).map_err(|e| {
        bad_continue(&format!(
            "continue key is not valid: illegal base64 data: {e}"
        ))
    })?;
    let doc: Value = serde_json::from_slice(&raw).map_err(|_| {
        let first = raw.first().map(|b| char::from(*b)).unwrap_or(' ');
        bad_continue(&format!(
            "continue key is not valid: invalid character {} looking for beginning of value",
            crate::gofmt::quote_char(first)
        ))
    })?;
    if doc.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad_continue(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    let rv = doc.get("rv").and_then(Value::as_u64).unwrap_or(0);
    let start = doc.get("start").and_then(Value::as_str).unwrap_or("");
    let start = start.trim_end_matches('\u{0}');
    let (ns, name) = start.split_once('/').unwrap_or(("", start));
    if rv == 0 {
        return Err(bad_continue(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    Ok((rv, (ns.to_string(), name.to_string())))
}

/// One page of a list.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    pub items: Vec<Arc<Value>>,
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// 504 for a resourceVersion the store has not reached.
pub(crate) fn too_large(requested: u64, current: u64) -> ApiError {
    ApiError::timeout(format!(
        "Timeout: Too large resource version: {requested}, current: {current}"
    ))
    .with_details(Details {
        causes: vec![Cause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }],
        retry_after_seconds: Some(1),
        ..Details::default()
    })
}

/// Waits (up to 3 s, as kube-apiserver) for the store to reach `rv`.
pub(crate) async fn wait_for_rv(app: &App, rv: u64) -> ApiResult<()> {
    let deadline = tokio::time::Instant::now() + TOO_LARGE_WAIT;
    loop {
        let current = app.store.current_rv();
        if current >= rv {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(too_large(rv, current));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub(crate) async fn list(
    app: &App,
    res: &Resource,
    ns: Option<&str>,
    opts: &ListOptions,
) -> ApiResult<Page> {
    let selectors = Selectors::parse(res, opts)?;
    // A continuation carries its own resourceVersion: the storage checks the
    // token, then refuses any other (but "0") before reading anything.
    let continuation = match &opts.continue_token {
        Some(token) => {
            let decoded = decode_continue(token)?;
            if opts
                .resource_version
                .as_deref()
                .is_some_and(|rv| !rv.is_empty() && rv != "0")
            {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            Some(decoded)
        }
        None => None,
    };
    let requested_rv = match opts.resource_version.as_deref() {
        None | Some("") => None,
        Some(_) if continuation.is_some() => None,
        Some(rv) => Some(parse_resource_version(rv)?),
    };
    if let Some(rv) = requested_rv
        && rv > 0
    {
        wait_for_rv(app, rv).await?;
    }
    let (raw, list_rv) = if let Some((rv, after)) = continuation {
        let items = app
            .store
            .list_at(&res.store_key, ns, Some(&after), rv)
            .map_err(|_| ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."))?;
        (items, rv)
    } else if let Some(rv) = requested_rv.filter(|_| exact_read(opts)) {
        let items = app
            .store
            .list_at(&res.store_key, ns, None, rv)
            .map_err(|_| {
                ApiError::expired("The resourceVersion for the provided list is too old.")
            })?;
        (items, rv)
    } else {
        app.store.list(&res.store_key, ns, None)
    };
    // The watch cache ignores the limit of a list at resourceVersion "0":
    // every item, no continue token.
    let limit = opts.limit.filter(|_| requested_rv != Some(0));
    let mut items = Vec::new();
    let mut last_key = None;
    let mut matched_after_limit = 0usize;
    for (key, obj) in raw {
        if !selectors.matches(&obj) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            matched_after_limit += 1;
            if !selectors.is_empty() {
                break;
            }
            continue;
        }
        last_key = Some(key);
        items.push(res.from_storage(&obj));
    }
    let (continue_token, remaining) = match (matched_after_limit > 0, last_key) {
        (true, Some(last)) => (
            Some(encode_continue(list_rv, &last)),
            selectors.is_empty().then_some(matched_after_limit),
        ),
        _ => (None, None),
    };
    let items = crate::conversion::all_for_read(app, res, items).await?;
    Ok(Page {
        items,
        resource_version: list_rv,
        continue_token,
        remaining,
    })
}

/// Whether a list is read at exactly its resourceVersion: with
/// `resourceVersionMatch=Exact`, or (the legacy rule kube-apiserver keeps)
/// with a limit, no match and a resourceVersion other than "0".
fn exact_read(opts: &ListOptions) -> bool {
    match opts.resource_version_match.as_deref() {
        Some("Exact") => true,
        None | Some("") => {
            opts.limit.is_some_and(|l| l > 0)
                && opts
                    .resource_version
                    .as_deref()
                    .is_some_and(|rv| !rv.is_empty() && rv != "0")
        }
        _ => false,
    }
}

/// The list metadata of a page.
pub(crate) fn list_meta(page: &Page, custom: bool) -> Value {
    let mut m = Map::new();
    m.insert(
        "resourceVersion".into(),
        json!(page.resource_version.to_string()),
    );
    match &page.continue_token {
        Some(c) => {
            m.insert("continue".into(), json!(c));
        }
        None if custom => {
            m.insert("continue".into(), json!(""));
        }
        None => {}
    }
    if let Some(r) = page.remaining {
        m.insert("remainingItemCount".into(), json!(r));
    }
    Value::Object(m)
}

/// The `<Kind>List` document without its items (`items` is its last key,
/// empty): what a LIST answer writes the items into one by one.
pub(crate) fn list_head(res: &Resource, page: &Page) -> Value {
    json!({
        "kind": res.list_kind,
        "apiVersion": res.api_version(),
        "metadata": list_meta(page, res.is_custom()),
        "items": [],
    })
}

/// The `<Kind>List` document. Built-in list items carry no apiVersion/kind
/// (as kube-apiserver serves them); custom resource items do.
pub(crate) fn list_document(res: &Resource, page: &Page) -> Value {
    let custom = res.is_custom();
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|o| {
            let mut o = (**o).clone();
            // shift_remove: the other fields keep their (Go's) order.
            if !custom && let Value::Object(m) = &mut o {
                m.shift_remove("apiVersion");
                m.shift_remove("kind");
            }
            o
        })
        .collect();
    let mut doc = list_head(res, page);
    doc["items"] = Value::Array(items);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_garbage_is_rejected_like_go() {
        let key = ("ns".to_string(), "cm-2".to_string());
        let token = encode_continue(42, &key);
        assert_eq!(decode_continue(&token).unwrap(), (42, key));
        let err = decode_continue("garbage").unwrap_err();
        assert_eq!(
            err.message,
            "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of value"
        );
    }
}
