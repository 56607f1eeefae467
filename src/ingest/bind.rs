//! Binding the listeners: which must bind, and errors that say who holds a port and how to move
//! facewire off it.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use tokio::net::UdpSocket;
use tracing::{info, warn};

use super::config::default_addr;
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

/// The `[ingest]` key of a listener kind.
fn key(kind: Protocol) -> &'static str {
    match kind.family() {
        Protocol::IFacialMocap => "ifacialmocap",
        Protocol::Facemotion3d => "facemotion3d",
        Protocol::LiveLinkFace => "livelinkface",
        Protocol::VTubeStudio => "vtubestudio",
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
                super::default_port(kind)
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
            usual = super::default_port(kind),
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
            Err(err) if w.required => return Err(err),
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
                    "{err} ({cause}); the other listeners run"
                );
                bound.skipped.push(BoundListener {
                    kind: w.kind,
                    addr: w.addr,
                });
                first_error.get_or_insert(err);
            }
        }
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
    let socket = UdpSocket::from_std(std_socket).map_err(socket_error)?;
    Ok((socket, local))
}
