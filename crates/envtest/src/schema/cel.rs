//! CEL `x-kubernetes-validations`: rules are compiled once when the schema
//! is compiled (a CRD whose rules do not compile is refused) and evaluated
//! against `self` (and `oldSelf` on update) the way kube-apiserver does,
//! with its error messages.
//!
//! The `cel` crate interprets without type checking, so compile-time checks
//! are limited to syntax, undeclared variables and unknown functions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::objects::OptionalValue;
use cel::{Context, Env, ExecutionError, Program, Value as CelValue};
use serde_json::Value;

use super::cellib;
use super::celvalues::to_cel;
use super::fielderr::{BadValue, FieldError, FieldPath};
use super::node::{Rule, Schema};
use crate::gofmt;

/// Largest message a `messageExpression` may produce.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// The CEL environment of every Kubernetes expression envtest evaluates
/// (CRD rules, webhook matchConditions, ValidatingAdmissionPolicies): the
/// standard library, the strings and lists extensions and the Kubernetes
/// library of `cellib`.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // Registration only fails on duplicate declarations, which tests would show.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = env.add_extension(cellib::kubernetes);
    Arc::new(env)
});

/// See [`ENV`].
pub(crate) fn env() -> &'static Arc<Env> {
    &ENV
}

/// One compiled rule.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompiledRule {
    program: Option<Arc<Program>>,
    message_program: Option<Arc<Program>>,
    uses_old_self: bool,
    /// Why the rule did not compile (never set for an accepted CRD).
    error: Option<String>,
    field_path: Option<String>,
}

/// The compiled rules of a schema tree, shaped like the schema.
#[derive(Debug, Clone, Default)]
pub(crate) struct CelNode {
    rules: Vec<CompiledRule>,
    items: Option<Box<CelNode>>,
    properties: BTreeMap<String, CelNode>,
    additional: Option<Box<CelNode>>,
}

fn has_rules(s: &Schema) -> bool {
    !s.x_validations.is_empty()
        || s.items.as_deref().is_some_and(has_rules)
        || s.additional_schema().is_some_and(has_rules)
        || s.properties.values().any(has_rules)
}

/// Compiles the rules of `s` and its children; `None` when there are none.
pub(crate) fn build(s: &Schema) -> Option<CelNode> {
    if !has_rules(s) {
        return None;
    }
    Some(CelNode {
        rules: s.x_validations.iter().map(|r| compile_rule(r, s)).collect(),
        items: s.items.as_deref().and_then(build).map(Box::new),
        properties: s
            .properties
            .iter()
            .filter_map(|(k, p)| build(p).map(|n| (k.clone(), n)))
            .collect(),
        additional: s.additional_schema().and_then(build).map(Box::new),
    })
}

struct Checked {
    program: Program,
    uses_old_self: bool,
}

fn compile_expression(src: &str, allow_old_self: bool) -> Result<Checked, String> {
    let program = ENV.compile(src).map_err(|e| e.to_string())?;
    let roots: &[&str] = if allow_old_self {
        &["self", "oldSelf"]
    } else {
        &["self"]
    };
    let used = check_references(&program, roots)?;
    Ok(Checked {
        program,
        uses_old_self: used.roots.contains("oldSelf"),
    })
}

/// What an expression refers to: the variables of `roots` it uses, and the
/// fields it selects of the `variables` variable (a policy's composited
/// variables).
#[derive(Debug, Default)]
pub(crate) struct References {
    pub roots: BTreeSet<String>,
    pub variables: BTreeSet<String>,
}

/// Checks that `program` refers to no variable but `roots` (and those its
/// macros bind) and calls only functions envtest knows; the `cel` crate
/// does not type-check, so this is the compile-time check there is.
pub(crate) fn check_references(program: &Program, roots: &[&str]) -> Result<References, String> {
    let mut refs = RefCheck {
        bound: Vec::new(),
        roots,
        used: References::default(),
        problems: Vec::new(),
    };
    refs.expr(program.expression());
    match refs.problems.into_iter().next() {
        Some(p) => Err(p),
        None => Ok(refs.used),
    }
}

