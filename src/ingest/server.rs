//! The ingest thread: a current-thread tokio runtime receiving UDP datagrams into the decoder.

use std::future::poll_fn;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::ReadBuf;
use tokio::net::UdpSocket;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;
use tracing::{debug, error, info, warn};

use super::decoder::{Decoder, MAX_DATAGRAM};
use super::stats::{RateLimiter, Stats};
use crate::arkit::FaceFrame;

/// The VMC receiver ("Marionette") port, 39539.
pub const DEFAULT_PORT: u16 = 39539;

/// The name of the ingest thread.
const THREAD_NAME: &str = "facewire-ingest";

/// How often silent senders are looked for.
const SWEEP_PERIOD: Duration = Duration::from_millis(250);

/// How often the sink's [`FrameSink::tick`] runs, data or not.
pub const TICK_PERIOD: Duration = Duration::from_millis(10);

/// Where the ingest thread delivers what it decodes. Any `FnMut(FaceFrame) + Send` closure is a
/// sink that ignores ticks.
pub trait FrameSink: Send {
    /// A committed frame, in the order frames were committed.
    fn frame(&mut self, frame: FaceFrame);

    /// Called every [`TICK_PERIOD`] whether or not data arrives, so time-based logic (tracking
    /// loss after silence) can act while the network is quiet.
    fn tick(&mut self, _now: Instant) {}
}

impl<F: FnMut(FaceFrame) + Send> FrameSink for F {
    fn frame(&mut self, frame: FaceFrame) {
        self(frame)
    }
}

/// The first pause after repeated receive errors; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(5);

/// The longest pause after repeated receive errors.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Where and how the ingest thread listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestConfig {
    /// UDP addresses to bind; each one understands both VMC and Face Cap. Port 0 picks a free
    /// port ([`IngestHandle::local_addrs`] tells which).
    pub listen: Vec<SocketAddr>,
    /// How long a sender may stay quiet before it is logged as silent.
    pub silence_after: Duration,
}

impl Default for IngestConfig {
    fn default() -> IngestConfig {
        IngestConfig {
            listen: vec![SocketAddr::from((Ipv4Addr::UNSPECIFIED, DEFAULT_PORT))],
            silence_after: Duration::from_secs(2),
        }
    }
}

