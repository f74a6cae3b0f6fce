//! Scaffolding speed, printed as figures (harness = false): `opctl init` +
//! `opctl create api` against `cargo new` of an empty crate (both start a
//! git repository), run alternately in one process tree (target: ratio <=
//! 1.0). Run with `cargo bench --bench scaffolding`; `opctl manifests` is
//! measured by `cargo bench --bench first_build`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ROUNDS: usize = 15;

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
}
