//! The recorder: every UDP datagram the ingest listeners receive, with its time and sender, into a `.fwrec`.
//!
//! The recorder binds nothing itself. It starts the ingest thread ([`ingest::spawn`]) with a raw
//! [`Tap`] that writes each datagram to the file before the guard and decoding see it, so a
//! recording holds every listener's traffic (VMC and Face Cap, every phone protocol) and the
//! phones that need a start message get it from the ingest thread's handshakes, as in a live run.

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use tracing::{error, info, trace};

use super::format::{FormatError, Header, Writer};
use super::RecordError;
use crate::arkit::{FaceFrame, FrameSink};
use crate::ingest::{self, IngestConfig, IngestHandle, RawDatagram, Tap};

/// How many distinct senders are remembered for the "recording from" log line; later ones are
/// recorded but not announced, so a flood of spoofed sources cannot grow memory.
const MAX_ANNOUNCED: usize = 16;

/// What to record, where, and when to stop.
#[derive(Debug)]
pub struct RecorderConfig {
    /// The listeners to record from, as for a live run: every datagram any of them receives is
    /// recorded, and the phones are sent their start messages. Its `tap` is replaced by the
    /// recorder's. Port 0 picks a free port ([`IngestHandle::listeners`] tells which).
    pub ingest: IngestConfig,
    /// The `.fwrec` file to write; it is created (or truncated) before [`spawn_recorder`] returns.
    pub out: PathBuf,
    /// Stop after this many datagrams; `None` records until shut down.
    pub max_datagrams: Option<u64>,
    /// Stop this long after the recording started; `None` records until shut down.
    pub max_duration: Option<Duration>,
}

/// The recorder's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordStats {
    /// Datagrams written to the file.
    pub datagrams: u64,
    /// Datagram bytes written (without the record headers).
    pub bytes: u64,
    /// Distinct sender addresses seen (counted up to 16).
    pub senders: u64,
    /// How long it has been recording.
    pub elapsed: Duration,
    /// Whether the recorder stopped (a limit was reached, a write failed, or it was shut down).
    pub finished: bool,
}

/// What the recorder shares with its handle.
type Shared = super::Progress<RecordStats>;

impl super::Finish for RecordStats {
    fn is_finished(&self) -> bool {
        self.finished
    }
}

/// The recording attached to a recorder's [`IngestHandle`]: its counters, the finished signal of
/// its limits, and the file. Dropping the handle stops the ingest thread first, then this finishes
/// the file (and keeps what was recorded), like [`Recorder::finish`].
#[derive(Debug)]
pub struct Recorder {
    /// The file and the limits, shared with the tap and the sink on the ingest thread.
    capture: Arc<Mutex<Capture>>,
    /// Counters and the finished signal.
    shared: Arc<Shared>,
}

impl Recorder {
    /// A snapshot of the counters.
    pub fn stats(&self) -> RecordStats {
        self.shared.snapshot()
    }

    /// Waits up to `timeout` for the recording to stop by itself (a limit reached or a write
    /// failure); returns whether it has.
    pub fn wait_finished(&self, timeout: Duration) -> bool {
        self.shared.wait_finished(timeout)
    }

    /// Flushes and closes the file and returns the final counters, or the error that stopped the
    /// recording early (what was written before it stays readable). Called on what
    /// [`IngestHandle::shutdown`] hands back, so every datagram received is in the file.
    pub fn finish(mut self) -> Result<RecordStats, RecordError> {
        self.stop()?;
        Ok(self.stats())
    }

    /// Finishes the file; idempotent.
    fn stop(&mut self) -> Result<(), RecordError> {
        let mut capture = lock(&self.capture);
        capture.finish(Instant::now());
        capture.error.take().map_or(Ok(()), Err)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Err(err) = self.stop() {
            error!(cause = %err, "the recording failed");
        }
    }
}

/// Locks the capture state (a panic elsewhere does not stop the recording).
fn lock(capture: &Mutex<Capture>) -> MutexGuard<'_, Capture> {
    capture.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the ingest thread with `config.ingest` and a tap that appends every datagram any
