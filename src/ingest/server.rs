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

use super::decoder::{Decoder, MAX_DATAGRAM};
use super::guard::{Admit, Guard, GuardStats, Subnet};
use super::handshake::{self, PhonePorts, Rule, Schedule};
use super::ifacialmocap::{self, TextSender};
use super::phone::{PhoneDecoder, PhoneStats};
use super::stats::{RateLimiter, Stats};
use super::tap::{RawDatagram, Tap};
use super::{livelink, vts};
pub use crate::arkit::FrameSink;
use crate::arkit::{FaceFrame, Protocol};
use crate::config::IngestSection;

/// The VMC receiver ("Marionette") port, 39539.
pub const DEFAULT_PORT: u16 = 39539;

/// The name of the ingest thread.
const THREAD_NAME: &str = "facewire-ingest";

/// How often silent senders are looked for.
const SWEEP_PERIOD: Duration = Duration::from_millis(250);

/// How often the sink's [`FrameSink::tick`] runs, data or not.
pub const TICK_PERIOD: Duration = Duration::from_millis(10);

/// How long the followed source may be silent before another one may take over, by default.
pub const DEFAULT_LOCK_RELEASE: Duration = Duration::from_secs(3);

/// The first pause after repeated receive errors; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(5);

/// The longest pause after repeated receive errors.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// One phone-protocol listener to bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhoneListen {
    /// The protocol it receives. An iFacialMocap or Facemotion3d socket takes both text dialects
    /// and tags each frame by its dialect; a VMC or Face Cap entry is one more OSC socket.
    pub protocol: Protocol,
    /// The UDP address to bind; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Whether failing to bind it stops [`spawn`] with an error (an address the user chose);
    /// otherwise it is a warning and the other listeners run.
    pub required: bool,
}

/// One socket the ingest thread listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundListener {
    /// What it receives: a protocol family ([`Protocol::family`]), [`Protocol::Vmc`] for an OSC
    /// socket (VMC and Face Cap). [`Protocol::listener_label`] names it in messages.
    pub kind: Protocol,
    /// The bound address (port 0 resolved), or for a skipped listener the configured one.
    pub addr: SocketAddr,
}

/// Where and how the ingest thread listens.
///
/// [`IngestConfig::default`] is the OSC listener alone on 0.0.0.0:39539, required, with no phone
/// listeners; [`IngestConfig::from_section`] gives the configuration file's full set (every
/// protocol on its usual port by default).
#[derive(Debug)]
pub struct IngestConfig {
    /// UDP addresses to bind for OSC; each one understands both VMC and Face Cap. Port 0 picks a
    /// free port ([`IngestHandle::local_addrs`] tells which).
    pub listen: Vec<SocketAddr>,
    /// Whether failing to bind an OSC address is an error (otherwise a warning).
    pub listen_required: bool,
    /// The phone-protocol listeners.
    pub phones: Vec<PhoneListen>,
    /// The phone that start messages (iFacialMocap, Facemotion3d, VTube Studio) are sent to.
    /// `None`: only to the source being followed, once there is one.
    pub phone: Option<IpAddr>,
    /// The phone's ports for the start messages.
    pub phone_ports: PhonePorts,
    /// The protocol that takes over from any other source; `None`: the first source is followed.
    pub prefer: Option<Protocol>,
    /// Addresses and subnets accepted; empty accepts every sender.
    pub allow: Vec<Subnet>,
    /// How long the followed source may be silent before another one may take over.
    pub lock_release: Duration,
    /// How long a sender may stay quiet before it is logged as silent.
    pub silence_after: Duration,
    /// Called for every datagram received on any listener, before the guard and decoding
    /// ([`Tap`]); `None`: no tap.
    pub tap: Option<Tap>,
}

impl Default for IngestConfig {
    fn default() -> IngestConfig {
        IngestConfig {
            listen: vec![SocketAddr::from((Ipv4Addr::UNSPECIFIED, DEFAULT_PORT))],
            listen_required: true,
            phones: Vec::new(),
            phone: None,
            phone_ports: PhonePorts::default(),
            prefer: None,
            allow: Vec::new(),
            lock_release: DEFAULT_LOCK_RELEASE,
            silence_after: Duration::from_secs(2),
            tap: None,
        }
    }
}

