//! Request deadlines as kube-apiserver's `WithRequestDeadline` and
//! `WithTimeoutForNonLongRunningRequests` filters set them: every request
//! but a long-running one (watch, proxy, attach/exec/log/portforward) gets
//! the server's request timeout (60 s), or the shorter `?timeout=` it asks
//! for, and a 504 Status when it runs out.

use std::time::Duration;

use axum::http::Method;

use crate::error::ApiError;
use crate::request::path::Route;
use crate::request::query::Query;

/// `BasicLongRunningRequestCheck` with kube-apiserver's sets: the verbs
/// `watch` and `proxy`, the subresources `attach`, `exec`, `proxy`, `log`
/// and `portforward`.
pub(crate) fn long_running(method: &Method, route: &Route, query: &Query) -> bool {
    let Route::Resource(p) = route else {
        return false;
    };
    let get = matches!(*method, Method::GET | Method::HEAD);
    // RequestInfo: a GET of a collection with `watch` set is a watch; a GET
    // naming an object stays a get whatever `watch` says.
    let watch = get
        && (p.watch_prefix
            || (p.name.is_none()
                && query
                    .get("watch")
                    .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"))));
    watch
        || p.resource == "proxy"
        || p.subresource
            .as_deref()
            .is_some_and(|s| matches!(s, "attach" | "exec" | "proxy" | "log" | "portforward"))
}

/// How long a non-long-running request may take: `server` unless the
/// request asks for less with `?timeout=` (a Go duration; 0 or more than
/// the server's leaves the server's). A malformed value is a 400.
pub(crate) fn request_timeout(query: &Query, server: Duration) -> Result<Duration, ApiError> {
    let Some(value) = query.get("timeout").filter(|v| !v.is_empty()) else {
        return Ok(server);
    };
    let nanos = parse_go_duration(value).map_err(|e| {
        ApiError::bad_request(format!(
            "invalid timeout specified in the request URL - {e}"
        ))
    })?;
    Ok(match u64::try_from(nanos) {
        Ok(n) if n > 0 && u128::from(n) < server.as_nanos() => Duration::from_nanos(n),
        _ => server,
    })
}

/// Go's `time.ParseDuration`, in nanoseconds, with its error texts.
fn parse_go_duration(orig: &str) -> Result<i64, String> {
    let quote = crate::gofmt::quote;
    let invalid = || format!("time: invalid duration {}", quote(orig));
    let (neg, mut s) = match orig.as_bytes().first() {
        Some(b'-') => (true, &orig[1..]),
        Some(b'+') => (false, &orig[1..]),
        _ => (false, orig),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let digits = |t: &str| t.bytes().take_while(u8::is_ascii_digit).count();
        let whole_len = digits(s);
        let whole = &s[..whole_len];
        s = &s[whole_len..];
        let mut fraction = "";
        if let Some(rest) = s.strip_prefix('.') {
            let n = digits(rest);
            fraction = &rest[..n];
            s = &rest[n..];
            if whole.is_empty() && fraction.is_empty() {
                return Err(invalid());
            }
        } else if whole.is_empty() {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .take_while(|c| *c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(unit),
                    quote(orig)
                ));
            }
        };
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| invalid())?
        };
        let mut part = whole.checked_mul(scale).ok_or_else(invalid)?;
        // The fraction's digits beyond what the unit can resolve are dropped.
        let mut place = scale;
        for d in fraction.bytes() {
            place /= 10;
            if place == 0 {
                break;
            }
            part += u128::from(d - b'0') * place;
        }
        total = total.checked_add(part).ok_or_else(invalid)?;
        if total > i64::MAX as u128 {
            return Err(invalid());
        }
    }
    let total = i64::try_from(total).map_err(|_| invalid())?;
    Ok(if neg { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::path::route;

    fn is_long(method: Method, uri: &str) -> bool {
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        long_running(&method, &route(path), &Query::parse(Some(query)))
    }

    #[test]
    fn watches_and_streams_are_long_running_and_the_rest_is_not() {
        assert!(is_long(Method::GET, "/api/v1/namespaces/a/pods?watch=true"));
        assert!(is_long(Method::GET, "/api/v1/watch/namespaces/a/pods/p"));
        assert!(is_long(Method::GET, "/api/v1/namespaces/a/pods/p/log"));
        assert!(is_long(Method::POST, "/api/v1/namespaces/a/pods/p/exec"));
        assert!(is_long(Method::GET, "/api/v1/namespaces/a/pods/p/proxy"));
        assert!(!is_long(
            Method::GET,
            "/api/v1/namespaces/a/pods?watch=false"
        ));
        assert!(!is_long(
            Method::GET,
            "/api/v1/namespaces/a/pods/p?watch=true"
        ));
        assert!(!is_long(Method::POST, "/api/v1/namespaces/a/configmaps"));
        assert!(!is_long(Method::GET, "/version"));
    }

    #[test]
    fn timeouts_parse_as_go_durations() {
        let server = Duration::from_secs(60);
        let of = |q: &str| request_timeout(&Query::parse(Some(q)), server);
        assert_eq!(of("timeout=1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(
            of("timeout=1m30s").unwrap(),
            Duration::from_secs(90).min(server)
        );
        assert_eq!(of("timeout=0").unwrap(), server);
        assert_eq!(of("timeout=-1s").unwrap(), server);
        assert_eq!(of("timeout=2h").unwrap(), server);
        assert_eq!(of("").unwrap(), server);
        for (value, message) in [
            ("abc", "time: invalid duration \"abc\""),
            ("5", "time: missing unit in duration \"5\""),
            ("5x", "time: unknown unit \"x\" in duration \"5x\""),
            (".s", "time: invalid duration \".s\""),
            ("99999999999h", "time: invalid duration \"99999999999h\""),
        ] {
            let err = of(&format!("timeout={value}")).unwrap_err();
            assert_eq!(err.code, 400);
            assert_eq!(
                err.message,
                format!("invalid timeout specified in the request URL - {message}")
            );
        }
    }
}
