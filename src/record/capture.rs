//! The recorder thread: every UDP datagram received, with its time and sender, into a `.fwrec`.

use std::fs::File;
use std::future::poll_fn;
use std::io::{self, BufWriter};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use tokio::net::UdpSocket;
use tokio::sync::watch;
use tracing::{debug, error, info, trace, warn};

use super::format::{FormatError, Header, Writer};
use super::RecordError;
use crate::ingest::{poll_recv_any, RateLimiter, MAX_DATAGRAM};

/// The name of the recorder thread.
const THREAD_NAME: &str = "facewire-record";

/// How many distinct senders are remembered for the "recording from" log line; later ones are
/// recorded but not announced, so a flood of spoofed sources cannot grow memory.
const MAX_ANNOUNCED: usize = 16;

/// How often the recorder checks its duration limit when no datagram arrives.
const CHECK_PERIOD: Duration = Duration::from_millis(50);

/// The pause after a receive error, so a failing socket cannot spin the thread.
const ERROR_PAUSE: Duration = Duration::from_millis(20);

/// What to record, where, and when to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// UDP addresses to bind. Port 0 picks a free port ([`RecorderHandle::local_addrs`] tells
    /// which).
    pub listen: Vec<SocketAddr>,
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
    /// Failed receives.
    pub recv_errors: u64,
    /// How long it has been recording.
    pub elapsed: Duration,
    /// Whether the recorder stopped (a limit was reached, a write failed, or it was shut down).
    pub finished: bool,
}

/// What the recorder thread shares with its handle.
type Shared = super::Progress<RecordStats>;

impl super::Finish for RecordStats {
    fn is_finished(&self) -> bool {
        self.finished
    }
}

/// The running recorder. Dropping it stops the recorder (and keeps what was recorded), like
/// [`RecorderHandle::shutdown`].
#[derive(Debug)]
pub struct RecorderHandle {
    /// The bound addresses, in configuration order.
    local_addrs: Vec<SocketAddr>,
    /// Counters and the finished signal.
    shared: Arc<Shared>,
    /// Tells the thread to stop.
    stop: watch::Sender<bool>,
    /// The thread, which returns the first write error; `None` once joined.
    thread: Option<JoinHandle<Result<(), RecordError>>>,
}

impl RecorderHandle {
    /// The bound addresses, in configuration order, with port 0 resolved.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> RecordStats {
        self.shared.snapshot()
    }

    /// Waits up to `timeout` for the recorder to stop by itself (a limit reached or a write
    /// failure); returns whether it has.
    pub fn wait_finished(&self, timeout: Duration) -> bool {
        self.shared.wait_finished(timeout)
    }

    /// Stops recording, flushes the file and returns the final counters, or the error that
    /// stopped the recording early (what was written before it stays readable).
    pub fn shutdown(mut self) -> Result<RecordStats, RecordError> {
        self.stop_and_join()?;
        Ok(self.stats())
    }

    /// Signals the thread and joins it; idempotent.
    fn stop_and_join(&mut self) -> Result<(), RecordError> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        // An error only means the thread already ended and dropped its receiver.
        let _ = self.stop.send(true);
        match thread.join() {
            Ok(result) => {
                debug!("recorder thread stopped");
                result
            }
            Err(_) => {
                error!("the recorder thread panicked");
                Ok(())
            }
        }
    }
}

impl Drop for RecorderHandle {
    fn drop(&mut self) {
        if let Err(err) = self.stop_and_join() {
            error!(cause = %err, "the recording failed");
        }
    }
}