/// The PC port a protocol's sender sends to by default: [`DEFAULT_PORT`] for VMC and Face Cap,
/// the app's own port for iFacialMocap, Facemotion3d and Live Link Face. For VTube Studio this is
/// our choice: the PC names its ports in the request ([`vts::DEFAULT_PC_PORT`]).
pub fn default_port(protocol: Protocol) -> u16 {
    match protocol {
        Protocol::Vmc | Protocol::FaceCap => DEFAULT_PORT,
        Protocol::IFacialMocap => ifacialmocap::IFM_PORT,
        Protocol::Facemotion3d => ifacialmocap::FM3D_PORT,
        Protocol::LiveLinkFace => livelink::DEFAULT_PORT,
        Protocol::VTubeStudio => vts::DEFAULT_PC_PORT,
    }
}

/// The usual address of a protocol's listener: all interfaces on its [`default_port`].
pub fn default_addr(protocol: Protocol) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::UNSPECIFIED, default_port(protocol)))
}

impl IngestConfig {
    /// The ingest settings of `[ingest]`. An address equal to its protocol's usual one
    /// ([`default_addr`]) is optional (a port in use is a warning); any other address was chosen
    /// by the user and must bind.
    pub fn from_section(section: &IngestSection) -> IngestConfig {
        let phone_lists = [
            (Protocol::IFacialMocap, &section.ifacialmocap),
            (Protocol::Facemotion3d, &section.facemotion3d),
            (Protocol::LiveLinkFace, &section.livelinkface),
            (Protocol::VTubeStudio, &section.vtubestudio),
        ];
        let mut phones = Vec::new();
        for (protocol, addrs) in phone_lists {
            let usual = default_addr(protocol);
            phones.extend(addrs.iter().map(|&addr| PhoneListen {
                protocol,
                addr,
                required: addr != usual,
            }));
        }
        let usual = default_addr(Protocol::Vmc);
        IngestConfig {
            listen: section.listen.clone(),
            listen_required: section.listen.iter().any(|&a| a != usual),
            phones,
            phone: section.phone,
            phone_ports: section.phone_ports,
            prefer: section.prefer,
            allow: section.allow.clone(),
            lock_release: Duration::from_secs_f32(section.lock_release),
            ..IngestConfig::default()
        }
    }

    /// Keeps only the listeners on `port`, each one required. When none is configured there, it
    /// listens on all interfaces at `port` for the protocol whose usual port it is
    /// ([`default_port`]), or for VMC and Face Cap.
    pub fn restrict_to_port(mut self, port: u16) -> IngestConfig {
        self.listen.retain(|a| a.port() == port);
        self.listen_required = true;
        self.phones.retain(|p| p.addr.port() == port);
        for p in &mut self.phones {
            p.required = true;
        }
        if self.listen.is_empty() && self.phones.is_empty() {
            let addr = SocketAddr::from((Ipv4Addr::UNSPECIFIED, port));
            match Protocol::FAMILIES
                .into_iter()
                .find(|&p| !p.is_osc() && default_port(p) == port)
            {
                Some(protocol) => self.phones.push(PhoneListen {
                    protocol,
                    addr,
                    required: true,
                }),
                None => self.listen.push(addr),
            }
        }
        self
    }
}

/// Why the ingest thread could not start.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The configuration lists no address to listen on.
    #[error("no UDP address to listen on")]
    NoListenAddress,
    /// A UDP socket could not be bound (address in use, not an address of this machine, ...):
    /// a required one, or every one.
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

/// Counters of the phone listeners, the guard and the handshakes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetStats {
    /// iFacialMocap frames and rejects.
    pub ifacialmocap: PhoneStats,
    /// Facemotion3d frames and rejects.
    pub facemotion3d: PhoneStats,
    /// Live Link Face frames and rejects.
    pub livelinkface: PhoneStats,
    /// VTube Studio and MeowFace frames and rejects.
    pub vtubestudio: PhoneStats,
    /// The allow-list and the source lock.
    pub guard: GuardStats,
    /// Start messages sent to a phone.
    pub handshakes_sent: u64,
    /// Start messages that could not be sent.
    pub handshake_errors: u64,
}

