//! Watch: a JSON stream of ADDED/MODIFIED/DELETED/BOOKMARK/ERROR events from
//! a resourceVersion, from "now" with synthetic ADDED events for existing
//! objects, or as a streaming list (`sendInitialEvents`). Objects entering or
//! leaving a selector show up as ADDED or DELETED, as on kube-apiserver.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::read::{Selectors, wait_for_rv};
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::gojson;
use crate::meta;
use crate::registry::Resource;
use crate::request::negotiate::Shape;
use crate::request::query::{ListOptions, parse_resource_version};
use crate::store::{Event, EventType, WatchFilter, WatcherTx};
use crate::table::{IncludeObject, partial_metadata, table};

/// How many changes a watcher may fall behind before it is dropped.
const WATCHER_BUFFER: usize = 4096;
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

pub(crate) struct WatchRequest {
    pub res: Arc<Resource>,
    pub ns: Option<String>,
    /// Single-object watch (`/watch/.../name` or GET of an object with `watch=true`).
    pub name: Option<String>,
    pub opts: ListOptions,
    pub shape: Shape,
    pub include: IncludeObject,
}

/// Renders events of one watch into JSON lines.
struct Renderer {
    res: Arc<Resource>,
    shape: Shape,
    include: IncludeObject,
    sent_columns: bool,
}

impl Renderer {
    fn object(&mut self, obj: &Arc<Value>) -> Value {
        let shown = self.res.from_storage(obj);
        match &self.shape {
            Shape::Table(v) => {
                let with_columns = !self.sent_columns;
                self.sent_columns = true;
                let rv = meta::resource_version(&shown).to_string();
                table(
                    &self.res,
                    std::slice::from_ref(&shown),
                    json!({"resourceVersion": rv}),
                    v,
                    self.include,
                    with_columns,
                )
            }
            Shape::PartialObjectMetadata(v) => partial_metadata(&shown, v),
            _ => Arc::unwrap_or_clone(shown),
        }
    }

    fn line(&mut self, kind: &str, obj: &Arc<Value>) -> Bytes {
        let mut bytes = format!("{{\"type\":\"{kind}\",\"object\":").into_bytes();
        if self.shape == Shape::Plain {
            // Serialized straight from the shared object: no copy per watcher.
            let shown = self.res.from_storage(obj);
            let _ = serde_json::to_writer(&mut bytes, &*shown);
        } else {
            let _ = serde_json::to_writer(&mut bytes, &self.object(obj));
        }
        bytes.extend_from_slice(b"}\n");
        Bytes::from(gojson::escape_html(bytes))
    }

    /// [`Renderer::line`] of an event whose object a conversion webhook may
    /// have to convert first; a failed conversion is the ERROR event that
    /// ends the watch, as kube-apiserver's watch of the object's storage sends.
    async fn event(&mut self, app: &App, kind: &str, obj: &Arc<Value>) -> Result<Bytes, Bytes> {
        match crate::conversion::stored_as_requested(app, &self.res, obj.clone()).await {
            Ok(shown) => Ok(self.line(kind, &shown)),
            Err(e) => Err(error_line(&ApiError::internal(e.message))),
        }
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if !self.res.is_custom() {
            metadata["creationTimestamp"] = Value::Null;
        }
        if initial_events_end {
            metadata["annotations"] = json!({
                "k8s.io/initial-events-end": "true",
                "kubernetes.io/initial-events-list-blueprint": self.list_blueprint(),
            });
        }
        let event = json!({"type": "BOOKMARK", "object": {
            "kind": self.res.kind, "apiVersion": self.res.api_version(), "metadata": metadata,
        }});
        Bytes::from(gojson::compact(&event))
    }
}

