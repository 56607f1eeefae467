//! The ingest thread: a current-thread tokio runtime receiving every protocol's UDP datagrams, guarding, decoding and handshaking.

use std::future::poll_fn;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::ReadBuf;
use tokio::net::UdpSocket;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;
use tracing::{debug, error, info, trace, warn};

use super::bind::{bind_all, Bound, BoundListener, IngestError, Wanted};
use super::config::IngestConfig;
use super::decoder::{DatagramClass, Decoder, KeyEvent, MAX_DATAGRAM, MAX_KEYS};
use super::guard::{Admit, Guard, GuardStats};
use super::handshake::{handshakes, Handshake, Schedule};
use super::ifacialmocap;
use super::phone::{PhoneDecoder, PhoneStats};
use super::report::{Heard, IngestProbe, ListenerReport, Reports};
use super::sniff;
use super::stats::{RateLimiter, Stats};
use super::tap::{RawDatagram, Tap};
pub use crate::arkit::FrameSink;
use crate::arkit::{FaceFrame, Protocol};

/// The name of the ingest thread.
const THREAD_NAME: &str = "facewire-ingest";

/// How often silent senders are looked for.
const SWEEP_PERIOD: Duration = Duration::from_millis(250);

/// How often the sink's [`FrameSink::tick`] runs, data or not.
pub const TICK_PERIOD: Duration = Duration::from_millis(10);

/// The first pause after repeated receive errors; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(5);

/// The longest pause after repeated receive errors.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The most datagrams taken from one socket per wake-up of the receive loop: a socket is drained
/// without going back to the scheduler, but not for so long that stop, the ticks or the other
/// sockets wait behind a flood.
const DRAIN_BATCH: usize = 256;

/// Counters of the phone listeners, the guard and the handshakes.
///
/// Every datagram received is accounted for: [`NetStats::accounts_for`] checks that
/// `datagrams` is the OSC decoder's datagrams, plus the phone decoders' datagrams, plus those the
/// guard turned away (`not_allowed`, `other_source`) before any decoder saw them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Datagrams received on every listener, whatever became of them.
    pub datagrams: u64,
    /// iFacialMocap frames and rejects.
    pub ifacialmocap: PhoneStats,
    /// Facemotion3d frames and rejects.
    pub facemotion3d: PhoneStats,
    /// Live Link Face frames and rejects.
    pub livelinkface: PhoneStats,
    /// VTube Studio and MeowFace frames and rejects.
    pub vtubestudio: PhoneStats,
    /// OpenSeeFace frames and rejects.
    pub openseeface: PhoneStats,
    /// The allow-list and the source lock.
    pub guard: GuardStats,
    /// Start messages sent to a phone.
    pub handshakes_sent: u64,
    /// Start messages that could not be sent.
    pub handshake_errors: u64,
}

impl NetStats {
    /// The counters of one phone protocol; `None` for VMC and Face Cap, whose counters are the
    /// OSC [`Stats`], and for the webcam, which has no socket.
    pub fn phone(&self, protocol: Protocol) -> Option<&PhoneStats> {
        match protocol {
            Protocol::Vmc | Protocol::FaceCap => None,
            Protocol::IFacialMocap => Some(&self.ifacialmocap),
            Protocol::Facemotion3d => Some(&self.facemotion3d),
            Protocol::LiveLinkFace => Some(&self.livelinkface),
            Protocol::VTubeStudio => Some(&self.vtubestudio),
            Protocol::OpenSeeFace => Some(&self.openseeface),
            Protocol::Webcam => None,
        }
    }

    /// Datagrams the phone decoders were handed, over every phone protocol.
    pub fn phone_datagrams(&self) -> u64 {
        [
            &self.ifacialmocap,
            &self.facemotion3d,
            &self.livelinkface,
            &self.vtubestudio,
            &self.openseeface,
        ]
        .iter()
        .map(|p| p.datagrams)
        .sum()
    }

    /// Datagrams the guard turned away before decoding (allow-list and source lock).
    pub fn rejected(&self) -> u64 {
        self.guard.not_allowed + self.guard.other_source
    }

    /// Whether every datagram received is counted once: decoded as OSC (`osc`, the snapshot
    /// taken with this one), decoded by a phone decoder, or rejected by the guard.
    pub fn accounts_for(&self, osc: &Stats) -> bool {
        self.datagrams == osc.datagrams + self.phone_datagrams() + self.rejected()
    }
}

