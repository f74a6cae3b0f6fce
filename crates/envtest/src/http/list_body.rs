//! LIST answers written item by item, as kube-apiserver writes them, so
//! that a list of 20,000 objects costs about one object's worth of memory
//! beyond the stored objects themselves: the document is never built as a
//! value (the items are the stored objects, borrowed), and a large one is
//! serialized on a blocking thread into chunks the response body sends as
//! the client reads them (a slow client holds the serializer, not memory).
//! The bytes are those of [`respond::object`] for the same document: Go's
//! compact JSON with its HTML escaping and final newline, its indented
//! JSON, or YAML.
//!
//! [`respond::object`]: super::respond::object

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use crate::gojson;
use crate::request::negotiate::{Accepted, Format};
use crate::table::{IncludeObject, partial_metadata, row_object};

/// The items of a list document and how each is written.
pub(super) enum Items {
    /// The objects themselves; built-in list items go without apiVersion
    /// and kind (kube-apiserver serves them so).
    Objects {
        objects: Vec<Arc<Value>>,
        strip_type_meta: bool,
    },
    /// PartialObjectMetadata of each object, in `meta.k8s.io/<version>`.
    Metadata {
        objects: Vec<Arc<Value>>,
        version: String,
    },
    /// Table rows: each object's cells, and its `object` as asked.
    Rows {
        objects: Vec<Arc<Value>>,
        cells: Vec<Vec<Value>>,
        include: IncludeObject,
        version: String,
    },
}

impl Items {
    fn len(&self) -> usize {
        match self {
            Items::Objects { objects, .. }
            | Items::Metadata { objects, .. }
            | Items::Rows { objects, .. } => objects.len(),
        }
    }
}

/// A list document: `head` (an object whose last key names the empty
/// array the items go in, e.g. `items` or `rows`) and the items.
pub(super) struct ListDocument {
    head: Map<String, Value>,
    items: Items,
}

impl ListDocument {
    /// `head` must be an object whose last key is the (empty) items array.
    pub(super) fn new(head: Value, items: Items) -> ListDocument {
        let head = match head {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        ListDocument { head, items }
    }
}

/// An object without its apiVersion and kind, borrowed.
struct WithoutTypeMeta<'a>(&'a Map<String, Value>);

impl Serialize for WithoutTypeMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let kept = self
            .0
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind"));
        let mut map = serializer.serialize_map(Some(kept.clone().count()))?;
        for (k, v) in kept {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One Table row: `{"cells": [...], "object": ...}`.
struct Row<'a> {
    cells: &'a [Value],
    object: Option<std::borrow::Cow<'a, Value>>,
}

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1 + usize::from(self.object.is_some())))?;
        map.serialize_entry("cells", self.cells)?;
        if let Some(object) = &self.object {
            map.serialize_entry("object", object.as_ref())?;
        }
        map.end()
    }
}

struct ItemsView<'a>(&'a Items);

impl Serialize for ItemsView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        match self.0 {
            Items::Objects {
                objects,
                strip_type_meta,
            } => {
                for o in objects {
                    match &**o {
                        Value::Object(map) if *strip_type_meta => {
                            seq.serialize_element(&WithoutTypeMeta(map))?
                        }
                        other => seq.serialize_element(other)?,
                    }
                }
            }
            Items::Metadata { objects, version } => {
                for o in objects {
                    seq.serialize_element(&partial_metadata(o, version))?;
                }
            }
            Items::Rows {
                objects,
                cells,
                include,
                version,
            } => {
                for (o, cells) in objects.iter().zip(cells) {
                    seq.serialize_element(&Row {
                        cells,
                        object: row_object(o, *include, version),
                    })?;
                }
            }
        }
        seq.end()
    }
}

