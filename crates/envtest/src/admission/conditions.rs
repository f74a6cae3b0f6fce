//! `matchConditions`: CEL expressions over `object`, `oldObject` and
//! `request` that must all be true for a webhook to be called.
//!
//! Evaluated with the `cel` crate in the environment the schema module uses
//! for `x-kubernetes-validations` (the CEL standard library, the strings and
//! lists extensions and the Kubernetes library). The `authorizer` variable is
//! not supported: an expression that uses it is an evaluation error (which, like any
//! evaluation error, fails the request under `failurePolicy: Fail` and skips
//! the webhook under `Ignore`). Error texts come from the `cel` crate, so
//! they differ from cel-go's.

use std::sync::Arc;

use cel::{Context, Program, Value as CelValue};
use serde_json::Value;

use super::attributes::AdmissionAttributes;
use super::webhook_errors::forbidden;
use crate::error::ApiResult;
use crate::schema::cel::env;
use crate::schema::celvalues::untyped as to_cel;

/// Why `expression` does not compile, if it does not (for configuration validation).
pub(crate) fn compile_error(expression: &str) -> Option<String> {
    env().compile(expression).err().map(|e| e.to_string())
}

#[derive(Debug)]
struct Condition {
    expression: String,
    /// The compiled program, or why it did not compile.
    program: Result<Program, String>,
}

/// The compiled `matchConditions` of one webhook.
#[derive(Debug, Default)]
pub(crate) struct MatchConditions {
    conditions: Vec<Condition>,
}

impl MatchConditions {
    pub(crate) fn compile(value: Option<&Value>) -> MatchConditions {
        let Some(items) = value.and_then(Value::as_array) else {
            return MatchConditions::default();
        };
        let conditions = items
            .iter()
            .map(|item| {
                let expression = item
                    .get("expression")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let program = env()
                    .compile(&expression)
                    .map_err(|e| e.to_string())
                    .and_then(|p| {
                        if p.references().has_variable("authorizer") {
                            Err("the authorizer variable is not supported by envtest".to_string())
                        } else {
                            Ok(p)
                        }
                    });
                Condition {
                    expression,
                    program,
                }
            })
            .collect();
        MatchConditions { conditions }
    }

    /// Whether every condition holds. A false condition skips the webhook at
    /// once; evaluation errors fail the request as 403 Forbidden under
    /// `failurePolicy: Fail` and skip the webhook under `Ignore`
    /// (`ignore_failures`).
    pub(crate) fn matches(
        &self,
        ignore_failures: bool,
        attrs: &AdmissionAttributes,
        object: Option<&Value>,
    ) -> ApiResult<bool> {
        if self.conditions.is_empty() {
            return Ok(true);
        }
        let mut ctx = Context::with_env(Arc::clone(env()));
        ctx.add_variable_from_value("object", to_cel(object.unwrap_or(&Value::Null)));
        ctx.add_variable_from_value(
            "oldObject",
            to_cel(attrs.old_object.as_ref().unwrap_or(&Value::Null)),
        );
        let mut request = attrs.review_request("", object);
        if let Some(map) = request.as_object_mut() {
            // The request variable leaves the objects out; they have their own variables.
            map.remove("object");
            map.remove("oldObject");
        }
        ctx.add_variable_from_value("request", to_cel(&request));

        let mut errors = Vec::new();
        for condition in &self.conditions {
            let program = match &condition.program {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("compilation error: {e}"));
                    continue;
                }
            };
            match program.execute(&ctx) {
                Ok(CelValue::Bool(false)) => return Ok(false),
                Ok(CelValue::Bool(true)) => {}
                Ok(other) => errors.push(format!(
                    "expression '{}' resulted in error: expected a bool, got {:?}",
                    condition.expression,
                    other.type_of()
                )),
                Err(e) => errors.push(format!(
                    "expression '{}' resulted in error: {e}",
                    condition.expression
                )),
            }
        }
        if errors.is_empty() {
            return Ok(true);
        }
        if ignore_failures {
            return Ok(false);
        }
        // utilerrors.NewAggregate prints one error bare and several in brackets.
        let detail = match errors.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        Err(forbidden(
            &attrs.resource.group,
            &attrs.resource.group_resource(),
            &attrs.resource.resource,
            &attrs.name,
            &detail,
        ))
    }
}
