//! The operations of a JSON patch as kube-apiserver applies them: with
//! `gopkg.in/evanphx/json-patch.v4` (v4.12.0, negative indices on), which
//! departs from RFC 6902 where clients notice:
//!
//! - `replace` of a member an object lacks adds it (only array indices must
//!   exist), and `replace` of the whole document (`""`) takes an object or
//!   an array;
//! - `test` of a member an object lacks passes when the value is `null`;
//!   `test` of `""` compares the whole document;
//! - `copy` of a member an object lacks copies `null`;
//! - array indices may be negative (`-1` is the last element; for `add`,
//!   the end) and are read as Go's `strconv.Atoi` reads them (`+1`, `01`);
//! - a path without its leading `/` names its last segment at the root, and
//!   `""` names nothing (`add` and `remove` of it fail).
//!
//! kube-apiserver answers a failing operation of a PATCH request with a
//! generic 422 (the library's text is not sent); a mutating webhook's
//! failing patch is an internal error that carries the text, so failures
//! carry the library's messages.

use serde_json::{Map, Value};

/// An operation that does not apply, with evanphx/json-patch's message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Failed(pub String);

type Step = Result<(), Failed>;

const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";

fn fail<T>(message: impl Into<String>) -> Result<T, Failed> {
    Err(Failed(message.into()))
}

/// A member of an operation as Go's `json.Unmarshal` into a string reads it.
#[derive(Debug, Clone, Copy)]
enum Member<'a> {
    /// Absent or `null`.
    Absent,
    Text(&'a str),
    /// Present but not a string: the JSON kind Go's error names.
    NotText(&'static str),
}

impl<'a> Member<'a> {
    fn of(value: Option<&'a Value>) -> Member<'a> {
        match value {
            None | Some(Value::Null) => Member::Absent,
            Some(Value::String(s)) => Member::Text(s),
            Some(other) => Member::NotText(crate::gofmt::json_kind(other)),
        }
    }

    /// `Operation.Path()` / `From()`: the string, or the error they give
    /// (`missing` names the field in the library's own words).
    fn read(self, missing: &str) -> Result<&'a str, String> {
        match self {
            Member::Text(s) => Ok(s),
            Member::Absent => Err(format!("{missing}: {MISSING}")),
            Member::NotText(kind) => Err(format!(
                "json: cannot unmarshal {kind} into Go value of type string"
            )),
        }
    }
}

/// One decoded operation: the members Go reads (`op`, `path`, `from` as
/// strings; `value` as JSON, `None` when absent).
pub(crate) struct Operation<'a> {
    op: &'a str,
    path: Member<'a>,
    from: Member<'a>,
    value: Option<&'a Value>,
}

impl<'a> Operation<'a> {
    pub(crate) fn of(map: &'a Map<String, Value>) -> Operation<'a> {
        Operation {
            // `Operation.Kind()`: "unknown" unless a string.
            op: map.get("op").and_then(Value::as_str).unwrap_or("unknown"),
            path: Member::of(map.get("path")),
            from: Member::of(map.get("from")),
            value: map.get("value"),
        }
    }

    /// The value an `add` or `replace` writes: `null` when absent.
    fn written(&self) -> Value {
        self.value.cloned().unwrap_or(Value::Null)
    }

    fn path(&self) -> Result<&'a str, String> {
        self.path.read("operation missing path field")
    }

    fn from(&self) -> Result<&'a str, String> {
        self.from.read("operation, missing from field")
    }
}

/// Applies `op` to `doc`. `copied` accumulates the bytes `copy` adds, held
/// to `limit` (kube-apiserver's `AccumulatedCopySizeLimit`).
pub(crate) fn apply(doc: &mut Value, op: &Operation, copied: &mut usize, limit: usize) -> Step {
    match op.op {
        "add" => add(doc, op),
        "remove" => remove(doc, op),
        "replace" => replace(doc, op),
        "move" => move_op(doc, op),
        "test" => test(doc, op),
        "copy" => copy(doc, op, copied, limit),
        other => fail(format!("Unexpected kind: {other}")),
    }
}

