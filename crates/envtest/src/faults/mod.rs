//! Fault injection: requests answered with the failures a real API server
//! gives under load or trouble, watches cut mid-stream and the watch
//! history dropped, so that operators can be shown to converge anyway.
//!
//! A faulted request is answered before it is served, so a failed write is
//! never applied. Which requests fail is decided by draws from the seed: the
//! n-th request with a given method and path gets the same answer in every
//! run with the same seed, however requests to other paths interleave.
//! Every fault is logged (target `opctl_envtest::faults`) and counted in
//! `opctl_envtest_injected_faults_total`.

pub(crate) mod spec;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use futures::{Future, StreamExt};

use crate::error::{ApiError, Cause, Details};
use crate::metrics::{FaultLabels, Metrics, RequestLabels};
pub(crate) use spec::{CutAfter, Fault, FaultCode, FaultRule, Verb};
pub use spec::{FaultSpec, SpecError};

/// The faults of one server; clones share their state.
#[derive(Clone, Default)]
pub(crate) struct Faults(Option<Arc<Injector>>);

struct Injector {
    rules: Vec<FaultRule>,
    /// Whose requests are faulted (see [`FaultSpec::users`]).
    users: Vec<String>,
    seed: u64,
    /// How often each (rule, method, path) was drawn for.
    draws: Mutex<HashMap<(usize, String), u64>>,
    metrics: Metrics,
}

/// A request about to be served, as the fault rules see it.
pub(crate) struct Target<'a> {
    pub labels: &'a RequestLabels,
    /// Who asks (empty: envtest's administrator).
    pub user: &'a str,
    pub method: &'a str,
    pub path: &'a str,
}

impl Faults {
    /// Faults as `spec` asks, counted in `metrics`. Without a seed in the
    /// spec one is picked and logged, so that the run can be repeated.
    pub(crate) fn new(spec: FaultSpec, metrics: Metrics) -> Faults {
        if spec.rules.is_empty() {
            return Faults(None);
        }
        let seed = spec.seed.unwrap_or_else(rand::random);
        let rules: Vec<&str> = spec.rules.iter().map(|r| r.text.as_str()).collect();
        let users = match spec.users.is_empty() {
            true => String::new(),
            false => format!(" into requests of {}", spec.users.join(", ")),
        };
        tracing::info!(
            target: "opctl_envtest::faults",
            "injecting faults {}{users} with seed {seed} (add seed={seed} to the spec to repeat this run)",
            rules.join(",")
        );
        Faults(Some(Arc::new(Injector {
            rules: spec.rules,
            users: spec.users,
            seed,
            draws: Mutex::new(HashMap::new()),
            metrics,
        })))
    }

    /// How often the watch history is to be dropped, if at all.
    pub(crate) fn compaction_period(&self) -> Option<Duration> {
        self.0.as_ref()?.rules.iter().find_map(|r| match r.fault {
            Fault::Compact(period) => Some(period),
            _ => None,
        })
    }

    /// Records that the watch history was dropped.
    pub(crate) fn compacted(&self, rv: u64) {
        if let Some(inj) = &self.0 {
            tracing::info!(target: "opctl_envtest::faults", "fault compact: dropped the watch history up to resourceVersion {rv}");
            inj.count("compact", "", "");
        }
    }

    /// The answer to give instead of serving the request, if a rule fires.
    pub(crate) fn answer(&self, target: &Target<'_>) -> Option<Injected> {
        let inj = self.0.as_ref()?;
        if !spec::targets_user(&inj.users, target.user) {
            return None;
        }
        let verb = verb_of(target.labels)?;
        for (index, rule) in inj.rules.iter().enumerate() {
            let Fault::Status { code, fraction } = rule.fault else {
                continue;
            };
            if !applies(rule, verb, target.labels) || inj.draw(index, target) >= fraction {
                continue;
            }
            tracing::info!(
                target: "opctl_envtest::faults",
                "fault {}: answered {} {} with {} (rule {})",
                code.code(), target.method, target.path, code.code(), rule.text
            );
            inj.count(
                &code.code().to_string(),
                verb.name(),
                &target.labels.resource,
            );
            return Some(injected(code, rule, target));
        }
        None
    }

