//! Events, as single creates of `events.k8s.io/v1` Events.
//!
//! kube's `events::Recorder` is not used, on purpose: it keeps a copy of
//! every event it published for six minutes (to turn a repeat into a
//! series, with a patch that keeps the first note and needs `patch` RBAC),
//! which an operator reconciling thousands of objects carries in memory,
//! and it sends each event once, so one refused by a passing server error
//! is lost. Events here go with status changes, so they are not repeated
//! and need no series; each is retried under the same name after a passing
//! failure, so a lost answer never stores it twice. docs/controllers.md has
//! the measurement.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::runtime::events::EventType;

use crate::Context;
use crate::backoff::is_transient;

/// How often an event is tried before it is given up (waits of 0.1, 0.2,
/// 0.4 and 0.8 s between).
const EVENT_ATTEMPTS: u32 = 5;

impl Context {
    /// Records an event about `regarding`, as kube's `Recorder::publish`
    /// would with the project as reporting controller; a failure is logged,
    /// not returned, because events are informational. A refusal the API
    /// server may not repeat (500, 503, 504, 429, a dropped connection) is
    /// retried a few times with a short backoff, as client-go's event
    /// broadcaster retries, under the same name. Needs RBAC to `create`
    /// `events.k8s.io` events.
    ///
    /// ```no_run
    /// # async fn example(ctx: opctl_runtime::Context, object: k8s_openapi::api::core::v1::ConfigMap) {
    /// use kube::Resource;
    /// use kube::runtime::events::EventType;
    ///
    /// let note = Some("the children are in place".to_owned());
    /// ctx.publish(&object.object_ref(&()), EventType::Normal, "Ready", "Reconcile", note).await;
    /// # }
    /// ```
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: Option<String>,
    ) {
        let event = self.event(regarding, type_, reason, action, note);
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let mut delay = Duration::from_millis(100);
        for attempt in 1..=EVENT_ATTEMPTS {
            let err = match api.create(&PostParams::default(), &event).await {
                Ok(_) => return,
                // Stored by an attempt whose answer was lost.
                Err(kube::Error::Api(status)) if attempt > 1 && status.is_already_exists() => {
                    return;
                }
                Err(err) => err,
            };
            if attempt == EVENT_ATTEMPTS || !is_transient(&err) {
                tracing::warn!(error = %err, reason, "cannot record event");
                return;
            }
            tokio::time::sleep(delay).await;
            delay *= 2;
        }
    }

    /// The Event about `regarding`, named as client-go names events (the
    /// object's name and the time) in the object's namespace (`default`
    /// for a cluster-scoped object).
    fn event(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: Option<String>,
    ) -> Event {
        let now = Timestamp::now();
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        Event {
            metadata: ObjectMeta {
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or_default(),
                    now.as_nanosecond()
                )),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            note,
            type_: Some(
                match type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.project.name().to_owned()),
            reporting_instance: Some(self.reporting_instance.clone()),
            ..Event::default()
        }
    }
}