/// The running ingest thread, with what lives and stops with it. Dropping it shuts the thread
/// down, like [`IngestHandle::shutdown`].
///
/// `A` is what is attached to the run ([`IngestHandle::attach`]): nothing for a live run, the
/// recording for `facewire record` (its file is finished once the thread has stopped).
#[derive(Debug)]
pub struct IngestHandle<A = ()> {
    /// The OSC addresses actually bound, in configuration order.
    local_addrs: Vec<SocketAddr>,
    /// Every bound socket, in bind order (OSC first).
    listeners: Vec<BoundListener>,
    /// Optional listeners that could not be bound.
    skipped: Vec<BoundListener>,
    /// The OSC counters, refreshed after every datagram.
    stats: Arc<Mutex<Stats>>,
    /// The other counters, refreshed after every datagram.
    net_stats: Arc<Mutex<NetStats>>,
    /// What each listener has heard, updated once per datagram.
    reports: Arc<Mutex<Reports>>,
    /// The phone the start messages go to, changed while the run lasts.
    phone: watch::Sender<Option<IpAddr>>,
    /// The thread. Declared before `attached`: fields drop in order, so a dropped handle stops
    /// the thread (and with it the tap and the sink) before what is attached goes.
    thread: Running,
    /// What lives and stops with the thread.
    attached: A,
}

impl IngestHandle {
    /// The same run with `attached` living and stopping with it: dropped after the thread has
    /// stopped, handed back by [`IngestHandle::shutdown`].
    pub fn attach<A>(self, attached: A) -> IngestHandle<A> {
        let IngestHandle {
            local_addrs,
            listeners,
            skipped,
            stats,
            net_stats,
            reports,
            phone,
            thread,
            attached: (),
        } = self;
        IngestHandle {
            local_addrs,
            listeners,
            skipped,
            stats,
            net_stats,
            reports,
            phone,
            thread,
            attached,
        }
    }
}

impl<A> IngestHandle<A> {
    /// The bound OSC addresses, in configuration order, with port 0 resolved.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Every bound socket, OSC first, then the phone listeners in configuration order.
    pub fn listeners(&self) -> &[BoundListener] {
        &self.listeners
    }

    /// The first bound address of a listener of `protocol`'s family, if any (the OSC socket for
    /// VMC and Face Cap).
    pub fn local_addr(&self, protocol: Protocol) -> Option<SocketAddr> {
        self.listeners
            .iter()
            .find(|l| l.kind.same_family(protocol))
            .map(|l| l.addr)
    }

    /// Optional listeners that could not be bound (their port was in use), with their configured
    /// address.
    pub fn skipped(&self) -> &[BoundListener] {
        &self.skipped
    }

