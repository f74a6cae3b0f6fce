//! Where a webhook's Service reference leads, since envtest has no cluster network.
//!
//! A `clientConfig.service {namespace, name, port}` is resolved, first match wins:
//! 1. an explicit route `namespace/name:port -> host:port` (`--webhook-route`);
//! 2. the stored `Service namespace/name`: its `spec.ports[]` entry whose
//!    `port` is the requested port leads to `127.0.0.1:<targetPort>` (a
//!    generated project's Service maps 443 to the manager's 9443, so the
//!    manager listening on the loopback interface is reached with no route);
//! 3. with no such Service, `127.0.0.1:<port>`.
//!
//! The TLS server name is always `<name>.<namespace>.svc`, as kube-apiserver
//! verifies it, whatever address the connection goes to.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::cluster::ClusterView;

/// One explicit route: the Service port `namespace/name:port` is served at `target` (`host:port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRoute {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The Service port the webhook configuration names.
    pub port: u16,
    /// `host:port`, e.g. `127.0.0.1:9443` or `[::1]:9443`.
    pub target: String,
}

impl fmt::Display for WebhookRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}:{}={}",
            self.namespace, self.name, self.port, self.target
        )
    }
}

/// Splits `host:port` (`[v6]:port` for IPv6) into its parts.
pub(crate) fn split_host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    let port = port.parse::<u16>().ok()?;
    let host = match host.strip_prefix('[') {
        Some(rest) => rest.strip_suffix(']')?,
        None if host.contains(':') => return None,
        None => host,
    };
    if host.is_empty() {
        return None;
    }
    Some((host.to_string(), port))
}

impl FromStr for WebhookRoute {
    type Err = String;

    /// Parses `NAMESPACE/NAME:PORT=HOST:PORT`.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid webhook route {s:?}: expected NAMESPACE/NAME:PORT=HOST:PORT");
        let (service, target) = s.split_once('=').ok_or_else(bad)?;
        let (namespace, name_port) = service.split_once('/').ok_or_else(bad)?;
        let (name, port) = name_port.rsplit_once(':').ok_or_else(bad)?;
        let port = port.parse::<u16>().map_err(|_| bad())?;
        if namespace.is_empty() || name.is_empty() || port == 0 {
            return Err(bad());
        }
        let (_, target_port) = split_host_port(target).ok_or_else(bad)?;
        if target_port == 0 {
            return Err(bad());
        }
        Ok(WebhookRoute {
            namespace: namespace.to_string(),
            name: name.to_string(),
            port,
            target: target.to_string(),
        })
    }
}

/// The explicit routes of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookRoutes {
    routes: BTreeMap<(String, String, u16), String>,
}

impl WebhookRoutes {
    /// No routes.
    pub fn new() -> Self {
        WebhookRoutes::default()
    }

    /// Adds (or replaces) a route.
    pub fn insert(&mut self, route: WebhookRoute) {
        self.routes
            .insert((route.namespace, route.name, route.port), route.target);
    }

