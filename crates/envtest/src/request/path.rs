//! URL paths: which endpoint a request addresses.

/// A path under `/api/v1` or `/apis/<group>/<version>` naming a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The legacy `/watch/` prefix.
    pub watch_prefix: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    Version,
    Health,
    /// `/metrics`
    Metrics,
    /// `/api`
    CoreRoot,
    /// `/apis`
    Groups,
    /// `/apis/<group>`
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`
    GroupVersion(String, String),
    Resource(ResourcePath),
    /// Nothing is served here (text/plain 404).
    Unknown,
}

fn decode_segment(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn resource_path(group: &str, version: &str, segs: &[String]) -> Route {
    let (watch_prefix, segs) = match segs.first().map(String::as_str) {
        Some("watch") => (true, &segs[1..]),
        _ => (false, segs),
    };
    let mk = |namespace: Option<&String>, rest: &[String]| -> Route {
        // `<resource>/<name>/proxy/<path...>`: the path is the proxied one's.
        let rest = match rest.get(2) {
            Some(sub) if sub == "proxy" => &rest[..3],
            _ => rest,
        };
        if rest.is_empty() || rest.len() > 3 || rest.iter().any(String::is_empty) {
            return Route::Unknown;
        }
        Route::Resource(ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: namespace.cloned(),
            resource: rest[0].clone(),
            name: rest.get(1).cloned(),
            subresource: rest.get(2).cloned(),
            watch_prefix,
        })
    };
    match segs {
        [ns_kw, ns, rest @ ..]
            if ns_kw == "namespaces"
                && !rest.is_empty()
                && !(rest.len() == 1 && (rest[0] == "status" || rest[0] == "finalize")) =>
        {
            mk(Some(ns), rest)
        }
        rest => mk(None, rest),
    }
}

/// Routes a request path.
pub(crate) fn route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    let segs: Vec<String> = trimmed.split('/').skip(1).map(decode_segment).collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["version"] => Route::Version,
        ["metrics"] => Route::Metrics,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::CoreRoot,
        ["api", "v1"] => Route::GroupVersion(String::new(), "v1".into()),
        ["api", "v1", ..] => resource_path("", "v1", &segs[2..]),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v] => Route::GroupVersion(g.to_string(), v.to_string()),
        ["apis", g, v, ..] => resource_path(g, v, &segs[3..]),
        _ => Route::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(r: Route) -> ResourcePath {
        match r {
            Route::Resource(p) => p,
            other => panic!("not a resource route: {other:?}"),
        }
    }

    #[test]
    fn routes_namespaced_cluster_and_watch_paths() {
        let p = res(route("/api/v1/namespaces/t02/configmaps/cm1"));
        assert_eq!(
            (
                p.namespace.as_deref(),
                p.resource.as_str(),
                p.name.as_deref()
            ),
            (Some("t02"), "configmaps", Some("cm1"))
        );
        let p = res(route("/api/v1/namespaces/t11"));
        assert_eq!(
            (p.namespace, p.resource.as_str(), p.name.as_deref()),
            (None, "namespaces", Some("t11"))
        );
        let p = res(route("/api/v1/namespaces/t11/finalize"));
        assert_eq!(
            (p.name.as_deref(), p.subresource.as_deref()),
            (Some("t11"), Some("finalize"))
        );
        let p = res(route("/api/v1/watch/namespaces/t07/configmaps/w-0"));
        assert!(p.watch_prefix);
        let p = res(route(
            "/apis/example.com/v1/namespaces/t09/widgets/w1/status",
        ));
        assert_eq!(
            (p.group.as_str(), p.subresource.as_deref()),
            ("example.com", Some("status"))
        );
        let p = res(route("/apis/example.com/v1/widgets"));
        assert_eq!((p.namespace, p.name), (None, None));
        assert_eq!(route("/nosuchpath"), Route::Unknown);
        assert_eq!(route("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(route("/api/v1/namespaces/a/b/c/d/e"), Route::Unknown);
    }
}
