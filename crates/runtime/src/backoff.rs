//! Per-object exponential backoff for failed reconciles, with jitter: the
//! n-th failure in a row waits a time drawn at random from the upper half
//! of `min(1 s × 2ⁿ⁻¹, 5 min)` (0.5–1 s, 1–2 s, 2–4 s, ... 2.5–5 min), reset
//! by the next success and forgotten when the object goes. The jitter
//! spreads the retries of objects that failed together (the API server was
//! away) instead of sending them back at the same instant. Also which
//! failed requests are worth sending again ([`is_transient`]).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::core::DynamicObject;
use kube::runtime::reflector::ObjectRef;

/// An object's key: its kind, namespace and name.
pub(crate) type Key = ObjectRef<DynamicObject>;

/// Failure counts per object, shared by the controllers of one manager.
#[derive(Clone, Debug, Default)]
pub(crate) struct Backoff {
    failures: Arc<Mutex<HashMap<Key, u32>>>,
}

impl Backoff {
    /// The delay after the first failure, before jitter.
    pub(crate) const INITIAL: Duration = Duration::from_secs(1);
    /// The longest delay.
    pub(crate) const MAX: Duration = Duration::from_secs(300);

    /// Records a failure of `key` and returns how long to wait before retrying.
    pub(crate) fn failed(&self, key: &Key) -> Duration {
        let count = {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            let count = failures.entry(key.clone()).or_insert(0);
            *count = count.saturating_add(1);
            *count
        };
        jittered(Self::ceiling(count), random_unit())
    }

    /// The longest wait after `count` failures in a row.
    pub(crate) fn ceiling(count: u32) -> Duration {
        let factor = 2u32.saturating_pow(count.saturating_sub(1).min(31));
        Self::INITIAL.saturating_mul(factor).min(Self::MAX)
    }

    /// Forgets the failures of `key`: after a successful reconcile, or once
    /// the object is gone.
    pub(crate) fn forget(&self, key: &Key) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// How many objects have failures on record.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Whether a failed request may succeed when sent again.
pub(crate) fn is_transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => matches!(status.code, 429 | 500 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// `ceiling` scaled into its upper half by `unit` (in `[0, 1)`).
fn jittered(ceiling: Duration, unit: f64) -> Duration {
    ceiling.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
}

/// A number in `[0, 1)`, different on every call: the standard library's
/// randomly keyed SipHash (each `RandomState` gets new keys), which is
/// plenty for spreading retries.
fn random_unit() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    // The top 53 bits as the mantissa of a float in [0, 1).
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn server_trouble_is_transient_and_refusals_are_not() {
        let answered = |code: u16| {
            let status = kube::core::Status::failure("answered", "Test").with_code(code);
            kube::Error::Api(status.boxed())
        };
        for code in [429, 500, 503, 504] {
            assert!(is_transient(&answered(code)), "{code}");
        }
        for code in [400, 403, 404, 409, 422] {
            assert!(!is_transient(&answered(code)), "{code}");
        }
    }

    fn key(name: &str) -> Key {
        ObjectRef::<ConfigMap>::new(name).within("default").erase()
    }

    /// Whether `delay` is in the upper half of `ceiling`.
    fn within(delay: Duration, ceiling: Duration) -> bool {
        delay >= ceiling / 2 && delay <= ceiling
    }

    #[test]
    fn ceilings_double_up_to_the_cap() {
        let ceilings: Vec<u64> = (1..=10).map(|n| Backoff::ceiling(n).as_secs()).collect();
        assert_eq!(ceilings, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(Backoff::ceiling(u32::MAX), Backoff::MAX);
    }

    #[test]
    fn delays_grow_per_object_and_reset_on_success() {
        let backoff = Backoff::default();
        let (a, b) = (key("a"), key("b"));
        for count in 1..=12 {
            let delay = backoff.failed(&a);
            assert!(within(delay, Backoff::ceiling(count)), "{count}: {delay:?}");
        }
        assert!(
            within(backoff.failed(&b), Backoff::INITIAL),
            "b has its own count"
        );
        backoff.forget(&a);
        assert!(within(backoff.failed(&a), Backoff::INITIAL), "reset");
        backoff.forget(&a);
        backoff.forget(&b);
        assert_eq!(backoff.len(), 0);
    }

    #[test]
    fn the_jitter_spans_the_upper_half() {
        let ceiling = Duration::from_secs(8);
        assert_eq!(jittered(ceiling, 0.0), Duration::from_secs(4));
        assert_eq!(jittered(ceiling, 1.0), ceiling);
        assert_eq!(jittered(ceiling, 0.5), Duration::from_secs(6));
    }

    #[test]
    fn objects_failing_together_retry_apart() {
        // 200 objects whose first reconcile failed at the same moment.
        let backoff = Backoff::default();
        let mut delays: Vec<Duration> = (0..200)
            .map(|n| backoff.failed(&key(&format!("object-{n}"))))
            .collect();
        delays.sort();
        delays.dedup();
        assert!(delays.len() > 190, "only {} distinct delays", delays.len());
        let (first, last) = (delays[0], delays[delays.len() - 1]);
        assert!(within(first, Backoff::INITIAL) && within(last, Backoff::INITIAL));
        // Spread over most of the half second the jitter allows.
        assert!(
            last - first > Duration::from_millis(400),
            "{first:?}..{last:?}"
        );
    }
}
