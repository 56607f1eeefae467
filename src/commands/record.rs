//! `facewire record`: every datagram that arrives on the ports a live run listens on, saved
//! with its timing while the recorder reports its progress.

use std::path::Path;
use std::time::Duration;

use super::CommandError;
use crate::config::Config;
use crate::ingest::IngestConfig;
use crate::record::{self, RecordStats, RecorderConfig};

/// Records what arrives on the listeners of `config.ingest` (or on `port` alone) into `out`
/// until `limits` (at most so many datagrams, at most so long) are reached or the process is
/// stopped; logs progress every two seconds.
pub fn record(
    config: &Config,
    port: Option<u16>,
    out: &Path,
    limits: (Option<u64>, Option<Duration>),
) -> Result<RecordStats, CommandError> {
    let mut ingest = IngestConfig::from_section(&config.ingest);
    if let Some(port) = port {
        ingest = ingest.restrict_to_port(port);
    }
    let failed = |source| CommandError::Recording {
        path: out.to_path_buf(),
        source,
    };
    let handle = record::spawn_recorder(RecorderConfig {
        ingest,
        out: out.to_path_buf(),
        max_datagrams: limits.0,
        max_duration: limits.1,
    })
    .map_err(failed)?;
    let _connect = crate::session::watch_connection(
        handle.probe(),
        handle.listeners(),
        config.ingest.phone,
        None,
        false,
    );
    let recorder = handle.attached();
    while !recorder.wait_finished(Duration::from_secs(2)) {
        let s = recorder.stats();
        tracing::info!(
            datagrams = s.datagrams,
            bytes = s.bytes,
            senders = s.senders,
            "recording"
        );
    }
    handle.shutdown().finish().map_err(failed)
}
