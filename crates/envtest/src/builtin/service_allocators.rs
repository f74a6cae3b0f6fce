//! Cluster IPs from 10.96.0.0/12 and node ports from 30000–32767, handed out
//! to Services as kube-apiserver's allocators do: requested values honoured
//! when free and in range, others picked at random; `None` stays headless.
//!
//! Allocations belong to a Service (`namespace/name`), so allocating again
//! for the same Service (an update) keeps what it holds and releases what its
//! new spec no longer needs.

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

use rand::Rng;
use serde_json::{Value, json};

use crate::error::Cause;

const NETWORK: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const PREFIX_LEN: u32 = 12;
const SIZE: u32 = 1 << (32 - PREFIX_LEN);
const NODE_PORT_MIN: i64 = 30000;
const NODE_PORT_MAX: i64 = 32767;
/// The `kubernetes` Service in `default` holds the first address.
const KUBERNETES_SERVICE: &str = "default/kubernetes";

/// What one Service holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Holding {
    ips: BTreeSet<u32>,
    ports: BTreeSet<i64>,
}

/// Cluster IPs and node ports handed out to Services.
#[derive(Debug)]
pub(crate) struct Allocator {
    ips: HashMap<u32, String>,
    ports: HashMap<i64, String>,
    held: HashMap<String, Holding>,
}

impl Default for Allocator {
    fn default() -> Self {
        let mut allocator = Allocator {
            ips: HashMap::new(),
            ports: HashMap::new(),
            held: HashMap::new(),
        };
        let first = NETWORK + 1;
        allocator.ips.insert(first, KUBERNETES_SERVICE.to_string());
        allocator
            .held
            .entry(KUBERNETES_SERVICE.to_string())
            .or_default()
            .ips
            .insert(first);
        allocator
    }
}

fn owner_of(svc: &Value) -> String {
    let meta = svc.get("metadata");
    let field = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    format!("{}/{}", field("namespace"), field("name"))
}

fn in_range(ip: u32) -> bool {
    // Neither the network address nor the broadcast address is usable.
    ip > NETWORK && ip < NETWORK + SIZE - 1
}