    /// A snapshot of the OSC counters.
    pub fn stats(&self) -> Stats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A snapshot of the phone, guard and handshake counters.
    pub fn net_stats(&self) -> NetStats {
        *self
            .net_stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// What each listener has heard so far: one report per bound listener, in
    /// [`IngestHandle::listeners`] order.
    pub fn reports(&self) -> Vec<ListenerReport> {
        self.probe().reports()
    }

    /// A reader of the listener reports and the frame count that another thread can keep and
    /// poll ([`IngestProbe`]).
    pub fn probe(&self) -> IngestProbe {
        IngestProbe::new(Arc::clone(&self.reports))
    }

    /// Sends the start messages of iFacialMocap, Facemotion3d, VTube Studio and MeowFace to
    /// `phone` from now on (`None`: to the sender facewire follows, as without `ingest.phone`);
    /// a new address gets them at once.
    pub fn set_phone(&self, phone: Option<IpAddr>) {
        self.phone.send_if_modified(|now| {
            let changed = *now != phone;
            *now = phone;
            changed
        });
    }

    /// The phone the start messages go to (`None`: the sender facewire follows).
    pub fn phone(&self) -> Option<IpAddr> {
        *self.phone.borrow()
    }

    /// What is attached to the run ([`IngestHandle::attach`]).
    pub fn attached(&self) -> &A {
        &self.attached
    }

    /// Stops the thread, waits for it to finish and hands back what was attached.
    pub fn shutdown(self) -> A {
        let IngestHandle {
            mut thread,
            attached,
            ..
        } = self;
        thread.stop_and_join();
        attached
    }
}

/// The ingest thread and its stop signal; dropping it stops and joins the thread.
#[derive(Debug)]
struct Running {
    /// Tells the thread to stop.
    stop: watch::Sender<bool>,
    /// The thread; `None` once joined.
    thread: Option<JoinHandle<()>>,
}

impl Running {
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

impl Drop for Running {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds every listener of `config` (a required one that fails is an error, an optional one a
/// warning), then starts the `facewire-ingest` thread, which hands every datagram received to
/// the configured [`Tap`], calls `sink` for every committed frame of the followed source (and its
/// tick every [`TICK_PERIOD`]) and sends the phone start messages, until the handle is shut down
/// or dropped.
///
/// Binding happens before this returns, so "address in use" and similar come back here.
pub fn spawn(
    mut config: IngestConfig,
    sink: Box<dyn FrameSink>,
) -> Result<IngestHandle, IngestError> {
    let wanted: Vec<Wanted> = config
        .listen
        .iter()
        .map(|&addr| Wanted {
            kind: Protocol::Vmc,
            addr,
            required: config.listen_required,
        })
        .chain(config.phones.iter().map(|p| Wanted {
            kind: p.protocol.family(),
            addr: p.addr,
            required: p.required,
        }))
        .collect();
    if wanted.is_empty() {
        return Err(IngestError::NoListenAddress);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(IngestError::Runtime)?;
    let Bound {
        sockets,
        listeners,
        skipped,
    } = {
        // Registering a socket with tokio needs the runtime's reactor.
        let _guard = runtime.enter();
        bind_all(&wanted)?
    };
    let handshakes = handshakes(&config, &listeners);
    let local_addrs = listeners
        .iter()
        .filter(|l| l.kind == Protocol::Vmc)
        .map(|l| l.addr)
        .collect();

    let stats = Arc::new(Mutex::new(Stats::default()));
    let net_stats = Arc::new(Mutex::new(NetStats::default()));
    let reports = Arc::new(Mutex::new(Reports::new(
        listeners.iter().map(|l| (l.kind, l.addr)),
    )));
    let (stop, stopped) = watch::channel(false);
    let (phone, phone_rx) = watch::channel(config.phone);
    let receiver = Receiver {
        kinds: listeners.iter().map(|l| l.kind).collect(),
        locals: listeners.iter().map(|l| l.addr).collect(),
        sockets,
        stats: Arc::clone(&stats),
        net_stats: Arc::clone(&net_stats),
        reports: Arc::clone(&reports),
        silence_after: config.silence_after,
        guard: Guard::new(config.allow.clone(), config.prefer, config.lock_release),
        phone: phone_rx,
        handshakes,
        sink,
        tap: config.tap.take(),
    };
    let thread = std::thread::Builder::new()
        .name(THREAD_NAME.to_string())
        .spawn(move || runtime.block_on(receiver.run(stopped)))
        .map_err(IngestError::Thread)?;

    Ok(IngestHandle {
        local_addrs,
        listeners,
        skipped,
        stats,
        net_stats,
        reports,
        phone,
        thread: Running {
            stop,
            thread: Some(thread),
        },
        attached: (),
    })
}

/// The slot of a protocol's family in per-family arrays ([`Protocol::FAMILIES`] order).
fn slot(protocol: Protocol) -> usize {
    match protocol {
        Protocol::Vmc | Protocol::FaceCap => 0,
        Protocol::IFacialMocap => 1,
        Protocol::Facemotion3d => 2,
        Protocol::LiveLinkFace => 3,
        Protocol::VTubeStudio => 4,
        Protocol::OpenSeeFace => 5,
        // No socket receives it; its slot keeps the arrays total.
        Protocol::Webcam => 6,
    }
}

/// The length of per-family arrays: the network families, and the webcam's unused slot.
const FAMILY_COUNT: usize = Protocol::FAMILIES.len() + 1;

/// Everything the receive loop owns.
struct Receiver {
    /// What each socket receives (a protocol family, [`Protocol::Vmc`] for OSC).
    kinds: Vec<Protocol>,
    /// Each socket's bound address.
    locals: Vec<SocketAddr>,
    /// The bound sockets.
    sockets: Vec<UdpSocket>,
    /// Where OSC counters are published.
    stats: Arc<Mutex<Stats>>,
    /// Where the other counters are published.
    net_stats: Arc<Mutex<NetStats>>,
    /// Where each listener's report is kept.
    reports: Arc<Mutex<Reports>>,
    /// How long a sender may be quiet before it is logged as silent.
    silence_after: Duration,
    /// The allow-list and the source lock.
    guard: Guard,
    /// The phone the start messages go to ([`IngestHandle::set_phone`] changes it).
    phone: watch::Receiver<Option<IpAddr>>,
    /// The start messages.
    handshakes: Vec<Handshake>,
    /// The frame callback.
    sink: Box<dyn FrameSink>,
    /// The raw-datagram tap.
    tap: Option<Tap>,
}

/// What woke the receive loop.
enum Event {
    /// Shutdown was requested (or the handle is gone).
    Stop,
    /// Time to look for silent senders.
    Sweep,
    /// Time for the sink's periodic tick and the start messages.
    Tick,
    /// A datagram of this length arrived in the buffer on this socket.
    Datagram(usize, usize, SocketAddr),
    /// A socket failed to receive.
    RecvError(usize, io::Error),
}

/// The receive loop's state besides the [`Receiver`].
struct Loop {
    /// The OSC decoder.
    decoder: Decoder,
    /// One decoder per phone protocol.
    phones: Vec<PhoneDecoder>,
    /// When each family last delivered a frame to the sink.
    last_frame: [Option<Instant>; FAMILY_COUNT],
    /// Whether each phone family is reported as active (for the receiving/silent logs).
    active: [bool; FAMILY_COUNT],
    /// Receive errors so far.
    recv_errors: u64,
    /// Start messages sent and failed.
    handshakes_sent: u64,
    /// Start messages that failed.
    handshake_errors: u64,
    /// Limits the handshake error lines.
    handshake_log: RateLimiter,
    /// Datagrams received on every socket.
    datagrams: u64,
}

impl Loop {
    /// The decoder of a phone protocol; `None` for VMC and Face Cap.
    fn phone(&mut self, protocol: Protocol) -> Option<&mut PhoneDecoder> {
        self.phones.iter_mut().find(|d| d.protocol() == protocol)
    }

    /// The counters of a phone protocol's decoder (zero for VMC and Face Cap).
    fn phone_stats(&self, protocol: Protocol) -> PhoneStats {
        self.phones
            .iter()
            .find(|d| d.protocol() == protocol)
            .map(PhoneDecoder::stats)
            .unwrap_or_default()
    }

    /// The counters besides the OSC ones.
    fn net_stats(&self, guard: &Guard) -> NetStats {
        NetStats {
            datagrams: self.datagrams,
            ifacialmocap: self.phone_stats(Protocol::IFacialMocap),
            facemotion3d: self.phone_stats(Protocol::Facemotion3d),
            livelinkface: self.phone_stats(Protocol::LiveLinkFace),
            vtubestudio: self.phone_stats(Protocol::VTubeStudio),
            openseeface: self.phone_stats(Protocol::OpenSeeFace),
            guard: guard.stats(),
            handshakes_sent: self.handshakes_sent,
            handshake_errors: self.handshake_errors,
        }
    }
}

impl Receiver {
    /// Publishes both counter sets.
    fn publish(&self, state: &Loop) {
        let mut snapshot = state.decoder.stats();
        snapshot.recv_errors = state.recv_errors;
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner) = snapshot;
        *self
            .net_stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = state.net_stats(&self.guard);
    }

    /// The receive loop; returns when told to stop. Never returns because of input.
    async fn run(mut self, mut stopped: watch::Receiver<bool>) {
        let mut state = Loop {
            decoder: Decoder::new(),
            phones: Protocol::FAMILIES
                .into_iter()
                .filter_map(PhoneDecoder::new)
                .collect(),
            last_frame: [None; FAMILY_COUNT],
            active: [false; FAMILY_COUNT],
            recv_errors: 0,
            handshakes_sent: 0,
            handshake_errors: 0,
            handshake_log: RateLimiter::new(Duration::from_secs(5)),
            datagrams: 0,
        };
        let mut buf = vec![0u8; MAX_DATAGRAM];
        // Frames one datagram committed; its capacity is reused, and a datagram of at most
        // MAX_DATAGRAM bytes can hold only so many Apply messages.
        let mut committed: Vec<FaceFrame> = Vec::new();
        // Keys one datagram pressed or released (`/VMC/Ext/Key`); at most MAX_KEYS.
        let mut keys: Vec<KeyEvent> = Vec::with_capacity(MAX_KEYS);
        let mut next_socket = 0;
        let mut sweep = tokio::time::interval(SWEEP_PERIOD);
        sweep.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut ticks = tokio::time::interval(TICK_PERIOD);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
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
                        Ok((len, from)) => Event::Datagram(socket, len, from),
                        Err(err) => Event::RecvError(socket, err),
                    }
                }
            };
            match event {
                Event::Stop => break,
                Event::Tick => {
                    let now = Instant::now();
                    self.send_handshakes(&mut state, now);
                    self.sink.tick(now);
                }
                Event::Sweep => {
                    let now = Instant::now();
                    state
                        .decoder
                        .sweep_silent(now, self.silence_after, |from, protocol, idle| {
                            info!(%from, %protocol, idle_s = idle.as_secs_f32(), "{protocol} sender {from} went silent");
                        });
                    for family in Protocol::FAMILIES.into_iter().filter(|p| !p.is_osc()) {
                        let i = slot(family);
                        let idle = state.last_frame[i].map(|t| now.saturating_duration_since(t));
                        if state.active[i] && idle.is_some_and(|idle| idle >= self.silence_after) {
                            state.active[i] = false;
                            info!(
                                protocol = family.family_label(),
                                "{} went silent",
                                family.family_label()
                            );
                        }
                    }
                    self.guard.expire(now);
                    self.publish(&state);
                }
                Event::Datagram(socket, len, from) => {
                    consecutive_errors = 0;
                    let mut batch = Batch {
                        socket,
                        buf: &mut buf,
                        committed: &mut committed,
                        keys: &mut keys,
                        unpublished: false,
                    };
                    self.received(&mut state, &mut batch, len, from);
                    // Drain what else is queued on this socket before going back to the
                    // scheduler: under a flood this saves a wake-up per datagram.
                    for _ in 1..DRAIN_BATCH {
                        let Some(sock) = self.sockets.get(socket) else {
                            break;
                        };
                        match sock.try_recv_from(batch.buf) {
                            Ok((len, from)) => self.received(&mut state, &mut batch, len, from),
                            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                            // Errors are for the next poll to report (and back off from).
                            Err(_) => break,
                        }
                    }
                    if batch.unpublished {
                        self.publish(&state);
                    }
                }
                Event::RecvError(socket, err) => {
                    state.recv_errors += 1;
                    consecutive_errors = consecutive_errors.saturating_add(1);
                    self.publish(&state);
                    if let Some(suppressed) = error_log.allow(Instant::now()) {
                        let socket = self
                            .sockets
                            .get(socket)
                            .and_then(|s| s.local_addr().ok())
                            .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
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

    /// Handles one datagram received on `batch.socket`: decodes it, records it in the listener's
    /// report and hands its frames and keys to the sink.
    fn received(&mut self, state: &mut Loop, batch: &mut Batch<'_>, len: usize, from: SocketAddr) {
        let socket = batch.socket;
        let kind = self.kinds.get(socket).copied().unwrap_or(Protocol::Vmc);
        let local = self
            .locals
            .get(socket)
            .copied()
            .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
        let data = batch.buf.get(..len).unwrap_or_default();
        let heard = self.datagram(
            state,
            kind,
            local,
            data,
            from,
            (batch.committed, batch.keys),
        );
        self.reports
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(socket, heard);
        // Publish the counters before the frames are handed on, so whoever sees a frame also
        // sees the counters that include it; other datagrams are published once per batch.
        if batch.committed.is_empty() && batch.keys.is_empty() {
            batch.unpublished = true;
            return;
        }
        self.publish(state);
        batch.unpublished = false;
        for frame in batch.committed.drain(..) {
            self.sink.frame(frame);
        }
        for key in batch.keys.drain(..) {
            self.sink.key(key.name(), key.pressed);
        }
    }

    /// Taps, guards and decodes one datagram received on a `kind` socket bound to `local`,
    /// leaving the frames and the keys (`/VMC/Ext/Key`) to deliver in `committed`; returns what became of it for the listener's
    /// report.
    fn datagram(
        &mut self,
        state: &mut Loop,
        kind: Protocol,
        local: SocketAddr,
        data: &[u8],
        from: SocketAddr,
        (committed, keys): (&mut Vec<FaceFrame>, &mut Vec<KeyEvent>),
    ) -> Heard {
        let now = Instant::now();
        state.datagrams += 1;
        committed.clear();
        keys.clear();
        if let Some(tap) = &mut self.tap {
            tap.call(RawDatagram {
                data,
                from,
                local,
                listener: kind,
                received: now,
            });
        }
        // Once a sender is followed, the others are turned away on their address alone.
        if let Some(admit) = self.guard.screen(kind, from, now) {
            trace!(%from, listener = kind.family_label(), "datagram turned away by the guard");
            return refused(admit, from);
        }
        // An iFacialMocap or Facemotion3d socket takes both text dialects.
        let family = match kind {
            Protocol::IFacialMocap | Protocol::Facemotion3d => {
                if ifacialmocap::looks_like_facemotion3d(data) {
                    Protocol::Facemotion3d
                } else {
                    Protocol::IFacialMocap
                }
            }
            other => other.family(),
        };
        let admit = self.guard.admit(family, from, now);
        if admit != Admit::Decode {
            trace!(%from, protocol = family.family_label(), "datagram ignored by the guard");
            return refused(admit, from);
        }
        let decoded;
        if family.is_osc() {
            let outcome = state.decoder.decode(data, from, now, |frame| {
                committed.push(*frame);
            });
            decoded = outcome.class == DatagramClass::Ok;
            if outcome.newly_active {
                if let Some(protocol) = outcome.protocol {
                    info!(%from, %protocol, "receiving {protocol} from {from}");
                }
            }
            if self
                .guard
                .commit(family, from, now, outcome.protocol.is_some())
            {
                keys.extend_from_slice(state.decoder.keys());
            } else {
                committed.clear();
            }
        } else if let Some(decoder) = state.phone(family) {
            let result = decoder.decode(data, from, now);
            decoded = result.is_ok();
            if self.guard.commit(family, from, now, result.is_ok()) {
                if let Ok(decoded) = result {
                    committed.push(decoded.frame);
                    let i = slot(family);
                    if !state.active[i] {
                        state.active[i] = true;
                        info!(%from, protocol = family.family_label(), "receiving {} from {from}", family.family_label());
                    }
                }
            }
        } else {
            // Not reached: every phone family has a decoder (`PhoneDecoder::new`).
            decoded = false;
        }
        if !committed.is_empty() {
            state.last_frame[slot(family)] = Some(now);
        }
        Heard {
            frames: committed.len() as u64,
            undecoded: (!decoded).then(|| sniff::looks_like(data)),
            not_allowed: None,
            rejected: false,
        }
    }

    /// Sends every start message that is due.
    fn send_handshakes(&mut self, state: &mut Loop, now: Instant) {
        let mut changed = false;
        let moved = self.phone.has_changed().unwrap_or(false);
        let phone = *self.phone.borrow_and_update();
        for hs in &mut self.handshakes {
            if moved {
                // A phone named anew gets its start message at once.
                hs.schedule = Schedule::new(hs.schedule.rule());
            }
            let Some(ip) = phone.or_else(|| self.guard.locked_ip(hs.family)) else {
                continue;
            };
            if !hs.schedule.due(now, state.last_frame[slot(hs.family)]) {
                continue;
            }
            hs.schedule.sent(now);
            changed = true;
            let to = SocketAddr::new(ip, hs.port);
            let Some(socket) = self.sockets.get(hs.socket) else {
                continue;
            };
            match socket.try_send_to(&hs.message, to) {
                Ok(_) => {
                    state.handshakes_sent += 1;
                    if hs.announced != Some(to) {
                        hs.announced = Some(to);
                        info!(%to, protocol = hs.family.family_label(), "asking the phone at {to} to stream {}", hs.family.family_label());
                    } else {
                        trace!(%to, protocol = hs.family.family_label(), "start message sent");
                    }
                }
                Err(err) => {
                    state.handshake_errors += 1;
                    if let Some(suppressed) = state.handshake_log.allow(now) {
                        warn!(%to, protocol = hs.family.family_label(), cause = %err, suppressed, "cannot send the start message to the phone");
                    }
                }
            }
        }
        if changed {
            self.publish(state);
        }
    }
}

/// What a datagram the guard turned away (`admit`) tells its listener's report.
fn refused(admit: Admit, from: SocketAddr) -> Heard {
    Heard {
        not_allowed: (admit == Admit::NotAllowed).then_some(from),
        rejected: true,
        ..Heard::default()
    }
}

/// The datagrams drained from one socket in one wake-up of the receive loop.
struct Batch<'a> {
    /// The socket's index.
    socket: usize,
    /// The receive buffer.
    buf: &'a mut [u8],
    /// The frames of the datagram being handled.
    committed: &'a mut Vec<FaceFrame>,
    /// The keys of the datagram being handled.
    keys: &'a mut Vec<KeyEvent>,
    /// Counters changed since they were last published.
    unpublished: bool,
}

/// Polls every socket once, starting after the one that delivered last (so one busy socket cannot
/// starve the others), and returns the first datagram or error with the socket's index.
fn poll_recv_any(
    cx: &mut Context<'_>,
    sockets: &[UdpSocket],
    buf: &mut [u8],
    next: &mut usize,
) -> Poll<(usize, io::Result<(usize, SocketAddr)>)> {
    let count = sockets.len();
    for k in 0..count {
        let i = (*next + k) % count;
        let socket = &sockets[i];
        let mut read = ReadBuf::new(buf);
        if let Poll::Ready(result) = socket.poll_recv_from(cx, &mut read) {
            *next = (i + 1) % count;
            let len = read.filled().len();
            return Poll::Ready((i, result.map(|from| (len, from))));
        }
    }
    Poll::Pending
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::mpsc;

    use super::super::config::PhoneListen;
    use super::super::holder::udp_port_holder;
    use super::super::livelink::{self, LiveLinkPacket, VALUE_COUNT};

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    fn phone(protocol: Protocol) -> PhoneListen {
        PhoneListen {
            protocol,
            addr: loopback(),
            required: true,
        }
    }

    /// Starts ingest with `config`; frames arrive on the returned channel.
    fn start(config: IngestConfig) -> (IngestHandle, mpsc::Receiver<FaceFrame>) {
        let (tx, rx) = mpsc::channel();
        let sink = Box::new(move |frame| {
            let _ = tx.send(frame);
        });
        (spawn(config, sink).expect("ingest starts on loopback"), rx)
    }

    /// Polls `probe` until `done` holds (bounded), and returns the reports.
    fn wait_for(
        probe: &IngestProbe,
        done: impl Fn(&[ListenerReport]) -> bool,
    ) -> Vec<ListenerReport> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let reports = probe.reports();
            if done(&reports) {
                return reports;
            }
            assert!(
                Instant::now() < deadline,
                "reports never got there: {reports:?}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn live_link_packet() -> Vec<u8> {
        livelink::encode(&LiveLinkPacket {
            version: livelink::PACKET_VERSION,
            device_id: b"DEVICE",
            subject: b"iPhone",
            frame_number: 1,
            subframe: 0.0,
            rate_numerator: 60,
            rate_denominator: 1,
            declared_count: Some(VALUE_COUNT as u8),
            values: [0.25; VALUE_COUNT],
            value_len: VALUE_COUNT,
        })
    }

    #[test]
    fn spawn_stops_on_a_busy_required_port_and_names_it() {
        let taken = std::net::UdpSocket::bind(loopback()).unwrap();
        let busy = taken.local_addr().unwrap();
        let config = IngestConfig {
            listen: vec![loopback()],
            phones: vec![PhoneListen {
                addr: busy,
                ..phone(Protocol::LiveLinkFace)
            }],
            ..IngestConfig::default()
        };
        let err = spawn(config, Box::new(|_: FaceFrame| {})).unwrap_err();
        let IngestError::Bind { addr, kind, .. } = &err else {
            panic!("expected a bind error: {err}");
        };
        assert_eq!((*addr, *kind), (busy, Protocol::LiveLinkFace));
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "cannot listen for Live Link Face on {busy} (UDP): "
            )),
            "{text}"
        );
        // This process holds the port: on Linux that is found and said.
        if cfg!(target_os = "linux") && udp_port_holder(busy.port()).is_some() {
            assert!(
                text.contains("this facewire already listens on port"),
                "{text}"
            );
        }
        drop(taken);
    }