fn compile_rule(rule: &Rule, s: &Schema) -> CompiledRule {
    let mut out = CompiledRule::default();
    if rule.rule.trim().is_empty() {
        return out;
    }
    match compile_expression(&rule.rule, true) {
        Ok(c) => {
            out.uses_old_self = c.uses_old_self;
            out.program = Some(Arc::new(c.program));
        }
        Err(e) => {
            out.error = Some(format!("compilation failed: {e}"));
            return out;
        }
    }
    if !rule.message_expression.is_empty() {
        match compile_expression(&rule.message_expression, true) {
            Ok(c) => out.message_program = Some(Arc::new(c.program)),
            Err(e) => out.error = Some(format!("messageExpression compilation failed: {e}")),
        }
    }
    if !rule.field_path.is_empty()
        && let Ok(p) = valid_field_path(&rule.field_path, s)
    {
        out.field_path = Some(p.to_string());
    }
    out
}

/// The rule as `json.Marshal` prints a `ValidationRule` (fields in
/// declaration order, empty ones omitted).
fn rule_value(rule: &Rule) -> BadValue {
    let mut parts = vec![format!(
        "\"rule\":{}",
        gofmt::json(&Value::String(rule.rule.clone()))
    )];
    let mut push = |k: &str, v: Value| parts.push(format!("\"{k}\":{}", gofmt::json(&v)));
    if !rule.message.is_empty() {
        push("message", Value::String(rule.message.clone()));
    }
    if !rule.message_expression.is_empty() {
        push(
            "messageExpression",
            Value::String(rule.message_expression.clone()),
        );
    }
    if let Some(r) = &rule.reason {
        push("reason", Value::String(r.clone()));
    }
    if !rule.field_path.is_empty() {
        push("fieldPath", Value::String(rule.field_path.clone()));
    }
    if let Some(o) = rule.optional_old_self {
        push("optionalOldSelf", Value::Bool(o));
    }
    BadValue::Raw(format!("{{{}}}", parts.join(",")))
}

/// The CRD validator's errors for the rules of one schema node.
pub(crate) fn compile_errors(
    s: &Schema,
    path: &FieldPath,
    uncorrelatable: Option<&FieldPath>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, rule) in s.x_validations.iter().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        if rule.rule.trim().is_empty() {
            continue;
        }
        let compiled = match compile_expression(&rule.rule, true) {
            Ok(c) => c,
            Err(e) => {
                errs.push(FieldError::invalid(
                    &rp.child("rule"),
                    rule_value(rule),
                    &format!("compilation failed: {e}"),
                ));
                continue;
            }
        };
        if !rule.message_expression.is_empty()
            && let Err(e) = compile_expression(&rule.message_expression, true)
        {
            errs.push(FieldError::invalid(
                &rp.child("messageExpression"),
                rule_value(rule),
                &format!("messageExpression compilation failed: {e}"),
            ));
        }
        if compiled.uses_old_self {
            if let Some(u) = uncorrelatable {
                errs.push(FieldError::invalid(
                    &rp.child("rule"),
                    BadValue::str(&rule.rule),
                    &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"),
                ));
            }
        } else if let Some(o) = rule.optional_old_self {
            errs.push(FieldError::invalid(
                &rp.child("optionalOldSelf"),
                BadValue::Raw(o.to_string()),
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
    errs
}

/// Names that may appear as identifiers without being variables.
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "optional_type",
];
/// Namespaces of qualified function names.
const NAMESPACES: &[&str] = &["sets", "strings", "lists", "optional", "math"];

struct RefCheck<'a> {
    bound: Vec<String>,
    roots: &'a [&'a str],
    used: References,
    problems: Vec<String>,
}

