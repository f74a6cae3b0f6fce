//! Which requests kube-apiserver v1.32 counts in `apiserver_request_total`
//! and with which labels (its `endpoints/metrics` package and the route
//! table of `endpoints/installer.go`).
//!
//! Only requests that reach a registered route are counted: a path naming a
//! served resource with a method that resource has a route for, the root
//! health checks and aggregated discovery. Requests refused before routing
//! (authentication, authorization, unknown paths, methods without a route)
//! are not counted, as on kube-apiserver.

use axum::http::Method;

use crate::registry::Registry;
use crate::request::path::{ResourcePath, Route};
use crate::request::query::Query;

/// `component` of requests to the API (kube-apiserver's `APIServerComponent`).
const APISERVER: &str = "apiserver";

/// The labels of one request, all but `code`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RequestLabels {
    pub verb: String,
    pub dry_run: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: String,
    pub component: String,
}

/// What a request looks like to the labelling: its method, path route,
/// query and `Content-Type`.
pub(crate) struct RequestParts<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    pub route: &'a Route,
    pub raw_query: Option<&'a str>,
    pub query: &'a Query,
    pub content_type: Option<&'a str>,
}

impl RequestLabels {
    /// The labels kube-apiserver records for a request it routes; `None` for
    /// one it does not count. Aggregated discovery is labelled by
    /// [`RequestLabels::aggregated_discovery`] once the answer is known.
    pub(crate) fn of(registry: &Registry, req: &RequestParts<'_>) -> Option<RequestLabels> {
        match req.route {
            Route::Resource(p) => resource_labels(registry, req, p),
            // Only the root checks are instrumented, not `/healthz/ping` and the like.
            Route::Health if matches!(req.path, "/healthz" | "/livez" | "/readyz") => {
                Some(RequestLabels {
                    verb: canonical_verb(req.method, ""),
                    dry_run: dry_run(req.raw_query, req.query),
                    subresource: req.path.to_string(),
                    ..RequestLabels::default()
                })
            }
            _ => None,
        }
    }

    /// `/api` or `/apis` answered with aggregated discovery: a GET whose
    /// subresource is the path without its slash.
    pub(crate) fn aggregated_discovery(req: &RequestParts<'_>, core: bool) -> RequestLabels {
        RequestLabels {
            verb: canonical_verb(req.method, ""),
            dry_run: dry_run(req.raw_query, req.query),
            subresource: if core { "api" } else { "apis" }.to_string(),
            component: APISERVER.to_string(),
            ..RequestLabels::default()
        }
    }

    /// The labels of `apiserver_longrunning_requests`: no `dry_run`, and the
    /// scope of the request itself (kube-apiserver's `CleanScope`).
    pub(crate) fn longrunning(&self, p: &ResourcePath, query: &Query) -> RequestLabels {
        // A list or watch naming one object by field selector has scope "resource".
        let named = p.name.is_some()
            || query
                .get("fieldSelector")
                .is_some_and(|s| s.split(',').any(|t| t.starts_with("metadata.name=")));
        let scope = if named {
            "resource"
        } else if p.namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        };
        RequestLabels {
            dry_run: String::new(),
            scope: scope.to_string(),
            ..self.clone()
        }
    }

    pub(crate) fn is_watch(&self) -> bool {
        self.verb == "WATCH"
    }

    /// The label pairs in name order: with `code` and `dry_run` for
    /// `apiserver_request_total`, without for the long-running gauge.
    pub(crate) fn pairs(&self, code: Option<u16>) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("component", self.component.clone()),
            ("group", self.group.clone()),
            ("resource", self.resource.clone()),
            ("scope", self.scope.clone()),
            ("subresource", self.subresource.clone()),
            ("verb", self.verb.clone()),
            ("version", self.version.clone()),
        ];
        if let Some(code) = code {
            pairs.push(("code", code.to_string()));
            pairs.push(("dry_run", self.dry_run.clone()));
            pairs.sort_by_key(|(name, _)| *name);
        }
        pairs
    }
}

fn resource_labels(
    registry: &Registry,
    req: &RequestParts<'_>,
    p: &ResourcePath,
) -> Option<RequestLabels> {
    let res = registry.get(&p.group, &p.version, &p.resource)?;
    let verb = route_verb(req.method, p, req.query)?;
    // The route table: which paths and methods a resource has routes for.
    let shape_ok = if res.namespaced {
        p.namespace.is_some() || (p.name.is_none() && matches!(verb, "list" | "watch"))
    } else {
        p.namespace.is_none()
    };
    let supported = match p.subresource.as_deref() {
        None => res.supports(verb) && !(verb == "create" && p.name.is_some()),
        Some(sub) => res
            .subresource_verbs(sub)
            .is_some_and(|verbs| verbs.contains(&verb)),
    };
    if !shape_ok || !supported {
        return None;
    }
    // installer.go: namespaced routes are "namespace", named ones and POSTs
    // "resource", the all-namespaces and cluster-scoped collections "cluster".
    let scope = if p.name.is_some() || *req.method == Method::POST {
        "resource"
    } else if p.namespace.is_some() {
        "namespace"
    } else {
        "cluster"
    };
    let mut reported = canonical_verb(req.method, scope);
    if p.watch_prefix || watch_param(req.method, req.query) {
        reported = "WATCH".to_string();
    } else if *req.method == Method::PATCH && req.content_type == Some(APPLY_PATCH) {
        reported = "APPLY".to_string();
    }
    Some(RequestLabels {
        verb: reported,
        dry_run: dry_run(req.raw_query, req.query),
        group: p.group.clone(),
        version: p.version.clone(),
        resource: p.resource.clone(),
        subresource: p.subresource.clone().unwrap_or_default(),
        scope: scope.to_string(),
        component: APISERVER.to_string(),
    })
}