    #[test]
    fn reports_say_what_each_listener_heard_and_what_it_looks_like() {
        let (handle, rx) = start(IngestConfig {
            listen: vec![loopback()],
            phones: vec![phone(Protocol::LiveLinkFace), phone(Protocol::IFacialMocap)],
            ..IngestConfig::default()
        });
        let probe = handle.probe();
        let [osc, llf, ifm] = [
            Protocol::Vmc,
            Protocol::LiveLinkFace,
            Protocol::IFacialMocap,
        ]
        .map(|p| handle.local_addr(p).unwrap());
        let kinds: Vec<_> = handle.reports().iter().map(|r| (r.kind, r.addr)).collect();
        let listed: Vec<_> = handle
            .listeners()
            .iter()
            .map(|l| (l.kind, l.addr))
            .collect();
        assert_eq!(
            kinds, listed,
            "one report per listener, in listeners() order"
        );

        let phone_app = std::net::UdpSocket::bind(loopback()).unwrap();
        let text = b"eyeBlink_L-29|jawOpen-40|=head#1,2,3,0,0,0|";
        // The wrong ports: Live Link Face to the OSC socket, iFacialMocap to Live Link's.
        phone_app.send_to(&live_link_packet(), osc).unwrap();
        phone_app.send_to(text, llf).unwrap();
        let reports = wait_for(&probe, |r| r[0].undecoded == 1 && r[1].undecoded == 1);
        assert_eq!(reports[0].looks_like, Some(Protocol::LiveLinkFace));
        assert_eq!(reports[1].looks_like, Some(Protocol::IFacialMocap));
        assert_eq!((reports[0].datagrams, reports[0].frames), (1, 0));
        assert_eq!(probe.frames(), 0);
        // Garbage that looks like nothing clears the hint of the last undecoded datagram.
        phone_app.send_to(b"\x00\x01", llf).unwrap();
        let reports = wait_for(&probe, |r| r[1].undecoded == 2);
        assert_eq!(reports[1].looks_like, None);

        // The right port: a frame, counted on that listener and in the total.
        phone_app.send_to(text, ifm).unwrap();
        let frame = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(frame.protocol, Protocol::IFacialMocap);
        let reports = wait_for(&probe, |r| r[2].frames == 1);
        assert_eq!((reports[2].datagrams, reports[2].undecoded), (1, 0));
        assert_eq!(reports[2].looks_like, None);
        assert_eq!(probe.frames(), 1);

        // The probe outlives the handle, and another thread can read it.
        handle.shutdown();
        let reader = std::thread::spawn(move || probe.reports());
        assert_eq!(reader.join().unwrap()[1].datagrams, 2);
    }