/// Why the ingest thread could not start.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The configuration lists no address to listen on.
    #[error("no UDP address to listen on")]
    NoListenAddress,
    /// A UDP socket could not be bound (address in use, not an address of this machine, ...).
    #[error("cannot listen on {addr} (UDP)")]
    Bind {
        /// The address from the configuration.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A bound socket could not be handed to tokio.
    #[error("cannot set up the UDP socket on {addr}")]
    Socket {
        /// The address from the configuration.
        addr: SocketAddr,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The tokio runtime could not be built.
    #[error("cannot start the ingest runtime")]
    Runtime(#[source] io::Error),
    /// The ingest thread could not be spawned.
    #[error("cannot spawn the ingest thread")]
    Thread(#[source] io::Error),
}

/// The running ingest thread. Dropping it shuts the thread down, like [`IngestHandle::shutdown`].
#[derive(Debug)]
pub struct IngestHandle {
    /// The addresses actually bound, in configuration order.
    local_addrs: Vec<SocketAddr>,
    /// The counters, refreshed after every datagram.
    stats: Arc<Mutex<Stats>>,
    /// Tells the thread to stop.
    stop: watch::Sender<bool>,
    /// The thread; `None` once joined.
    thread: Option<JoinHandle<()>>,
}

impl IngestHandle {
    /// The bound addresses, in configuration order, with port 0 resolved.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops the thread and waits for it to finish.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    /// Signals the thread and joins it; idempotent.
    fn stop_and_join(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        // An error only means the thread already ended and dropped its receiver.
        let _ = self.stop.send(true);
        if thread.join().is_err() {
            error!("the ingest thread panicked (in the frame callback?)");
        } else {
            debug!("ingest thread stopped");
        }
    }
}

impl Drop for IngestHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds every address in `config.listen`, then starts the `facewire-ingest` thread, which calls
/// `sink` for every committed frame (and its tick every [`TICK_PERIOD`]) until the handle is shut down or dropped.
///
/// Binding happens before this returns, so "address in use" and similar come back here.
pub fn spawn(config: IngestConfig, sink: Box<dyn FrameSink>) -> Result<IngestHandle, IngestError> {
    if config.listen.is_empty() {
        return Err(IngestError::NoListenAddress);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(IngestError::Runtime)?;

    let mut sockets = Vec::with_capacity(config.listen.len());
    let mut local_addrs = Vec::with_capacity(config.listen.len());
    {
        // Registering a socket with tokio needs the runtime's reactor.
        let _guard = runtime.enter();
        for &addr in &config.listen {
            let std_socket = std::net::UdpSocket::bind(addr)
                .map_err(|source| IngestError::Bind { addr, source })?;
            let socket_error = |source| IngestError::Socket { addr, source };
            std_socket.set_nonblocking(true).map_err(socket_error)?;
            let local = std_socket.local_addr().map_err(socket_error)?;
            let socket = UdpSocket::from_std(std_socket).map_err(socket_error)?;
            sockets.push(socket);
            local_addrs.push(local);
        }
    }
    for addr in &local_addrs {
        info!(%addr, "listening for VMC and Face Cap on {addr} (UDP)");
    }

    let stats = Arc::new(Mutex::new(Stats::default()));
    let (stop, stopped) = watch::channel(false);
    let receiver = Receiver {
        sockets,
        stats: Arc::clone(&stats),
        silence_after: config.silence_after,
        sink,
    };
    let thread = std::thread::Builder::new()
        .name(THREAD_NAME.to_string())
        .spawn(move || runtime.block_on(receiver.run(stopped)))
        .map_err(IngestError::Thread)?;

    Ok(IngestHandle {
        local_addrs,
        stats,
        stop,
        thread: Some(thread),
    })
}

/// Everything the receive loop owns.
struct Receiver {
    /// The bound sockets.
    sockets: Vec<UdpSocket>,
    /// Where counters are published.
    stats: Arc<Mutex<Stats>>,
    /// How long a sender may be quiet before it is logged as silent.
    silence_after: Duration,
    /// The frame callback.
    sink: Box<dyn FrameSink>,
}

/// What woke the receive loop.
enum Event {
    /// Shutdown was requested (or the handle is gone).
    Stop,
    /// Time to look for silent senders.
    Sweep,
    /// Time for the sink's periodic tick.
    Tick,
    /// A datagram of this length arrived in the buffer.
    Datagram(usize, SocketAddr),
    /// A socket failed to receive.
    RecvError(SocketAddr, io::Error),
}

impl Receiver {
    /// The receive loop; returns when told to stop. Never returns because of input.
    async fn run(mut self, mut stopped: watch::Receiver<bool>) {
        let mut decoder = Decoder::new();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        // Frames one datagram committed; its capacity is reused, and a datagram of at most
        // MAX_DATAGRAM bytes can hold only so many Apply messages.
        let mut committed: Vec<FaceFrame> = Vec::new();
        let mut next_socket = 0;
        let mut sweep = tokio::time::interval(SWEEP_PERIOD);
        sweep.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut ticks = tokio::time::interval(TICK_PERIOD);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut recv_errors = 0u64;
        let mut consecutive_errors = 0u32;
        let mut error_log = RateLimiter::per_second();

        loop {
            let event = tokio::select! {
                biased;
                _ = stopped.changed() => Event::Stop,
                _ = sweep.tick() => Event::Sweep,
                _ = ticks.tick() => Event::Tick,
                (socket, result) = poll_fn(|cx| poll_recv_any(cx, &self.sockets, &mut buf, &mut next_socket)) => {
                    match result {
                        Ok((len, from)) => Event::Datagram(len, from),
                        Err(err) => Event::RecvError(socket, err),
                    }
                }
            };
            match event {
                Event::Stop => break,
                Event::Tick => self.sink.tick(Instant::now()),
                Event::Sweep => {
                    decoder.sweep_silent(Instant::now(), self.silence_after, |from, protocol, idle| {
                        info!(%from, %protocol, idle_s = idle.as_secs_f32(), "{protocol} sender {from} went silent");
                    });
                }
                Event::Datagram(len, from) => {
                    consecutive_errors = 0;
                    committed.clear();
                    let outcome = decoder.decode(&buf[..len], from, Instant::now(), |frame| {
                        committed.push(*frame);
                    });
                    if outcome.newly_active {
                        if let Some(protocol) = outcome.protocol {
                            info!(%from, %protocol, "receiving {protocol} from {from}");
                        }
                    }
                    // Publish the counters before handing the frames on, so whoever sees a frame
                    // also sees the counters that include it.
                    let mut snapshot = decoder.stats();
                    snapshot.recv_errors = recv_errors;
                    *self.stats.lock().unwrap_or_else(PoisonError::into_inner) = snapshot;
                    for frame in committed.drain(..) {
                        self.sink.frame(frame);
                    }
                }
                Event::RecvError(socket, err) => {
                    recv_errors += 1;
                    consecutive_errors = consecutive_errors.saturating_add(1);
                    self.stats
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .recv_errors = recv_errors;
                    if let Some(suppressed) = error_log.allow(Instant::now()) {
                        warn!(%socket, cause = %err, suppressed, "UDP receive failed; continuing");
                    }
                    if consecutive_errors > 1 {
                        let pause = FIRST_BACKOFF
                            .saturating_mul(1u32 << (consecutive_errors - 2).min(8))
                            .min(MAX_BACKOFF);
                        tokio::select! {
                            biased;
                            _ = stopped.changed() => break,
                            _ = tokio::time::sleep(pause) => {}
                        }
                    }
                }
            }
        }
    }
}

/// Polls every socket once, starting after the one that delivered last (so one busy socket cannot
/// starve the others), and returns the first datagram or error with the socket's address.
fn poll_recv_any(
    cx: &mut Context<'_>,
    sockets: &[UdpSocket],
    buf: &mut [u8],
    next: &mut usize,
) -> Poll<(SocketAddr, io::Result<(usize, SocketAddr)>)> {
    let count = sockets.len();
    for k in 0..count {
        let i = (*next + k) % count;
        let socket = &sockets[i];
        let mut read = ReadBuf::new(buf);
        if let Poll::Ready(result) = socket.poll_recv_from(cx, &mut read) {
            *next = (i + 1) % count;
            let local = socket
                .local_addr()
                .unwrap_or_else(|_| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
            let len = read.filled().len();
            return Poll::Ready((local, result.map(|from| (len, from))));
        }
    }
    Poll::Pending
}