impl RefCheck<'_> {
    fn undeclared(&mut self, name: &str) {
        self.problems.push(format!(
            "ERROR: <input>: undeclared reference to '{name}' (in container '')"
        ));
    }

    fn expr(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Ident(name) => {
                if self.bound.iter().any(|b| b == name) {
                    return;
                }
                match name.as_str() {
                    n if self.roots.contains(&n) => {
                        self.used.roots.insert(n.to_string());
                    }
                    n if TYPE_NAMES.contains(&n) => {}
                    n => self.undeclared(n),
                }
            }
            Expr::Select(sel) => {
                if let Expr::Ident(name) = &sel.operand.expr
                    && name == "variables"
                    && !self.bound.iter().any(|b| b == name)
                {
                    self.used.variables.insert(sel.field.clone());
                }
                self.expr(&sel.operand)
            }
            Expr::Call(call) => {
                let qualified = match call.target.as_deref().map(|t| &t.expr) {
                    Some(Expr::Ident(ns))
                        if NAMESPACES.contains(&ns.as_str()) && !self.bound.contains(ns) =>
                    {
                        Some(format!("{ns}.{}", call.func_name))
                    }
                    _ => None,
                };
                let name = qualified.clone().unwrap_or_else(|| call.func_name.clone());
                let is_operator =
                    name.starts_with('_') || name.starts_with('@') || name.starts_with('!');
                if !is_operator && !cellib::is_known_function(&name) {
                    self.undeclared(&name);
                }
                if qualified.is_none()
                    && let Some(t) = &call.target
                {
                    self.expr(t);
                }
                for a in &call.args {
                    self.expr(a);
                }
            }
            Expr::Comprehension(c) => {
                self.expr(&c.iter_range);
                let before = self.bound.len();
                self.bound.push(c.iter_var.clone());
                if let Some(v2) = &c.iter_var2 {
                    self.bound.push(v2.clone());
                }
                self.bound.push(c.accu_var.clone());
                self.expr(&c.accu_init);
                self.expr(&c.loop_cond);
                self.expr(&c.loop_step);
                self.expr(&c.result);
                self.bound.truncate(before);
            }
            Expr::List(l) => l.elements.iter().for_each(|x| self.expr(x)),
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        self.expr(&me.key);
                        self.expr(&me.value);
                    }
                }
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    match &entry.expr {
                        EntryExpr::StructField(f) => self.expr(&f.value),
                        EntryExpr::MapEntry(me) => {
                            self.expr(&me.key);
                            self.expr(&me.value);
                        }
                    }
                }
            }
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}

/// `cel.ValidFieldPath`: `.a.b`, `['a.b']` steps through the schema.
pub(crate) fn valid_field_path(path: &str, s: &Schema) -> Result<FieldPath, String> {
    let mut cur = s;
    let mut out = FieldPath::nil();
    let tokens = tokenize_field_path(path);
    let mut it = tokens.into_iter();
    let step = |name: &str, cur: &mut &Schema, out: &mut FieldPath| -> Result<(), String> {
        if !cur.properties.is_empty() {
            *out = out.child(name);
            match cur.properties.get(name) {
                Some(p) => *cur = p,
                None => return Err("does not refer to a valid field".into()),
            }
        } else if let Some(a) = cur.additional_schema() {
            *out = out.key(name);
            *cur = a;
        } else {
            return Err("does not refer to a valid field".into());
        }
        Ok(())
    };
    while let Some(tok) = it.next() {
        match tok.as_str() {
            "[" => {
                let t = it.next().ok_or("unexpected end of JSON path")?;
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {t}"));
                }
                let name = unescape_single_quote(&t[1..t.len() - 1])?;
                step(&name, &mut cur, &mut out)?;
                match it.next() {
                    Some(close) if close == "]" => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".into()),
                }
            }
            "." => {
                let t = it.next().ok_or("unexpected end of JSON path")?;
                step(&t, &mut cur, &mut out)?;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}

fn tokenize_field_path(path: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = path.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\'' {
            let mut j = i + 1;
            while j < chars.len() && !(chars[j] == '\'' && chars[j - 1] != '\\') {
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            tokens.push(chars[i..end].iter().collect());
            i = end;
        } else if matches!(chars[i], '.' | '[' | ']') {
            tokens.push(chars[i].to_string());
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && !matches!(chars[j], '.' | '[' | ']') {
                j += 1;
            }
            tokens.push(chars[i..j].iter().collect());
            i = j;
        }
    }
    tokens
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(other) => {
                return Err(format!(
                    "invalid string literal: invalid escape char \\{other}"
                ));
            }
            None => out.push('\\'),
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Evaluation

fn rule_error_string(rule: &Rule) -> String {
    if !rule.message.is_empty() {
        rule.message.trim().to_string()
    } else {
        rule.rule.trim().to_string()
    }
}

fn type_value(s: &Schema) -> BadValue {
    BadValue::str(&s.type_)
}

/// cel-go's wording of an evaluation error.
pub(crate) fn exec_error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload(o) => format!("no such overload: {o}"),
        ExecutionError::UndeclaredReference(r) => format!("no such attribute(s): {r}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {i:?}"),
        other => other.to_string(),
    }
}

struct Activation<'a> {
    self_val: CelValue,
    old_val: Option<CelValue>,
    _schema: &'a Schema,
}