impl Renderer {
    /// The empty list this watch stands for, encoded as the client asked
    /// and in base64: what a client turning the stream into a list uses
    /// for the list's kind (kube-apiserver's watch-list transformer).
    fn list_blueprint(&self) -> String {
        use base64::Engine as _;
        let list = match &self.shape {
            Shape::PartialObjectMetadata(v) => format!(
                r#"{{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/{v}","metadata":{{}},"items":null}}"#
            ),
            // Custom resources are lists of unstructured objects: their
            // keys are sorted and the empty item list is [].
            _ if self.res.is_custom() => format!(
                r#"{{"apiVersion":"{}","items":[],"kind":"{}List"}}"#,
                self.res.api_version(),
                self.res.kind
            ),
            _ => format!(
                r#"{{"kind":"{}List","apiVersion":"{}","metadata":{{}},"items":null}}"#,
                self.res.kind,
                self.res.api_version()
            ),
        };
        base64::engine::general_purpose::STANDARD.encode(format!("{list}\n"))
    }
}

fn error_line(err: &ApiError) -> Bytes {
    Bytes::from(gojson::compact(
        &json!({"type": "ERROR", "object": err.to_status()}),
    ))
}

/// What a watcher with selectors sees of one change: (type, object).
fn view_of(ev: &Event, sel: &Selectors) -> Option<(&'static str, Arc<Value>)> {
    if sel.is_empty() {
        return Some((ev.kind.as_str(), ev.object.clone()));
    }
    let now = sel.matches(&ev.object);
    match ev.kind {
        EventType::Added => now.then(|| ("ADDED", ev.object.clone())),
        EventType::Deleted => {
            let before = ev.prev.as_ref().is_none_or(|p| sel.matches(p));
            before.then(|| ("DELETED", ev.object.clone()))
        }
        EventType::Modified => {
            let before = ev.prev.as_ref().is_some_and(|p| sel.matches(p));
            match (before, now) {
                (true, true) => Some(("MODIFIED", ev.object.clone())),
                (false, true) => Some(("ADDED", ev.object.clone())),
                (true, false) => {
                    // Leaving the selector: the last matching state, with the new resourceVersion.
                    let mut last = ev.prev.as_deref().cloned().unwrap_or(Value::Null);
                    meta::set_meta(&mut last, "resourceVersion", json!(ev.rv.to_string()));
                    Some(("DELETED", Arc::new(last)))
                }
                (false, false) => None,
            }
        }
    }
}

/// A stream of byte chunks for the response body.
pub(crate) type WatchStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, Infallible>> + Send>>;

fn stream_of(mut rx: mpsc::Receiver<Bytes>) -> WatchStream {
    Box::pin(futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|o| o.map(Ok))
    }))
}

/// Default watch duration when the client sets none: 30-60 minutes, as kube-apiserver.
fn default_timeout() -> Duration {
    use rand::Rng;
    Duration::from_secs(rand::rng().random_range(1800..3600))
}

