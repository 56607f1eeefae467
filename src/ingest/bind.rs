//! Binding the listeners: which must bind, and errors that say who holds a port and how to move
//! facewire off it.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use tokio::net::UdpSocket;
use tracing::{debug, info, warn};

use super::config::{default_addr, default_port};
use super::holder::{self, PortHolder};
use crate::arkit::Protocol;

/// One socket the ingest thread listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundListener {
    /// What it receives: a protocol family ([`Protocol::family`]), [`Protocol::Vmc`] for an OSC
    /// socket (VMC and Face Cap). [`Protocol::listener_label`] names it in messages.
    pub kind: Protocol,
    /// The bound address (port 0 resolved), or for a skipped listener the configured one.
    pub addr: SocketAddr,
}

/// Why the ingest thread could not start.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The configuration lists no address to listen on.
    #[error("no UDP address to listen on")]
    NoListenAddress,
    /// A UDP socket could not be bound (address in use, not an address of this machine, ...):
    /// a required one, or every one. The message names the port's holder when the port is taken
    /// and the setting that moves facewire.
    #[error("{}", bind_message(*.addr, *.kind, .source.kind(), .holder.as_ref(), *.partial_helps))]
    Bind {
        /// The address from the configuration.
        addr: SocketAddr,
        /// What the listener receives: a protocol family ([`Protocol::Vmc`] for OSC).
        kind: Protocol,
        /// The operating system's error.
        #[source]
        source: io::Error,
        /// The process holding the port, when the port is in use and the system tells.
        holder: Option<PortHolder>,
        /// Whether `partial = true` under `[ingest]` would let the other listeners run without
        /// this one (it is on its usual address, and there are others).
        partial_helps: bool,
    },
    /// Several required listeners could not be bound: each one's message (with the
    /// operating system's words), so that every taken port is fixed in one go.
    #[error("{} listeners cannot start:{}", .0.len(), several(.0))]
    Several(Vec<IngestError>),
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

/// The lines of [`IngestError::Several`]: each error with its cause, one per line.
fn several(errors: &[IngestError]) -> String {
    errors
        .iter()
        .map(|e| match std::error::Error::source(e) {
            Some(cause) => format!("\n  - {e}: {cause}"),
            None => format!("\n  - {e}"),
        })
        .collect()
}

/// The `[ingest]` key of a listener kind.
fn key(kind: Protocol) -> &'static str {
    match kind.family() {
        Protocol::IFacialMocap => "ifacialmocap",
        Protocol::Facemotion3d => "facemotion3d",
        Protocol::LiveLinkFace => "livelinkface",
        Protocol::VTubeStudio => "vtubestudio",
        Protocol::OpenSeeFace => "openseeface",
        _ => "listen",
    }
}

/// The setting that makes a `kind` listener listen on `addr`: the `--listen` flag and the key for
/// OSC, the key for the phone protocols.
fn setting(kind: Protocol, addr: SocketAddr) -> String {
    if kind.is_osc() {
        format!("--listen {addr} (or [ingest] listen = [\"{addr}\"])")
    } else {
        format!("[ingest] {} = [\"{addr}\"]", key(kind))
    }
}

/// The message of [`IngestError::Bind`]: what failed, then (by the kind of error) who holds the
/// port and how to move facewire. The operating system's text is left to the error's source.
fn bind_message(
    addr: SocketAddr,
    kind: Protocol,
    error: io::ErrorKind,
    holder: Option<&PortHolder>,
    partial_helps: bool,
) -> String {
    let mut out = format!(
        "cannot listen for {} on {addr} (UDP)",
        kind.listener_label()
    );
    let advice = match error {
        io::ErrorKind::AddrInUse => in_use_advice(addr, kind, holder),
        io::ErrorKind::AddrNotAvailable => {
            let any = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), addr.port());
            format!(
                "{} is not an address of this machine; listen on all interfaces: {}",
                addr.ip(),
                setting(kind, any)
            )
        }
        io::ErrorKind::PermissionDenied => {
            let port = if addr.port() < 1024 {
                default_port(kind)
            } else {
                addr.port().saturating_add(1)
            };
            format!(
                "the system does not let facewire use this port (ports below 1024 need \
                 privileges); use another, e.g. {}",
                setting(kind, SocketAddr::new(addr.ip(), port))
            )
        }
        _ => String::new(),
    };
    if !advice.is_empty() {
        out.push_str(": ");
        out.push_str(&advice);
    }
    if partial_helps {
        out.push_str("; `partial = true` under [ingest] runs the other listeners without it");
    }
    out
}

