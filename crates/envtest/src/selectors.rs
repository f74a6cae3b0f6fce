//! Label selectors (equality- and set-based, with kube-apiserver's parse
//! errors). Field selectors are in [`crate::field_selectors`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::gofmt;
use crate::name_rules;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Exists,
    DoesNotExist,
    Eq,
    NotEq,
    In,
    NotIn,
    Gt,
    Lt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
    values: BTreeSet<String>,
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    reqs: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    In,
    NotIn,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
    End,
}

impl Tok {
    fn lit(&self) -> String {
        match self {
            Tok::Ident(s) => s.clone(),
            Tok::Bang => "!".into(),
            Tok::Eq => "=".into(),
            Tok::DoubleEq => "==".into(),
            Tok::NotEq => "!=".into(),
            Tok::In => "in".into(),
            Tok::NotIn => "notin".into(),
            Tok::Gt => ">".into(),
            Tok::Lt => "<".into(),
            Tok::Open => "(".into(),
            Tok::Close => ")".into(),
            Tok::Comma => ",".into(),
            Tok::End => String::new(),
        }
    }
}

fn is_special(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '(' | ')' | '=' | '!' | '<' | '>')
}

/// Tokens with the keyword/identifier distinction left to the parser (in
/// value position `in` and `notin` are plain identifiers).
fn lex(input: &str) -> Vec<Tok> {
    let chars: Vec<char> = input.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        let (tok, len) = match (c, next) {
            ('=', Some('=')) => (Tok::DoubleEq, 2),
            ('=', _) => (Tok::Eq, 1),
            ('!', Some('=')) => (Tok::NotEq, 2),
            ('!', _) => (Tok::Bang, 1),
            ('>', _) => (Tok::Gt, 1),
            ('<', _) => (Tok::Lt, 1),
            ('(', _) => (Tok::Open, 1),
            (')', _) => (Tok::Close, 1),
            (',', _) => (Tok::Comma, 1),
            _ => {
                let start = i;
                while i < chars.len() && !is_special(chars[i]) {
                    i += 1;
                }
                out.push(Tok::Ident(chars[start..i].iter().collect()));
                continue;
            }
        };
        out.push(tok);
        i += len;
    }
    out.push(Tok::End);
    out
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Tok {
        self.toks.get(self.pos).cloned().unwrap_or(Tok::End)
    }
    fn next(&mut self) -> Tok {
        let t = self.peek();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    /// Keywords are only keywords in operator position.
    fn as_operator(t: Tok) -> Tok {
        match t {
            Tok::Ident(s) if s == "in" => Tok::In,
            Tok::Ident(s) if s == "notin" => Tok::NotIn,
            other => other,
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut op = None;
        if self.peek() == Tok::Bang {
            self.next();
            op = Some(Op::DoesNotExist);
        }
        let key = match self.next() {
            Tok::Ident(k) => k,
            t => return Err(format!("found '{}', expected: identifier", t.lit())),
        };
        validate_key(&key)?;
        if let Some(op) = op {
            return Ok(Requirement {
                key,
                op,
                values: BTreeSet::new(),
            });
        }
        if matches!(self.peek(), Tok::End | Tok::Comma) {
            return Ok(Requirement {
                key,
                op: Op::Exists,
                values: BTreeSet::new(),
            });
        }
        let op = match Self::as_operator(self.next()) {
            Tok::In => Op::In,
            Tok::NotIn => Op::NotIn,
            Tok::Eq | Tok::DoubleEq => Op::Eq,
            Tok::NotEq => Op::NotEq,
            Tok::Gt => Op::Gt,
            Tok::Lt => Op::Lt,
            t => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    t.lit()
                ));
            }
        };
        let values = match op {
            Op::In | Op::NotIn => self.values()?,
            _ => match self.next() {
                Tok::Ident(v) => BTreeSet::from([v]),
                Tok::End | Tok::Comma if matches!(op, Op::Eq | Op::NotEq) => {
                    // `a=` selects the empty value; put the comma back.
                    self.pos -= 1;
                    BTreeSet::from([String::new()])
                }
                t => return Err(format!("found '{}', expected: identifier", t.lit())),
            },
        };
        // labels.NewRequirement: every problem of the values, aggregated.
        let mut errs = Vec::new();
        for (i, v) in values.iter().enumerate() {
            if matches!(op, Op::Gt | Op::Lt) && v.parse::<i64>().is_err() {
                errs.push(format!(
                    "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                    gofmt::quote(v)
                ));
            }
        }
        for (i, v) in values.iter().enumerate() {
            let problems = name_rules::is_valid_label_value(v);
            if !problems.is_empty() {
                errs.push(format!(
                    "values[{i}][{key}]: Invalid value: {}: {}",
                    gofmt::quote(v),
                    problems.join("; ")
                ));
            }
        }
        match errs.len() {
            0 => Ok(Requirement { key, op, values }),
            1 => Err(errs.remove(0)),
            _ => Err(format!("[{}]", errs.join(", "))),
        }
    }

    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let t = self.next();
        if t != Tok::Open {
            return Err(format!("found '{}' expected: '('", t.lit()));
        }
        match self.peek() {
            Tok::Close => {
                self.next();
                Ok(BTreeSet::from([String::new()]))
            }
            Tok::Ident(_) | Tok::Comma => {
                let set = self.identifiers()?;
                match self.next() {
                    Tok::Close => Ok(set),
                    t => Err(format!("found '{}', expected: ')'", t.lit())),
                }
            }
            t => Err(format!(
                "found '{}', expected: ',', ')' or identifier",
                t.lit()
            )),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            match self.next() {
                Tok::Ident(v) => {
                    set.insert(v);
                    match self.peek() {
                        Tok::Comma => {
                            self.next();
                            if self.peek() == Tok::Close {
                                set.insert(String::new());
                                return Ok(set);
                            }
                        }
                        Tok::Close => return Ok(set),
                        t => return Err(format!("found '{}', expected: ',' or ')'", t.lit())),
                    }
                }
                Tok::Comma => {
                    set.insert(String::new());
                    if self.peek() == Tok::Close {
                        return Ok(set);
                    }
                }
                t => return Err(format!("found '{}', expected: ',', or identifier", t.lit())),
            }
        }
    }
}