    /// Cuts the watch `resp` streams as the first matching `cut` rule says.
    pub(crate) fn cut_watch(&self, target: &Target<'_>, resp: Response) -> Response {
        let Some(inj) = self.0.as_ref() else {
            return resp;
        };
        if !spec::targets_user(&inj.users, target.user) {
            return resp;
        }
        let Some(rule) = inj
            .rules
            .iter()
            .find(|r| matches!(r.fault, Fault::Cut(_)) && applies(r, Verb::Watch, target.labels))
        else {
            return resp;
        };
        let Fault::Cut(after) = rule.fault else {
            return resp;
        };
        let (parts, body) = resp.into_parts();
        let mut stream = body.into_data_stream();
        let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = match after {
            CutAfter::Time(d) => Some(Box::pin(tokio::time::sleep(d))),
            CutAfter::Events(_) => None,
        };
        let mut left = match after {
            CutAfter::Events(n) => n,
            CutAfter::Time(_) => u64::MAX,
        };
        let mut done = false;
        let injector = inj.clone();
        let (path, text, resource) = (
            target.path.to_string(),
            rule.text.clone(),
            target.labels.resource.clone(),
        );
        let cut = futures::stream::poll_fn(move |cx| {
            if done {
                return Poll::Ready(None);
            }
            let expired = timer
                .as_mut()
                .is_some_and(|t| t.as_mut().poll(cx).is_ready());
            if expired || left == 0 {
                done = true;
                tracing::info!(target: "opctl_envtest::faults", "fault cut: cut the watch GET {path} (rule {text})");
                injector.count("cut", "watch", &resource);
                let err: axum::BoxError = "watch cut by fault injection".into();
                return Poll::Ready(Some(Err(err)));
            }
            let next = stream.poll_next_unpin(cx);
            if let Poll::Ready(Some(Ok(_))) = &next {
                left -= 1;
            }
            next.map(|item| item.map(|chunk| chunk.map_err(axum::BoxError::from)))
        });
        Response::from_parts(parts, Body::from_stream(cut))
    }
}

impl Injector {
    /// A uniform draw in [0, 1) for the next request to `path` under rule `index`.
    fn draw(&self, index: usize, target: &Target<'_>) -> f64 {
        let key = (index, format!("{} {}", target.method, target.path));
        let n = {
            let mut draws = self.draws.lock().unwrap_or_else(|e| e.into_inner());
            let n = draws.entry(key.clone()).or_default();
            *n += 1;
            *n
        };
        let mut h = self.seed ^ fnv1a(key.1.as_bytes()) ^ (index as u64).rotate_left(32);
        h = splitmix64(h ^ splitmix64(n));
        (h >> 11) as f64 / (1u64 << 53) as f64
    }