    #[cfg(any(test, feature = "testing"))]
    /// Whether there are no routes.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    fn explicit(&self, namespace: &str, name: &str, port: u16) -> Option<&str> {
        self.routes
            .get(&(namespace.to_string(), name.to_string(), port))
            .map(String::as_str)
    }

    /// The `host:port` to connect to for a Service reference (see the module docs).
    pub(crate) fn resolve(
        &self,
        cluster: &dyn ClusterView,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<(String, u16), String> {
        if let Some(target) = self.explicit(namespace, name, port) {
            return split_host_port(target)
                .ok_or_else(|| format!("invalid webhook route target {target:?}"));
        }
        let Some(service) = cluster.service(namespace, name) else {
            return Ok(("127.0.0.1".to_string(), port));
        };
        let entry = service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .and_then(|ports| {
                ports
                    .iter()
                    .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
            })
            .ok_or_else(|| format!("no service port {port} found for service {name:?}"))?;
        match entry.get("targetPort") {
            None | Some(Value::Null) => Ok(("127.0.0.1".to_string(), port)),
            Some(Value::Number(n)) => n
                .as_u64()
                .and_then(|n| u16::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(|n| ("127.0.0.1".to_string(), n))
                .ok_or_else(|| format!("invalid targetPort {n} of service {name:?}")),
            Some(Value::String(s)) => match s.parse::<u16>() {
                Ok(n) if n > 0 => Ok(("127.0.0.1".to_string(), n)),
                _ => Err(format!(
                    "named targetPort {s:?} of service \"{namespace}/{name}\" cannot be resolved without Pods; give envtest a webhook route for {namespace}/{name}:{port}"
                )),
            },
            Some(other) => Err(format!("invalid targetPort {other} of service {name:?}")),
        }
    }
}

impl FromIterator<WebhookRoute> for WebhookRoutes {
    fn from_iter<I: IntoIterator<Item = WebhookRoute>>(iter: I) -> Self {
        let mut routes = WebhookRoutes::new();
        for route in iter {
            routes.insert(route);
        }
        routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    struct OneService(Value);

    impl ClusterView for OneService {
        fn namespace_labels(&self, _: &str) -> Option<BTreeMap<String, String>> {
            None
        }
        fn service(&self, namespace: &str, name: &str) -> Option<Value> {
            (namespace == "system" && name == "webhook-service").then(|| self.0.clone())
        }
    }

    #[test]
    fn parses_routes() {
        let r: WebhookRoute = "system/webhook-service:443=127.0.0.1:9443".parse().unwrap();
        assert_eq!(r.namespace, "system");
        assert_eq!(r.name, "webhook-service");
        assert_eq!(r.port, 443);
        assert_eq!(r.target, "127.0.0.1:9443");
        assert_eq!(r.to_string(), "system/webhook-service:443=127.0.0.1:9443");
        let v6: WebhookRoute = "a/b:1=[::1]:2".parse().unwrap();
        assert_eq!(split_host_port(&v6.target), Some(("::1".to_string(), 2)));
        for bad in [
            "",
            "a/b:1",
            "a/b=h:1",
            "b:1=h:1",
            "a/b:x=h:1",
            "a/b:1=h",
            "a/b:1=h:0",
            "/b:1=h:1",
            "a/b:1=::1:2",
        ] {
            assert!(bad.parse::<WebhookRoute>().is_err(), "{bad}");
        }
    }

    #[test]
    fn explicit_route_wins_over_the_service_object() {
        let cluster = OneService(json!({"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}));
        let mut routes = WebhookRoutes::new();
        assert_eq!(
            routes.resolve(&cluster, "system", "webhook-service", 443),
            Ok(("127.0.0.1".to_string(), 9443))
        );
        routes.insert("system/webhook-service:443=localhost:7000".parse().unwrap());
        assert_eq!(
            routes.resolve(&cluster, "system", "webhook-service", 443),
            Ok(("localhost".to_string(), 7000))
        );
    }

    #[test]
    fn service_ports_and_fallbacks() {
        let routes = WebhookRoutes::new();
        let cluster = OneService(json!({"spec": {"ports": [
            {"port": 443, "targetPort": "webhook"},
            {"port": 8443},
            {"port": 444, "targetPort": "9444"},
        ]}}));
        assert!(
            routes
                .resolve(&cluster, "system", "webhook-service", 443)
                .unwrap_err()
                .contains("named targetPort")
        );
        assert_eq!(
            routes.resolve(&cluster, "system", "webhook-service", 8443),
            Ok(("127.0.0.1".to_string(), 8443))
        );
        assert_eq!(
            routes.resolve(&cluster, "system", "webhook-service", 444),
            Ok(("127.0.0.1".to_string(), 9444))
        );
        assert_eq!(
            routes.resolve(&cluster, "system", "webhook-service", 1),
            Err("no service port 1 found for service \"webhook-service\"".to_string())
        );
        assert_eq!(
            routes.resolve(&cluster, "other", "svc", 443),
            Ok(("127.0.0.1".to_string(), 443))
        );
    }
}
