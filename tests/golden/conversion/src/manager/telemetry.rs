//! Logging: text or JSON lines on stderr, filtered by RUST_LOG (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use super::LogFormat;

/// Installs the global subscriber; fails if one is already installed.
pub fn init(format: LogFormat) -> anyhow::Result<()> {
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
    installed.map_err(|err| anyhow::anyhow!("cannot set up logging: {err}"))
}