    fn count(&self, kind: &str, verb: &str, resource: &str) {
        self.metrics.count_fault(FaultLabels {
            kind: kind.to_string(),
            verb: verb.to_string(),
            resource: resource.to_string(),
        });
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The verb of a counted resource request (see `crate::metrics::labels`).
fn verb_of(labels: &RequestLabels) -> Option<Verb> {
    if labels.resource.is_empty() {
        return None;
    }
    Some(match labels.verb.as_str() {
        "GET" => Verb::Get,
        "LIST" => Verb::List,
        "WATCH" => Verb::Watch,
        "POST" => Verb::Create,
        "PUT" => Verb::Update,
        "PATCH" => Verb::Patch,
        "APPLY" => Verb::Apply,
        "DELETE" if labels.scope == "resource" => Verb::Delete,
        "DELETE" => Verb::DeleteCollection,
        _ => return None,
    })
}

fn applies(rule: &FaultRule, verb: Verb, labels: &RequestLabels) -> bool {
    rule.verbs.contains(&verb)
        && (rule.resources.is_empty()
            || rule
                .resources
                .iter()
                .any(|r| r.matches(&labels.group, &labels.resource, &labels.subresource)))
}

/// What the server answers instead of serving a faulted request; the HTTP
/// layer writes it as kube-apiserver does (`http::respond::injected`).
#[derive(Debug)]
pub(crate) enum Injected {
    /// A Status error: from storage (500) or a write that lost a race (409).
    Status(ApiError),
    /// API Priority and Fairness rejecting the request (429, plain text).
    TooManyRequests,
    /// The request-timeout filter's 504.
    Timeout,
}

impl Injected {
    #[cfg(test)]
    /// The HTTP status code of the answer.
    pub(crate) fn code(&self) -> u16 {
        match self {
            Injected::Status(err) => err.code,
            Injected::TooManyRequests => 429,
            Injected::Timeout => 504,
        }
    }
}

/// What kube-apiserver answers in each case.
fn injected(code: FaultCode, rule: &FaultRule, target: &Target<'_>) -> Injected {
    let why = format!("fault injected by opctl envtest (rule {})", rule.text);
    match code {
        // An error from storage: kube-apiserver's InternalError Status.
        FaultCode::InternalError => Injected::Status(
            ApiError::new(
                500,
                "InternalError",
                format!("Internal error occurred: {why}"),
            )
            .with_details(Details {
                causes: vec![Cause::new("", "", why)],
                ..Details::default()
            }),
        ),
        FaultCode::TooManyRequests => Injected::TooManyRequests,
        // The optimistic-concurrency conflict of a write that lost a race.
        FaultCode::Conflict => {
            let name = match crate::request::path::route(target.path) {
                crate::request::path::Route::Resource(p) => p.name.unwrap_or_default(),
                _ => String::new(),
            };
            Injected::Status(ApiError::stale(
                &target.labels.group,
                &target.labels.resource,
                &name,
            ))
        }
        FaultCode::Timeout => Injected::Timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(verb: &str, resource: &str, scope: &str) -> RequestLabels {
        RequestLabels {
            verb: verb.into(),
            resource: resource.into(),
            scope: scope.into(),
            component: "apiserver".into(),
            version: "v1".into(),
            ..RequestLabels::default()
        }
    }

    fn outcomes(spec: &str, paths: &[&str], verb: &str) -> Vec<Option<u16>> {
        let faults = Faults::new(spec.parse().expect("spec"), Metrics::default());
        let l = labels(verb, "configmaps", "resource");
        paths
            .iter()
            .map(|p| {
                faults
                    .answer(&Target {
                        labels: &l,
                        user: "",
                        method: "PUT",
                        path: p,
                    })
                    .map(|r| r.code())
            })
            .collect()
    }

    #[test]
    fn the_same_seed_fails_the_same_requests() {
        let paths: Vec<String> = (0..200)
            .map(|i| format!("/api/v1/namespaces/a/configmaps/c{}", i % 20))
            .collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let a = outcomes("writes:500=30%,seed=42", &paths, "PUT");
        assert_eq!(a, outcomes("writes:500=30%,seed=42", &paths, "PUT"));
        assert_ne!(a, outcomes("writes:500=30%,seed=43", &paths, "PUT"));
        let failed = a.iter().filter(|o| o.is_some()).count();
        assert!(
            (35..=85).contains(&failed),
            "about 30% of 200 fail, got {failed}"
        );
        // Requests to one path fail the same way whatever else is interleaved.
        let alone: Vec<&str> = paths
            .iter()
            .copied()
            .filter(|p| p.ends_with("/c3"))
            .collect();
        let picked: Vec<Option<u16>> = paths
            .iter()
            .zip(&a)
            .filter(|(p, _)| p.ends_with("/c3"))
            .map(|(_, o)| *o)
            .collect();
        assert_eq!(outcomes("writes:500=30%,seed=42", &alone, "PUT"), picked);
    }

    #[test]
    fn rules_select_by_verb_and_resource() {
        let faults = Faults::new(
            "create@pods:500=100%,seed=1".parse().expect("spec"),
            Metrics::default(),
        );
        let target = |l: &RequestLabels| {
            faults
                .answer(&Target {
                    labels: l,
                    user: "",
                    method: "POST",
                    path: "/p",
                })
                .map(|r| r.code())
        };
        assert_eq!(target(&labels("POST", "pods", "resource")), Some(500));
        assert_eq!(target(&labels("POST", "configmaps", "resource")), None);
        assert_eq!(target(&labels("PUT", "pods", "resource")), None);
        assert_eq!(
            target(&labels("GET", "", "")),
            None,
            "health checks never fail"
        );
    }

    #[test]
    fn user_items_spare_everyone_else() {
        let faults = Faults::new(
            "writes:500=100%,user=system:serviceaccount:*,user=jane,seed=1"
                .parse()
                .expect("spec"),
            Metrics::default(),
        );
        let l = labels("POST", "pods", "resource");
        let target = |user: &str| {
            faults
                .answer(&Target {
                    labels: &l,
                    user,
                    method: "POST",
                    path: "/p",
                })
                .map(|r| r.code())
        };
        assert_eq!(target("system:serviceaccount:default:op"), Some(500));
        assert_eq!(target("jane"), Some(500));
        assert_eq!(target("janet"), None);
        assert_eq!(target(""), None, "envtest's administrator is spared");
    }
}