/// evanphx's `decodePatchKey`: `~1` is `/`, `~0` is `~`.
fn decode_key(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    chars.next();
                    out.push('/');
                    continue;
                }
                Some('0') => {
                    chars.next();
                    out.push('~');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(key: &str) -> Result<i64, String> {
    let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
    let quoted = crate::gofmt::quote(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {quoted}: invalid syntax"));
    }
    key.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {quoted}: value out of range"))
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: {INVALID_INDEX}")
}

/// An existing index of an array of `len` elements, negative ones counted
/// from the end (`partialArray.get`).
fn index(key: &str, len: usize) -> Result<usize, String> {
    let idx = atoi(key)?;
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let at = if idx < 0 {
        if idx < -len {
            return Err(invalid_index(idx));
        }
        idx + len
    } else {
        idx
    };
    if at >= len {
        return Err(invalid_index(at));
    }
    Ok(at as usize)
}

/// evanphx's `findObject`: the container holding the path's last segment,
/// and that segment decoded. Intermediate members must exist and be objects
/// or arrays.
fn find<'d>(doc: &'d mut Value, path: &str) -> Option<(&'d mut Value, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let (key, parts) = split[1..].split_last()?;
    let mut cursor = doc;
    for part in parts {
        let part = decode_key(part);
        let next = match cursor {
            Value::Object(map) => map.get_mut(&part)?,
            Value::Array(items) => {
                let at = index(&part, items.len()).ok()?;
                &mut items[at]
            }
            _ => return None,
        };
        if !matches!(next, Value::Object(_) | Value::Array(_)) {
            return None;
        }
        cursor = next;
    }
    Some((cursor, decode_key(key)))
}

/// `get` of a container: an object's missing member is `None` (not an
/// error); an array's index must exist.
fn get(con: &Value, key: &str) -> Result<Option<Value>, String> {
    match con {
        Value::Object(map) => Ok(map.get(key).cloned()),
        Value::Array(items) => Ok(Some(items[index(key, items.len())?].clone())),
        _ => Err(MISSING.to_string()),
    }
}

/// `add` of a container (`-` appends to an array; a negative index counts
/// in the grown array, so `-1` is the end).
fn insert(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let idx = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let grown = i64::try_from(items.len() + 1).unwrap_or(i64::MAX);
            if idx >= grown || idx < -grown {
                return Err(invalid_index(idx));
            }
            let at = if idx < 0 { idx + grown } else { idx } as usize;
            items.insert(at, value);
            Ok(())
        }
        _ => Err(MISSING.to_string()),
    }
}

/// `remove` of a container.
fn delete(con: &mut Value, key: &str) -> Result<(), String> {
    match con {
        Value::Object(map) => map
            .shift_remove(key)
            .map(drop)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(items) => {
            let idx = atoi(key)?;
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            if idx >= len || idx < -len {
                return Err(invalid_index(idx));
            }
            let at = if idx < 0 { idx + len } else { idx } as usize;
            items.remove(at);
            Ok(())
        }
        _ => Err(MISSING.to_string()),
    }
}