impl Serialize for ListDocument {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.head.len()))?;
        let last = self.head.len().saturating_sub(1);
        for (i, (k, v)) in self.head.iter().enumerate() {
            if i == last {
                map.serialize_entry(k, &ItemsView(&self.items))?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// Lists of at most this many items are written in one piece (with a
/// Content-Length); longer ones stream.
const STREAM_FROM_ITEMS: usize = 256;
/// The size of the chunks a streamed list is sent in.
const CHUNK: usize = 64 * 1024;
/// Chunks written ahead of the client.
const CHUNKS_AHEAD: usize = 2;

/// A 200 answer carrying `doc` in the format the client accepted.
pub(super) fn response(doc: ListDocument, acc: &Accepted) -> Response {
    let content_type = match acc.format {
        Format::Json => "application/json",
        Format::Yaml => "application/yaml",
    };
    let (format, pretty) = (acc.format, acc.pretty);
    let body = if doc.items.len() <= STREAM_FROM_ITEMS {
        let mut bytes = Vec::new();
        let _ = write(&doc, format, pretty, &mut bytes);
        Body::from(finish(bytes, format, pretty))
    } else {
        stream(doc, format, pretty)
    };
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// Serializes `doc` into `out` (JSON not yet escaped nor terminated).
fn write(
    doc: &ListDocument,
    format: Format,
    pretty: bool,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Json if pretty => {
            serde_json::to_writer_pretty(out, doc).map_err(std::io::Error::other)
        }
        Format::Json => serde_json::to_writer(out, doc).map_err(std::io::Error::other),
        Format::Yaml => serde_saphyr::to_io_writer(out, doc).map_err(std::io::Error::other),
    }
}

/// A whole document's bytes as [`super::respond::object`] writes them.
fn finish(bytes: Vec<u8>, format: Format, pretty: bool) -> Vec<u8> {
    match format {
        Format::Json => {
            let mut bytes = gojson::escape_html(bytes);
            if !pretty {
                bytes.push(b'\n');
            }
            bytes
        }
        Format::Yaml => bytes,
    }
}

/// Writes into chunks handed to the response body; escapes JSON as Go
/// does, chunk by chunk (never cutting the three bytes of U+2028/U+2029).
struct ChunkWriter {
    buf: Vec<u8>,
    json: bool,
    tx: tokio::sync::mpsc::Sender<Bytes>,
}

impl ChunkWriter {
    fn send(&mut self, keep_partial: bool) -> std::io::Result<()> {
        let mut ready = std::mem::take(&mut self.buf);
        if self.json {
            // Keep a trailing 0xE2 or 0xE2 0x80 for the next chunk.
            let keep = if !keep_partial {
                0
            } else if ready.ends_with(&[0xE2]) {
                1
            } else if ready.ends_with(&[0xE2, 0x80]) {
                2
            } else {
                0
            };
            self.buf = ready.split_off(ready.len() - keep);
            ready = gojson::escape_html(ready);
        }
        if ready.is_empty() {
            return Ok(());
        }
        self.tx
            .blocking_send(Bytes::from(ready))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "client went away"))
    }
}

impl std::io::Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send(true)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A body fed by a blocking thread that serializes `doc`; a client that
/// goes away stops the serializer at its next chunk.
fn stream(doc: ListDocument, format: Format, pretty: bool) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(CHUNKS_AHEAD);
    tokio::task::spawn_blocking(move || {
        let json = format == Format::Json;
        let mut writer = ChunkWriter {
            buf: Vec::with_capacity(CHUNK + CHUNK / 4),
            json,
            tx,
        };
        if write(&doc, format, pretty, &mut writer).is_ok() {
            if json && !pretty {
                writer.buf.push(b'\n');
            }
            let _ = writer.send(false);
        }
        // The objects go back to the store's sole ownership here, and the
        // memory the serializer used to the allocator.
        drop(doc);
        crate::memory::give_back();
    });
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    Body::from_stream(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn objects() -> Vec<Arc<Value>> {
        (0..3)
            .map(|i| {
                Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i}"), "annotations": {"a": "<&>\u{2028}"}},
                    "data": {"k": "line\nbreak"}}))
            })
            .collect()
    }

    fn head() -> Value {
        json!({"kind": "ConfigMapList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "7"}, "items": []})
    }

    /// The document as a value, written the way single objects are.
    fn whole(format: Format, pretty: bool, strip: bool) -> Vec<u8> {
        let mut doc = head();
        doc["items"] = Value::Array(
            objects()
                .iter()
                .map(|o| {
                    let mut o = (**o).clone();
                    if strip && let Value::Object(m) = &mut o {
                        m.shift_remove("apiVersion");
                        m.shift_remove("kind");
                    }
                    o
                })
                .collect(),
        );
        match format {
            Format::Json if pretty => gojson::indented(&doc),
            Format::Json => gojson::compact(&doc),
            Format::Yaml => serde_saphyr::to_string(&doc).unwrap().into_bytes(),
        }
    }

    #[test]
    fn streamed_and_whole_documents_are_the_same_bytes() {
        for format in [Format::Json, Format::Yaml] {
            for pretty in [false, true] {
                for strip in [false, true] {
                    let doc = ListDocument::new(
                        head(),
                        Items::Objects {
                            objects: objects(),
                            strip_type_meta: strip,
                        },
                    );
                    let mut bytes = Vec::new();
                    write(&doc, format, pretty, &mut bytes).unwrap();
                    assert_eq!(
                        String::from_utf8(finish(bytes, format, pretty)).unwrap(),
                        String::from_utf8(whole(format, pretty, strip)).unwrap(),
                        "{format:?} pretty={pretty} strip={strip}"
                    );
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn chunks_escape_as_one_piece_would() {
        // Enough items to stream, with U+2028 cut at chunk edges somewhere.
        let objects: Vec<Arc<Value>> = (0..2000)
            .map(|i| {
                Arc::new(json!({"metadata": {"name": format!("o-{i}")},
                    "data": {"k": format!("{}\u{2028}<{}>", "x".repeat(i % 97), i)}}))
            })
            .collect();
        let doc = || {
            ListDocument::new(
                head(),
                Items::Objects {
                    objects: objects.clone(),
                    strip_type_meta: true,
                },
            )
        };
        let mut expected = Vec::new();
        write(&doc(), Format::Json, false, &mut expected).unwrap();
        let expected = finish(expected, Format::Json, false);
        let body = stream(doc(), Format::Json, false);
        let got = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert!(got.len() > 2 * CHUNK);
        assert_eq!(got.as_ref(), expected.as_slice());
    }
}
