//! Requests must name a loopback host: envtest listens on 127.0.0.1 only,
//! and a `Host` naming anything else is a page from elsewhere reaching it
//! by DNS rebinding (a name that resolved to 127.0.0.1 after the page
//! loaded), which would otherwise act as the administrator over plain HTTP.

use axum::http::{HeaderMap, Uri, header};

use crate::error::ApiError;

/// The host of `authority` without its port (`[::1]:80` gives `::1`).
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

fn is_loopback(host: &str) -> bool {
    host == "127.0.0.1" || host == "::1" || host.eq_ignore_ascii_case("localhost")
}

/// 403 for a request whose `Host` (or HTTP/2 `:authority`) is not a
/// loopback name; `None` when it may proceed (a request naming no host at
/// all comes from no browser).
pub(super) fn refused(uri: &Uri, headers: &HeaderMap) -> Option<ApiError> {
    let named = headers
        .get(header::HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .or_else(|| uri.authority().map(|a| a.as_str().to_string()))?;
    if is_loopback(host_of(&named)) {
        return None;
    }
    Some(ApiError::new(
        403,
        "Forbidden",
        format!(
            "host {} is not a loopback address: this envtest server answers requests for 127.0.0.1, [::1] and localhost only",
            crate::gofmt::quote(&named)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_host(host: &str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().expect("header value"));
        refused(&Uri::from_static("/version"), &headers).is_some()
    }

    #[test]
    fn loopback_names_with_any_port_pass_and_others_are_refused() {
        for ok in [
            "127.0.0.1",
            "127.0.0.1:6443",
            "[::1]:8080",
            "[::1]",
            "localhost",
            "LocalHost:1",
        ] {
            assert!(!refused_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:6443",
            "127.0.0.2",
            "localhost.evil.example",
            "[::2]:1",
            "0.0.0.0",
        ] {
            assert!(refused_host(bad), "{bad}");
        }
        assert!(refused(&Uri::from_static("/version"), &HeaderMap::new()).is_none());
    }
}
