//! Renders a Helm chart the way `helm template` does, for tests: helm is not
//! installed where the tests run. The templates go through gtmpl (Go's
//! text/template in Rust); the Helm functions the charts opctl writes use
//! are registered here: `include`, `toYaml`, `nindent`, `indent`, `quote`,
//! `default`, `trunc`, `trimSuffix` (`template` and `printf` are Go's own).
//! A chart using another function fails to render, which keeps the charts
//! to this set.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

use gtmpl::{Context, Func, FuncError, Template, Value};
use serde_json::Value as Json;

thread_local! {
    /// The chart's `define`s, for `include` (a gtmpl function is a plain fn).
    static DEFINES: RefCell<String> = const { RefCell::new(String::new()) };
}

const FUNCS: &[(&str, Func)] = &[
    ("include", include as Func),
    ("toYaml", to_yaml as Func),
    ("nindent", nindent as Func),
    ("indent", indent as Func),
    ("quote", quote as Func),
    ("default", default as Func),
    ("trunc", trunc as Func),
    ("trimSuffix", trim_suffix as Func),
];

/// The release a chart is rendered for.
pub struct Release<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
}

/// Renders every template of the chart in `dir` with its values.yaml, each
/// `(dotted.path, value)` of `set` replacing a value as `--set` does, and
/// returns the non-empty YAML documents.
pub fn render(dir: &Path, release: &Release, set: &[(&str, Json)]) -> Vec<Json> {
    let chart = yaml_file(&dir.join("Chart.yaml"));
    let mut values = yaml_file(&dir.join("values.yaml"));
    for (path, value) in set {
        set_path(&mut values, path, value.clone());
    }
    let top = serde_json::json!({
        "Values": values,
        "Release": {"Name": release.name, "Namespace": release.namespace, "Service": "Helm"},
        "Chart": {
            "Name": chart["name"],
            "Version": chart["version"],
            "AppVersion": chart["appVersion"],
        },
    });
    let mut files = Vec::new();
    collect(&dir.join("templates"), &mut files);
    files.sort();
    let defines: String = files
        .iter()
        .filter(|(name, _)| name.starts_with('_') || name.contains("/_"))
        .map(|(_, text)| text.as_str())
        .collect();
    DEFINES.with(|d| *d.borrow_mut() = defines);
    let mut docs = Vec::new();
    for (name, text) in &files {
        if name.starts_with('_') || name.contains("/_") {
            continue;
        }
        let out = execute(text, &top).unwrap_or_else(|err| panic!("templates/{name}: {err}"));
        let parsed: Vec<Json> = serde_saphyr::from_str_multiple(&out).unwrap_or_else(|err| {
            panic!("templates/{name} renders YAML that does not parse: {err}\n{out}")
        });
        docs.extend(parsed.into_iter().filter(|d| !d.is_null()));
    }
    docs
}

/// Runs one template with the functions above and the chart's defines.
pub fn execute(text: &str, dot: &Json) -> Result<String, String> {
    let mut template = Template::default();
    template.add_funcs(FUNCS);
    let defines = DEFINES.with(|d| d.borrow().clone());
    template
        .add_template("_defines", defines)
        .map_err(|e| e.to_string())?;
    template.parse(text).map_err(|e| e.to_string())?;
    template
        .render(&Context::from(to_value(dot)))
        .map_err(|e| e.to_string())
}

/// Sets `defines` as the chart's named templates (for tests of `include`).
pub fn set_defines(defines: &str) {
    DEFINES.with(|d| *d.borrow_mut() = defines.to_owned());
}

fn yaml_file(path: &Path) -> Json {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn collect(dir: &Path, out: &mut Vec<(String, String)>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).expect("templates readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .expect("inside")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((name, std::fs::read_to_string(&path).expect("text")));
            }
        }
    }
}

fn set_path(values: &mut Json, path: &str, value: Json) {
    let mut at = values;
    let parts: Vec<&str> = path.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        at = at
            .as_object_mut()
            .expect("a mapping on the way")
            .entry(*part)
            .or_insert_with(|| Json::Object(Default::default()));
    }
    at[parts[parts.len() - 1]] = value;
}

/// JSON as a template value; mappings are Go maps (a missing key is no value).
pub fn to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Value::from(u),
            (_, Some(i)) => Value::from(i),
            _ => Value::from(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Object(map) => Value::Map(
            map.iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect::<HashMap<_, _>>(),
        ),
    }
}

/// A template value as JSON, its mappings' keys sorted (as Go's YAML does).
fn to_json(value: &Value) -> Json {
    match value {
        Value::NoValue | Value::Nil | Value::Function(_) => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::String(s) => Json::String(s.clone()),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Json::from(u),
            (_, Some(i), _) => Json::from(i),
            (_, _, Some(f)) => Json::from(f),
            _ => Json::Null,
        },
        Value::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Object(map) | Value::Map(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Json::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), to_json(&map[k])))
                    .collect(),
            )
        }
    }
}

