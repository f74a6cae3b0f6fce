//! The subset of Kubernetes JSONPath that CRD printer columns use:
//! `.a.b`, escaped dots (`.labels.app\.io/name`), `[n]`, `[*]`, `['key']`
//! and filters `[?(@.type=="Ready")]` / `[?(@.x)]`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter {
        path: Vec<String>,
        equals: Option<Value>,
    },
}

/// A compiled path; compile errors are reported as text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonPath {
    steps: Vec<Step>,
}

fn parse_field(chars: &[char], i: &mut usize) -> String {
    let mut out = String::new();
    while *i < chars.len() {
        let c = chars[*i];
        if c == '\\' && *i + 1 < chars.len() {
            out.push(chars[*i + 1]);
            *i += 2;
            continue;
        }
        if c == '.' || c == '[' {
            break;
        }
        out.push(c);
        *i += 1;
    }
    out
}

fn parse_literal(s: &str) -> Option<Value> {
    let s = s.trim();
    if let Some(q) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return Some(Value::String(q.to_string()));
    }
    if let Some(q) = s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        return Some(Value::String(q.to_string()));
    }
    serde_json::from_str(s).ok()
}

impl JsonPath {
    pub(crate) fn compile(expr: &str) -> Result<JsonPath, String> {
        let expr = expr.trim();
        let expr = expr
            .strip_prefix('{')
            .and_then(|e| e.strip_suffix('}'))
            .unwrap_or(expr);
        let expr = expr.strip_prefix('$').unwrap_or(expr);
        let chars: Vec<char> = expr.chars().collect();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    let f = parse_field(&chars, &mut i);
                    if !f.is_empty() {
                        steps.push(Step::Field(f));
                    }
                }
                '[' => {
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == ']')
                        .ok_or_else(|| format!("unterminated [ in {expr}"))?;
                    let inner: String = chars[i + 1..i + close].iter().collect();
                    i += close + 1;
                    let inner = inner.trim();
                    if inner == "*" {
                        steps.push(Step::All);
                    } else if let Some(f) =
                        inner.strip_prefix("?(").and_then(|r| r.strip_suffix(')'))
                    {
                        let (lhs, rhs) = match f.split_once("==") {
                            Some((l, r)) => (l.trim(), Some(r)),
                            None => (f.trim(), None),
                        };
                        let path = lhs
                            .strip_prefix("@.")
                            .ok_or_else(|| format!("unsupported filter {f}"))?
                            .split('.')
                            .map(str::to_string)
                            .collect();
                        let equals = match rhs {
                            Some(r) => {
                                Some(parse_literal(r).ok_or_else(|| format!("bad literal {r}"))?)
                            }
                            None => None,
                        };
                        steps.push(Step::Filter { path, equals });
                    } else if let Ok(n) = inner.parse::<i64>() {
                        steps.push(Step::Index(n));
                    } else if let Some(Value::String(key)) = parse_literal(inner) {
                        steps.push(Step::Field(key));
                    } else {
                        return Err(format!("unsupported subscript [{inner}]"));
                    }
                }
                c => {
                    // A leading field without a dot (`spec.x`).
                    if steps.is_empty() && c != ' ' {
                        let f = parse_field(&chars, &mut i);
                        steps.push(Step::Field(f));
                    } else {
                        return Err(format!("unexpected {c:?} in {expr}"));
                    }
                }
            }
        }
        Ok(JsonPath { steps })
    }

    /// Every value the path selects.
    pub(crate) fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut cur = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in cur {
                match step {
                    Step::Field(f) => next.extend(v.get(f.as_str())),
                    Step::Index(n) => {
                        if let Some(a) = v.as_array() {
                            let idx = if *n < 0 { a.len() as i64 + n } else { *n };
                            if idx >= 0 {
                                next.extend(a.get(idx as usize));
                            }
                        }
                    }
                    Step::All => match v {
                        Value::Array(a) => next.extend(a.iter()),
                        Value::Object(m) => next.extend(m.values()),
                        _ => {}
                    },
                    Step::Filter { path, equals } => {
                        if let Some(a) = v.as_array() {
                            for item in a {
                                let keys: Vec<&str> = path.iter().map(String::as_str).collect();
                                let got = crate::meta::get_path(item, &keys);
                                let ok = match (got, equals) {
                                    (Some(g), Some(e)) => g == e,
                                    (Some(_), None) => true,
                                    _ => false,
                                };
                                if ok {
                                    next.push(item);
                                }
                            }
                        }
                    }
                }
            }
            cur = next;
        }
        cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_fields_indexes_and_filters() {
        let obj = json!({"spec": {"color": "red", "items": [1, 2]},
            "metadata": {"labels": {"app.io/name": "x"}},
            "status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        let get = |p: &str| {
            JsonPath::compile(p)
                .unwrap()
                .find(&obj)
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(get(".spec.color"), vec![json!("red")]);
        assert_eq!(get(".spec.items[1]"), vec![json!(2)]);
        assert_eq!(get(".spec.items[*]"), vec![json!(1), json!(2)]);
        assert_eq!(get(".metadata.labels.app\\.io/name"), vec![json!("x")]);
        assert_eq!(
            get(".status.conditions[?(@.type==\"Ready\")].status"),
            vec![json!("True")]
        );
        assert!(get(".spec.missing").is_empty());
        assert!(JsonPath::compile(".a[").is_err());
    }
}
