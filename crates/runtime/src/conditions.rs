//! Status conditions (`metav1.Condition`) as Kubernetes conventions want them:
//! one entry per type, `lastTransitionTime` moving only when the status changes.
//!
//! ```
//! use opctl_runtime::conditions;
//!
//! let mut conditions = Vec::new();
//! assert!(conditions::set(&mut conditions, conditions::ready(false, "Starting", "waiting", Some(1))));
//! // The same again changes nothing, not even the transition time.
//! assert!(!conditions::set(&mut conditions, conditions::ready(false, "Starting", "waiting", Some(1))));
//! assert!(conditions::set(&mut conditions, conditions::ready(true, "Reconciled", "done", Some(1))));
//! assert!(conditions::is_true(&conditions, conditions::READY));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The condition type every scaffolded kind reports.
pub const READY: &str = "Ready";

/// The condition types of a kind scaffolded with `--image`, as kubebuilder's
/// deploy-image plugin has them: its Deployment runs every replica asked for.
pub const AVAILABLE: &str = "Available";
/// The Deployment of a kind scaffolded with `--image` is rolling out.
pub const PROGRESSING: &str = "Progressing";
/// The Deployment of a kind scaffolded with `--image` cannot be put in place.
pub const DEGRADED: &str = "Degraded";

/// A `Ready` condition for an object at `generation`.
pub fn ready(
    ready: bool,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
) -> Condition {
    new(READY, ready, reason, message, generation)
}

/// A condition of `type_` for an object at `generation`.
pub fn new(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time: Time(Timestamp::now()),
    }
}

/// Puts `condition` into `conditions`, replacing the one of the same type but
/// keeping its `lastTransitionTime` when the status did not change. Returns
/// whether anything other than that timestamp changed.
pub fn set(conditions: &mut Vec<Condition>, mut condition: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => {
            if existing.status == condition.status {
                condition.last_transition_time = existing.last_transition_time.clone();
            }
            let changed = *existing != condition;
            *existing = condition;
            changed
        }
        None => {
            conditions.push(condition);
            true
        }
    }
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transition_time_moves_only_when_the_status_changes() {
        let mut conditions = Vec::new();
        let mut first = ready(false, "Pending", "waiting", Some(1));
        first.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        assert!(set(&mut conditions, first));
        assert!(!set(
            &mut conditions,
            ready(false, "Pending", "waiting", Some(1))
        ));
        assert_eq!(
            conditions[0].last_transition_time,
            Time(Timestamp::UNIX_EPOCH)
        );

        assert!(set(
            &mut conditions,
            ready(true, "Reconciled", "done", Some(2))
        ));
        assert_eq!(conditions.len(), 1);
        assert_ne!(
            conditions[0].last_transition_time,
            Time(Timestamp::UNIX_EPOCH)
        );
        assert!(is_true(&conditions, READY));
        assert_eq!(
            find(&conditions, READY).and_then(|c| c.observed_generation),
            Some(2)
        );
    }
}