/// The parser's key check (`validateLabelKey` with the parser's nil path,
/// which Go prints as `<nil>`).
fn validate_key(key: &str) -> Result<(), String> {
    let problems = name_rules::is_qualified_name(key);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "<nil>: Invalid value: {}: {}",
            gofmt::quote(key),
            problems.join("; ")
        ))
    }
}

impl LabelSelector {
    /// Parses a `metav1.LabelSelector` object (`matchLabels` and
    /// `matchExpressions`, ANDed). `null` or absent is the empty selector;
    /// errors follow apimachinery's `labels.NewRequirement`.
    pub(crate) fn from_object(value: Option<&Value>) -> Result<LabelSelector, String> {
        let value = match value {
            None | Some(Value::Null) => return Ok(LabelSelector::default()),
            Some(Value::Object(map)) => map,
            Some(other) => return Err(format!("label selector must be an object, got {other}")),
        };
        let mut reqs = Vec::new();
        match value.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (key, val) in labels {
                    let val = val
                        .as_str()
                        .ok_or_else(|| format!("matchLabels[{key:?}] must be a string"))?;
                    reqs.push(Requirement {
                        key: key.clone(),
                        op: Op::Eq,
                        values: BTreeSet::from([val.to_string()]),
                    });
                }
            }
            Some(_) => return Err("matchLabels must be an object".to_string()),
        }
        match value.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for expr in exprs {
                    reqs.push(object_expression(expr)?);
                }
            }
            Some(_) => return Err("matchExpressions must be a list".to_string()),
        }
        Ok(LabelSelector { reqs })
    }

    /// Parses a `labelSelector` parameter; errors are the real server's 400s.
    pub(crate) fn parse(input: &str) -> ApiResult<LabelSelector> {
        let mut p = Parser {
            toks: lex(input),
            pos: 0,
        };
        let mut reqs = Vec::new();
        loop {
            match p.peek() {
                Tok::End => break,
                Tok::Ident(_) | Tok::Bang => {
                    let r = p.requirement().map_err(|e| {
                        ApiError::bad_request(format!("unable to parse requirement: {e}"))
                    })?;
                    reqs.push(r);
                    match p.next() {
                        Tok::End => break,
                        Tok::Comma => match p.peek() {
                            Tok::Ident(_) | Tok::Bang => {}
                            t => {
                                return Err(ApiError::bad_request(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.lit()
                                )));
                            }
                        },
                        t => {
                            return Err(ApiError::bad_request(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.lit()
                            )));
                        }
                    }
                }
                t => {
                    return Err(ApiError::bad_request(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.lit()
                    )));
                }
            }
        }
        Ok(LabelSelector { reqs })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub(crate) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.matches_with(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
    }

    /// Matches labels held as a string map.
    pub(crate) fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|key| labels.get(key).map(String::as_str))
    }

    fn matches_with<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.reqs.iter().all(|r| {
            let v = label(&r.key);
            match r.op {
                Op::Exists => v.is_some(),
                Op::DoesNotExist => v.is_none(),
                Op::Eq | Op::In => v.is_some_and(|v| r.values.contains(v)),
                Op::NotEq | Op::NotIn => v.is_none_or(|v| !r.values.contains(v)),
                Op::Gt | Op::Lt => {
                    let (Some(v), Some(bound)) = (
                        v.and_then(|v| v.parse::<i64>().ok()),
                        r.values.iter().next().and_then(|b| b.parse::<i64>().ok()),
                    ) else {
                        return false;
                    };
                    if r.op == Op::Gt { v > bound } else { v < bound }
                }
            }
        })
    }

    pub(crate) fn matches_object(&self, obj: &Value) -> bool {
        self.is_empty() || self.matches(crate::meta::labels(obj))
    }
}