/// How to get past a port in use: who holds it (the process, or who usually does), "close it",
/// and where facewire can move (with what must then change in the sender).
fn in_use_advice(addr: SocketAddr, kind: Protocol, holder: Option<&PortHolder>) -> String {
    let port = addr.port();
    let who = match holder {
        Some(h) if h.is_this_process() => {
            return format!(
                "this facewire already listens on port {port} with another listener; give every \
                 listener its own port"
            );
        }
        Some(h) if h.name == "facewire" => {
            format!("another facewire is running (pid {}): close it", h.pid)
        }
        Some(h) => format!("the port is taken by {h}; close it"),
        None => match holder::usual_holder(port) {
            Some(usual) => format!("the port is taken, usually by {usual}; close it"),
            None => "the port is taken by another program; close it".to_string(),
        },
    };
    let next = SocketAddr::new(addr.ip(), port.checked_add(1).unwrap_or(port - 1));
    match kind.family() {
        Protocol::IFacialMocap | Protocol::Facemotion3d => format!(
            "{who} ({app} sends to its own fixed port, {usual}, so facewire hears it only there), \
             or turn this listener off: [ingest] {key} = []",
            app = kind.listener_label(),
            usual = default_port(kind),
            key = key(kind),
        ),
        Protocol::LiveLinkFace => format!(
            "{who}, or move facewire: {} (an empty list turns it off), then set the app's target \
             port to the same number",
            setting(kind, next)
        ),
        Protocol::VTubeStudio => format!(
            "{who}, or move facewire: {} (facewire's request names the port to the phone; an \
             empty list turns it off)",
            setting(kind, next)
        ),
        Protocol::OpenSeeFace => format!(
            "{who}, or move facewire: {} (an empty list turns it off), then start facetracker.py \
             with --port {}",
            setting(kind, next),
            next.port()
        ),
        _ => format!(
            "{who}, or move facewire: {}, then send to that port",
            setting(kind, next)
        ),
    }
}

/// One listener to bind: what it receives, where, and whether failing is an error.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wanted {
    /// What it receives (a protocol family).
    pub kind: Protocol,
    /// The configured address.
    pub addr: SocketAddr,
    /// Whether failing to bind it stops the start.
    pub required: bool,
}

/// The sockets bound, and the optional listeners that could not be.
pub(super) struct Bound {
    /// The bound sockets, in `wanted` order.
    pub sockets: Vec<UdpSocket>,
    /// What each bound socket receives and where.
    pub listeners: Vec<BoundListener>,
    /// Optional listeners that could not be bound, with their configured address.
    pub skipped: Vec<BoundListener>,
}

/// Binds every wanted listener (inside a tokio runtime context): a required one that fails is an
/// error; an optional one is a warning naming the port's holder, and the others run. When none
/// binds, the first failure is the error.
pub(super) fn bind_all(wanted: &[Wanted]) -> Result<Bound, IngestError> {
    let mut bound = Bound {
        sockets: Vec::with_capacity(wanted.len()),
        listeners: Vec::with_capacity(wanted.len()),
        skipped: Vec::new(),
    };
    let mut first_error = None;
    let mut required = Vec::new();
    for w in wanted {
        let partial_helps = w.required && wanted.len() > 1 && w.addr == default_addr(w.kind);
        match bind(w.kind, w.addr, partial_helps) {
            Ok((socket, local)) => {
                bound.sockets.push(socket);
                bound.listeners.push(BoundListener {
                    kind: w.kind,
                    addr: local,
                });
            }
            Err(err) if w.required => required.push(err),
            Err(err) => {
                let cause = std::error::Error::source(&err)
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let holder = match &err {
                    IngestError::Bind {
                        holder: Some(h), ..
                    } => h.to_string(),
                    _ => String::new(),
                };
                warn!(
                    addr = %w.addr,
                    kind = w.kind.listener_label(),
                    %cause,
                    holder,
                    "{err}; the other listeners run"
                );
                bound.skipped.push(BoundListener {
                    kind: w.kind,
                    addr: w.addr,
                });
                first_error.get_or_insert(err);
            }
        }
    }
    // Every required listener that failed, in one message.
    match required.len() {
        0 => {}
        1 => return Err(required.remove(0)),
        _ => return Err(IngestError::Several(required)),
    }
    if bound.sockets.is_empty() {
        return Err(first_error.unwrap_or(IngestError::NoListenAddress));
    }
    for l in &bound.listeners {
        let kind = l.kind.listener_label();
        info!(addr = %l.addr, kind, "listening for {kind} on {} (UDP)", l.addr);
    }
    Ok(bound)
}

