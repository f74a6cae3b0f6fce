//! The CEL `quantity` library over Kubernetes resource quantities (`500Mi`,
//! `1.5`, `2e3`), parsed by `crate::quantity` into nano-units.

use std::sync::Arc;

use cel::Value;
use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};

const TYPE_NAME: &str = "kubernetes.Quantity";

/// A quantity in units of 10^-9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Quantity(i128);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// Parses `resource.ParseQuantity` syntax with the one parser envtest has
/// (`crate::quantity`), keeping only the value.
pub(crate) fn parse(s: &str) -> Option<Quantity> {
    crate::quantity::Quantity::parse(s)
        .ok()
        .map(|q| Quantity(q.nanos()))
}

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        quantity,
    )?;
    for (name, f) in [
        (
            "isLessThan",
            is_less_than as cel::common::functions::Function,
        ),
        ("isGreaterThan", is_greater_than),
        ("compareTo", compare_to),
        ("add", add),
        ("sub", sub),
    ] {
        env.add_member_overload(
            name,
            &format!("quantity_{name}"),
            DYN_TYPE,
            vec![DYN_TYPE],
            f,
        )?;
    }
    for (name, f) in [
        ("sign", sign as cel::common::functions::Function),
        ("isInteger", is_integer),
        ("asInteger", as_integer),
        ("asApproximateFloat", as_approximate_float),
    ] {
        env.add_member_overload(name, &format!("quantity_{name}"), DYN_TYPE, vec![], f)?;
    }
    Ok(())
}

fn owned<'b, 'v>(v: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn Val> = v.try_into()?;
    Ok(CowVal::Owned(boxed))
}

fn wrap(q: Quantity) -> Value {
    Value::Opaque(Arc::new(q))
}

fn arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<Quantity, ExecutionError> {
    let v = args
        .get(i)
        .map(|a| Value::try_from(a.as_ref()))
        .transpose()?
        .unwrap_or(Value::Null);
    match &v {
        Value::Opaque(o) if o.runtime_type_name() == TYPE_NAME => o
            .downcast_ref::<Quantity>()
            .copied()
            .ok_or_else(|| ExecutionError::function_error(function, "not a quantity")),
        Value::Int(n) => Ok(Quantity(i128::from(*n) * 1_000_000_000)),
        _ => Err(ExecutionError::no_such_overload(
            function,
            vec![format!("{v:?}")],
        )),
    }
}

fn quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let v = args
        .first()
        .map(|a| Value::try_from(a.as_ref()))
        .transpose()?;
    let Some(Value::String(s)) = v else {
        return Err(ExecutionError::function_error(
            "quantity",
            "expected a string",
        ));
    };
    match parse(&s) {
        Some(q) => owned(wrap(q)),
        None => Err(ExecutionError::function_error(
            "quantity",
            crate::quantity::FORMAT_ERROR,
        )),
    }
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(Value::Bool(
        arg(&args, 0, "isLessThan")? < arg(&args, 1, "isLessThan")?,
    ))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(Value::Bool(
        arg(&args, 0, "isGreaterThan")? > arg(&args, 1, "isGreaterThan")?,
    ))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let ord = arg(&args, 0, "compareTo")?.cmp(&arg(&args, 1, "compareTo")?);
    owned(Value::Int(ord as i64))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = (arg(&args, 0, "add")?, arg(&args, 1, "add")?);
    let sum =
        a.0.checked_add(b.0)
            .ok_or_else(|| ExecutionError::function_error("add", "overflow"))?;
    owned(wrap(Quantity(sum)))
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = (arg(&args, 0, "sub")?, arg(&args, 1, "sub")?);
    let d =
        a.0.checked_sub(b.0)
            .ok_or_else(|| ExecutionError::function_error("sub", "overflow"))?;
    owned(wrap(Quantity(d)))
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(Value::Int(arg(&args, 0, "sign")?.0.signum() as i64))
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg(&args, 0, "isInteger")?;
    owned(Value::Bool(
        q.0 % 1_000_000_000 == 0 && i64::try_from(q.0 / 1_000_000_000).is_ok(),
    ))
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg(&args, 0, "asInteger")?;
    if q.0 % 1_000_000_000 != 0 {
        return Err(ExecutionError::function_error(
            "asInteger",
            "cannot convert value to integer",
        ));
    }
    let n = i64::try_from(q.0 / 1_000_000_000).map_err(|_| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })?;
    owned(Value::Int(n))
}

fn as_approximate_float<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(Value::Float(
        arg(&args, 0, "asApproximateFloat")?.0 as f64 / 1e9,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_exactly() {
        assert_eq!(parse("1"), Some(Quantity(1_000_000_000)));
        assert_eq!(parse("500m"), Some(Quantity(500_000_000)));
        assert_eq!(parse("1Ki"), Some(Quantity(1024 * 1_000_000_000)));
        assert_eq!(
            parse("1.5Gi"),
            Some(Quantity(1_610_612_736 * 1_000_000_000))
        );
        assert_eq!(parse("2e3"), Some(Quantity(2_000 * 1_000_000_000)));
        assert_eq!(parse("-1k"), Some(Quantity(-1_000 * 1_000_000_000)));
        assert_eq!(parse("abc"), None);
        assert_eq!(parse("1Zi"), None);
        assert!(parse("1Gi") > parse("1G"));
    }
}
