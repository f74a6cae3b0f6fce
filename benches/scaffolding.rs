//! Scaffolding speed, printed as figures (harness = false):
//!
//! 1. `opctl init` + `opctl create api` against `cargo new` of an empty crate,
//!    run alternately in one process tree (target: ratio <= 1.0);
//! 2. `opctl manifests` after a one-line change to a type, with a warm target
//!    directory (target: <= 0.5 s on 2 cores).
//!
//! Run with `cargo bench --bench scaffolding`. The manifests figure builds a
//! generated project in the workspace's target directory (once, minutes when
//! cold) before it measures anything.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ROUNDS: usize = 15;
const MANIFEST_ROUNDS: usize = 5;

fn run(dir: &Path, program: &str, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap_or_else(|err| panic!("{program} {args:?}: {err}"));
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let opctl = env!("CARGO_BIN_EXE_opctl");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let tmp = tempfile::tempdir().expect("temp dir");

    // 1. opctl init + create api vs cargo new, alternating so that both see the same machine.
    let mut opctl_times = Vec::new();
    let mut cargo_times = Vec::new();
    for round in 0..ROUNDS {
        let dir = tmp.path().join(format!("op{round}"));
        std::fs::create_dir(&dir).expect("mkdir");
        let init = run(&dir, opctl, &["init", "--domain", "example.com"]);
        let api = run(
            &dir,
            opctl,
            &[
                "create",
                "api",
                "--group",
                "web",
                "--version",
                "v1",
                "--kind",
                "Guestbook",
            ],
        );
        opctl_times.push(init + api);
        cargo_times.push(run(
            tmp.path(),
            &cargo,
            &["new", "--quiet", &format!("crate{round}")],
        ));
    }
    let (opctl_median, cargo_median) = (median(opctl_times), median(cargo_times));
    println!("scaffolding ({ROUNDS} rounds, medians)");
    println!("  opctl init + opctl create api   {}", ms(opctl_median));
    println!("  cargo new (empty crate)         {}", ms(cargo_median));
    println!(
        "  ratio opctl / cargo new         {:.2}  (target <= 1.0)",
        opctl_median.as_secs_f64() / cargo_median.as_secs_f64()
    );

    // 2. opctl manifests after a one-line change to a type, warm target directory.
    let dir = tmp.path().join("opctl-bench-manifests");
    std::fs::create_dir(&dir).expect("mkdir");
    run(&dir, opctl, &["init", "--domain", "example.com"]);
    run(
        &dir,
        opctl,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    let warm_up = run(&dir, opctl, &["manifests"]);
    let types = dir.join("api/src/web/v1/guestbook.rs");
    let original = std::fs::read_to_string(&types).expect("types");
    let crd = dir.join("config/crd/bases/web.example.com_guestbooks.yaml");
    let mut times = Vec::new();
    for round in 0..MANIFEST_ROUNDS {
        let changed = original.replace(
            "/// An example field: replace it with what a Guestbook needs.",
            &format!("/// An example field, revision {round}."),
        );
        assert_ne!(changed, original, "the one-line change applies");
        std::fs::write(&types, changed).expect("write");
        times.push(run(&dir, opctl, &["manifests"]));
        let yaml = std::fs::read_to_string(&crd).expect("CRD");
        assert!(
            yaml.contains(&format!("revision {round}")),
            "the CRD follows the type"
        );
    }
    println!("opctl manifests after a one-line type change ({MANIFEST_ROUNDS} rounds)");
    println!("  first run (builds the project)  {}", ms(warm_up));
    println!(
        "  median                          {}  (target <= 500 ms)",
        ms(median(times.clone()))
    );
    println!(
        "  slowest                         {}",
        ms(times.into_iter().max().unwrap_or_default())
    );
}
