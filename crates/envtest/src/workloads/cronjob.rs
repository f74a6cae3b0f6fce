//! The CronJob controller (kube-controller-manager's v2): at each time its
//! schedule names (five fields or a descriptor, in `spec.timeZone`, UTC by
//! default) a CronJob creates the Job `<name>-<scheduled time in minutes>`
//! from its `jobTemplate` (owned by it, annotated
//! `batch.kubernetes.io/cronjob-scheduled-timestamp`). Only the most recent
//! missed time is run, none past `startingDeadlineSeconds`; `suspend` stops
//! new Jobs; `concurrencyPolicy` Forbid skips a time while a Job runs,
//! Replace deletes the running ones first. Status: `active`,
//! `lastScheduleTime`, `lastSuccessfulTime`. Finished Jobs beyond
//! `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted,
//! oldest first. Jobs made by hand from the CronJob (`kubectl create job
//! --from=cronjob/x`) run as any Job and count for the history limits.
//!
//! Schedules are evaluated with the `croner` crate, whose five-field
//! patterns follow Vixie cron as `robfig/cron` does (a restricted day of
//! month and day of week match either); `@every` is not supported.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, CRONJOBS, JOBS};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

pub(crate) const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// A schedule and the zone it is read in.
pub(crate) struct Schedule {
    cron: Cron,
    zone: TimeZone,
}

/// Parses `spec.schedule` in `spec.timeZone` (a `TZ=` / `CRON_TZ=` prefix
/// also names a zone); the error is what the controller's event says.
pub(crate) fn schedule(cj: &Value) -> Result<Schedule, (&'static str, String)> {
    let mut text = client::str_at(cj, &["spec", "schedule"]).trim().to_string();
    let mut zone_name = client::str_at(cj, &["spec", "timeZone"]).to_string();
    for prefix in ["TZ=", "CRON_TZ="] {
        if let Some(rest) = text.strip_prefix(prefix) {
            let (zone, pattern) = rest.split_once(' ').unwrap_or((rest, ""));
            zone_name = zone.to_string();
            text = pattern.trim().to_string();
        }
    }
    let zone = if zone_name.is_empty() {
        TimeZone::UTC
    } else {
        TimeZone::get(&zone_name).map_err(|e| {
            (
                "UnknownTimeZone",
                format!("invalid timeZone: {zone_name:?}: {e}"),
            )
        })?
    };
    if text == "@midnight" {
        text = "@daily".to_string();
    }
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    let cron = parser.parse(&text).map_err(|e| {
        (
            "UnparseableSchedule",
            format!("unparseable schedule: {text:?} : {e}"),
        )
    })?;
    Ok(Schedule { cron, zone })
}

impl Schedule {
    /// The first time after `t`.
    pub(crate) fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let zoned = t.to_zoned(self.zone.clone());
        self.cron
            .find_next_occurrence(&zoned, false)
            .ok()
            .map(|z| z.timestamp())
    }

    /// The latest time at or before `t`.
    fn latest_until(&self, t: Timestamp) -> Option<Timestamp> {
        let zoned = t.to_zoned(self.zone.clone());
        self.cron
            .find_previous_occurrence(&zoned, true)
            .ok()
            .map(|z| z.timestamp())
    }

    fn format(&self, t: Timestamp) -> String {
        t.to_zoned(self.zone.clone())
            .strftime("%Y-%m-%dT%H:%M:%S%:z")
            .to_string()
            .replace("+00:00", "Z")
    }
}

fn time_at(obj: &Value, path: &[&str]) -> Option<Timestamp> {
    meta::get_path(obj, path)
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok())
}