/// Binds one address as a non-blocking tokio socket; when the port is in use, looks up who holds
/// it.
fn bind(
    kind: Protocol,
    addr: SocketAddr,
    partial_helps: bool,
) -> Result<(UdpSocket, SocketAddr), IngestError> {
    let std_socket = std::net::UdpSocket::bind(addr).map_err(|source| {
        let holder = if source.kind() == io::ErrorKind::AddrInUse {
            holder::udp_port_holder(addr.port())
        } else {
            None
        };
        IngestError::Bind {
            addr,
            kind,
            source,
            holder,
            partial_helps,
        }
    })?;
    let socket_error = |source| IngestError::Socket { addr, source };
    std_socket.set_nonblocking(true).map_err(socket_error)?;
    let local = std_socket.local_addr().map_err(socket_error)?;
    enlarge_receive_buffer(&std_socket, local);
    let socket = UdpSocket::from_std(std_socket).map_err(socket_error)?;
    Ok((socket, local))
}

/// The receive buffer asked for on every listener: room for a few seconds of the fastest
/// protocol, and for the followed sender's datagrams to wait while a flood is turned away.
pub const RECV_BUFFER: usize = 4 << 20;

/// Asks for a [`RECV_BUFFER`] receive buffer on `socket`; the system may grant less (Linux caps
/// it at `net.core.rmem_max` and reports twice what it grants). What was granted is logged at
/// debug level; a refusal only costs headroom, so it is a debug line too.
fn enlarge_receive_buffer(socket: &std::net::UdpSocket, local: SocketAddr) {
    let socket = socket2::SockRef::from(socket);
    let before = socket.recv_buffer_size().ok();
    match socket.set_recv_buffer_size(RECV_BUFFER) {
        Ok(()) => debug!(
            %local,
            requested = RECV_BUFFER,
            before,
            granted = socket.recv_buffer_size().ok(),
            "UDP receive buffer"
        ),
        Err(err) => {
            debug!(%local, requested = RECV_BUFFER, before, cause = %err, "cannot enlarge the UDP receive buffer")
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn busy(addr: &str, kind: Protocol, holder: Option<PortHolder>, partial: bool) -> IngestError {
        IngestError::Bind {
            addr: addr.parse().unwrap(),
            kind,
            source: io::Error::from(io::ErrorKind::AddrInUse),
            holder,
            partial_helps: partial,
        }
    }

    fn holder(name: &str) -> Option<PortHolder> {
        Some(PortHolder {
            pid: 1234,
            name: name.into(),
        })
    }

    #[test]
    fn a_busy_osc_port_names_its_holder_and_how_to_move() {
        let err = busy("0.0.0.0:39539", Protocol::Vmc, holder("VSeeFace"), true);
        assert_eq!(
            err.to_string(),
            "cannot listen for VMC and Face Cap on 0.0.0.0:39539 (UDP): the port is taken by \
             VSeeFace (pid 1234); close it, or move facewire: --listen 0.0.0.0:39540 (or [ingest] \
             listen = [\"0.0.0.0:39540\"]), then send to that port; `partial = true` under \
             [ingest] runs the other listeners without it"
        );
        // The operating system's words are the source, said once after the message.
        let source = err.source().unwrap().to_string();
        assert!(!err.to_string().contains(&source), "{err}");
    }

    #[test]
    fn another_facewire_or_an_unknown_holder_is_said_so() {
        let err = busy("127.0.0.1:40000", Protocol::Vmc, holder("facewire"), false);
        let text = err.to_string();
        assert!(
            text.contains(
                "another facewire is running (pid 1234): close it, or move facewire: \
                           --listen 127.0.0.1:40001"
            ),
            "{text}"
        );
        assert!(!text.contains("partial"), "{text}");
        let usual = busy("0.0.0.0:39539", Protocol::Vmc, None, true).to_string();
        assert!(
            usual.contains(
                "the port is taken, usually by a VMC receiver: another facewire, \
                            VSeeFace, VNyan, Warudo or VirtualMotionCapture; close it"
            ),
            "{usual}"
        );
        let other = busy("0.0.0.0:40000", Protocol::Vmc, None, false).to_string();
        assert!(
            other.contains("taken by another program; close it"),
            "{other}"
        );
        let own = PortHolder {
            pid: std::process::id(),
            name: "facewire".into(),
        };
        let own = busy("0.0.0.0:40000", Protocol::Vmc, Some(own), false).to_string();
        assert!(
            own.contains("this facewire already listens on port 40000"),
            "{own}"
        );
    }

    #[test]
    fn phone_ports_say_what_changes_in_the_app() {
        let llf = busy("0.0.0.0:11111", Protocol::LiveLinkFace, None, true).to_string();
        assert!(
            llf.contains("move facewire: [ingest] livelinkface = [\"0.0.0.0:11112\"]"),
            "{llf}"
        );
        assert!(
            llf.contains("then set the app's target port to the same number"),
            "{llf}"
        );
        assert!(llf.contains("Unreal Engine"), "{llf}");
        let ifm = busy(
            "0.0.0.0:49983",
            Protocol::IFacialMocap,
            holder("Warudo"),
            true,
        );
        let ifm = ifm.to_string();
        assert!(
            ifm.contains(
                "the port is taken by Warudo (pid 1234); close it (iFacialMocap sends to its \
                 own fixed port, 49983"
            ),
            "{ifm}"
        );
        assert!(ifm.contains("[ingest] ifacialmocap = []"), "{ifm}");
        assert!(!ifm.contains("move facewire"), "{ifm}");
        let fm3d = busy("0.0.0.0:49993", Protocol::Facemotion3d, None, false).to_string();
        assert!(fm3d.contains("[ingest] facemotion3d = []"), "{fm3d}");
        let vts = busy("0.0.0.0:11125", Protocol::VTubeStudio, None, false).to_string();
        assert!(
            vts.contains("[ingest] vtubestudio = [\"0.0.0.0:11126\"]"),
            "{vts}"
        );
        let osf = busy("0.0.0.0:11573", Protocol::OpenSeeFace, None, false).to_string();
        assert!(
            osf.contains("cannot listen for OpenSeeFace on 0.0.0.0:11573 (UDP)"),
            "{osf}"
        );
        assert!(
            osf.contains(
                "move facewire: [ingest] openseeface = [\"0.0.0.0:11574\"] (an empty list turns \
                 it off), then start facetracker.py with --port 11574"
            ),
            "{osf}"
        );
        assert!(osf.contains("VSeeFace"), "{osf}");
    }

    #[test]
    fn other_bind_errors_get_their_own_fix() {
        let error = |addr: &str, kind, error| IngestError::Bind {
            addr: addr.parse().unwrap(),
            kind,
            source: io::Error::from(error),
            holder: None,
            partial_helps: false,
        };
        let foreign = error(
            "192.0.2.7:39539",
            Protocol::Vmc,
            io::ErrorKind::AddrNotAvailable,
        );
        assert_eq!(
            foreign.to_string(),
            "cannot listen for VMC and Face Cap on 192.0.2.7:39539 (UDP): 192.0.2.7 is not an \
             address of this machine; listen on all interfaces: --listen 0.0.0.0:39539 (or \
             [ingest] listen = [\"0.0.0.0:39539\"])"
        );
        let low = error(
            "0.0.0.0:80",
            Protocol::LiveLinkFace,
            io::ErrorKind::PermissionDenied,
        );
        assert!(
            low.to_string()
                .ends_with("use another, e.g. [ingest] livelinkface = [\"0.0.0.0:11111\"]"),
            "{low}"
        );
        let odd = error("0.0.0.0:1", Protocol::Vmc, io::ErrorKind::Other);
        assert_eq!(
            odd.to_string(),
            "cannot listen for VMC and Face Cap on 0.0.0.0:1 (UDP)"
        );
    }

    #[test]
    fn a_required_busy_listener_stops_binding_and_an_optional_one_is_skipped() {
        let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let free: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let _guard = runtime.enter();
        let wanted = |required| {
            [
                Wanted {
                    kind: Protocol::Vmc,
                    addr: free,
                    required: true,
                },
                Wanted {
                    kind: Protocol::LiveLinkFace,
                    addr,
                    required,
                },
            ]
        };
        match bind_all(&wanted(true)) {
            Err(IngestError::Bind {
                addr: failed,
                kind,
                source,
                holder,
                partial_helps,
            }) => {
                assert_eq!((failed, kind), (addr, Protocol::LiveLinkFace));
                assert_eq!(source.kind(), io::ErrorKind::AddrInUse);
                assert!(!partial_helps, "not the usual address");
                if cfg!(target_os = "linux") {
                    if let Some(h) = holder {
                        assert!(h.is_this_process(), "{h}");
                    }
                }
            }
            other => panic!("expected a bind error, got {:?}", other.err()),
        }
        let bound = bind_all(&wanted(false)).unwrap();
        assert_eq!(bound.listeners.len(), 1);
        assert_eq!(bound.listeners[0].kind, Protocol::Vmc);
        assert_eq!(
            bound.skipped,
            [BoundListener {
                kind: Protocol::LiveLinkFace,
                addr
            }]
        );
        drop(taken);
    }
}