fn eval(
    program: &Program,
    act: &Activation<'_>,
    optional_old_self: bool,
) -> Result<CelValue, ExecutionError> {
    let mut ctx = Context::with_env(Arc::clone(&ENV));
    ctx.add_variable_from_value("self", act.self_val.clone());
    if optional_old_self {
        let opt = match &act.old_val {
            Some(v) => OptionalValue::of(v.clone()),
            None => OptionalValue::none(),
        };
        ctx.add_variable_from_value("oldSelf", CelValue::Opaque(Arc::new(opt)));
    } else if let Some(old) = &act.old_val {
        ctx.add_variable_from_value("oldSelf", old.clone());
    }
    program.execute(&ctx)
}

/// What evaluating the rules found.
#[derive(Default)]
pub(crate) struct Outcome {
    pub errs: Vec<FieldError>,
    /// With ratcheting (updates): failures of rules that do not use
    /// `oldSelf` on values that did not change, which kube-apiserver
    /// reports as warnings instead of refusing the update.
    pub ratcheted: Vec<FieldError>,
    ratcheting: bool,
}

impl Outcome {
    pub(crate) fn ratcheting() -> Outcome {
        Outcome {
            ratcheting: true,
            ..Outcome::default()
        }
    }
}

/// Where a node sits: at a resource's root (for `apiVersion`, `kind` and
/// `metadata`), and whether the nearest ancestor with an old value to
/// compare with is unchanged (the items of lists that are not map lists
/// have none of their own).
#[derive(Clone, Copy)]
pub(crate) struct Position {
    pub is_resource_root: bool,
    pub ancestor_unchanged: bool,
}

/// Evaluates the rules of `node` (schema `s`) on `obj`, then its children.
pub(crate) fn validate(
    node: &CelNode,
    s: &Schema,
    obj: &Value,
    old: Option<&Value>,
    path: &FieldPath,
    at: Position,
    out: &mut Outcome,
) {
    if obj.is_null() {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    let unchanged = out.ratcheting
        && match old {
            Some(o) => super::validate::unchanged(s, obj, o),
            None => at.ancestor_unchanged,
        };
    expressions(node, s, obj, old, path, at.is_resource_root, unchanged, out);
    let below = |is_resource_root| Position {
        is_resource_root,
        ancestor_unchanged: unchanged,
    };
    match obj {
        Value::Array(items) => {
            let (Some(item_node), Some(is)) = (node.items.as_deref(), s.items.as_deref()) else {
                return;
            };
            let old_items = old.and_then(Value::as_array);
            for (i, item) in items.iter().enumerate() {
                let old_item = correlate_item(s, item, old_items);
                validate(
                    item_node,
                    is,
                    item,
                    old_item,
                    &path.index(i),
                    below(is.x_embedded_resource),
                    out,
                );
            }
        }
        Value::Object(m) => {
            let old_map = old.and_then(Value::as_object);
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            if let (Some(an), Some(a)) = (node.additional.as_deref(), s.additional_schema()) {
                for k in &keys {
                    let old_v = old_map.and_then(|o| o.get(k.as_str()));
                    validate(
                        an,
                        a,
                        &m[k.as_str()],
                        old_v,
                        &path.key(k),
                        below(a.x_embedded_resource),
                        out,
                    );
                }
            }
            for k in &keys {
                if let (Some(pn), Some(p)) = (
                    node.properties.get(k.as_str()),
                    s.properties.get(k.as_str()),
                ) {
                    let old_v = old_map.and_then(|o| o.get(k.as_str()));
                    validate(
                        pn,
                        p,
                        &m[k.as_str()],
                        old_v,
                        &path.child(k),
                        below(p.x_embedded_resource),
                        out,
                    );
                }
            }
        }
        _ => {}
    }
}

/// Old items are only known for `map` lists, by their keys.
fn correlate_item<'a>(
    s: &Schema,
    item: &Value,
    old_items: Option<&'a Vec<Value>>,
) -> Option<&'a Value> {
    if s.x_list_type.as_deref() != Some("map") || s.x_list_map_keys.is_empty() {
        return None;
    }
    let keys = &s.x_list_map_keys;
    old_items?
        .iter()
        .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
}