/// The most recent scheduled time not yet run, in (earliest, now].
pub(crate) fn most_recent_missed(
    cj: &Value,
    sched: &Schedule,
    now: Timestamp,
) -> Option<Timestamp> {
    let mut earliest = time_at(cj, &["status", "lastScheduleTime"])
        .or_else(|| time_at(cj, &["metadata", "creationTimestamp"]))
        .unwrap_or(now);
    if let Some(deadline) = client::int_at(cj, &["spec", "startingDeadlineSeconds"]) {
        let limit = now - jiff::SignedDuration::from_secs(deadline);
        if limit > earliest {
            earliest = limit;
        }
    }
    let first = sched.next_after(earliest)?;
    if first > now {
        return None;
    }
    sched.latest_until(now).filter(|t| *t >= first)
}

/// The Job name for a scheduled time (`getJobName`).
pub(crate) fn job_name(cj: &Value, scheduled: Timestamp) -> String {
    format!(
        "{}-{}",
        meta::name(cj),
        scheduled.as_second().div_euclid(60)
    )
}

/// `Complete` or `Failed` when the Job has finished.
fn finished(job: &Value) -> Option<&'static str> {
    if client::condition_true(job, "Complete") {
        Some("Complete")
    } else if client::condition_true(job, "Failed") {
        Some("Failed")
    } else {
        None
    }
}

fn job_reference(job: &Value) -> Value {
    json!({
        "kind": "Job",
        "namespace": meta::namespace(job),
        "name": meta::name(job),
        "uid": meta::uid(job),
        "apiVersion": "batch/v1",
        "resourceVersion": meta::resource_version(job),
    })
}

/// What to do at this look, from the CronJob, its unfinished Jobs and now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing to run now.
    Wait,
    /// The time passed its starting deadline (the event's message).
    Missed(String),
    /// A Job still runs and the policy is Forbid.
    Forbidden,
    /// Run the Job of this time (after deleting the running ones if `replace`).
    Run { at: Timestamp, replace: bool },
}

pub(crate) fn decide(cj: &Value, sched: &Schedule, running: usize, now: Timestamp) -> Decision {
    if meta::get_path(cj, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true) {
        return Decision::Wait;
    }
    let Some(at) = most_recent_missed(cj, sched, now) else {
        return Decision::Wait;
    };
    if time_at(cj, &["status", "lastScheduleTime"]) == Some(at) {
        return Decision::Wait;
    }
    if let Some(deadline) = client::int_at(cj, &["spec", "startingDeadlineSeconds"])
        && at + jiff::SignedDuration::from_secs(deadline) < now
    {
        return Decision::Missed(format!(
            "Missed scheduled time to start a job: {}",
            sched.format(at)
        ));
    }
    match client::str_at(cj, &["spec", "concurrencyPolicy"]) {
        "Forbid" if running > 0 => Decision::Forbidden,
        "Replace" => Decision::Run {
            at,
            replace: running > 0,
        },
        _ => Decision::Run { at, replace: false },
    }
}

