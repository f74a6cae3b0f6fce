//! Per-object exponential backoff for failed reconciles: 1 s, 2 s, 4 s, ...
//! up to 5 minutes, reset by the next success and forgotten when the object
//! goes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::core::DynamicObject;
use kube::runtime::reflector::ObjectRef;

/// An object's key: its kind, namespace and name.
pub type Key = ObjectRef<DynamicObject>;

/// Failure counts per object, shared by the controllers of one manager.
#[derive(Clone, Debug, Default)]
pub struct Backoff {
    failures: Arc<Mutex<HashMap<Key, u32>>>,
}

impl Backoff {
    /// The delay after the first failure.
    pub const INITIAL: Duration = Duration::from_secs(1);
    /// The longest delay.
    pub const MAX: Duration = Duration::from_secs(300);

    /// Records a failure of `key` and returns how long to wait before retrying.
    pub fn failed(&self, key: &Key) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let count = failures.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        let factor = 2u32.saturating_pow(count.saturating_sub(1).min(31));
        Self::INITIAL.saturating_mul(factor).min(Self::MAX)
    }

    /// Forgets the failures of `key`: after a successful reconcile, or once
    /// the object is gone.
    pub fn forget(&self, key: &Key) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// How many objects have failures on record.
    pub fn len(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no object has failures on record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn key(name: &str) -> Key {
        ObjectRef::<ConfigMap>::new(name).within("default").erase()
    }

    #[test]
    fn delays_double_up_to_the_cap_and_reset_on_success() {
        let backoff = Backoff::default();
        let (a, b) = (key("a"), key("b"));
        assert_eq!(backoff.failed(&a), Duration::from_secs(1));
        assert_eq!(backoff.failed(&a), Duration::from_secs(2));
        assert_eq!(backoff.failed(&a), Duration::from_secs(4));
        assert_eq!(backoff.failed(&b), Duration::from_secs(1));
        for _ in 0..40 {
            backoff.failed(&a);
        }
        assert_eq!(backoff.failed(&a), Backoff::MAX);
        backoff.forget(&a);
        assert_eq!(backoff.failed(&a), Duration::from_secs(1));
        backoff.forget(&a);
        backoff.forget(&b);
        assert!(backoff.is_empty());
    }
}
