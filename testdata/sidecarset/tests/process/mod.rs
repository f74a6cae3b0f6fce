//! The manager binary run as its own process, as the e2e tests and the
//! benchmark start it: free local ports for its probes and its plain-HTTP
//! metrics, ready once `/readyz` says ok, stopped with SIGTERM; its log goes
//! into the test's captured output (shown when the test fails).

// Each test target uses a part of these helpers.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The manager, started from the binary cargo built for the tests.
pub struct Manager {
    process: Child,
    pub health: SocketAddr,
    pub metrics: SocketAddr,
}

impl Manager {
    /// The manager binary, to be given flags and environment and then
    /// [`Manager::spawn`]ed.
    pub fn command() -> Command {
        Command::new(env!("CARGO_BIN_EXE_sidecarset"))
    }

    /// Starts `command` with free local ports for the probes and metrics
    /// and waits until /readyz says ok.
    pub fn spawn(mut command: Command) -> Manager {
        let [health, metrics] = free_local_addresses_besides(&command);
        let mut process = command
            .arg(format!("--health-probe-bind-address={health}"))
            .arg(format!("--metrics-bind-address={metrics}"))
            .arg("--metrics-secure=false")
            .stderr(Stdio::piped())
            .spawn()
            .expect("the manager binary starts");
        echo_log(&mut process);
        let mut manager = Manager {
            process,
            health,
            metrics,
        };
        eventually(Duration::from_secs(30), "the manager to be ready", || {
            if let Ok(Some(status)) = manager.process.try_wait() {
                panic!("the manager exited with {status} before it was ready");
            }
            http_get(manager.health, "/readyz").is_some_and(|(status, _)| status == 200)
        });
        manager
    }

    /// The operating system's id of the manager process.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn terminate(mut self, within: Duration) -> ExitStatus {
        let pid = self.process.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(
            sent.is_ok_and(|status| status.success()),
            "kill -TERM {pid}"
        );
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.process.try_wait().expect("the manager's status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the manager did not stop within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Passes the manager's log on, line by line, into the test's captured
/// output (as the test's own prints): cargo shows it for a test that fails
/// only, or as it comes with `-- --nocapture`.
fn echo_log(process: &mut Child) {
    let stderr = process.stderr.take().expect("the manager's stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
        }
    });
}

/// Two free local addresses for the probes and the metrics, distinct from
/// each other (both ports are held until both are picked) and from every
/// port `command` names already: the webhook's, picked the same way and
/// released before the manager binds it.
fn free_local_addresses_besides(command: &Command) -> [SocketAddr; 2] {
    let taken: Vec<String> = command
        .get_args()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let address = |listener: &TcpListener| listener.local_addr().expect("the port's address");
    let listeners: Vec<TcpListener> =
        std::iter::repeat_with(|| TcpListener::bind("127.0.0.1:0").expect("a free local port"))
            .filter(|listener| {
                let port = address(listener).port();
                !taken.iter().any(|arg| arg.ends_with(&format!(":{port}")))
            })
            .take(2)
            .collect();
    [address(&listeners[0]), address(&listeners[1])]
}

/// A minimal HTTP/1.0 GET: the status code and body, or None if the
/// connection fails.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())?;
    Some((status, body))
}

/// Polls `check` every 100 ms until it holds, failing after `timeout`.
pub fn eventually(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
