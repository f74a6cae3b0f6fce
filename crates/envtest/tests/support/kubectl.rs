//! Running the real `kubectl` against a server through a kubeconfig.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Every kubectl call is bounded; a hung kubectl fails the test, not CI.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Kubectl {
    kubeconfig: PathBuf,
}

/// The result of one kubectl run.
#[derive(Debug)]
pub struct Run {
    pub command: String,
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    fn describe(&self) -> String {
        format!(
            "`{}` exited {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.command, self.status, self.stdout, self.stderr
        )
    }
}

/// Fails with a clear message when kubectl is missing (the suite never skips).
pub fn require_kubectl() {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output();
    match found {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`kubectl version --client` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "kubectl is not on PATH ({e}): the kubectl suite drives the real kubectl (v1.32); install it"
        ),
    }
}

impl Kubectl {
    pub fn new(kubeconfig: &Path) -> Kubectl {
        require_kubectl();
        Kubectl {
            kubeconfig: kubeconfig.to_path_buf(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.env("KUBECONFIG", &self.kubeconfig)
            // No cached discovery from other runs or servers.
            .env("KUBECACHEDIR", self.kubeconfig.with_file_name("kube-cache"))
            .args(args);
        cmd
    }

    /// Runs kubectl, feeding `stdin` if given.
    pub fn run_with_input(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let command = format!("kubectl {}", args.join(" "));
        let mut cmd = self.command(args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{command}`: {e}"));
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input.as_bytes())
                .unwrap_or_else(|e| panic!("cannot write stdin of `{command}`: {e}"));
        }
        let output = wait_bounded(child, COMMAND_TIMEOUT, &command);
        Run {
            command,
            status: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_input(args, None)
    }

    /// Runs kubectl and fails the test unless it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(run.success(), "{}", run.describe());
        run.stdout
    }

    /// `kubectl apply -f -` style: `args` plus YAML on stdin; must succeed.
    pub fn ok_stdin(&self, args: &[&str], yaml: &str) -> String {
        let run = self.run_with_input(args, Some(yaml));
        assert!(run.success(), "{}\n--- stdin\n{yaml}", run.describe());
        run.stdout
    }

    /// The rows of what a successful `kubectl get` prints, each split into
    /// its whitespace-separated cells (a header row first, unless
    /// `--no-headers` was asked for).
    pub fn table(&self, args: &[&str]) -> Vec<Vec<String>> {
        self.ok(args)
            .lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    }

    /// Runs kubectl and fails the test if it succeeds; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(!run.success(), "expected a failure: {}", run.describe());
        run.stderr
    }

    pub fn fails_stdin(&self, args: &[&str], yaml: &str) -> String {
        let run = self.run_with_input(args, Some(yaml));
        assert!(
            !run.success(),
            "expected a failure: {}\n--- stdin\n{yaml}",
            run.describe()
        );
        run.stderr
    }

    /// Starts a long-running kubectl (`get -w`, `wait`) in the background.
    pub fn spawn(&self, args: &[&str]) -> Background {
        let command = format!("kubectl {}", args.join(" "));
        let mut child = self
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{command}`: {e}"));
        let (tx, lines) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Background {
            command,
            child,
            lines,
        }
    }

    /// Polls `kubectl args` until `done(run)` holds, up to `deadline`.
    pub fn eventually(
        &self,
        args: &[&str],
        deadline: Duration,
        done: impl Fn(&Run) -> bool,
    ) -> Run {
        let start = Instant::now();
        loop {
            let run = self.run(args);
            if done(&run) {
                return run;
            }
            assert!(
                start.elapsed() < deadline,
                "condition not reached within {deadline:?}; last run: {}",
                run.describe()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A kubectl running in the background, its stdout readable line by line.
pub struct Background {
    pub command: String,
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Background {
    /// Reads stdout lines until one satisfies `wanted`; returns all lines read.
    pub fn read_until(&mut self, timeout: Duration, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let start = Instant::now();
        let mut seen = Vec::new();
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = wanted(&line);
                    seen.push(line);
                    if hit {
                        return seen;
                    }
                }
                Err(_) => panic!(
                    "`{}` printed no matching line within {timeout:?}; lines so far: {seen:#?}",
                    self.command
                ),
            }
        }
    }

    /// Waits for the process to end by itself.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut stdout: Vec<String> = Vec::new();
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    stdout.push(line);
                }
                let mut stderr = String::new();
                if let Some(mut pipe) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                return Run {
                    command: self.command.clone(),
                    status: status.code(),
                    stdout: stdout.join("\n"),
                    stderr,
                };
            }
            if start.elapsed() > timeout {
                let _ = self.child.kill();
                panic!("`{}` did not finish within {timeout:?}", self.command);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

/// Waits for a child, reading its output as it comes (so a large output
/// cannot block it), and kills it after `timeout`.
fn wait_bounded(mut child: Child, timeout: Duration, command: &str) -> Output {
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let out = stdout
                    .recv_timeout(Duration::from_secs(1))
                    .unwrap_or_default();
                panic!(
                    "`{command}` did not finish within {timeout:?}; output so far: {}",
                    String::from_utf8_lossy(&out)
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("cannot wait for `{command}`: {e}"),
        }
    };
    Output {
        status,
        stdout: stdout.recv().unwrap_or_default(),
        stderr: stderr.recv().unwrap_or_default(),
    }
}