fn add(doc: &mut Value, op: &Operation) -> Step {
    let Ok(path) = op.path() else {
        return fail(format!("add operation failed to decode path: {MISSING}"));
    };
    let Some((con, key)) = find(doc, path) else {
        return fail(format!(
            "add operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        ));
    };
    insert(con, &key, op.written())
        .map_err(|e| Failed(format!("error in add for path: '{path}': {e}")))
}

fn remove(doc: &mut Value, op: &Operation) -> Step {
    let Ok(path) = op.path() else {
        return fail(format!("remove operation failed to decode path: {MISSING}"));
    };
    let Some((con, key)) = find(doc, path) else {
        return fail(format!(
            "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        ));
    };
    delete(con, &key).map_err(|e| Failed(format!("error in remove for path: '{path}': {e}")))
}

fn replace(doc: &mut Value, op: &Operation) -> Step {
    let path = op
        .path()
        .map_err(|e| Failed(format!("replace operation failed to decode path: {e}")))?;
    if path.is_empty() {
        // A value that is neither an object nor an array leaves the
        // document as it is, without an error (the library wraps a nil one).
        let value = op.written();
        if matches!(value, Value::Object(_) | Value::Array(_)) {
            *doc = value;
        }
        return Ok(());
    }
    let Some((con, key)) = find(doc, path) else {
        return fail(format!(
            "replace operation does not apply: doc is missing path: {path}: {MISSING}"
        ));
    };
    if get(con, &key).is_err() {
        return fail(format!(
            "replace operation does not apply: doc is missing key: {path}: {MISSING}"
        ));
    }
    match con {
        Value::Object(map) => {
            map.insert(key, op.written());
        }
        Value::Array(items) => {
            let at = index(&key, items.len())
                .map_err(|e| Failed(format!("error in remove for path: '{path}': {e}")))?;
            items[at] = op.written();
        }
        _ => return fail(MISSING),
    }
    Ok(())
}

fn move_op(doc: &mut Value, op: &Operation) -> Step {
    let from = op
        .from()
        .map_err(|e| Failed(format!("move operation failed to decode from: {e}")))?;
    let Some((con, key)) = find(doc, from) else {
        return fail(format!(
            "move operation does not apply: doc is missing from path: {from}: {MISSING}"
        ));
    };
    let in_move = |e: String| Failed(format!("error in move for path: '{key}': {e}"));
    let value = get(con, &key).map_err(in_move)?;
    delete(con, &key).map_err(in_move)?;
    let path = op
        .path()
        .map_err(|e| Failed(format!("move operation failed to decode path: {e}")))?;
    let Some((con, key)) = find(doc, path) else {
        return fail(format!(
            "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
        ));
    };
    insert(con, &key, value.unwrap_or(Value::Null))
        .map_err(|e| Failed(format!("error in move for path: '{path}': {e}")))
}

fn test(doc: &mut Value, op: &Operation) -> Step {
    let path = op
        .path()
        .map_err(|e| Failed(format!("test operation failed to decode path: {e}")))?;
    let failed = || fail(format!("testing value {path} failed: test failed"));
    // A test without a value fails (in Go it dereferences a nil pointer).
    let Some(expected) = op.value else {
        return failed();
    };
    if path.is_empty() {
        return if equal(doc, expected) {
            Ok(())
        } else {
            failed()
        };
    }
    let Some((con, key)) = find(doc, path) else {
        return fail(format!(
            "test operation does not apply: is missing path: {path}: {MISSING}"
        ));
    };
    let actual =
        get(con, &key).map_err(|e| Failed(format!("error in test for path: '{path}': {e}")))?;
    match actual {
        // An absent (or null) member passes a test for null.
        None | Some(Value::Null) if expected.is_null() => Ok(()),
        Some(actual) if equal(&actual, expected) => Ok(()),
        _ => failed(),
    }
}

fn copy(doc: &mut Value, op: &Operation, copied: &mut usize, limit: usize) -> Step {
    let from = op
        .from()
        .map_err(|e| Failed(format!("copy operation failed to decode from: {e}")))?;
    let Some((con, key)) = find(doc, from) else {
        return fail(format!(
            "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
        ));
    };
    let value =
        get(con, &key).map_err(|e| Failed(format!("error in copy for from: '{from}': {e}")))?;
    let Ok(path) = op.path() else {
        return fail(format!("copy operation failed to decode path: {MISSING}"));
    };
    let Some((con, key)) = find(doc, path) else {
        return fail(format!(
            "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
        ));
    };
    if let Some(v) = &value {
        *copied += crate::gofmt::encoded_len(v);
        if *copied > limit {
            return fail(format!(
                "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {limit}"
            ));
        }
    }
    insert(con, &key, value.unwrap_or(Value::Null))
        .map_err(|e| Failed(format!("error while adding value during copy: {e}")))
}

/// evanphx's `lazyNode.equal`: objects and arrays structurally, scalars by
/// their JSON text (so `1` and `1.0` differ).
fn equal(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| equal(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| equal(v, w))
        }
        (Value::Number(a), Value::Number(b)) => a.to_string() == b.to_string(),
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(doc: Value, ops: Value) -> Result<Value, String> {
        let mut doc = doc;
        let mut copied = 0;
        for op in ops.as_array().expect("ops") {
            let map = op.as_object().expect("op");
            apply(&mut doc, &Operation::of(map), &mut copied, usize::MAX).map_err(|f| f.0)?;
        }
        Ok(doc)
    }

    #[test]
    fn replace_adds_a_missing_member_but_not_a_missing_index() {
        let doc = json!({"data": {"a": "1"}, "list": [1]});
        let ran = |ops: Value| run(doc.clone(), ops);
        assert_eq!(
            ran(json!([{"op": "replace", "path": "/data/b", "value": "2"}])),
            Ok(json!({"data": {"a": "1", "b": "2"}, "list": [1]}))
        );
        assert_eq!(
            ran(json!([{"op": "replace", "path": "/list/1", "value": 2}])),
            Err(
                "replace operation does not apply: doc is missing key: /list/1: missing value"
                    .into()
            )
        );
        assert_eq!(
            ran(json!([{"op": "replace", "path": "/list/-1", "value": 2}])),
            Ok(json!({"data": {"a": "1"}, "list": [2]}))
        );
        assert_eq!(
            ran(json!([{"op": "replace", "path": "/nope/b", "value": "2"}])),
            Err(
                "replace operation does not apply: doc is missing path: /nope/b: missing value"
                    .into()
            )
        );
        assert_eq!(
            ran(json!([{"op": "replace", "path": "", "value": {"x": 1}}])),
            Ok(json!({"x": 1}))
        );
        // A scalar for the whole document changes nothing, silently.
        assert_eq!(
            ran(json!([{"op": "replace", "path": "", "value": 1}])),
            Ok(doc.clone())
        );
        assert_eq!(
            ran(json!([{"op": "replace", "value": 1}])),
            Err("replace operation failed to decode path: operation missing path field: missing value".into())
        );
    }

    #[test]
    fn test_of_a_missing_member_passes_for_null_only() {
        let doc = json!({"metadata": {"name": "a"}, "n": 1});
        let ran = |ops: Value| run(doc.clone(), ops);
        assert!(
            ran(json!([{"op": "test", "path": "/metadata/finalizers", "value": null}])).is_ok()
        );
        assert_eq!(
            ran(json!([{"op": "test", "path": "/metadata/finalizers", "value": []}])),
            Err("testing value /metadata/finalizers failed: test failed".into())
        );
        assert_eq!(
            ran(json!([{"op": "test", "path": "/nope/finalizers", "value": null}])),
            Err(
                "test operation does not apply: is missing path: /nope/finalizers: missing value"
                    .into()
            )
        );
        assert!(ran(json!([{"op": "test", "path": "/metadata/name", "value": null}])).is_err());
        assert!(ran(json!([{"op": "test", "path": "/n", "value": 1}])).is_ok());
        assert!(ran(json!([{"op": "test", "path": "/n", "value": 1.0}])).is_err());
        assert!(
            ran(json!([{"op": "test", "path": "", "value": {"n": 1, "metadata": {"name": "a"}}}]))
                .is_ok()
        );
        assert_eq!(
            ran(json!([{"op": "test", "path": "", "value": {}}])),
            Err("testing value  failed: test failed".into())
        );
        assert!(ran(json!([{"op": "test", "path": "/n"}])).is_err());
    }

    #[test]
    fn move_and_copy_edge_cases() {
        let doc = json!({"a": {"b": 1}, "list": [1, 2, 3]});
        let ran = |ops: Value| run(doc.clone(), ops);
        // Copy of a missing member writes null; move of one fails.
        assert_eq!(
            ran(json!([{"op": "copy", "from": "/a/x", "path": "/a/y"}])),
            Ok(json!({"a": {"b": 1, "y": null}, "list": [1, 2, 3]}))
        );
        assert_eq!(
            ran(json!([{"op": "move", "from": "/a/x", "path": "/a/y"}])),
            Err(
                "error in move for path: 'x': Unable to remove nonexistent key: x: missing value"
                    .into()
            )
        );
        // Into its own child: the source is gone when the destination is sought.
        assert_eq!(
            ran(json!([{"op": "move", "from": "/a", "path": "/a/c"}])),
            Err("move operation does not apply: doc is missing destination path: /a/c: missing value".into())
        );
        assert_eq!(
            ran(json!([{"op": "move", "from": "/list/0", "path": "/list/-"}])),
            Ok(json!({"a": {"b": 1}, "list": [2, 3, 1]}))
        );
        assert_eq!(
            ran(json!([{"op": "move", "from": "/a/b", "path": "/a/b"}])),
            Ok(doc.clone())
        );
        assert_eq!(
            ran(json!([{"op": "copy", "from": "/list/-1", "path": "/list/0"}])),
            Ok(json!({"a": {"b": 1}, "list": [3, 1, 2, 3]}))
        );
        assert_eq!(
            ran(json!([{"op": "copy", "from": "/list/3", "path": "/list/0"}])),
            Err("error in copy for from: '/list/3': Unable to access invalid index: 3: invalid index referenced".into())
        );
        assert_eq!(
            ran(json!([{"op": "copy", "path": "/list/0"}])),
            Err("copy operation failed to decode from: operation, missing from field: missing value".into())
        );
        let mut big = doc.clone();
        let mut copied = 0;
        let op = json!({"op": "copy", "from": "/a", "path": "/c"});
        assert_eq!(
            apply(&mut big, &Operation::of(op.as_object().unwrap()), &mut copied, 4),
            Err(Failed("Unable to complete the copy, the accumulated size increase of copy is 7, exceeding the limit 4".into()))
        );
    }

    #[test]
    fn indices_and_paths_are_read_as_go_reads_them() {
        let doc = json!({"list": [1, 2]});
        let ran = |ops: Value| run(doc.clone(), ops);
        // Negative add indices count in the grown array: -1 is the end.
        assert_eq!(
            ran(json!([{"op": "add", "path": "/list/-1", "value": 9}])),
            Ok(json!({"list": [1, 2, 9]}))
        );
        assert_eq!(
            ran(json!([{"op": "add", "path": "/list/-2", "value": 9}])),
            Ok(json!({"list": [1, 9, 2]}))
        );
        assert_eq!(
            ran(json!([{"op": "add", "path": "/list/2", "value": 9}])),
            Ok(json!({"list": [1, 2, 9]}))
        );
        assert_eq!(
            ran(json!([{"op": "add", "path": "/list/3", "value": 9}])),
            Err("error in add for path: '/list/3': Unable to access invalid index: 3: invalid index referenced".into())
        );
        assert_eq!(
            ran(json!([{"op": "add", "path": "/list/x", "value": 9}])),
            Err("error in add for path: '/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            ran(json!([{"op": "add", "path": "/list/+0", "value": 9}])),
            Ok(json!({"list": [9, 1, 2]}))
        );
        assert_eq!(
            ran(json!([{"op": "remove", "path": "/list/-2"}])),
            Ok(json!({"list": [2]}))
        );
        assert_eq!(
            ran(json!([{"op": "remove", "path": "/list/-3"}])),
            Err("error in remove for path: '/list/-3': Unable to access invalid index: -3: invalid index referenced".into())
        );
        assert_eq!(
            ran(json!([{"op": "remove", "path": "/nope"}])),
            Err("error in remove for path: '/nope': Unable to remove nonexistent key: nope: missing value".into())
        );
        // No leading slash: the last segment at the root.
        assert_eq!(
            ran(json!([{"op": "add", "path": "x/y", "value": 1}])),
            Ok(json!({"list": [1, 2], "y": 1}))
        );
        assert_eq!(
            ran(json!([{"op": "add", "path": "", "value": 1}])),
            Err("add operation does not apply: doc is missing path: \"\": missing value".into())
        );
        assert_eq!(
            ran(json!([{"op": "add", "path": "/a~1b~0c", "value": 1}])),
            Ok(json!({"list": [1, 2], "a/b~c": 1}))
        );
        // A missing value adds null; an unknown op fails.
        assert_eq!(
            ran(json!([{"op": "add", "path": "/x"}])),
            Ok(json!({"list": [1, 2], "x": null}))
        );
        assert_eq!(
            ran(json!([{"op": "merge", "path": "/x"}])),
            Err("Unexpected kind: merge".into())
        );
        assert_eq!(
            ran(json!([{"path": "/x"}])),
            Err("Unexpected kind: unknown".into())
        );
    }
}
