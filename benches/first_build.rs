//! The first build a newcomer waits for, printed as figures (harness =
//! false), each against a reference measured in the same run so that the
//! machine's noise cancels out:
//!
//! 1. the first `opctl manifests` of a fresh project (one kind), with an
//!    empty target directory, against the cold build of the floor: a crate
//!    holding only the same type file and a `main` that prints its CRD,
//!    with kube (`derive`), k8s-openapi and schemars, built with the
//!    project's profile and lock (what any generator of that schema must
//!    compile). Target: ratio ≤ 1.3;
//! 2. `opctl manifests` after a one-line change to the type (a doc comment,
//!    so the CRD changes), warm target directory, against the floor
//!    rebuilt and run after the same change. Target: ≤ 0.5 s.
//!
//! Wall time and CPU time (user + system of the child processes, which
//! another build on the machine disturbs less) are printed for both.
//! The cold builds alternate (floor first in even rounds, opctl first in
//! odd ones). Run with `cargo bench --bench first_build` (release opctl, as
//! `cargo install` makes it); `OPCTL_BENCH_COLD_ROUNDS` (default 2) and
//! `OPCTL_BENCH_WARM_ROUNDS` (default 15) set the rounds. Nothing is
//! downloaded while timed: the registry cache is filled first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Wall and CPU time of one command.
#[derive(Debug, Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
}

/// CPU time (user + system) of the waited-for children of this process.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Runs `program args` in `dir` with `target` as CARGO_TARGET_DIR; fails on
/// a non-zero exit. Cargo runs with its defaults, as a user's does: a
/// CARGO_INCREMENTAL of the caller's (which CI and the test suite set to 0
/// to save disk) is not passed on, so that the project's own crates and the
/// floor's are built incrementally, as `cargo build` does in the dev profile.
fn run(dir: &Path, target: &Path, program: &str, args: &[&str]) -> Cost {
    let cpu = children_cpu();
    let started = Instant::now();
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("CARGO_INCREMENTAL")
        .output()
        .unwrap_or_else(|err| panic!("{program} {args:?}: {err}"));
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "{program} {args:?} in {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Cost {
        wall,
        cpu: children_cpu() - cpu,
    }
}

