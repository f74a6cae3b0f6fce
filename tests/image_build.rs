//! The manager in a project's image is built by the `RUN` line of its
//! Dockerfile and run from `distroless/static`, which has no C library.
//! This runs that line as the builder stage's shell would (its cache mounts
//! left out, the binary written to a temporary path instead of `/manager`)
//! on a fresh project, and checks that it yields a statically linked
//! manager that starts.

mod common;

use std::path::Path;
use std::process::Command;

use common::{opctl_ok, project_dir, shared_target_dir};

#[test]
fn the_dockerfile_builds_a_static_manager_that_starts() {
    let (_tmp, dir) = project_dir("image");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    let dockerfile = std::fs::read_to_string(dir.join("Dockerfile")).expect("a Dockerfile");
    let build = build_command(&dockerfile);
    assert!(
        build.ends_with(" /manager"),
        "the build copies the manager to /manager: {build}"
    );
    let out = dir.join("manager-out");
    let build = format!("{} {}", build.trim_end_matches("/manager"), out.display());

    // The project's target/ is the shared one, as the cache mount is in the
    // image; the release profile without LTO and optimisation, so that the
    // test costs a debug build's time (linking is what it checks).
    std::os::unix::fs::symlink(shared_target_dir(), dir.join("target")).expect("symlink");
    let status = Command::new("sh")
        .args(["-euc", &build])
        .current_dir(&dir)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .status()
        .expect("sh runs");
    assert!(
        status.success(),
        "the Dockerfile's build failed (a static link needs glibc's libc.a: libc6-dev on Debian, glibc-static on Fedora): {build}"
    );

    let this_test = std::env::current_exe().expect("the test binary");
    assert!(
        has_interpreter(&this_test),
        "the check sees the loader of this dynamically linked test binary"
    );
    assert!(
        !has_interpreter(&out),
        "the manager is linked dynamically: distroless/static cannot run it"
    );
    let help = Command::new(&out).arg("--help").output().expect("runs");
    assert!(
        help.status.success() && String::from_utf8_lossy(&help.stdout).contains("--namespace"),
        "the static manager starts and prints its flags: {help:?}"
    );
}

/// The shell command of the `RUN` line that runs `cargo build`, its
/// continuation lines joined and its `--mount` options left out.
fn build_command(dockerfile: &str) -> String {
    let joined = dockerfile.replace("\\\n", " ");
    let run = joined
        .lines()
        .filter_map(|line| line.strip_prefix("RUN "))
        .find(|line| line.contains("cargo build"))
        .expect("a RUN line with cargo build");
    let mut command = run.trim_start();
    while let Some(rest) = command.strip_prefix("--mount=") {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        command = rest[end..].trim_start();
    }
    command.trim_end().to_owned()
}

/// Whether the ELF file at `path` names a program interpreter (the dynamic
/// loader): a `PT_INTERP` entry in its program headers.
fn has_interpreter(path: &Path) -> bool {
    const PT_INTERP: u32 = 3;
    let elf = std::fs::read(path).expect("the manager binary");
    assert_eq!(&elf[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let program_headers = u64::from_le_bytes(elf[0x20..0x28].try_into().expect("8 bytes")) as usize;
    let (entry_size, entries) = (u16_at(0x36), u16_at(0x38));
    (0..entries).any(|i| {
        let at = program_headers + i * entry_size;
        u32::from_le_bytes(elf[at..at + 4].try_into().expect("4 bytes")) == PT_INTERP
    })
}