/// The selector as apimachinery's `labels.Selector.String()` prints it:
/// requirements sorted by key (stably, as Go's insertion sort leaves the
/// few a selector has), each set's values sorted, joined by commas; the
/// empty selector prints as nothing. The Scale's `status.selector` and the
/// Table columns of `metav1.FormatLabelSelector` are this text.
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut reqs: Vec<&Requirement> = self.reqs.iter().collect();
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        for (i, r) in reqs.into_iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let values = r.values.iter().map(String::as_str).collect::<Vec<_>>();
            let values = values.join(",");
            let key = &r.key;
            match r.op {
                Op::Exists => write!(f, "{key}")?,
                Op::DoesNotExist => write!(f, "!{key}")?,
                Op::Eq => write!(f, "{key}={values}")?,
                Op::NotEq => write!(f, "{key}!={values}")?,
                Op::In => write!(f, "{key} in ({values})")?,
                Op::NotIn => write!(f, "{key} notin ({values})")?,
                Op::Gt => write!(f, "{key}>{values}")?,
                Op::Lt => write!(f, "{key}<{values}")?,
            }
        }
        Ok(())
    }
}

/// `metav1.FormatLabelSelector`: a LabelSelector object as `kubectl get`
/// columns print it, `<none>` when it selects everything or is absent and
/// `<error>` when it does not convert.
pub(crate) fn format_label_selector(value: Option<&Value>) -> String {
    match LabelSelector::from_object(value) {
        Ok(selector) if selector.is_empty() => "<none>".to_string(),
        Ok(selector) => selector.to_string(),
        Err(_) => "<error>".to_string(),
    }
}