    #[test]
    fn reports_count_senders_outside_the_allow_list() {
        let (handle, _rx) = start(IngestConfig {
            listen: vec![loopback()],
            allow: vec!["127.0.0.2/32".parse().unwrap()],
            ..IngestConfig::default()
        });
        let sender = std::net::UdpSocket::bind(loopback()).unwrap();
        sender
            .send_to(b"/VMC/Ext/OK\0", handle.local_addrs()[0])
            .unwrap();
        let reports = wait_for(&handle.probe(), |r| r[0].not_allowed == 1);
        assert_eq!(
            reports[0].last_not_allowed,
            Some(sender.local_addr().unwrap())
        );
        assert_eq!((reports[0].datagrams, reports[0].undecoded), (1, 0));
        assert_eq!(reports[0].rejected, 1);
        let net = handle.net_stats();
        assert_eq!((net.datagrams, net.rejected()), (1, 1));
        assert!(net.accounts_for(&handle.stats()));
    }

    #[test]
    fn slots_follow_the_family_order() {
        for (i, family) in Protocol::FAMILIES.into_iter().enumerate() {
            assert_eq!(slot(family), i);
        }
        assert_eq!(slot(Protocol::FaceCap), slot(Protocol::Vmc));
    }

    #[test]
    fn net_stats_are_keyed_by_protocol() {
        let stats = NetStats {
            livelinkface: PhoneStats {
                datagrams: 7,
                ..PhoneStats::default()
            },
            ..NetStats::default()
        };
        assert_eq!(stats.phone(Protocol::LiveLinkFace).unwrap().datagrams, 7);
        assert_eq!(stats.phone(Protocol::VTubeStudio).unwrap().datagrams, 0);
        assert!(stats.phone(Protocol::Vmc).is_none());
        assert!(stats.phone(Protocol::FaceCap).is_none());
    }
}
