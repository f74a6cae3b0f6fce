//! The CEL side of a ValidatingAdmissionPolicy: its expressions compiled
//! once (in the environment of `crate::schema::cel`, shared with CRD rules
//! and webhook matchConditions) and evaluated per binding and param, with
//! kube-apiserver's decisions and messages (`validating/validator.go`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cel::{Context, Program, Value as CelValue};
use serde_json::Value;

use crate::schema::cel::{check_references, env, exec_error_text};

/// Largest `messageExpression` result kube-apiserver keeps.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// Which optional variables an expression may use
/// (`OptionalVariableDeclarations`).
pub(crate) struct Declared<'a> {
    pub params: bool,
    pub authorizer: bool,
    /// The composited variables declared so far; `None` when the policy
    /// declares none (then `variables` is not a variable at all).
    pub variables: Option<&'a [String]>,
}

/// Compiles `source`, checking that it uses only the variables `declared`
/// allows. The error is what follows `compilation failed: `.
pub(crate) fn compile(source: &str, declared: &Declared<'_>) -> Result<Compiled, String> {
    let program = env().compile(source).map_err(|e| e.to_string())?;
    let mut roots = vec!["object", "oldObject", "request", "namespaceObject"];
    if declared.params {
        roots.push("params");
    }
    if declared.authorizer {
        roots.push("authorizer");
    }
    if declared.variables.is_some() {
        roots.push("variables");
    }
    let refs = check_references(&program, &roots)?;
    if let Some(known) = declared.variables
        && let Some(unknown) = refs.variables.iter().find(|v| !known.contains(v))
    {
        return Err(format!("ERROR: <input>: undefined field '{unknown}'"));
    }
    Ok(Compiled {
        program: Arc::new(program),
        variables: refs.variables,
        uses_authorizer: refs.roots.contains("authorizer"),
    })
}

/// One compiled expression.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    program: Arc<Program>,
    /// The composited variables it reads (`variables.<name>`).
    variables: BTreeSet<String>,
    uses_authorizer: bool,
}

/// An expression of a stored policy: compiled, or why it did not compile
/// (a stored policy passed validation, so only an older or hand-made one
/// gets here).
#[derive(Debug, Clone)]
pub(super) struct Expression {
    pub source: String,
    pub compiled: Result<Compiled, String>,
}

impl Expression {
    pub(super) fn new(source: &str, declared: &Declared<'_>) -> Expression {
        Expression {
            source: source.to_string(),
            compiled: compile(source, declared),
        }
    }
}

/// One `spec.validations` item.
#[derive(Debug)]
pub(super) struct Validation {
    pub expression: Expression,
    pub message: String,
    pub message_expression: Option<Expression>,
    pub reason: Option<String>,
}

/// The compiled CEL of one policy.
#[derive(Debug, Default)]
pub(super) struct PolicyCel {
    pub match_conditions: Vec<Expression>,
    /// `spec.variables` in order.
    pub variables: Vec<(String, Expression)>,
    pub validations: Vec<Validation>,
    /// `spec.auditAnnotations` value expressions.
    pub audit_annotations: Vec<Expression>,
}