#[allow(clippy::too_many_arguments)]
fn expressions(
    node: &CelNode,
    s: &Schema,
    obj: &Value,
    old: Option<&Value>,
    path: &FieldPath,
    is_resource_root: bool,
    unchanged: bool,
    out: &mut Outcome,
) {
    if node.rules.is_empty() {
        return;
    }
    let act = Activation {
        self_val: to_cel(obj, s, is_resource_root),
        old_val: old.map(|o| to_cel(o, s, is_resource_root)),
        _schema: s,
    };
    for (compiled, rule) in node.rules.iter().zip(&s.x_validations) {
        if let Some(e) = &compiled.error {
            out.errs.push(FieldError::invalid(
                path,
                type_value(s),
                &format!("rule compile error: {e}"),
            ));
            continue;
        }
        let Some(program) = &compiled.program else {
            continue;
        };
        let optional_old_self = rule.optional_old_self == Some(true);
        // Failures on an unchanged value are ratcheted, unless the rule
        // compares with the old value itself.
        let errs = if unchanged && !compiled.uses_old_self {
            &mut out.ratcheted
        } else {
            &mut out.errs
        };
        if compiled.uses_old_self && old.is_none() && !optional_old_self {
            continue;
        }
        let passed = match eval(program, &act, optional_old_self) {
            Ok(CelValue::Bool(true)) => true,
            Ok(_) => false,
            Err(e) => {
                let text = exec_error_text(&e);
                let detail = if text.starts_with("no such overload") {
                    format!(
                        "'{text}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule_error_string(rule)
                    )
                } else {
                    format!("{text} evaluating rule: {}", rule_error_string(rule))
                };
                errs.push(FieldError::invalid(path, type_value(s), &detail));
                continue;
            }
        };
        if passed {
            continue;
        }
        let current = match &compiled.field_path {
            Some(fp) => FieldPath::new(&path.join_relative(fp)),
            None => path.clone(),
        };
        let detail = compiled
            .message_program
            .as_deref()
            .and_then(|mp| message_expression(mp, &act))
            .unwrap_or_else(|| {
                if rule.message.is_empty() {
                    format!("failed rule: {}", rule_error_string(rule))
                } else {
                    rule.message.trim().to_string()
                }
            });
        // v1.32 names the schema's type as the bad value, not the value.
        let value = type_value(s);
        let e = match rule.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::forbidden(&current, &detail),
            Some("FieldValueRequired") => FieldError::required(&current, &detail),
            Some("FieldValueDuplicate") => FieldError::duplicate(&current, value),
            _ => FieldError::invalid(&current, value, &detail),
        };
        errs.push(e);
    }
}

/// The message of a failed rule from its `messageExpression`; `None` falls
/// back to the static message, as kube-apiserver does on such failures.
fn message_expression(program: &Program, act: &Activation<'_>) -> Option<String> {
    let CelValue::String(s) = eval(program, act, false).ok()? else {
        return None;
    };
    let trimmed = s.trim();
    if trimmed.is_empty() || trimmed.contains('\n') || trimmed.len() > MAX_MESSAGE_EXPRESSION_BYTES
    {
        return None;
    }
    Some(trimmed.to_string())
}

/// CEL rules of `s` evaluated against its default value (self and oldSelf
/// both the default), for the CRD validator.
pub(crate) fn validate_default(
    s: &Schema,
    d: &Value,
    path: &FieldPath,
    is_resource_root: bool,
) -> Vec<FieldError> {
    let Some(node) = build(s) else {
        return Vec::new();
    };
    let mut out = Outcome::default();
    let at = Position {
        is_resource_root,
        ancestor_unchanged: false,
    };
    validate(&node, s, d, Some(d), path, at, &mut out);
    out.errs
}
