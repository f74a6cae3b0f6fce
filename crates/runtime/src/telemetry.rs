//! Logging: text or JSON lines on stderr, filtered by RUST_LOG (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::LogFormat;

/// Installs the global subscriber unless the process has one already (a
/// test, or a project that sets up its own logging before the manager):
/// then that one stays.
pub(crate) fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only on a terminal: log files and collectors get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    if installed.is_err() {
        tracing::debug!("a tracing subscriber is installed already; keeping it");
    }
}