/// listener receives to `config.out` (created with its header), until a limit is reached or the
/// handle is shut down or dropped. The recording is attached to the handle
/// ([`IngestHandle::attached`]); [`Recorder::finish`] on what [`IngestHandle::shutdown`] hands
/// back gives its final counters.
///
/// Binding happens first, so "address in use" comes back here and leaves an existing file
/// untouched. The file is flushed after every datagram, so a recording interrupted by anything
/// (Ctrl-C, a crash, a full disk) is readable up to its last complete record.
pub fn spawn_recorder(mut config: RecorderConfig) -> Result<IngestHandle<Recorder>, RecordError> {
    let shared = Arc::new(Shared::default());
    let capture = Arc::new(Mutex::new(Capture {
        writer: None,
        out: config.out.clone(),
        max_datagrams: config.max_datagrams,
        max_duration: config.max_duration,
        start: Instant::now(),
        announced: Vec::new(),
        error: None,
        shared: Arc::clone(&shared),
    }));
    // Held until the file is ready: a datagram that arrives before waits for it.
    let mut ready = lock(&capture);
    let tapped = Arc::clone(&capture);
    config.ingest.tap = Some(Tap::new(move |datagram| {
        lock(&tapped).datagram(datagram);
    }));
    let sink = Box::new(LimitSink {
        capture: Arc::clone(&capture),
    });
    let ingest = ingest::spawn(config.ingest, sink).map_err(RecordError::Ingest)?;

    let writer = match create(&config.out) {
        Ok(writer) => writer,
        Err(err) => {
            drop(ready);
            ingest.shutdown();
            return Err(err);
        }
    };
    ready.writer = Some(writer);
    ready.start = Instant::now();
    drop(ready);

    for l in ingest.listeners() {
        let kind = l.kind.listener_label();
        info!(addr = %l.addr, kind, out = %config.out.display(), "recording UDP datagrams on {} ({kind}) into {}", l.addr, config.out.display());
    }
    Ok(ingest.attach(Recorder { capture, shared }))
}

/// Creates (or truncates) the file and writes its header.
fn create(out: &Path) -> Result<Writer<BufWriter<File>>, RecordError> {
    let write_error = |source: FormatError| RecordError::Write {
        path: out.to_path_buf(),
        source,
    };
    let file = File::create(out).map_err(|e| write_error(e.into()))?;
    let started_unix_us = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let header = Header {
        flags: 0,
        started_unix_us,
    };
    let mut writer = Writer::new(BufWriter::new(file), header).map_err(write_error)?;
    writer.flush().map_err(write_error)?;
    Ok(writer)
}

/// The file and the limits; the tap writes to it, the sink's tick enforces the duration.
#[derive(Debug)]
struct Capture {
    /// The file; `None` before it is created and once the recording is finished.
    writer: Option<Writer<BufWriter<File>>>,
    /// The file's path, for errors and logs.
    out: PathBuf,
    /// Stop after this many datagrams.
    max_datagrams: Option<u64>,
    /// Stop this long after the start.
    max_duration: Option<Duration>,
    /// When the recording started: offsets are measured from here.
    start: Instant,
    /// Senders already logged, at most [`MAX_ANNOUNCED`].
    announced: Vec<SocketAddr>,
    /// The write error that stopped the recording, until the handle takes it.
    error: Option<RecordError>,
    /// Counters and the finished signal.
    shared: Arc<Shared>,
}

impl Capture {
    /// Writes one datagram, unless the recording is finished or its duration is up.
    fn datagram(&mut self, datagram: RawDatagram<'_>) {
        if self.duration_up(datagram.received) {
            self.finish(datagram.received);
        }
        let Some(writer) = &mut self.writer else {
            return;
        };
        let offset = datagram.received.saturating_duration_since(self.start);
        let RawDatagram {
            data, from, local, ..
        } = datagram;
        trace!(%from, %local, len = data.len(), "recorded a datagram");
        if let Err(source) = writer
            .write(offset, from, data)
            .and_then(|()| writer.flush())
        {
            self.error = Some(RecordError::Write {
                path: self.out.clone(),
                source,
            });
            self.finish(datagram.received);
            return;
        }
        let records = writer.records();
        let new_sender = !self.announced.contains(&from) && self.announced.len() < MAX_ANNOUNCED;
        if new_sender {
            self.announced.push(from);
            info!(%from, %local, "recording datagrams from {from} (to {local})");
        }
        {
            let mut stats = self.shared.lock();
            stats.datagrams += 1;
            stats.bytes += data.len() as u64;
            stats.elapsed = offset;
            stats.senders += u64::from(new_sender);
        }
        if self.max_datagrams.is_some_and(|max| records >= max) {
            self.finish(datagram.received);
        }
    }

    /// Updates the elapsed time and stops the recording once its duration is up.
    fn tick(&mut self, now: Instant) {
        if self.writer.is_none() {
            return;
        }
        if self.duration_up(now) {
            self.finish(now);
        } else {
            self.shared.lock().elapsed = now.saturating_duration_since(self.start);
        }
    }

    /// Whether the duration limit has passed at `now` (never before the file exists).
    fn duration_up(&self, now: Instant) -> bool {
        self.writer.is_some()
            && self
                .max_duration
                .is_some_and(|max| now.saturating_duration_since(self.start) >= max)
    }

