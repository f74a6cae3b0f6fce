//! CronJobs: a missed schedule runs once, Jobs made by hand with `kubectl
//! create job --from=cronjob/x` run too, and history limits trim them.
//!
//! The schedule fires yearly, so nothing fires on its own while the test
//! runs: a `lastScheduleTime` set back before this year's first minute
//! makes that minute the most recent missed time, which the controller runs
//! at once, as on a cluster.

use jiff::civil::date;
use jiff::tz::TimeZone;

use crate::common::{WAIT, condition, get_json, kubectl, namespace, wait_for_field};

const TICK: &str = r#"
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "0 0 1 1 *"
  successfulJobsHistoryLimit: 1
  jobTemplate:
    metadata:
      labels: {app: tick}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: work, image: busybox, command: ["true"]}]
"#;

#[test]
fn a_cronjob_runs_its_missed_time_and_jobs_made_from_it() {
    let ns = namespace("cron");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], TICK);
    let year = jiff::Zoned::now().with_time_zone(TimeZone::UTC).year();
    let first_minute = date(year, 1, 1)
        .at(0, 0, 0, 0)
        .to_zoned(TimeZone::UTC)
        .expect("a time")
        .timestamp();
    let job = format!("tick-{}", first_minute.as_second() / 60);
    let before = format!("{}-12-31T00:00:00Z", year - 1);
    k.ok(&[
        "patch",
        "-n",
        &ns,
        "cronjob",
        "tick",
        "--subresource=status",
        "--type=merge",
        "-p",
        &format!(r#"{{"status":{{"lastScheduleTime":"{before}"}}}}"#),
    ]);
    k.eventually(&["get", "-n", &ns, "job", &job], WAIT, |r| r.success());
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=complete",
        &format!("job/{job}"),
        "--timeout=60s",
    ]);
    let made = get_json(&["get", "-n", &ns, "job", &job]);
    assert_eq!(
        made["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        format!("{year}-01-01T00:00:00Z")
    );
    assert_eq!(made["metadata"]["labels"]["app"], "tick");
    let owner = &made["metadata"]["ownerReferences"][0];
    assert_eq!(
        (&owner["kind"], &owner["name"]),
        (&"CronJob".into(), &"tick".into())
    );
    assert_eq!(owner["controller"], true);

    wait_for_field(
        &ns,
        ("cronjob", "tick"),
        "{.status.lastSuccessfulTime}",
        |v| !v.is_empty(),
    );
    let cj = get_json(&["get", "-n", &ns, "cronjob", "tick"]);
    assert_eq!(
        cj["status"]["lastScheduleTime"],
        format!("{year}-01-01T00:00:00Z")
    );
    assert!(cj["status"]["active"].is_null(), "{cj}");
    let events = k.ok(&[
        "get",
        "-n",
        &ns,
        "events",
        "--field-selector",
        "involvedObject.name=tick",
    ]);
    assert!(events.contains(&format!("Created job {job}")), "{events}");
    assert!(events.contains("SawCompletedJob"), "{events}");

    // A Job made by hand from the CronJob is accepted and runs. It starts in
    // a later second than the scheduled one: the controller keeps the
    // newest finished Jobs by `startTime`, which has whole seconds, and
    // breaks ties by name, so within one second `by-hand` would be the older.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = k.ok(&["create", "job", "-n", &ns, "--from=cronjob/tick", "by-hand"]);
    assert!(out.contains("job.batch/by-hand created"), "{out}");
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=complete",
        "job/by-hand",
        "--timeout=60s",
    ]);
    let by_hand = get_json(&["get", "-n", &ns, "job", "by-hand"]);
    assert_eq!(
        by_hand["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"],
        "manual"
    );
    assert_eq!(by_hand["metadata"]["ownerReferences"][0]["name"], "tick");
    assert_eq!(
        condition(&by_hand, "Complete").expect("Complete")["status"],
        "True"
    );
    // successfulJobsHistoryLimit 1: the older finished Job goes.
    k.eventually(
        &[
            "get",
            "-n",
            &ns,
            "jobs",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ],
        WAIT,
        |r| r.stdout == "by-hand",
    );
}