pub(crate) async fn reconcile(
    app: &App,
    ns: &str,
    name: &str,
    announced: &mut HashSet<String>,
) -> ApiResult<Option<Duration>> {
    let Some(cj) = client::get(app, CRONJOBS, ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&cj) {
        return Ok(None);
    }
    let uid = meta::uid(&cj);
    let jobs: Vec<Arc<Value>> = client::list(app, JOBS, Some(ns))
        .into_iter()
        .filter(|j| client::controller_uid(j, "CronJob") == Some(uid))
        .collect();
    let listed: Vec<Value> = meta::get_path(&cj, &["status", "active"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let listed_uid = |job: &Value| {
        listed
            .iter()
            .any(|r| client::str_at(r, &["uid"]) == meta::uid(job))
    };

    // The active list follows the Jobs: finished ones leave it, vanished ones too.
    let mut active: Vec<Value> = Vec::new();
    let mut last_success = time_at(&cj, &["status", "lastSuccessfulTime"]);
    for job in &jobs {
        match finished(job) {
            Some(condition) if listed_uid(job) => {
                client::event(
                    app,
                    client::CRONJOB_CONTROLLER,
                    &cj,
                    "Normal",
                    "SawCompletedJob",
                    &format!(
                        "Saw completed job: {}, condition: {condition}",
                        meta::name(job)
                    ),
                );
                if condition == "Complete"
                    && let Some(done) = time_at(job, &["status", "completionTime"])
                    && last_success.is_none_or(|t| t < done)
                {
                    last_success = Some(done);
                }
            }
            Some(_) => {}
            None if listed_uid(job) => active.push(job_reference(job)),
            None => {
                if announced.insert(meta::uid(job).to_string()) {
                    client::event(
                        app,
                        client::CRONJOB_CONTROLLER,
                        &cj,
                        "Warning",
                        "UnexpectedJob",
                        &format!(
                            "Saw a job that the controller did not create or forgot: {}",
                            meta::name(job)
                        ),
                    );
                }
            }
        }
    }
    for r in &listed {
        if !jobs
            .iter()
            .any(|j| meta::uid(j) == client::str_at(r, &["uid"]))
        {
            client::event(
                app,
                client::CRONJOB_CONTROLLER,
                &cj,
                "Normal",
                "MissingJob",
                &format!("Active job went missing: {}", client::str_at(r, &["name"])),
            );
        }
    }

    let mut last_schedule: Option<Timestamp> = time_at(&cj, &["status", "lastScheduleTime"]);
    let mut requeue = None;
    match schedule(&cj) {
        Err((reason, message)) => {
            if announced.insert(format!("{uid}/{reason}")) {
                client::event(
                    app,
                    client::CRONJOB_CONTROLLER,
                    &cj,
                    "Warning",
                    reason,
                    &message,
                );
            }
        }
        Ok(sched) => {
            let now = Timestamp::now();
            match decide(&cj, &sched, active.len(), now) {
                Decision::Wait => {}
                Decision::Missed(message) => {
                    client::event(
                        app,
                        client::CRONJOB_CONTROLLER,
                        &cj,
                        "Warning",
                        "MissSchedule",
                        &message,
                    );
                    last_schedule = most_recent_missed(&cj, &sched, now);
                }
                Decision::Forbidden => {
                    if let Some(at) = most_recent_missed(&cj, &sched, now)
                        && announced.insert(format!("{uid}/forbid/{}", at.as_second()))
                    {
                        client::event(
                            app,
                            client::CRONJOB_CONTROLLER,
                            &cj,
                            "Normal",
                            "JobAlreadyActive",
                            "Not starting job because prior execution is running and concurrency policy is Forbid",
                        );
                    }
                }
                Decision::Run { at, replace } => {
                    if replace {
                        for r in active.drain(..) {
                            let job = client::str_at(&r, &["name"]);
                            client::delete(app, JOBS, ns, job, client::str_at(&r, &["uid"]))?;
                            client::event(
                                app,
                                client::CRONJOB_CONTROLLER,
                                &cj,
                                "Normal",
                                "SuccessfulDelete",
                                &format!("Deleted job {job}"),
                            );
                        }
                    }
                    if let Some(job) = create_job(app, &cj, &sched, at).await? {
                        active.push(job_reference(&job));
                    }
                    last_schedule = Some(at);
                }
            }
            // Look again at the next time (a moment after, so it has come).
            if let Some(next) = sched.next_after(now) {
                let wait = now.duration_until(next).unsigned_abs();
                requeue = Some(wait + Duration::from_millis(50));
            }
        }
    }

    write_status(app, &cj, &active, last_schedule, last_success).await?;
    cleanup(app, &cj, &jobs)?;
    Ok(requeue)
}

/// Creates the Job of scheduled time `at`; `None` if it exists already.
async fn create_job(
    app: &App,
    cj: &Value,
    sched: &Schedule,
    at: Timestamp,
) -> ApiResult<Option<Arc<Value>>> {
    let name = job_name(cj, at);
    let template = meta::get_path(cj, &["spec", "jobTemplate"])
        .cloned()
        .unwrap_or_default();
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    if let Some(labels) = meta::get_path(&template, &["metadata", "labels"]) {
        metadata.insert("labels".into(), labels.clone());
    }
    let mut annotations: Map<String, Value> =
        meta::get_path(&template, &["metadata", "annotations"])
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
    annotations.insert(SCHEDULED_TIMESTAMP.into(), json!(sched.format(at)));
    metadata.insert("annotations".into(), Value::Object(annotations));
    metadata.insert(
        "ownerReferences".into(),
        json!([client::controller_ref(cj)]),
    );
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    match client::create_object(app, JOBS, meta::namespace(cj), job, CONTROLLER_MANAGER).await {
        Ok(job) => {
            client::event(
                app,
                client::CRONJOB_CONTROLLER,
                cj,
                "Normal",
                "SuccessfulCreate",
                &format!("Created job {name}"),
            );
            Ok(Some(job))
        }
        Err(e) if e.code == 409 => Ok(None),
        Err(e) => {
            client::event(
                app,
                client::CRONJOB_CONTROLLER,
                cj,
                "Warning",
                "FailedCreate",
                &format!("Error creating job: {}", e.message),
            );
            Err(e)
        }
    }
}

async fn write_status(
    app: &App,
    cj: &Value,
    active: &[Value],
    last_schedule: Option<Timestamp>,
    last_success: Option<Timestamp>,
) -> ApiResult<()> {
    let (ns, name) = (meta::namespace(cj), meta::name(cj));
    let stamp = |t: Timestamp| json!(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    client::write_status(app, CRONJOBS, ns, name, |_, status| {
        if active.is_empty() {
            status.remove("active");
        } else {
            status.insert("active".into(), json!(active));
        }
        if let Some(t) = last_schedule {
            status.insert("lastScheduleTime".into(), stamp(t));
        }
        if let Some(t) = last_success {
            status.insert("lastSuccessfulTime".into(), stamp(t));
        }
    })
    .await
}

/// Finished Jobs beyond the history limits go, oldest first.
fn cleanup(app: &App, cj: &Value, jobs: &[Arc<Value>]) -> ApiResult<()> {
    for (condition, field, default) in [
        ("Complete", "successfulJobsHistoryLimit", 3),
        ("Failed", "failedJobsHistoryLimit", 1),
    ] {
        let limit = client::int_at(cj, &["spec", field])
            .unwrap_or(default)
            .max(0) as usize;
        let mut done: Vec<&Arc<Value>> = jobs
            .iter()
            .filter(|j| finished(j) == Some(condition) && !meta::is_deleting(j))
            .collect();
        if done.len() <= limit {
            continue;
        }
        // Oldest first: by startTime (whole seconds), ties by name, as the
        // controller's byJobStartTime orders them.
        done.sort_by_key(|j| {
            let started = time_at(j, &["status", "startTime"])
                .or_else(|| time_at(j, &["metadata", "creationTimestamp"]));
            (started, meta::name(j).to_owned())
        });
        for job in &done[..done.len() - limit] {
            client::delete(
                app,
                JOBS,
                meta::namespace(job),
                meta::name(job),
                meta::uid(job),
            )?;
            client::event(
                app,
                client::CRONJOB_CONTROLLER,
                cj,
                "Normal",
                "SuccessfulDelete",
                &format!("Deleted job {}", meta::name(job)),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("a timestamp")
    }

    fn cronjob(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "tick", "creationTimestamp": "2026-12-01T10:00:30Z"},
            "spec": spec, "status": status})
    }

    #[test]
    fn the_most_recent_missed_time_runs_once() {
        let cj = cronjob(json!({"schedule": "*/5 * * * *"}), json!({}));
        let sched = schedule(&cj).expect("parses");
        let now = at("2026-12-01T10:17:10Z");
        let Decision::Run { at: run, replace } = decide(&cj, &sched, 0, now) else {
            panic!("should run");
        };
        assert_eq!((run, replace), (at("2026-12-01T10:15:00Z"), false));
        assert_eq!(job_name(&cj, run), format!("tick-{}", run.as_second() / 60));
        let done = cronjob(
            json!({"schedule": "*/5 * * * *"}),
            json!({"lastScheduleTime": "2026-12-01T10:15:00Z"}),
        );
        assert_eq!(decide(&done, &sched, 0, now), Decision::Wait);
        assert_eq!(sched.next_after(now), Some(at("2026-12-01T10:20:00Z")));
        // Before the first time after creation, nothing.
        assert_eq!(
            decide(&cj, &sched, 0, at("2026-12-01T10:04:59Z")),
            Decision::Wait
        );
    }

    #[test]
    fn suspend_deadlines_and_concurrency_policies() {
        let now = at("2026-12-01T10:17:10Z");
        let sched = schedule(&cronjob(json!({"schedule": "@hourly"}), json!({}))).expect("parses");
        let suspended = cronjob(json!({"schedule": "* * * * *", "suspend": true}), json!({}));
        let every_minute = schedule(&suspended).expect("parses");
        assert_eq!(decide(&suspended, &every_minute, 0, now), Decision::Wait);
        // @hourly since 10:00:30: 11:00 has not come.
        assert_eq!(
            decide(
                &cronjob(json!({"schedule": "@hourly"}), json!({})),
                &sched,
                0,
                now
            ),
            Decision::Wait
        );
        let late = cronjob(
            json!({"schedule": "*/5 * * * *", "startingDeadlineSeconds": 60}),
            json!({"lastScheduleTime": "2026-12-01T10:10:00Z"}),
        );
        let five = schedule(&late).expect("parses");
        // 10:15 is more than 60 s ago: nothing within the deadline.
        assert_eq!(decide(&late, &five, 0, now), Decision::Wait);
        let forbid = cronjob(
            json!({"schedule": "*/5 * * * *", "concurrencyPolicy": "Forbid"}),
            json!({}),
        );
        assert_eq!(decide(&forbid, &five, 1, now), Decision::Forbidden);
        let replace = cronjob(
            json!({"schedule": "*/5 * * * *", "concurrencyPolicy": "Replace"}),
            json!({}),
        );
        assert!(matches!(
            decide(&replace, &five, 1, now),
            Decision::Run { replace: true, .. }
        ));
        assert!(matches!(
            decide(&forbid, &five, 0, now),
            Decision::Run { replace: false, .. }
        ));
    }

    #[test]
    fn time_zones_and_bad_schedules() {
        let cj = cronjob(
            json!({"schedule": "30 9 * * *", "timeZone": "Europe/Paris"}),
            json!({}),
        );
        let sched = schedule(&cj).expect("parses");
        // 09:30 in Paris in December is 08:30 UTC.
        assert_eq!(
            sched.next_after(at("2026-12-01T10:00:00Z")),
            Some(at("2026-12-02T08:30:00Z"))
        );
        assert_eq!(
            sched.format(at("2026-12-02T08:30:00Z")),
            "2026-12-02T09:30:00+01:00"
        );
        let bad = cronjob(json!({"schedule": "* * * *"}), json!({}));
        assert_eq!(
            schedule(&bad).err().map(|e| e.0),
            Some("UnparseableSchedule")
        );
        let zone = cronjob(
            json!({"schedule": "* * * * *", "timeZone": "Mars/Olympus"}),
            json!({}),
        );
        assert_eq!(schedule(&zone).err().map(|e| e.0), Some("UnknownTimeZone"));
        // Day of month and day of week both restricted: either matches (Vixie cron).
        let either = cronjob(json!({"schedule": "0 0 13 * 5"}), json!({}));
        let sched = schedule(&either).expect("parses");
        assert_eq!(
            sched.next_after(at("2026-12-01T10:00:00Z")),
            Some(at("2026-12-04T00:00:00Z"))
        );
    }
}