fn args<'a>(name: &str, args: &'a [Value], n: usize) -> Result<&'a [Value], FuncError> {
    if args.len() == n {
        Ok(args)
    } else {
        Err(FuncError::ExactlyXArgs(name.to_owned(), n))
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::NoValue | Value::Nil => String::new(),
        other => other.to_string(),
    }
}

fn int(value: &Value) -> Result<i64, FuncError> {
    match value {
        Value::Number(n) => n.as_i64().ok_or(FuncError::UnableToConvertFromValue),
        _ => Err(FuncError::UnableToConvertFromValue),
    }
}

/// `include "name" .`: a named template's output, as a string to pipe on.
fn include(list: &[Value]) -> Result<Value, FuncError> {
    let list = args("include", list, 2)?;
    let name = text(&list[0]);
    let mut template = Template::default();
    template.add_funcs(FUNCS);
    let defines = DEFINES.with(|d| d.borrow().clone());
    template
        .add_template("_defines", defines)
        .map_err(|e| FuncError::Generic(e.to_string()))?;
    template
        .parse(format!("{{{{ template {name:?} . }}}}"))
        .map_err(|e| FuncError::Generic(e.to_string()))?;
    template
        .render(&Context::from(list[1].clone()))
        .map(Value::String)
        .map_err(|e| FuncError::Generic(format!("include {name:?}: {e}")))
}

/// `toYaml`: YAML without the final newline.
fn to_yaml(list: &[Value]) -> Result<Value, FuncError> {
    let list = args("toYaml", list, 1)?;
    let yaml = serde_saphyr::to_string(&to_json(&list[0]))
        .map_err(|e| FuncError::Generic(e.to_string()))?;
    Ok(Value::String(yaml.trim_end_matches('\n').to_owned()))
}

/// `indent n s`: every line of s indented by n spaces.
fn indent(list: &[Value]) -> Result<Value, FuncError> {
    let list = args("indent", list, 2)?;
    let pad = " ".repeat(usize::try_from(int(&list[0])?).unwrap_or(0));
    Ok(Value::String(format!(
        "{pad}{}",
        text(&list[1]).replace('\n', &format!("\n{pad}"))
    )))
}

/// `nindent n s`: a newline, then `indent n s`.
fn nindent(list: &[Value]) -> Result<Value, FuncError> {
    let indented = text(&indent(list)?);
    Ok(Value::String(format!("\n{indented}")))
}

/// `quote s...`: each argument double-quoted, separated by spaces.
fn quote(list: &[Value]) -> Result<Value, FuncError> {
    let quoted: Vec<String> = list
        .iter()
        .filter(|v| !matches!(v, Value::NoValue | Value::Nil))
        .map(|v| serde_json::to_string(&text(v)).expect("a string serialises"))
        .collect();
    Ok(Value::String(quoted.join(" ")))
}

/// `default d v`: v, or d when v is empty (no value, "", 0, false, empty list or map).
fn default(list: &[Value]) -> Result<Value, FuncError> {
    if list.is_empty() || list.len() > 2 {
        return Err(FuncError::AtLeastXArgs("default".to_owned(), 1));
    }
    let given = list.get(1).cloned().unwrap_or(Value::NoValue);
    let empty = match &given {
        Value::NoValue | Value::Nil => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Map(m) | Value::Object(m) => m.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Function(_) => false,
    };
    Ok(if empty { list[0].clone() } else { given })
}

/// `trunc n s`: the first n characters (the last -n when n is negative).
fn trunc(list: &[Value]) -> Result<Value, FuncError> {
    let list = args("trunc", list, 2)?;
    let n = int(&list[0])?;
    let chars: Vec<char> = text(&list[1]).chars().collect();
    let len = i64::try_from(chars.len()).unwrap_or(i64::MAX);
    let kept: String = if n >= 0 {
        chars
            .iter()
            .take(usize::try_from(n.min(len)).unwrap_or(0))
            .collect()
    } else {
        chars[usize::try_from((len + n).max(0)).unwrap_or(0)..]
            .iter()
            .collect()
    };
    Ok(Value::String(kept))
}

/// `trimSuffix suffix s`.
fn trim_suffix(list: &[Value]) -> Result<Value, FuncError> {
    let list = args("trimSuffix", list, 2)?;
    let suffix = text(&list[0]);
    let s = text(&list[1]);
    Ok(Value::String(
        s.strip_suffix(suffix.as_str()).unwrap_or(&s).to_owned(),
    ))
}
