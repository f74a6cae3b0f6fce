//! Prometheus metrics of the controllers, served on /metrics under the names
//! and labels controller-runtime uses, so that dashboards and alerts made
//! for Go operators work unchanged:
//!
//! - `controller_runtime_reconcile_total{controller,result}`: `result` is
//!   `success`, `error`, `requeue` or `requeue_after` (a reconcile that asked
//!   to run again after a delay);
//! - `controller_runtime_reconcile_errors_total{controller}`;
//! - `controller_runtime_reconcile_time_seconds{controller}` (histogram);
//! - `controller_runtime_max_concurrent_reconciles{controller}`;
//! - `controller_runtime_active_workers{controller}`: reconciles running now.
//!
//! kube-rs's scheduler keeps its queue to itself, so there is no
//! `workqueue_depth`.

use std::sync::atomic::AtomicI64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The buckets of controller-runtime's reconcile time histogram, in seconds.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The values of the `result` label.
const RESULTS: [Outcome; 4] = [
    Outcome::Success,
    Outcome::Error,
    Outcome::Requeue,
    Outcome::RequeueAfter,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

/// How a reconcile ended, as the `result` label says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Done; runs again on the next change.
    Success,
    /// Failed; retried with backoff.
    Error,
    /// Asked to run again at once.
    Requeue,
    /// Asked to run again after a delay.
    RequeueAfter,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Requeue => "requeue",
            Outcome::RequeueAfter => "requeue_after",
        }
    }
}

type TimeFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// The controllers' metrics, registered once per manager.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    time: TimeFamily,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active: Family<ControllerLabels, Gauge<i64, AtomicI64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconciles.clone(),
        );
        let errors = Family::<ControllerLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        let time: TimeFamily =
            Family::new_with_constructor(|| Histogram::new(RECONCILE_TIME_BUCKETS));
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            time.clone(),
        );
        let max_concurrent = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent.clone(),
        );
        let active = Family::<ControllerLabels, Gauge<i64, AtomicI64>>::default();
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active.clone(),
        );
        Self {
            registry,
            reconciles,
            errors,
            time,
            max_concurrent,
            active,
        }
    }
}

impl Metrics {
    /// Lists `controller` from the start, with its counters at zero (as
    /// controller-runtime does) and its concurrency limit.
    pub(crate) fn register_controller(&self, controller: &str, max_concurrent_reconciles: i64) {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        for outcome in RESULTS {
            drop(
                self.reconciles
                    .get_or_create(&result_labels(controller, outcome)),
            );
        }
        drop(self.errors.get_or_create(&labels));
        drop(self.time.get_or_create(&labels));
        drop(self.active.get_or_create(&labels));
        self.max_concurrent
            .get_or_create(&labels)
            .set(max_concurrent_reconciles);
    }

    /// Counts a reconcile of `controller` as running until the returned
    /// guard is dropped.
    pub(crate) fn worker(&self, controller: &str) -> Worker {
        let gauge = self.active.get_or_create(&ControllerLabels {
            controller: controller.to_owned(),
        });
        gauge.inc();
        Worker(gauge.clone())
    }

    /// Records one reconcile of `controller` that took `time`.
    pub(crate) fn observe(&self, controller: &str, outcome: Outcome, time: Duration) {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.time.get_or_create(&labels).observe(time.as_secs_f64());
        if outcome == Outcome::Error {
            self.errors.get_or_create(&labels).inc();
        }
        self.reconciles
            .get_or_create(&result_labels(controller, outcome))
            .inc();
    }

    /// The metrics in the Prometheus text format.
    pub(crate) fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

fn result_labels(controller: &str, outcome: Outcome) -> ResultLabels {
    ResultLabels {
        controller: controller.to_owned(),
        result: outcome.label().to_owned(),
    }
}

/// A running reconcile, counted in `controller_runtime_active_workers`.
#[derive(Debug)]
pub(crate) struct Worker(Gauge<i64, AtomicI64>);

impl Drop for Worker {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(metrics: &Metrics) -> String {
        metrics.encode().expect("metrics encode")
    }

    #[test]
    fn a_registered_controller_is_listed_at_zero() {
        let metrics = Metrics::default();
        metrics.register_controller("widget", 4);
        let text = encoded(&metrics);
        for result in ["success", "error", "requeue", "requeue_after"] {
            let line = [
                r#"controller_runtime_reconcile_total{controller="widget",result=""#,
                result,
                r#""} 0"#,
            ]
            .concat();
            assert!(text.contains(&line), "{line}\n{text}");
        }
        for line in [
            r#"controller_runtime_reconcile_errors_total{controller="widget"} 0"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="widget"} 4"#,
            r#"controller_runtime_active_workers{controller="widget"} 0"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="widget"} 0"#,
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }

    #[test]
    fn reconciles_are_counted_per_result_and_timed() {
        let metrics = Metrics::default();
        let worker = metrics.worker("widget");
        assert!(
            encoded(&metrics)
                .contains(r#"controller_runtime_active_workers{controller="widget"} 1"#)
        );
        drop(worker);
        let second = Duration::from_secs(1);
        metrics.observe("widget", Outcome::Success, second);
        metrics.observe("widget", Outcome::Error, second);
        metrics.observe("widget", Outcome::RequeueAfter, second);
        let text = encoded(&metrics);
        for line in [
            r#"controller_runtime_reconcile_total{controller="widget",result="success"} 1"#,
            r#"controller_runtime_reconcile_total{controller="widget",result="error"} 1"#,
            r#"controller_runtime_reconcile_total{controller="widget",result="requeue_after"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="widget"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="widget"} 3"#,
            r#"controller_runtime_reconcile_time_seconds_bucket{le="1.0",controller="widget"} 3"#,
            r#"controller_runtime_active_workers{controller="widget"} 0"#,
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }
}