fn text(value: &Value, field: &str) -> String {
    value
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn items<'a>(spec: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    spec.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

impl PolicyCel {
    pub(super) fn compile(spec: &Value) -> PolicyCel {
        let params = spec.get("paramKind").is_some_and(|p| !p.is_null());
        let mut names: Vec<String> = Vec::new();
        let mut variables = Vec::new();
        let has_variables = items(spec, "variables").next().is_some();
        for v in items(spec, "variables") {
            let name = text(v, "name");
            let declared = Declared {
                params,
                authorizer: true,
                variables: Some(&names),
            };
            variables.push((
                name.clone(),
                Expression::new(&text(v, "expression"), &declared),
            ));
            names.push(name);
        }
        let with_variables = Declared {
            params,
            authorizer: true,
            variables: has_variables.then_some(names.as_slice()),
        };
        let match_conditions = items(spec, "matchConditions")
            .map(|c| {
                let declared = Declared {
                    params,
                    authorizer: true,
                    variables: None,
                };
                Expression::new(&text(c, "expression"), &declared)
            })
            .collect();
        let validations = items(spec, "validations")
            .map(|v| {
                let message_expression = Some(text(v, "messageExpression"))
                    .filter(|m| !m.trim().is_empty())
                    .map(|m| {
                        let declared = Declared {
                            params,
                            authorizer: false,
                            variables: with_variables.variables,
                        };
                        Expression::new(&m, &declared)
                    });
                Validation {
                    expression: Expression::new(&text(v, "expression"), &with_variables),
                    message: text(v, "message"),
                    message_expression,
                    reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
                }
            })
            .collect();
        let audit_annotations = items(spec, "auditAnnotations")
            .map(|a| Expression::new(text(a, "valueExpression").trim(), &with_variables))
            .collect();
        PolicyCel {
            match_conditions,
            variables,
            validations,
            audit_annotations,
        }
    }
}

/// The variables of one evaluation (`object`, `oldObject`, `request`,
/// `params`, `namespaceObject`), as CEL values.
#[derive(Clone)]
pub(super) struct Input {
    pub object: CelValue,
    pub old_object: CelValue,
    pub request: CelValue,
    pub params: CelValue,
    pub namespace_object: CelValue,
}

/// A failed validation: the message and the Status reason it denies with.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Denial {
    pub message: String,
    pub reason: Option<String>,
}

/// One evaluation of a policy's expressions: the composited variables are
/// evaluated when an expression first reads them, once each.
struct Evaluation<'a> {
    cel: &'a PolicyCel,
    input: &'a Input,
    variables: RefCell<BTreeMap<String, Result<CelValue, String>>>,
}

impl Evaluation<'_> {
    /// Evaluates the variables `compiled` reads (and those they read) that
    /// are not evaluated yet; the first that fails is the expression's error.
    fn ensure_variables(&self, compiled: &Compiled) -> Result<(), String> {
        for name in &compiled.variables {
            if let Some(result) = self.variables.borrow().get(name) {
                result.as_ref().map(|_| ()).map_err(Clone::clone)?;
                continue;
            }
            let Some((_, expression)) = self.cel.variables.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let result = match &expression.compiled {
                Err(e) => Err(format!(
                    "composited variable {name:?} fails to compile: {e}"
                )),
                Ok(inner) => self
                    .execute(inner)
                    .map_err(|e| format!("composited variable {name:?} fails to evaluate: {e}")),
            };
            let outcome = result.as_ref().map(|_| ()).map_err(Clone::clone);
            self.variables.borrow_mut().insert(name.clone(), result);
            outcome?;
        }
        Ok(())
    }

    /// Runs `compiled`; the error is cel-go's wording of what went wrong.
    fn execute(&self, compiled: &Compiled) -> Result<CelValue, String> {
        if compiled.uses_authorizer {
            return Err("the authorizer variable is not supported by envtest".to_string());
        }
        self.ensure_variables(compiled)?;
        let mut ctx = Context::with_env(Arc::clone(env()));
        let input = self.input;
        ctx.add_variable_from_value("object", input.object.clone());
        ctx.add_variable_from_value("oldObject", input.old_object.clone());
        ctx.add_variable_from_value("request", input.request.clone());
        ctx.add_variable_from_value("params", input.params.clone());
        ctx.add_variable_from_value("namespaceObject", input.namespace_object.clone());
        if !self.cel.variables.is_empty() {
            let known: BTreeMap<String, CelValue> = self
                .variables
                .borrow()
                .iter()
                .filter_map(|(k, v)| v.as_ref().ok().map(|v| (k.clone(), v.clone())))
                .collect();
            let map: std::collections::HashMap<cel::objects::Key, CelValue> = known
                .into_iter()
                .map(|(k, v)| (cel::objects::Key::String(Arc::new(k)), v))
                .collect();
            ctx.add_variable_from_value(
                "variables",
                CelValue::Map(cel::objects::Map { map: Arc::new(map) }),
            );
        }
        compiled
            .program
            .execute(&ctx)
            .map_err(|e| exec_error_text(&e))
    }

    /// `activation.Evaluate`: the value, or the error kube-apiserver reports.
    fn evaluate(&self, expression: &Expression) -> Result<CelValue, String> {
        let compiled = expression
            .compiled
            .as_ref()
            .map_err(|e| format!("compilation error: {e}"))?;
        self.execute(compiled)
            .map_err(|e| format!("expression '{}' resulted in error: {e}", expression.source))
    }
}