fn rounds(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The floor crate beside the project: its type file, a `main` printing the
/// CRD, the project's lock (cargo keeps the versions and drops the rest)
/// and the profile the project builds its API crate with.
fn write_floor(project: &Path, floor: &Path, type_file: &str) {
    std::fs::create_dir_all(floor.join("src")).expect("mkdir");
    let manifest = r#"[package]
name = "floor"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
k8s-openapi = { version = "0.29", default-features = false, features = ["schemars", "std", "v1_33"] }
kube = { version = "5", default-features = false, features = ["derive"] }
schemars = "1"
serde = { version = "1", features = ["derive"] }
serde_json = "1"

# As the project builds its API crate and the generator.
[profile.dev]
debug = false
strip = "debuginfo"
"#;
    std::fs::write(floor.join("Cargo.toml"), manifest).expect("write");
    let main = r#"#[path = "types.rs"]
mod types;

fn main() {
    let crd = <types::Guestbook as kube::CustomResourceExt>::crd();
    println!("{}", serde_json::to_string_pretty(&crd).expect("JSON"));
}
"#;
    std::fs::write(floor.join("src/main.rs"), main).expect("write");
    std::fs::copy(project.join(type_file), floor.join("src/types.rs")).expect("copy");
    std::fs::copy(project.join("Cargo.lock"), floor.join("Cargo.lock")).expect("copy");
}

fn main() {
    let opctl = env!("CARGO_BIN_EXE_opctl");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let cold_rounds = rounds("OPCTL_BENCH_COLD_ROUNDS", 2);
    let warm_rounds = rounds("OPCTL_BENCH_WARM_ROUNDS", 15);
    let tmp = tempfile::tempdir().expect("temp dir");
    let type_file = "api/src/web/v1/guestbook.rs";
    let scratch_target = tmp.path().join("scratch-target");

    let mut project = PathBuf::new();
    let mut floor = PathBuf::new();
    let (mut opctl_target, mut floor_target) = (PathBuf::new(), PathBuf::new());
    let (mut opctl_cold, mut floor_cold) = (Vec::new(), Vec::new());
    for round in 0..cold_rounds {
        project = tmp.path().join(format!("guestbook{round}"));
        std::fs::create_dir(&project).expect("mkdir");
        let none = &scratch_target;
        run(&project, none, opctl, &["init", "--domain", "example.com"]);
        let api = ["create", "api", "--group", "web", "--version", "v1"];
        run(
            &project,
            none,
            opctl,
            &[&api[..], &["--kind", "Guestbook"]].concat(),
        );
        floor = tmp.path().join(format!("floor{round}"));
        write_floor(&project, &floor, type_file);
        // Downloads, if any, happen here, untimed.
        run(&project, none, &cargo, &["fetch", "--locked"]);
        run(&floor, none, &cargo, &["fetch"]);
        opctl_target = tmp.path().join(format!("opctl-target{round}"));
        floor_target = tmp.path().join(format!("floor-target{round}"));
        let manifests = || run(&project, &opctl_target, opctl, &["manifests"]);
        let floor_build = || {
            run(
                &floor,
                &floor_target,
                &cargo,
                &["run", "--offline", "--quiet"],
            )
        };
        if round % 2 == 0 {
            floor_cold.push(floor_build());
            opctl_cold.push(manifests());
        } else {
            opctl_cold.push(manifests());
            floor_cold.push(floor_build());
        }
        let (o, f) = (opctl_cold[round], floor_cold[round]);
        println!(
            "cold round {round}: opctl manifests {} wall, {} CPU; floor {} wall, {} CPU",
            secs(o.wall),
            secs(o.cpu),
            secs(f.wall),
            secs(f.cpu)
        );
    }
    let wall = |costs: &[Cost]| median(costs.iter().map(|c| c.wall).collect());
    let cpu = |costs: &[Cost]| median(costs.iter().map(|c| c.cpu).collect());
    println!("first `opctl manifests`, empty target dir ({cold_rounds} rounds, medians)");
    println!(
        "  opctl manifests                 {} wall, {} CPU",
        secs(wall(&opctl_cold)),
        secs(cpu(&opctl_cold))
    );
    println!(
        "  floor crate, cold build + run   {} wall, {} CPU",
        secs(wall(&floor_cold)),
        secs(cpu(&floor_cold))
    );
    println!(
        "  ratio                           {:.2} wall, {:.2} CPU  (target <= 1.3)",
        wall(&opctl_cold).as_secs_f64() / wall(&floor_cold).as_secs_f64(),
        cpu(&opctl_cold).as_secs_f64() / cpu(&floor_cold).as_secs_f64()
    );

    // 2. One-line changes, in the last round's project and floor.
    let original = std::fs::read_to_string(project.join(type_file)).expect("types");
    let crd = project.join("config/crd/bases/web.example.com_guestbooks.yaml");
    let (mut opctl_warm, mut floor_warm) = (Vec::new(), Vec::new());
    for round in 0..warm_rounds {
        let changed = original.replace(
            "/// An example field: replace it with what a Guestbook needs.",
            &format!("/// An example field, revision {round}."),
        );
        assert_ne!(changed, original, "the one-line change applies");
        std::fs::write(project.join(type_file), &changed).expect("write");
        std::fs::write(floor.join("src/types.rs"), &changed).expect("write");
        opctl_warm.push(run(&project, &opctl_target, opctl, &["manifests"]));
        floor_warm.push(run(
            &floor,
            &floor_target,
            &cargo,
            &["run", "--offline", "--quiet"],
        ));
        let yaml = std::fs::read_to_string(&crd).expect("CRD");
        assert!(
            yaml.contains(&format!("revision {round}")),
            "the CRD follows the type"
        );
    }
    println!("after a one-line change to the type, warm ({warm_rounds} rounds, medians)");
    println!(
        "  opctl manifests                 {} wall, {} CPU  (target <= 0.5 s)",
        secs(wall(&opctl_warm)),
        secs(cpu(&opctl_warm))
    );
    println!(
        "  floor crate, rebuild + run      {} wall, {} CPU",
        secs(wall(&floor_warm)),
        secs(cpu(&floor_warm))
    );
    println!(
        "  ratio                           {:.2} wall, {:.2} CPU",
        wall(&opctl_warm).as_secs_f64() / wall(&floor_warm).as_secs_f64(),
        cpu(&opctl_warm).as_secs_f64() / cpu(&floor_warm).as_secs_f64()
    );
}
