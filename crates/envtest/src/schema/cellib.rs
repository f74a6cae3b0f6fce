//! The Kubernetes CEL library functions (k8s.io/apiserver `cel/library`)
//! that the `cel` crate does not provide: list aggregates, regex `find`,
//! `sets.*`, `quantity` (see `cel_quantity.rs`) and the `isURL` / `isIP` /
//! `isCIDR` / `isQuantity` checks.

use std::cmp::Ordering;
use std::net::IpAddr;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value};
use regex::Regex;

type Res<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// Every function name a rule may call (standard library, the strings and
/// lists extensions, and this library). Others are undeclared references.
const KNOWN_FUNCTIONS: &[&str] = &[
    // standard
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "string",
    "int",
    "uint",
    "double",
    "bool",
    "bytes",
    "timestamp",
    "duration",
    "type",
    "dyn",
    "has",
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    // optional values
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "hasValue",
    "value",
    "or",
    "orValue",
    // strings extension
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "format",
    "strings.quote",
    "reverse",
    // lists extension
    "slice",
    "flatten",
    "distinct",
    "sort",
    "sortBy",
    "lists.range",
    // this library
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    "isURL",
    "isIP",
    "isCIDR",
    "isQuantity",
    "quantity",
    "isLessThan",
    "isGreaterThan",
    "compareTo",
    "add",
    "sub",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
];

pub(crate) fn is_known_function(name: &str) -> bool {
    KNOWN_FUNCTIONS.contains(&name)
}

/// Registers the library on `env`.
pub(crate) fn kubernetes(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], list_min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], list_max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_last_index_of,
    )?;
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_n",
        STRING_TYPE,
        vec![STRING_TYPE, cel::common::types::INT_TYPE],
        find_all,
    )?;
    env.add_overload(
        "sets.contains",
        "sets_contains",
        vec![LIST_TYPE, LIST_TYPE],
        sets_contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "sets_equivalent",
        vec![LIST_TYPE, LIST_TYPE],
        sets_equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "sets_intersects",
        vec![LIST_TYPE, LIST_TYPE],
        sets_intersects,
    )?;
    env.add_overload("isURL", "is_url", vec![STRING_TYPE], is_url)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("isQuantity", "is_quantity", vec![STRING_TYPE], is_quantity)?;
    super::cel_quantity::register(env)?;
    Ok(())
}

fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Value>, ExecutionError> {
    args.iter().map(|a| Value::try_from(a.as_ref())).collect()
}

fn owned<'b, 'v>(v: Value) -> Res<'b, 'v> {
    let boxed: Box<dyn Val> = v.try_into()?;
    Ok(CowVal::Owned(boxed))
}

fn fail(function: &str, msg: &str) -> ExecutionError {
    ExecutionError::function_error(function, msg)
}

fn list_arg(v: &Value, function: &str) -> Result<Arc<Vec<Value>>, ExecutionError> {
    match v {
        Value::List(l) => Ok(Arc::clone(l)),
        _ => Err(fail(function, "expected a list")),
    }
}

fn string_arg(v: &Value, function: &str) -> Result<Arc<String>, ExecutionError> {
    match v {
        Value::String(s) => Ok(Arc::clone(s)),
        _ => Err(fail(function, "expected a string")),
    }
}

fn compare(a: &Value, b: &Value, function: &str) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b)
        .ok_or_else(|| fail(function, "list elements must be comparable"))
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let vals = values(&args)?;
    let list = list_arg(vals.first().unwrap_or(&Value::Null), "isSorted")?;
    for w in list.windows(2) {
        if compare(&w[0], &w[1], "isSorted")? == Ordering::Greater {
            return owned(Value::Bool(false));
        }
    }
    owned(Value::Bool(true))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let vals = values(&args)?;
    let list = list_arg(vals.first().unwrap_or(&Value::Null), "sum")?;
    let mut acc = match list.first() {
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(Value::UInt(_)) => Value::UInt(0),
        Some(Value::Duration(_)) => Value::Duration(chrono::Duration::zero()),
        _ => Value::Int(0),
    };
    for v in list.iter() {
        acc = match (&acc, v) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| fail("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| fail("sum", "integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (Value::Duration(a), Value::Duration(b)) => Value::Duration(*a + *b),
            _ => {
                return Err(fail(
                    "sum",
                    "list elements must be numbers or durations of one type",
                ));
            }
        };
    }
    owned(acc)
}

fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, function: &str, want: Ordering) -> Res<'b, 'v> {
    let vals = values(&args)?;
    let list = list_arg(vals.first().unwrap_or(&Value::Null), function)?;
    let mut it = list.iter();
    let Some(mut best) = it.next() else {
        return Err(fail(function, "list cannot be empty"));
    };
    for v in it {
        if compare(v, best, function)? == want {
            best = v;
        }
    }
    owned(best.clone())
}