/// Binds every address in `config.listen`, creates `config.out` with its header, and starts the
/// `facewire-record` thread, which appends every datagram received until a limit is reached or
/// the handle is shut down or dropped.
///
/// The file is flushed after every datagram, so a recording interrupted by anything (Ctrl-C, a
/// crash, a full disk) is readable up to its last complete record.
pub fn spawn_recorder(config: RecorderConfig) -> Result<RecorderHandle, RecordError> {
    if config.listen.is_empty() {
        return Err(RecordError::NoListenAddress);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(RecordError::Runtime)?;

    let mut sockets = Vec::with_capacity(config.listen.len());
    let mut local_addrs = Vec::with_capacity(config.listen.len());
    {
        // Registering a socket with tokio needs the runtime's reactor.
        let _guard = runtime.enter();
        for &addr in &config.listen {
            let std_socket = std::net::UdpSocket::bind(addr)
                .map_err(|source| RecordError::Bind { addr, source })?;
            let socket_error = |source| RecordError::Socket { addr, source };
            std_socket.set_nonblocking(true).map_err(socket_error)?;
            let local = std_socket.local_addr().map_err(socket_error)?;
            let socket = UdpSocket::from_std(std_socket).map_err(socket_error)?;
            sockets.push(socket);
            local_addrs.push(local);
        }
    }

    let write_error = |source: FormatError| RecordError::Write {
        path: config.out.clone(),
        source,
    };
    let file = File::create(&config.out).map_err(|e| write_error(e.into()))?;
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

    for addr in &local_addrs {
        info!(%addr, out = %config.out.display(), "recording UDP datagrams on {addr} into {}", config.out.display());
    }

    let shared = Arc::new(Shared::default());
    let (stop, stopped) = watch::channel(false);
    let recorder = Recorder {
        sockets,
        writer,
        config,
        shared: Arc::clone(&shared),
        start: Instant::now(),
        announced: Vec::new(),
    };
    let thread = std::thread::Builder::new()
        .name(THREAD_NAME.to_string())
        .spawn(move || runtime.block_on(recorder.run(stopped)))
        .map_err(|source| RecordError::Thread {
            name: THREAD_NAME,
            source,
        })?;
    Ok(RecorderHandle {
        local_addrs,
        shared,
        stop,
        thread: Some(thread),
    })
}

/// Everything the recording loop owns.
struct Recorder {
    /// The bound sockets.
    sockets: Vec<UdpSocket>,
    /// The file.
    writer: Writer<BufWriter<File>>,
    /// Limits and the output path.
    config: RecorderConfig,
    /// Counters and the finished signal.
    shared: Arc<Shared>,
    /// When the recording started: offsets are measured from here.
    start: Instant,
    /// Senders already logged, at most [`MAX_ANNOUNCED`].
    announced: Vec<SocketAddr>,
}

/// What woke the recording loop.
enum Event {
    /// Shutdown was requested (or the handle is gone).
    Stop,
    /// Time to check the duration limit.
    Check,
    /// A datagram of this length arrived in the buffer.
    Datagram(usize, SocketAddr),
    /// A socket failed to receive.
    RecvError(SocketAddr, io::Error),
}

impl Recorder {
    /// The recording loop; returns the error that stopped it, if any.
    async fn run(mut self, mut stopped: watch::Receiver<bool>) -> Result<(), RecordError> {
        let result = self.receive(&mut stopped).await;
        let flushed = self.writer.flush().map_err(|source| RecordError::Write {
            path: self.config.out.clone(),
            source,
        });
        let result = result.and(flushed);
        let stats = {
            let mut stats = self.shared.lock();
            stats.elapsed = self.start.elapsed();
            stats.finished = true;
            *stats
        };
        self.shared.notify();
        match &result {
            Ok(()) => info!(
                datagrams = stats.datagrams,
                bytes = stats.bytes,
                seconds = stats.elapsed.as_secs_f64(),
                out = %self.config.out.display(),
                "recording finished"
            ),
            Err(err) => {
                error!(cause = %err, datagrams = stats.datagrams, "recording stopped early")
            }
        }
        result
    }

    /// Receives and writes until a limit, a stop request or a write error.
    async fn receive(&mut self, stopped: &mut watch::Receiver<bool>) -> Result<(), RecordError> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut next_socket = 0;
        let mut check = tokio::time::interval(CHECK_PERIOD);
        let mut error_log = RateLimiter::per_second();
        loop {
            if self.limit_reached() {
                return Ok(());
            }
            let event = tokio::select! {
                biased;
                _ = stopped.changed() => Event::Stop,
                _ = check.tick() => Event::Check,
                (index, result) = poll_fn(|cx| poll_recv_any(cx, &self.sockets, &mut buf, &mut next_socket)) => {
                    match result {
                        Ok((len, from)) => Event::Datagram(len, from),
                        Err(err) => {
                            let socket = self.sockets[index]
                                .local_addr()
                                .unwrap_or_else(|_| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
                            Event::RecvError(socket, err)
                        }
                    }
                }
            };
            match event {
                Event::Stop => return Ok(()),
                Event::Check => {
                    self.lock_stats().elapsed = self.start.elapsed();
                }
                Event::Datagram(len, from) => {
                    let offset = self.start.elapsed();
                    trace!(%from, len, "recorded a datagram");
                    let written = self
                        .writer
                        .write(offset, from, &buf[..len])
                        .and_then(|()| self.writer.flush());
                    if let Err(source) = written {
                        return Err(RecordError::Write {
                            path: self.config.out.clone(),
                            source,
                        });
                    }
                    let new_sender =
                        !self.announced.contains(&from) && self.announced.len() < MAX_ANNOUNCED;
                    if new_sender {
                        self.announced.push(from);
                        info!(%from, "recording datagrams from {from}");
                    }
                    let mut stats = self.lock_stats();
                    stats.datagrams += 1;
                    stats.bytes += len as u64;
                    stats.elapsed = offset;
                    stats.senders += u64::from(new_sender);
                }
                Event::RecvError(socket, err) => {
                    self.lock_stats().recv_errors += 1;
                    if let Some(suppressed) = error_log.allow(Instant::now()) {
                        warn!(%socket, cause = %err, suppressed, "UDP receive failed; continuing");
                    }
                    tokio::select! {
                        biased;
                        _ = stopped.changed() => return Ok(()),
                        _ = tokio::time::sleep(ERROR_PAUSE) => {}
                    }
                }
            }
        }
    }

    /// The counters, locked.
    fn lock_stats(&self) -> std::sync::MutexGuard<'_, RecordStats> {
        self.shared.lock()
    }

    /// Whether the datagram count or duration limit is reached.
    fn limit_reached(&self) -> bool {
        let count = self
            .config
            .max_datagrams
            .is_some_and(|max| self.writer.records() >= max);
        let time = self
            .config
            .max_duration
            .is_some_and(|max| self.start.elapsed() >= max);
        count || time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Recording;

    #[test]
    fn stops_after_the_datagram_limit() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("take.fwrec");
        let handle = spawn_recorder(RecorderConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
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
        while !handle.wait_finished(Duration::from_millis(20)) && i < 200 {
            sender.send_to(&[i], to).unwrap();
            i += 1;
        }
        let stats = handle.shutdown().unwrap();
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
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            out: out.clone(),
            max_datagrams: None,
            max_duration: Some(Duration::from_millis(30)),
        })
        .unwrap();
        assert!(handle.wait_finished(Duration::from_secs(30)));
        let stats = handle.shutdown().unwrap();
        assert_eq!(stats.datagrams, 0);
        let recording = Recording::load(&out).unwrap();
        assert!(recording.is_empty());
        assert!(recording.header().unwrap().started_unix_us > 0);
    }

    #[test]
    fn bind_and_file_errors_come_back_from_spawn() {
        let dir = tempfile::tempdir().unwrap();
        let config = RecorderConfig {
            listen: Vec::new(),
            out: dir.path().join("x.fwrec"),
            max_datagrams: None,
            max_duration: None,
        };
        assert!(matches!(
            spawn_recorder(config.clone()),
            Err(RecordError::NoListenAddress)
        ));
        let bad_dir = RecorderConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            out: dir.path().join("missing").join("x.fwrec"),
            ..config
        };
        assert!(matches!(
            spawn_recorder(bad_dir),
            Err(RecordError::Write { .. })
        ));
    }
}