fn node_ports_needed(spec: &serde_json::Map<String, Value>) -> bool {
    match spec.get("type").and_then(Value::as_str) {
        Some("NodePort") => true,
        Some("LoadBalancer") => {
            spec.get("allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                != Some(false)
        }
        _ => false,
    }
}

impl Allocator {
    /// Assigns `spec.clusterIP(s)`, IP families and node ports a Service needs,
    /// honouring requested values (422 causes when taken or out of range). On
    /// dry run the values are shown but not reserved. Calling it again for the
    /// same Service (an update) keeps its values and frees what it no longer
    /// needs. Call it after `apply_defaults` and, on update, after
    /// `prepare_for_update` (which restores the values a PUT leaves out), and
    /// before `validate`; as in kube-apiserver, its causes are reported alone.
    /// The server must call [`Allocator::release_service`] when the Service is
    /// deleted or its creation fails after allocation.
    pub(crate) fn allocate_service(
        &mut self,
        svc: &mut Value,
        dry_run: bool,
    ) -> Result<(), Vec<Cause>> {
        let owner = owner_of(svc);
        let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        let service_type = spec
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string();
        let mut wanted = Holding::default();
        let mut causes = Vec::new();
        let mut rng = rand::rng();

        if service_type != "ExternalName" {
            let requested = spec
                .get("clusterIP")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .or_else(|| {
                    spec.get("clusterIPs")
                        .and_then(|l| l.get(0))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            let headless = requested.as_deref() == Some("None");
            let selectorless = spec
                .get("selector")
                .and_then(Value::as_object)
                .is_none_or(|s| s.is_empty());
            if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
                let policy = if headless && selectorless {
                    "RequireDualStack"
                } else {
                    "SingleStack"
                };
                spec.insert("ipFamilyPolicy".into(), json!(policy));
            }
            if spec
                .get("ipFamilies")
                .and_then(Value::as_array)
                .is_none_or(|l| l.is_empty())
            {
                spec.insert("ipFamilies".into(), json!(["IPv4"]));
            }
            let policy = spec
                .get("ipFamilyPolicy")
                .and_then(Value::as_str)
                .unwrap_or("");
            if policy == "RequireDualStack" && !headless {
                causes.push(Cause::invalid(
                    "spec.ipFamilyPolicy",
                    &json!("RequireDualStack"),
                    "this cluster is not configured for dual-stack services",
                ));
            }
            if headless {
                spec.insert("clusterIP".into(), json!("None"));
                spec.insert("clusterIPs".into(), json!(["None"]));
            } else {
                let ip = match requested {
                    Some(text) => match text.parse::<Ipv4Addr>() {
                        Ok(addr) => {
                            let ip = u32::from(addr);
                            let taken_by_other = self.ips.get(&ip).is_some_and(|o| *o != owner);
                            let detail = if !in_range(ip) {
                                Some(
                                    "provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12",
                                )
                            } else if taken_by_other {
                                Some("provided IP is already allocated")
                            } else {
                                None
                            };
                            if let Some(detail) = detail {
                                causes.push(Cause::new(
                                    "FieldValueInvalid",
                                    "spec.clusterIPs",
                                    format!(
                                        "Invalid value: []string{{{text:?}}}: failed to allocate IP {text}: {detail}"
                                    ),
                                ));
                            }
                            Some(ip)
                        }
                        // Validation reports addresses that do not parse.
                        Err(_) => None,
                    },
                    None => self.free_ip(&mut rng),
                };
                if let Some(ip) = ip {
                    let text = Ipv4Addr::from(ip).to_string();
                    spec.insert("clusterIP".into(), json!(text));
                    spec.insert("clusterIPs".into(), json!([text]));
                    wanted.ips.insert(ip);
                }
            }
        }

        // As kube-apiserver, the first failed allocation is reported alone.
        if !causes.is_empty() {
            return Err(causes);
        }
        if node_ports_needed(spec) {
            wanted.ports = self.node_ports(spec, &owner, &mut rng)?;
        }

        if !causes.is_empty() {
            return Err(causes);
        }
        if !dry_run {
            self.commit(&owner, wanted);
        }
        Ok(())
    }

    /// `initNodePorts`: ports sharing a port number (`53/TCP`, `53/UDP`) share
    /// a node port; requested values are checked, others picked.
    fn node_ports(
        &self,
        spec: &mut serde_json::Map<String, Value>,
        owner: &str,
        rng: &mut impl Rng,
    ) -> Result<BTreeSet<i64>, Vec<Cause>> {
        let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else {
            return Ok(BTreeSet::new());
        };
        let number = |p: &Value| p.get("port").and_then(Value::as_i64).unwrap_or(0);
        let node_port = |p: &Value| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        let mut chosen: BTreeSet<i64> = BTreeSet::new();
        let mut by_port: HashMap<i64, i64> = HashMap::new();
        let claim = |chosen: &mut BTreeSet<i64>,
                     i: usize,
                     requested: i64|
         -> Result<(), Vec<Cause>> {
            let detail = if !(NODE_PORT_MIN..=NODE_PORT_MAX).contains(&requested) {
                Some(
                    "provided port is not in the valid range. The range of valid ports is 30000-32767",
                )
            } else if chosen.contains(&requested)
                || self.ports.get(&requested).is_some_and(|o| o != owner)
            {
                Some("provided port is already allocated")
            } else {
                None
            };
            match detail {
                Some(detail) => Err(vec![Cause::invalid(
                    format!("spec.ports[{i}].nodePort"),
                    &json!(requested),
                    detail,
                )]),
                None => {
                    chosen.insert(requested);
                    Ok(())
                }
            }
        };
        for i in 0..ports.len() {
            let Some(port) = ports.get(i) else { continue };
            let (port_number, requested) = (number(port), node_port(port));
            let assigned = match by_port.get(&port_number) {
                None => {
                    // A value requested on this or a later port of the same number.
                    let wanted = ports
                        .iter()
                        .skip(i)
                        .filter(|p| number(p) == port_number)
                        .map(node_port)
                        .find(|np| *np != 0)
                        .unwrap_or(0);
                    if wanted != 0 {
                        claim(&mut chosen, i, wanted)?;
                        wanted
                    } else {
                        let Some(free) = self.free_port(rng, &chosen) else {
                            return Err(vec![Cause::new(
                                "FieldValueInvalid",
                                format!("spec.ports[{i}].nodePort"),
                                "Internal error: range is full",
                            )]);
                        };
                        chosen.insert(free);
                        free
                    }
                }
                Some(shared) if requested == 0 || requested == *shared => *shared,
                Some(_) => {
                    claim(&mut chosen, i, requested)?;
                    requested
                }
            };
            by_port.entry(port_number).or_insert(assigned);
            if let Some(port) = ports.get_mut(i).and_then(Value::as_object_mut) {
                port.insert("nodePort".into(), json!(assigned));
            }
        }
        Ok(chosen)
    }

    fn free_ip(&self, rng: &mut impl Rng) -> Option<u32> {
        for _ in 0..64 {
            let candidate = NETWORK + rng.random_range(2..SIZE - 1);
            if !self.ips.contains_key(&candidate) {
                return Some(candidate);
            }
        }
        (NETWORK + 2..NETWORK + SIZE - 1).find(|ip| !self.ips.contains_key(ip))
    }

    fn free_port(&self, rng: &mut impl Rng, chosen: &BTreeSet<i64>) -> Option<i64> {
        let free = |p: &i64| !self.ports.contains_key(p) && !chosen.contains(p);
        for _ in 0..64 {
            let candidate = rng.random_range(NODE_PORT_MIN..=NODE_PORT_MAX);
            if free(&candidate) {
                return Some(candidate);
            }
        }
        (NODE_PORT_MIN..=NODE_PORT_MAX).find(free)
    }

    fn commit(&mut self, owner: &str, wanted: Holding) {
        let previous = self.held.remove(owner).unwrap_or_default();
        for ip in previous.ips.difference(&wanted.ips) {
            self.ips.remove(ip);
        }
        for port in previous.ports.difference(&wanted.ports) {
            self.ports.remove(port);
        }
        for ip in &wanted.ips {
            self.ips.insert(*ip, owner.to_string());
        }
        for port in &wanted.ports {
            self.ports.insert(*port, owner.to_string());
        }
        if wanted != Holding::default() {
            self.held.insert(owner.to_string(), wanted);
        }
    }

    /// Frees what a deleted Service held.
    pub(crate) fn release_service(&mut self, svc: &Value) {
        self.commit(&owner_of(svc), Holding::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn allocates_from_the_range_never_network_or_first() {
        let mut alloc = Allocator::default();
        for i in 0..50 {
            let mut s = svc(
                &format!("s{i}"),
                json!({"type": "ClusterIP", "ports": [{"port": 80}]}),
            );
            alloc.allocate_service(&mut s, false).unwrap();
            let ip: Ipv4Addr = s["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
            let n = u32::from(ip);
            assert!(n > NETWORK + 1 && n < NETWORK + SIZE - 1, "{ip}");
            assert_eq!(s["spec"]["clusterIPs"], json!([ip.to_string()]));
            assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
            assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
        }
    }

    #[test]
    fn node_ports_in_range_and_duplicates_refused() {
        let mut alloc = Allocator::default();
        let mut a = svc(
            "a",
            json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30080}]}),
        );
        alloc.allocate_service(&mut a, false).unwrap();
        let p = a["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
        assert!((NODE_PORT_MIN..=NODE_PORT_MAX).contains(&p));
        assert_eq!(a["spec"]["ports"][1]["nodePort"], 30080);

        let mut b = svc(
            "b",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
        );
        let err = alloc.allocate_service(&mut b, false).unwrap_err();
        assert_eq!(err[0].field, "spec.ports[0].nodePort");
        assert_eq!(
            err[0].message,
            "Invalid value: 30080: provided port is already allocated"
        );

        let mut c = svc(
            "c",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
        );
        let err = alloc.allocate_service(&mut c, false).unwrap_err();
        assert_eq!(
            err[0].message,
            "Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"
        );

        // The owner itself may keep its port on update; after release others may take it.
        alloc.allocate_service(&mut a, false).unwrap();
        alloc.release_service(&a);
        alloc.allocate_service(&mut b, false).unwrap();
    }

    #[test]
    fn ports_of_one_number_share_a_node_port() {
        let mut alloc = Allocator::default();
        let mut dns = svc(
            "dns",
            json!({"type": "NodePort", "ports": [
                {"name": "tcp", "port": 53, "protocol": "TCP"},
                {"name": "udp", "port": 53, "protocol": "UDP", "nodePort": 30053},
                {"name": "web", "port": 80, "protocol": "TCP"}
            ]}),
        );
        alloc.allocate_service(&mut dns, false).unwrap();
        let ports = &dns["spec"]["ports"];
        assert_eq!(ports[0]["nodePort"], 30053);
        assert_eq!(ports[1]["nodePort"], 30053);
        assert_ne!(ports[2]["nodePort"], 30053);
    }

    #[test]
    fn dry_run_reserves_nothing() {
        let mut alloc = Allocator::default();
        let mut a = svc(
            "a",
            json!({"type": "NodePort", "clusterIP": "10.96.0.10", "ports": [{"port": 80, "nodePort": 30001}]}),
        );
        alloc.allocate_service(&mut a, true).unwrap();
        assert_eq!(a["spec"]["clusterIP"], "10.96.0.10");
        let mut b = svc(
            "b",
            json!({"type": "NodePort", "clusterIP": "10.96.0.10", "ports": [{"port": 80, "nodePort": 30001}]}),
        );
        alloc.allocate_service(&mut b, false).unwrap();
    }

    #[test]
    fn headless_and_requested_ips() {
        let mut alloc = Allocator::default();
        let mut h = svc(
            "h",
            json!({"clusterIP": "None", "selector": {"a": "b"}, "ports": [{"port": 80}]}),
        );
        alloc.allocate_service(&mut h, false).unwrap();
        assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(h["spec"]["ipFamilyPolicy"], "SingleStack");

        let mut k = svc(
            "x",
            json!({"clusterIP": "10.96.0.1", "ports": [{"port": 443}]}),
        );
        let err = alloc.allocate_service(&mut k, false).unwrap_err();
        assert_eq!(
            err[0].message,
            "Invalid value: []string{\"10.96.0.1\"}: failed to allocate IP 10.96.0.1: provided IP is already allocated"
        );
        let mut out = svc(
            "y",
            json!({"clusterIP": "1.2.3.4", "ports": [{"port": 443}]}),
        );
        let err = alloc.allocate_service(&mut out, false).unwrap_err();
        assert!(err[0].message.contains("not in the valid range"));
    }
}