/// What the match conditions decided.
pub(super) enum Matched {
    Yes,
    No,
    /// Evaluation errors under `failurePolicy: Fail` (an aggregate message).
    Error(String),
}

impl PolicyCel {
    /// Evaluates the policy for one binding and param: match conditions,
    /// then validations, then audit annotations (whose values envtest does
    /// not keep: it has no audit log; their errors still count). Returns the
    /// denials, evaluation errors included when `fail` (`failurePolicy:
    /// Fail`) and dropped otherwise.
    pub(super) fn validate(&self, input: &Input, fail: bool) -> Vec<Denial> {
        let evaluation = Evaluation {
            cel: self,
            input,
            variables: RefCell::new(BTreeMap::new()),
        };
        match self.match_conditions(&evaluation, fail) {
            Matched::No => return Vec::new(),
            Matched::Error(message) => {
                return vec![Denial {
                    message,
                    reason: None,
                }];
            }
            Matched::Yes => {}
        }
        let mut denials = Vec::new();
        for validation in &self.validations {
            match evaluation.evaluate(&validation.expression) {
                Err(message) => {
                    if fail {
                        denials.push(Denial {
                            message,
                            reason: None,
                        });
                    }
                }
                Ok(CelValue::Bool(true)) => {}
                Ok(_) => denials.push(Denial {
                    message: failure_message(&evaluation, validation),
                    reason: Some(
                        validation
                            .reason
                            .clone()
                            .unwrap_or_else(|| "Invalid".to_string()),
                    ),
                }),
            }
        }
        for annotation in &self.audit_annotations {
            let error = match evaluation.evaluate(annotation) {
                Ok(CelValue::String(_) | CelValue::Null) => continue,
                Ok(other) => format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    annotation.source,
                    type_name(&other)
                ),
                Err(e) => e,
            };
            if fail {
                denials.push(Denial {
                    message: error,
                    reason: None,
                });
            }
        }
        denials
    }

    fn match_conditions(&self, evaluation: &Evaluation<'_>, fail: bool) -> Matched {
        let mut errors = Vec::new();
        for condition in &self.match_conditions {
            match evaluation.evaluate(condition) {
                Ok(CelValue::Bool(false)) => return Matched::No,
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        match errors.as_slice() {
            [] => Matched::Yes,
            _ if !fail => Matched::No,
            // utilerrors.NewAggregate prints one error bare and several in brackets.
            [one] => Matched::Error(one.clone()),
            many => Matched::Error(format!("[{}]", many.join(", "))),
        }
    }
}

/// The message of a failed validation: `messageExpression`'s string when
/// it gives a usable one, else `message`, else the expression.
fn failure_message(evaluation: &Evaluation<'_>, validation: &Validation) -> String {
    let from_expression = validation
        .message_expression
        .as_ref()
        .and_then(|m| match evaluation.evaluate(m) {
            Ok(CelValue::String(s)) => Some(s.trim().to_string()),
            _ => None,
        })
        .filter(|m| !m.is_empty() && m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'));
    if let Some(message) = from_expression {
        return message;
    }
    let message = validation.message.trim();
    if !message.is_empty() {
        return message.to_string();
    }
    format!("failed expression: {}", validation.expression.source.trim())
}

/// cel-go's name of a value's type.
fn type_name(value: &CelValue) -> &'static str {
    match value {
        CelValue::Bool(_) => "bool",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        CelValue::Null => "null_type",
        CelValue::Timestamp(_) => "google.protobuf.Timestamp",
        CelValue::Duration(_) => "google.protobuf.Duration",
        _ => "dyn",
    }
}