    /// Flushes and closes the file, marks the counters finished and logs the result; idempotent.
    fn finish(&mut self, now: Instant) {
        let Some(mut writer) = self.writer.take() else {
            return;
        };
        if let Err(source) = writer.flush() {
            self.error.get_or_insert(RecordError::Write {
                path: self.out.clone(),
                source,
            });
        }
        drop(writer);
        let stats = {
            let mut stats = self.shared.lock();
            stats.elapsed = now.saturating_duration_since(self.start);
            stats.finished = true;
            *stats
        };
        self.shared.notify();
        match &self.error {
            None => info!(
                datagrams = stats.datagrams,
                bytes = stats.bytes,
                seconds = stats.elapsed.as_secs_f64(),
                out = %self.out.display(),
                "recording finished"
            ),
            Some(err) => {
                error!(cause = %err, datagrams = stats.datagrams, "recording stopped early")
            }
        }
    }
}

/// The recorder's frame sink: frames are not recorded (the raw datagrams are); its tick enforces
/// the duration limit while no datagram arrives.
struct LimitSink {
    /// The recording.
    capture: Arc<Mutex<Capture>>,
}

impl FrameSink for LimitSink {
    fn frame(&mut self, _frame: FaceFrame) {}

    fn tick(&mut self, now: Instant) {
        lock(&self.capture).tick(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Recording;

    /// Ingest with only an OSC listener on a free loopback port.
    fn loopback() -> IngestConfig {
        IngestConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            ..IngestConfig::default()
        }
    }

    #[test]
    fn stops_after_the_datagram_limit() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("take.fwrec");
        let handle = spawn_recorder(RecorderConfig {
            ingest: loopback(),
            out: out.clone(),
            max_datagrams: Some(3),
            max_duration: None,
        })
        .unwrap();
        let to = handle.local_addrs()[0];
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Loopback UDP does not drop datagrams this small; sending until the limit is reached
        // keeps the test independent of how fast the recorder starts.
        let mut i = 0u8;
        while !handle.attached().wait_finished(Duration::from_millis(20)) && i < 200 {
            sender.send_to(&[i], to).unwrap();
            i += 1;
        }
        let stats = handle.shutdown().finish().unwrap();
        assert!(stats.finished);
        assert_eq!(stats.datagrams, 3);
        assert_eq!(stats.senders, 1);
        let recording = Recording::load(&out).unwrap();
        assert_eq!(recording.len(), 3);
        assert_eq!(recording.records()[0].datagram, vec![0]);
        assert_eq!(recording.records()[2].datagram, vec![2]);
        assert_eq!(
            recording.records()[0].from,
            sender.local_addr().unwrap(),
            "the sender's address is kept"
        );
    }

    #[test]
    fn stops_after_the_duration_limit_with_a_valid_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("empty.fwrec");
        let handle = spawn_recorder(RecorderConfig {
            ingest: loopback(),
            out: out.clone(),
            max_datagrams: None,
            max_duration: Some(Duration::from_millis(30)),
        })
        .unwrap();
        assert!(handle.attached().wait_finished(Duration::from_secs(30)));
        let stats = handle.shutdown().finish().unwrap();
        assert_eq!(stats.datagrams, 0);
        assert!(stats.elapsed >= Duration::from_millis(30));
        let recording = Recording::load(&out).unwrap();
        assert!(recording.is_empty());
        assert!(recording.header().unwrap().started_unix_us > 0);
    }

    #[test]
    fn bind_and_file_errors_come_back_from_spawn() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.fwrec");
        let no_listener = RecorderConfig {
            ingest: IngestConfig {
                listen: Vec::new(),
                ..IngestConfig::default()
            },
            out: out.clone(),
            max_datagrams: None,
            max_duration: None,
        };
        assert!(matches!(
            spawn_recorder(no_listener),
            Err(RecordError::Ingest(ingest::IngestError::NoListenAddress))
        ));
        // A port in use: the error comes back and an existing file is left as it was.
        std::fs::write(&out, b"keep").unwrap();
        let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let busy = RecorderConfig {
            ingest: IngestConfig {
                listen: vec![taken.local_addr().unwrap()],
                ..IngestConfig::default()
            },
            out: out.clone(),
            max_datagrams: None,
            max_duration: None,
        };
        assert!(matches!(
            spawn_recorder(busy),
            Err(RecordError::Ingest(ingest::IngestError::Bind { .. }))
        ));
        assert_eq!(std::fs::read(&out).unwrap(), b"keep");
        let bad_dir = RecorderConfig {
            ingest: loopback(),
            out: dir.path().join("missing").join("x.fwrec"),
            max_datagrams: None,
            max_duration: None,
        };
        assert!(matches!(
            spawn_recorder(bad_dir),
            Err(RecordError::Write { .. })
        ));
    }
}