/// One `matchExpressions` entry of a `metav1.LabelSelector`.
fn object_expression(expr: &Value) -> Result<Requirement, String> {
    let key = expr
        .get("key")
        .and_then(Value::as_str)
        .ok_or("matchExpressions entries need a string key")?
        .to_string();
    let operator = expr.get("operator").and_then(Value::as_str).unwrap_or("");
    let values: BTreeSet<String> = match expr.get("values") {
        None | Some(Value::Null) => BTreeSet::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("values of {key:?} must be strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("values of {key:?} must be a list")),
    };
    let op = match operator {
        "In" => Op::In,
        "NotIn" => Op::NotIn,
        "Exists" => Op::Exists,
        "DoesNotExist" => Op::DoesNotExist,
        other => return Err(format!("{other:?} is not a valid label selector operator")),
    };
    match op {
        Op::In | Op::NotIn if values.is_empty() => Err(format!(
            "values: Invalid value: []string{{}}: for 'in', 'notin' operators, values set can't be empty (key {key:?})"
        )),
        Op::Exists | Op::DoesNotExist if !values.is_empty() => Err(format!(
            "values: Invalid value: {:?}: values set must be empty for exists and does not exist (key {key:?})",
            values.iter().collect::<Vec<_>>()
        )),
        _ => Ok(Requirement { key, op, values }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn selectors_print_like_apimachinery_sorted_by_key() {
        // Labels and expressions interleave by key; set values are sorted.
        let sel = json!({
            "matchLabels": {"b": "2", "d": "4"},
            "matchExpressions": [
                {"key": "c", "operator": "In", "values": ["y", "x"]},
                {"key": "a", "operator": "DoesNotExist"},
                {"key": "e", "operator": "NotIn", "values": ["z"]},
                {"key": "b2", "operator": "Exists"}
            ]
        });
        assert_eq!(
            format_label_selector(Some(&sel)),
            "!a,b=2,b2,c in (x,y),d=4,e notin (z)"
        );
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        let bad = json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]});
        assert_eq!(format_label_selector(Some(&bad)), "<error>");
        let parsed = LabelSelector::parse("z in (b,a),y!=1,x").unwrap();
        assert_eq!(parsed.to_string(), "x,y!=1,z in (a,b)");
    }

    #[test]
    fn set_based_and_equality_selectors_match() {
        let l = labels(json!({"app": "web", "env": "prod"}));
        for (sel, want) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web,cache)", true),
            ("app notin (web)", false),
            ("env", true),
            ("!env", false),
            ("tier!=frontend", true),
            ("app=web,env", true),
            ("app in ()", false),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(Some(&l)),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn parse_errors_match_kube_apiserver() {
        let msg = |s: &str| LabelSelector::parse(s).unwrap_err().message;
        assert_eq!(
            msg("app in (web"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            msg("app=web=x"),
            "found '=', expected: ',' or 'end of string'"
        );
        assert_eq!(
            msg("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            msg("!app=web"),
            "found '=', expected: ',' or 'end of string'"
        );
    }

    fn label_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn object_selectors_empty_and_absent_selectors_match_everything() {
        for v in [None, Some(&Value::Null), Some(&json!({}))] {
            let s = LabelSelector::from_object(v).unwrap();
            assert!(s.is_empty());
            assert!(s.matches_labels(&label_map(&[])));
        }
    }

    #[test]
    fn object_selectors_and_their_terms() {
        let s = LabelSelector::from_object(Some(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "skip", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
            ]
        })))
        .unwrap();
        assert!(s.matches_labels(&label_map(&[("app", "web"), ("tier", "a")])));
        assert!(s.matches_labels(&label_map(&[("app", "web"), ("tier", "b"), ("env", "dev")])));
        assert!(!s.matches_labels(&label_map(&[("app", "web"), ("tier", "c")])));
        assert!(!s.matches_labels(&label_map(&[("app", "web"), ("tier", "a"), ("skip", "")])));
        assert!(!s.matches_labels(&label_map(&[
            ("app", "web"),
            ("tier", "a"),
            ("env", "prod")
        ])));
        assert!(!s.matches_labels(&label_map(&[("tier", "a")])));
    }

    #[test]
    fn object_selector_exists_requires_the_key() {
        let s = LabelSelector::from_object(Some(&json!({
            "matchExpressions": [{"key": "k", "operator": "Exists"}]
        })))
        .unwrap();
        assert!(s.matches_labels(&label_map(&[("k", "")])));
        assert!(!s.matches_labels(&label_map(&[])));
    }

    #[test]
    fn malformed_object_selectors_are_errors_not_panics() {
        for bad in [
            json!("x"),
            json!({"matchLabels": []}),
            json!({"matchLabels": {"a": 1}}),
            json!({"matchExpressions": [{"key": "k", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]}),
            json!({"matchExpressions": [{"key": "k", "operator": "Foo"}]}),
            json!({"matchExpressions": [{"operator": "Exists"}]}),
            json!({"matchExpressions": {}}),
        ] {
            assert!(LabelSelector::from_object(Some(&bad)).is_err(), "{bad}");
        }
    }
}
