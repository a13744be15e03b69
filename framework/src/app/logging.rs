//! The operator's log subscriber: tracing events to stderr, filtered by
//! `--log-level` (or `RUST_LOG`), as text or JSON lines.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use super::args::LogFormat;
use super::Error;

/// Installs the process's subscriber. A process that already has one (a
/// test calling the operator twice) keeps it.
pub fn init(filter: &str, format: LogFormat) -> Result<(), Error> {
    let filter = EnvFilter::try_new(filter).map_err(|e| Error::LogFilter {
        filter: filter.to_owned(),
        message: e.to_string(),
    })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    if installed.is_err() {
        tracing::debug!("a log subscriber is already installed; keeping it");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_filter_is_named() {
        let err = init("info,=[", LogFormat::Text).unwrap_err();
        assert!(err.to_string().contains("info,=["), "{err}");
    }
}
