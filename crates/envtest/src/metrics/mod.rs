//! `/metrics`: kube-apiserver's request counters, so that tests and
//! benchmarks can count what a client asks for (`apiserver_request_total`),
//! plus the faults envtest injected (see `crate::faults`).
//!
//! Served in the Prometheus text format as kube-apiserver serves it: one
//! family per metric, labels sorted by name, series kept once seen.

pub(crate) mod labels;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::Response;
use futures::StreamExt;

use crate::registry::Registry;
use crate::request::path::{Route, route};
use crate::request::query::Query;
pub(crate) use labels::{RequestLabels, RequestParts};

/// The content type of the Prometheus text format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const REQUEST_TOTAL: &str = "apiserver_request_total";
const REQUEST_TOTAL_HELP: &str = "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.";
const LONGRUNNING: &str = "apiserver_longrunning_requests";
const LONGRUNNING_HELP: &str = "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.";
const FAULTS_TOTAL: &str = "opctl_envtest_injected_faults_total";
const FAULTS_TOTAL_HELP: &str =
    "Faults injected by opctl envtest (--faults), by kind, verb and resource.";

/// A fault injected into a request or watch (see `crate::faults`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct FaultLabels {
    pub kind: String,
    pub verb: String,
    pub resource: String,
}

#[derive(Default)]
struct Series {
    requests: BTreeMap<(RequestLabels, u16), u64>,
    longrunning: BTreeMap<RequestLabels, i64>,
    faults: BTreeMap<FaultLabels, u64>,
}

/// The server's counters; clones share them.
#[derive(Clone, Default)]
pub(crate) struct Metrics(Arc<Mutex<Series>>);

impl Metrics {
    fn series(&self) -> std::sync::MutexGuard<'_, Series> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one finished request answered with `code`.
    pub(crate) fn count(&self, labels: RequestLabels, code: u16) {
        *self.series().requests.entry((labels, code)).or_default() += 1;
    }

    /// Counts one injected fault.
    pub(crate) fn count_fault(&self, labels: FaultLabels) {
        *self.series().faults.entry(labels).or_default() += 1;
    }

    fn add_longrunning(&self, labels: &RequestLabels, delta: i64) {
        *self.series().longrunning.entry(labels.clone()).or_default() += delta;
    }

    /// Starts observing a request: what it will be counted as once answered.
    pub(crate) fn begin(
        &self,
        registry: &Registry,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Pending {
        let path = uri.path();
        let r = route(path);
        let query = Query::parse(uri.query());
        let parts = RequestParts {
            method,
            path,
            route: &r,
            raw_query: uri.query(),
            query: &query,
            content_type: headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        };
        let mut pending = Pending {
            metrics: self.clone(),
            labels: RequestLabels::of(registry, &parts),
            longrunning: None,
        };
        match (&r, &pending.labels) {
            (Route::Resource(p), Some(l)) if l.is_watch() => {
                pending.longrunning = Some(l.longrunning(p, &query));
            }
            (Route::CoreRoot | Route::Groups, None) => {
                // Counted only if the answer turns out to be aggregated discovery.
                let core = r == Route::CoreRoot;
                pending.longrunning = Some(RequestLabels::aggregated_discovery(&parts, core));
            }
            _ => {}
        }
        pending
    }

    /// The Prometheus text exposition of every series.
    pub(crate) fn render(&self) -> String {
        let series = self.series();
        let mut out = String::new();
        let longrunning = series.longrunning.iter().map(|(l, v)| (l.pairs(None), *v));
        family(
            &mut out,
            LONGRUNNING,
            LONGRUNNING_HELP,
            "gauge",
            longrunning,
        );
        let requests = series
            .requests
            .iter()
            .map(|((l, code), v)| (l.pairs(Some(*code)), *v as i64));
        family(
            &mut out,
            REQUEST_TOTAL,
            REQUEST_TOTAL_HELP,
            "counter",
            requests,
        );
        let faults = series.faults.iter().map(|(l, v)| {
            let pairs = vec![
                ("kind", l.kind.clone()),
                ("resource", l.resource.clone()),
                ("verb", l.verb.clone()),
            ];
            (pairs, *v as i64)
        });
        family(&mut out, FAULTS_TOTAL, FAULTS_TOTAL_HELP, "counter", faults);
        out
    }
}

/// One metric: its header and samples, labels in name order. Like the
/// Prometheus client, a metric without samples is left out.
fn family(
    out: &mut String,
    name: &str,
    help: &str,
    kind: &str,
    samples: impl Iterator<Item = (Vec<(&'static str, String)>, i64)>,
) {
    for (i, (pairs, value)) in samples.enumerate() {
        if i == 0 {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
        }
        let labels: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
            .collect();
        let _ = writeln!(out, "{name}{{{}}} {value}", labels.join(","));
    }
}

/// Label values escape backslash, double quote and newline.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A request being served, counted when its answer is known.
pub(crate) struct Pending {
    metrics: Metrics,
    labels: Option<RequestLabels>,
    /// A watch's gauge labels, or the labels `/api` and `/apis` get when
    /// answered with aggregated discovery.
    longrunning: Option<RequestLabels>,
}

impl Pending {
    /// What the request is counted as, if it is counted.
    pub(crate) fn labels(&self) -> Option<&RequestLabels> {
        self.labels.as_ref()
    }

    /// Counts the request answered by `resp`. A watch is counted when its
    /// stream ends (kube-apiserver counts once the handler returns) and
    /// meanwhile shows in `apiserver_longrunning_requests`.
    pub(crate) fn finish(self, resp: Response) -> Response {
        let code = resp.status().as_u16();
        let Some(labels) = self.labels else {
            let aggregated = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.contains("g=apidiscovery.k8s.io"));
            if let (true, Some(discovery)) = (aggregated, self.longrunning) {
                self.metrics.count(discovery, code);
            }
            return resp;
        };
        let Some(gauge) = self.longrunning.filter(|_| code == 200) else {
            self.metrics.count(labels, code);
            return resp;
        };
        self.metrics.add_longrunning(&gauge, 1);
        let mut open = Some(OpenWatch {
            metrics: self.metrics,
            labels,
            gauge,
        });
        let (parts, body) = resp.into_parts();
        let mut stream = body.into_data_stream();
        // `open` lives in the closure: counted at the end of the stream, or
        // when the client goes away and the body is dropped.
        let counted = futures::stream::poll_fn(move |cx| {
            let next = stream.poll_next_unpin(cx);
            if matches!(next, Poll::Ready(None)) {
                open.take();
            }
            next
        });
        Response::from_parts(parts, Body::from_stream(counted))
    }
}

/// A watch being served: counted once, when its stream ends or is dropped.
struct OpenWatch {
    metrics: Metrics,
    labels: RequestLabels,
    gauge: RequestLabels,
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.metrics.add_longrunning(&self.gauge, -1);
        self.metrics.count(std::mem::take(&mut self.labels), 200);
    }
}