impl NetStats {
    /// The counters of one phone protocol; `None` for VMC and Face Cap, whose counters are the
    /// OSC [`Stats`].
    pub fn phone(&self, protocol: Protocol) -> Option<&PhoneStats> {
        match protocol {
            Protocol::Vmc | Protocol::FaceCap => None,
            Protocol::IFacialMocap => Some(&self.ifacialmocap),
            Protocol::Facemotion3d => Some(&self.facemotion3d),
            Protocol::LiveLinkFace => Some(&self.livelinkface),
            Protocol::VTubeStudio => Some(&self.vtubestudio),
        }
    }
}

/// The running ingest thread. Dropping it shuts the thread down, like [`IngestHandle::shutdown`].
#[derive(Debug)]
pub struct IngestHandle {
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
    /// Tells the thread to stop.
    stop: watch::Sender<bool>,
    /// The thread; `None` once joined.
    thread: Option<JoinHandle<()>>,
}

impl IngestHandle {
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

/// Binds one address as a non-blocking tokio socket.
fn bind(addr: SocketAddr) -> Result<(UdpSocket, SocketAddr), IngestError> {
    let std_socket =
        std::net::UdpSocket::bind(addr).map_err(|source| IngestError::Bind { addr, source })?;
    let socket_error = |source| IngestError::Socket { addr, source };
    std_socket.set_nonblocking(true).map_err(socket_error)?;
    let local = std_socket.local_addr().map_err(socket_error)?;
    let socket = UdpSocket::from_std(std_socket).map_err(socket_error)?;
    Ok((socket, local))
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
    let wanted: Vec<(Protocol, SocketAddr, bool)> = config
        .listen
        .iter()
        .map(|&addr| (Protocol::Vmc, addr, config.listen_required))
        .chain(
            config
                .phones
                .iter()
                .map(|p| (p.protocol.family(), p.addr, p.required)),
        )
        .collect();
    if wanted.is_empty() {
        return Err(IngestError::NoListenAddress);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(IngestError::Runtime)?;

    let mut sockets = Vec::with_capacity(wanted.len());
    let mut listeners = Vec::with_capacity(wanted.len());
    let mut skipped = Vec::new();
    let mut first_error = None;
    {
        // Registering a socket with tokio needs the runtime's reactor.
        let _guard = runtime.enter();
        for &(kind, addr, required) in &wanted {
            match bind(addr) {
                Ok((socket, local)) => {
                    sockets.push(socket);
                    listeners.push(BoundListener { kind, addr: local });
                }
                Err(err) if required => return Err(err),
                Err(err) => {
                    let cause = std::error::Error::source(&err)
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let label = kind.listener_label();
                    warn!(
                        %addr,
                        kind = label,
                        %cause,
                        "not listening for {label} on {addr} ({cause}); the other protocols run"
                    );
                    skipped.push(BoundListener { kind, addr });
                    first_error.get_or_insert(err);
                }
            }
        }
    }
    if sockets.is_empty() {
        return Err(first_error.unwrap_or(IngestError::NoListenAddress));
    }
    for l in &listeners {
        let kind = l.kind.listener_label();
        info!(addr = %l.addr, kind, "listening for {kind} on {} (UDP)", l.addr);
    }
    let handshakes = handshakes(&config, &listeners);
    let local_addrs = listeners
        .iter()
        .filter(|l| l.kind == Protocol::Vmc)
        .map(|l| l.addr)
        .collect();

    let stats = Arc::new(Mutex::new(Stats::default()));
    let net_stats = Arc::new(Mutex::new(NetStats::default()));
    let (stop, stopped) = watch::channel(false);
    let receiver = Receiver {
        kinds: listeners.iter().map(|l| l.kind).collect(),
        locals: listeners.iter().map(|l| l.addr).collect(),
        sockets,
        stats: Arc::clone(&stats),
        net_stats: Arc::clone(&net_stats),
        silence_after: config.silence_after,
        guard: Guard::new(config.allow.clone(), config.prefer, config.lock_release),
        phone: config.phone,
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
        stop,
        thread: Some(thread),
    })
}

/// One start message and when to send it.
struct Handshake {
    /// The protocol it starts.
    family: Protocol,
    /// The index of the socket it is sent from (the phone answers to the sender's address).
    socket: usize,
    /// The phone's port.
    port: u16,
    /// The datagram.
    message: Vec<u8>,
    /// When it is due.
    schedule: Schedule,
    /// The target it was last announced to in the log.
    announced: Option<SocketAddr>,
}

/// The start messages for the bound listeners that need one.
fn handshakes(config: &IngestConfig, listeners: &[BoundListener]) -> Vec<Handshake> {
    let first = |protocol| listeners.iter().position(|l| l.kind == protocol);
    let text_rule = Rule::WhileMissing {
        retry: handshake::TEXT_RETRY,
        silence: handshake::TEXT_SILENCE,
    };
    let mut out = Vec::new();
    if let Some(socket) = first(Protocol::IFacialMocap) {
        out.push(Handshake {
            family: Protocol::IFacialMocap,
            socket,
            port: config.phone_ports.ifacialmocap,
            message: ifacialmocap::handshake(TextSender::IFacialMocap, false).into_bytes(),
            schedule: Schedule::new(text_rule),
            announced: None,
        });
    }
    if let Some(socket) = first(Protocol::Facemotion3d) {
        out.push(Handshake {
            family: Protocol::Facemotion3d,
            socket,
            port: config.phone_ports.facemotion3d,
            message: ifacialmocap::handshake(TextSender::Facemotion3d, false).into_bytes(),
            schedule: Schedule::new(text_rule),
            announced: None,
        });
    }
    if let Some(socket) = first(Protocol::VTubeStudio) {
        // The phone streams to the request's source address on every port it names.
        let ports: Vec<u16> = listeners
            .iter()
            .filter(|l| l.kind == Protocol::VTubeStudio)
            .map(|l| l.addr.port())
            .take(vts::MAX_REQUEST_PORTS)
            .collect();
        match vts::vts_request(
            handshake::VTS_SENT_BY,
            &ports,
            handshake::VTS_REQUEST_TIME_S,
        ) {
            Ok(request) => out.push(Handshake {
                family: Protocol::VTubeStudio,
                socket,
                port: config.phone_ports.vtubestudio,
                message: request.into_bytes(),
                schedule: Schedule::new(Rule::Every(handshake::VTS_PERIOD)),
                announced: None,
            }),
            Err(err) => warn!(%err, "cannot build the VTube Studio request; not sending one"),
        }
    }
    out
}

/// The slot of a protocol's family in per-family arrays ([`Protocol::FAMILIES`] order).
fn slot(protocol: Protocol) -> usize {
    match protocol {
        Protocol::Vmc | Protocol::FaceCap => 0,
        Protocol::IFacialMocap => 1,
        Protocol::Facemotion3d => 2,
        Protocol::LiveLinkFace => 3,
        Protocol::VTubeStudio => 4,
    }
}

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
    /// How long a sender may be quiet before it is logged as silent.
    silence_after: Duration,
    /// The allow-list and the source lock.
    guard: Guard,
    /// The configured phone.
    phone: Option<IpAddr>,
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
    last_frame: [Option<Instant>; 5],
    /// Whether each phone family is reported as active (for the receiving/silent logs).
    active: [bool; 5],
    /// Receive errors so far.
    recv_errors: u64,
    /// Start messages sent and failed.
    handshakes_sent: u64,
    /// Start messages that failed.
    handshake_errors: u64,
    /// Limits the handshake error lines.
    handshake_log: RateLimiter,
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
            ifacialmocap: self.phone_stats(Protocol::IFacialMocap),
            facemotion3d: self.phone_stats(Protocol::Facemotion3d),
            livelinkface: self.phone_stats(Protocol::LiveLinkFace),
            vtubestudio: self.phone_stats(Protocol::VTubeStudio),
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
            last_frame: [None; 5],
            active: [false; 5],
            recv_errors: 0,
            handshakes_sent: 0,
            handshake_errors: 0,
            handshake_log: RateLimiter::new(Duration::from_secs(5)),
        };
        let mut buf = vec![0u8; MAX_DATAGRAM];
        // Frames one datagram committed; its capacity is reused, and a datagram of at most
        // MAX_DATAGRAM bytes can hold only so many Apply messages.
        let mut committed: Vec<FaceFrame> = Vec::new();
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
                    let kind = self.kinds.get(socket).copied().unwrap_or(Protocol::Vmc);
                    let local = self
                        .locals
                        .get(socket)
                        .copied()
                        .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
                    self.datagram(&mut state, kind, local, &buf[..len], from, &mut committed);
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

    /// Taps, guards, decodes and delivers one datagram received on a `kind` socket bound to
    /// `local`.
    fn datagram(
        &mut self,
        state: &mut Loop,
        kind: Protocol,
        local: SocketAddr,
        data: &[u8],
        from: SocketAddr,
        committed: &mut Vec<FaceFrame>,
    ) {
        let now = Instant::now();
        if let Some(tap) = &mut self.tap {
            tap.call(RawDatagram {
                data,
                from,
                local,
                listener: kind,
                received: now,
            });
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
        if self.guard.admit(family, from, now) != Admit::Decode {
            trace!(%from, protocol = family.family_label(), "datagram ignored by the guard");
            self.publish(state);
            return;
        }
        committed.clear();
        if family.is_osc() {
            let outcome = state.decoder.decode(data, from, now, |frame| {
                committed.push(*frame);
            });
            if outcome.newly_active {
                if let Some(protocol) = outcome.protocol {
                    info!(%from, %protocol, "receiving {protocol} from {from}");
                }
            }
            if !self
                .guard
                .commit(family, from, now, outcome.protocol.is_some())
            {
                committed.clear();
            }
        } else if let Some(decoder) = state.phone(family) {
            let result = decoder.decode(data, from, now);
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
        }
        if !committed.is_empty() {
            state.last_frame[slot(family)] = Some(now);
        }
        // Publish the counters before handing the frames on, so whoever sees a frame also sees
        // the counters that include it.
        self.publish(state);
        for frame in committed.drain(..) {
            self.sink.frame(frame);
        }
    }

    /// Sends every start message that is due.
    fn send_handshakes(&mut self, state: &mut Loop, now: Instant) {
        let mut changed = false;
        for hs in &mut self.handshakes {
            let Some(ip) = self.phone.or_else(|| self.guard.locked_ip(hs.family)) else {
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

    #[test]
    fn every_protocol_has_a_usual_port() {
        let ports = Protocol::ALL.map(default_port);
        assert_eq!(ports, [39539, 39539, 49983, 49993, 11111, 11125]);
        assert_eq!(default_port(Protocol::VTubeStudio), vts::DEFAULT_PC_PORT);
        assert_eq!(
            default_addr(Protocol::FaceCap),
            SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT))
        );
    }

    #[test]
    fn restricting_to_a_port_keeps_its_listeners_or_picks_its_protocol() {
        let section = IngestSection::default();
        let only = IngestConfig::from_section(&section).restrict_to_port(11111);
        assert!(only.listen.is_empty());
        assert_eq!(only.phones.len(), 1);
        assert_eq!(only.phones[0].protocol, Protocol::LiveLinkFace);
        assert!(only.phones[0].required);

        let osc = IngestConfig::from_section(&section).restrict_to_port(DEFAULT_PORT);
        assert_eq!(osc.listen, [default_addr(Protocol::Vmc)]);
        assert!(osc.listen_required && osc.phones.is_empty());

        // A port nothing is configured on: its protocol's listener, or OSC.
        let none = IngestSection {
            ifacialmocap: Vec::new(),
            ..IngestSection::default()
        };
        let ifm = IngestConfig::from_section(&none).restrict_to_port(49983);
        assert!(ifm.listen.is_empty());
        assert_eq!(ifm.phones[0].protocol, Protocol::IFacialMocap);
        let other = IngestConfig::from_section(&section).restrict_to_port(40000);
        assert_eq!(other.listen, [SocketAddr::from(([0, 0, 0, 0], 40000))]);
        assert!(other.phones.is_empty() && other.listen_required);
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