/// `CleanVerb` compares the Content-Type exactly, parameters included.
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The authorization verb of the route a request takes, `None` when no
/// route takes this method.
fn route_verb(method: &Method, p: &ResourcePath, query: &Query) -> Option<&'static str> {
    let named = p.name.is_some();
    Some(match *method {
        Method::GET | Method::HEAD if p.watch_prefix => "watch",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD if watch_param(method, query) => "watch",
        Method::GET | Method::HEAD => "list",
        Method::POST => "create",
        Method::PUT if named => "update",
        Method::PATCH if named => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => return None,
    })
}

/// `CanonicalVerb`: the HTTP method upper-cased, GET and HEAD of anything
/// but one object reported as LIST.
fn canonical_verb(method: &Method, scope: &str) -> String {
    match *method {
        Method::GET | Method::HEAD if scope != "resource" && !scope.is_empty() => "LIST".into(),
        Method::GET | Method::HEAD => "GET".into(),
        ref other => other.as_str().to_ascii_uppercase(),
    }
}

/// `getVerbIfWatch`: a GET whose first `watch` value is anything but "0"
/// or "false" (any case) is a watch.
fn watch_param(method: &Method, query: &Query) -> bool {
    *method == Method::GET
        && query
            .get("watch")
            .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"))
}

/// `cleanDryRun`: "" without the parameter, "invalid" unless every value is
/// "All", else the distinct values sorted and joined with commas.
fn dry_run(raw_query: Option<&str>, query: &Query) -> String {
    if !raw_query.is_some_and(|q| q.contains("dryRun")) {
        return String::new();
    }
    let mut values = query.all("dryRun");
    if values.iter().any(|v| *v != "All") {
        return "invalid".to_string();
    }
    values.sort_unstable();
    values.dedup();
    values.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::request::path::route;

    fn labels(method: Method, path_and_query: &str, content_type: Option<&str>) -> Option<String> {
        let registry = Registry::new(Vec::new());
        let (path, raw) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        let r = route(path);
        let query = Query::parse(raw);
        let req = RequestParts {
            method: &method,
            path,
            route: &r,
            raw_query: raw,
            query: &query,
            content_type,
        };
        RequestLabels::of(&registry, &req).map(|l| {
            format!(
                "{} {} {}/{} {} {} {} {}",
                l.verb,
                l.dry_run,
                l.group,
                l.version,
                l.resource,
                l.subresource,
                l.scope,
                l.component
            )
        })
    }

    #[test]
    fn verbs_and_scopes_follow_the_route_table() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/a/pods/p",
                None,
                "GET  /v1 pods  resource apiserver",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods",
                None,
                "LIST  /v1 pods  namespace apiserver",
            ),
            (
                Method::GET,
                "/api/v1/pods",
                None,
                "LIST  /v1 pods  cluster apiserver",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods?watch=true",
                None,
                "WATCH  /v1 pods  namespace apiserver",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods?watch=1",
                None,
                "WATCH  /v1 pods  namespace apiserver",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods?watch=false",
                None,
                "LIST  /v1 pods  namespace apiserver",
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/a/pods",
                None,
                "WATCH  /v1 pods  namespace apiserver",
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/a/pods/p",
                None,
                "WATCH  /v1 pods  resource apiserver",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/a/pods",
                None,
                "POST  /v1 pods  resource apiserver",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/a/pods/p/status",
                None,
                "PUT  /v1 pods status resource apiserver",
            ),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/a/deployments/d",
                Some("application/merge-patch+json"),
                "PATCH  apps/v1 deployments  resource apiserver",
            ),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/a/deployments/d",
                Some("application/apply-patch+yaml"),
                "APPLY  apps/v1 deployments  resource apiserver",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/pods/p",
                None,
                "DELETE  /v1 pods  resource apiserver",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/pods",
                None,
                "DELETE  /v1 pods  namespace apiserver",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/pods?dryRun=All",
                None,
                "DELETE All /v1 pods  namespace apiserver",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/a/pods?dryRun=All&dryRun=All",
                None,
                "POST All /v1 pods  resource apiserver",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/a/pods?dryRun=Some",
                None,
                "POST invalid /v1 pods  resource apiserver",
            ),
            (
                Method::GET,
                "/api/v1/namespaces",
                None,
                "LIST  /v1 namespaces  cluster apiserver",
            ),
            (
                Method::POST,
                "/api/v1/namespaces",
                None,
                "POST  /v1 namespaces  resource apiserver",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/a/finalize",
                None,
                "PUT  /v1 namespaces finalize resource apiserver",
            ),
            (Method::GET, "/healthz", None, "GET  /  /healthz  "),
            (Method::HEAD, "/readyz", None, "GET  /  /readyz  "),
        ];
        for (method, path, ct, want) in cases {
            assert_eq!(
                labels(method.clone(), path, ct).as_deref(),
                Some(want),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn requests_without_a_route_are_not_counted() {
        for (method, path) in [
            (Method::GET, "/api/v1/namespaces/a/nosuchthings"),
            (Method::GET, "/apis/nosuch.example.com/v1/things"),
            (Method::POST, "/api/v1/pods"),
            (Method::PUT, "/api/v1/namespaces/a/pods"),
            (Method::POST, "/api/v1/namespaces/a/pods/p"),
            (Method::GET, "/api/v1/namespaces/a/pods/p/nosuch"),
            (Method::GET, "/api/v1/namespaces/a/nodes"),
            (Method::GET, "/version"),
            (Method::GET, "/metrics"),
            (Method::GET, "/healthz/ping"),
            (Method::GET, "/api/v1"),
        ] {
            assert_eq!(labels(method.clone(), path, None), None, "{method} {path}");
        }
    }
}