/// Validates the request and starts the watch; errors are HTTP errors.
pub(crate) async fn start(app: Arc<App>, req: WatchRequest) -> ApiResult<WatchStream> {
    let selectors = Selectors::parse(&req.res, &req.opts)?;
    let rv_param = match req.opts.resource_version.as_deref() {
        None | Some("") => None,
        Some(rv) => Some(parse_resource_version(rv)?),
    };
    let initial = req.opts.send_initial_events;
    let since = match (initial, rv_param) {
        (Some(true), _) => None,
        (Some(false), None | Some(0)) => Some(app.store.current_rv()),
        (_, Some(n)) if n > 0 => Some(n),
        _ => None,
    };
    // A streaming list waits (3 s at most) for the watch cache to reach the
    // resourceVersion it asks for, and tells the client it did not inside
    // the stream; a plain watch from a future resourceVersion waits for the
    // changes after it without delay (the cacher's `Watch`).
    if initial == Some(true)
        && let Some(n) = rv_param.filter(|n| *n > 0)
        && let Err(err) = wait_for_rv(&app, n).await
    {
        let (body_tx, body_rx) = mpsc::channel::<Bytes>(1);
        let _ = body_tx.try_send(error_line(&err));
        return Ok(stream_of(body_rx));
    }
    // Changes at or before the resourceVersion a watch starts after are
    // not its to see (a future one is not in the history yet).
    let after_rv = since.unwrap_or(0);
    let name = req
        .name
        .clone()
        .or_else(|| selectors.fields.required_name().map(str::to_string));
    let filter = WatchFilter {
        resource: Some(req.res.store_key.clone()),
        namespace: req.ns.clone(),
        name,
    };
    let mut renderer = Renderer {
        res: req.res.clone(),
        shape: req.shape.clone(),
        include: req.include,
        sent_columns: false,
    };
    let (body_tx, body_rx) = mpsc::channel::<Bytes>(64);
    let (tx, mut rx) = mpsc::channel(WATCHER_BUFFER);
    let sub = match app.store.subscribe(filter, since, WatcherTx::Bounded(tx)) {
        Ok(sub) => sub,
        Err(oldest) => {
            let requested = since.unwrap_or(0);
            let err =
                ApiError::expired(format!("too old resource version: {requested} ({oldest})"));
            let _ = body_tx.try_send(error_line(&err));
            return Ok(stream_of(body_rx));
        }
    };
    // As kube-apiserver: 0 (or none) takes the default, a negative
    // timeout ends the watch at once.
    let timeout = match req.opts.timeout_seconds {
        None | Some(0) => default_timeout(),
        Some(t) => Duration::from_secs(u64::try_from(t).unwrap_or(0)),
    };
    let bookmarks = req.opts.allow_bookmarks;
    let send_initial_end = initial == Some(true) && bookmarks;
    let mut closing = app.closing.subscribe();
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last_rv = 0u64;
        let emit = async |line: Bytes| body_tx.send(line).await.is_ok();
        // Sends an event; false once the stream is to end (client gone or a failed conversion).
        let send = async |renderer: &mut Renderer, kind: &str, obj: &Arc<Value>| match renderer
            .event(&app, kind, obj)
            .await
        {
            Ok(line) => emit(line).await,
            Err(error) => {
                let _ = emit(error).await;
                false
            }
        };
        let mut open = true;
        for ev in &sub.backlog {
            if let Some((kind, obj)) = view_of(ev, &selectors) {
                last_rv = last_rv.max(ev.rv);
                if !send(&mut renderer, kind, &obj).await {
                    open = false;
                    break;
                }
            }
        }
        if open && send_initial_end {
            open = emit(renderer.bookmark(sub.start_rv.max(last_rv), true)).await;
        }
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + BOOKMARK_EVERY, BOOKMARK_EVERY);
        while open {
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) if ev.rv <= after_rv => {}
                    Some(ev) => {
                        if let Some((kind, obj)) = view_of(&ev, &selectors) {
                            last_rv = last_rv.max(ev.rv);
                            open = send(&mut renderer, kind, &obj).await;
                        }
                    }
                    // Dropped for falling behind: end the stream, the client re-watches.
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => {
                    if bookmarks {
                        // Everything up to `current` is already queued: drain it first.
                        let current = app.store.current_rv();
                        while let Ok(ev) = rx.try_recv() {
                            if let Some((kind, obj)) = view_of(&ev, &selectors).filter(|_| ev.rv > after_rv) {
                                last_rv = last_rv.max(ev.rv);
                                if !send(&mut renderer, kind, &obj).await { break; }
                            }
                        }
                        // No bookmark goes back before where the watch started.
                        if current.max(last_rv) >= after_rv {
                            let _ = emit(renderer.bookmark(current.max(last_rv), false)).await;
                        }
                    }
                    break;
                }
                _ = tick.tick(), if bookmarks => {
                    let current = app.store.current_rv();
                    while let Ok(ev) = rx.try_recv() {
                        if let Some((kind, obj)) = view_of(&ev, &selectors).filter(|_| ev.rv > after_rv) {
                            last_rv = last_rv.max(ev.rv);
                            if !send(&mut renderer, kind, &obj).await { break; }
                        }
                    }
                    if current.max(last_rv) >= after_rv {
                        open = emit(renderer.bookmark(current.max(last_rv), false)).await;
                    }
                }
                _ = body_tx.closed() => break,
                _ = closing.changed() => break,
            }
        }
        app.store.unsubscribe(sub.id);
    });
    Ok(stream_of(body_rx))
}