fn list_min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    extreme(args, "min", Ordering::Less)
}

fn list_max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    extreme(args, "max", Ordering::Greater)
}

fn list_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let vals = values(&args)?;
    let list = list_arg(vals.first().unwrap_or(&Value::Null), "indexOf")?;
    let needle = vals.get(1).cloned().unwrap_or(Value::Null);
    let i = list
        .iter()
        .position(|v| *v == needle)
        .map_or(-1, |i| i as i64);
    owned(Value::Int(i))
}

fn list_last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let vals = values(&args)?;
    let list = list_arg(vals.first().unwrap_or(&Value::Null), "lastIndexOf")?;
    let needle = vals.get(1).cloned().unwrap_or(Value::Null);
    let i = list
        .iter()
        .rposition(|v| *v == needle)
        .map_or(-1, |i| i as i64);
    owned(Value::Int(i))
}

fn regex_arg(v: Option<&Value>, function: &str) -> Result<Regex, ExecutionError> {
    let pattern = string_arg(v.unwrap_or(&Value::Null), function)?;
    Regex::new(&pattern).map_err(|e| fail(function, &e.to_string()))
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let vals = values(&args)?;
    let s = string_arg(vals.first().unwrap_or(&Value::Null), "find")?;
    let re = regex_arg(vals.get(1), "find")?;
    let found = re
        .find(&s)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    owned(Value::String(Arc::new(found)))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let vals = values(&args)?;
    let s = string_arg(vals.first().unwrap_or(&Value::Null), "findAll")?;
    let re = regex_arg(vals.get(1), "findAll")?;
    let limit = match vals.get(2) {
        Some(Value::Int(n)) if *n >= 0 => Some(*n as usize),
        _ => None,
    };
    let all: Vec<Value> = re
        .find_iter(&s)
        .take(limit.unwrap_or(usize::MAX))
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    owned(Value::List(Arc::new(all)))
}

type ListPair = (Arc<Vec<Value>>, Arc<Vec<Value>>);

fn two_lists(args: &[CowVal<'_, '_>], function: &str) -> Result<ListPair, ExecutionError> {
    let vals = values(args)?;
    let a = list_arg(vals.first().unwrap_or(&Value::Null), function)?;
    let b = list_arg(vals.get(1).unwrap_or(&Value::Null), function)?;
    Ok((a, b))
}

fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let (a, b) = two_lists(&args, "sets.contains")?;
    owned(Value::Bool(b.iter().all(|x| a.contains(x))))
}

fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let (a, b) = two_lists(&args, "sets.equivalent")?;
    owned(Value::Bool(
        b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x)),
    ))
}

fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let (a, b) = two_lists(&args, "sets.intersects")?;
    owned(Value::Bool(b.iter().any(|x| a.contains(x))))
}

fn one_string(args: &[CowVal<'_, '_>], function: &str) -> Result<Arc<String>, ExecutionError> {
    let vals = values(args)?;
    string_arg(vals.first().unwrap_or(&Value::Null), function)
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let s = one_string(&args, "isURL")?;
    // url.ParseRequestURI: an absolute URI or an absolute path.
    let ok = s.starts_with('/')
        || s.split_once("://").is_some_and(|(scheme, _)| {
            scheme
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
    owned(Value::Bool(ok && !s.contains(char::is_whitespace)))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let s = one_string(&args, "isIP")?;
    owned(Value::Bool(s.parse::<IpAddr>().is_ok()))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let s = one_string(&args, "isCIDR")?;
    let ok = s.split_once('/').is_some_and(|(ip, bits)| {
        match (ip.parse::<IpAddr>(), bits.parse::<u8>()) {
            (Ok(IpAddr::V4(_)), Ok(b)) => b <= 32 && !bits.starts_with('+'),
            (Ok(IpAddr::V6(_)), Ok(b)) => b <= 128 && !bits.starts_with('+'),
            _ => false,
        }
    });
    owned(Value::Bool(ok))
}

/// `resource.ParseQuantity` syntax: a decimal number with an optional
/// binary (Ki..Ei), decimal (n..E) or exponent (e3) suffix.
pub(crate) fn is_quantity_str(s: &str) -> bool {
    super::cel_quantity::parse(s).is_some() || is_quantity_syntax(s)
}

fn is_quantity_syntax(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(digits_end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return false;
    }
    match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti"
        | "Pi" | "Ei" => true,
        exp if exp.starts_with(['e', 'E']) => {
            let e = &exp[1..];
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let s = one_string(&args, "isQuantity")?;
    owned(Value::Bool(is_quantity_str(&s)))
}
