//! Prometheus metrics of the reconcilers, served on /metrics.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

type DurationFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// Reconcile counts and durations per controller.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    durations: DurationFamily,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "controller_reconcile",
            "Reconciles per controller and result (success or error)",
            reconciles.clone(),
        );
        let durations: DurationFamily =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.005, 2.0, 14)));
        registry.register(
            "controller_reconcile_duration_seconds",
            "Time spent in reconcile per controller",
            durations.clone(),
        );
        Self {
            registry,
            reconciles,
            durations,
        }
    }
}

impl Metrics {
    /// Starts timing a reconcile of `controller`; counted as a success unless
    /// [`ReconcileTimer::failed`] is called.
    pub fn reconcile(&self, controller: &str) -> ReconcileTimer<'_> {
        ReconcileTimer {
            metrics: self,
            controller: controller.to_owned(),
            started: Instant::now(),
            failed: false,
        }
    }

    /// Shows the reconcile counters of `controller` at zero before its first
    /// reconcile (as controller-runtime does), so that /metrics lists every
    /// running controller from the start.
    pub fn register_controller(&self, controller: &str) {
        for result in ["success", "error"] {
            let labels = ResultLabels {
                controller: controller.to_owned(),
                result: result.to_owned(),
            };
            drop(self.reconciles.get_or_create(&labels));
        }
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// Records one reconcile when dropped.
#[derive(Debug)]
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    controller: String,
    started: Instant,
    failed: bool,
}

impl ReconcileTimer<'_> {
    /// Counts this reconcile as an error.
    pub fn failed(&mut self) {
        self.failed = true;
    }
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        let controller = std::mem::take(&mut self.controller);
        let result = if self.failed { "error" } else { "success" };
        self.metrics
            .durations
            .get_or_create(&ControllerLabels {
                controller: controller.clone(),
            })
            .observe(self.started.elapsed().as_secs_f64());
        self.metrics
            .reconciles
            .get_or_create(&ResultLabels {
                controller,
                result: result.to_owned(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_controller_shows_zero_reconciles() {
        let metrics = Metrics::default();
        metrics.register_controller("widget");
        let text = metrics.encode().expect("metrics encode");
        assert!(
            text.contains(r#"controller_reconcile_total{controller="widget",result="success"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"controller_reconcile_total{controller="widget",result="error"} 0"#),
            "{text}"
        );
    }

    #[test]
    fn reconciles_are_counted_per_result() {
        let metrics = Metrics::default();
        drop(metrics.reconcile("widget"));
        let mut failing = metrics.reconcile("widget");
        failing.failed();
        drop(failing);
        let text = metrics.encode().expect("metrics encode");
        assert!(
            text.contains(r#"controller_reconcile_total{controller="widget",result="success"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"controller_reconcile_total{controller="widget",result="error"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"controller_reconcile_duration_seconds_count{controller="widget"} 2"#),
            "{text}"
        );
    }
}
