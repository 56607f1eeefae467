//! Forwarding of the calibrated stream as VMC (one OSC bundle per frame) to other tools such as VSeeFace, Warudo or VNyan.
//!
//! Each frame becomes one bundle ([`encode_vmc`]: the channels, with PascalCase "perfect sync"
//! names by default and camelCase on request, the head and eye rotations, then
//! `/VMC/Ext/Blend/Apply`). Sending is a non-blocking UDP `send_to` from a socket bound to an
//! ephemeral port; a datagram that cannot be sent is counted and logged (rate-limited), never
//! retried, so a slow or absent receiver cannot hold up the caller. The encode buffer is allocated once and reused.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Instant;

use thiserror::Error;
use tracing::{info, trace, warn};

use crate::arkit::FaceFrame;
use crate::config::{ForwardNames, ForwardSection};
use crate::ingest::{encode_vmc, RateLimiter};

/// Why forwarding could not start.
#[derive(Debug, Error)]
pub enum ForwardError {
    /// The sending socket could not be bound.
    #[error("cannot open a UDP socket on {addr} for forwarding")]
    Bind {
        /// The local address tried (`0.0.0.0:0` or `[::]:0`).
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The socket could not be made non-blocking.
    #[error("cannot make the forwarding socket non-blocking")]
    Socket(#[source] io::Error),
}

/// Counters of a [`Forwarder`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForwardStats {
    /// Frames handed to [`Forwarder::send`].
    pub frames: u64,
    /// Datagrams sent (one per frame and receiver).
    pub sent: u64,
    /// Datagrams dropped because the socket's send buffer was full.
    pub would_block: u64,
    /// Datagrams that failed for any other reason (no route, receiver port closed, ...).
    pub errors: u64,
}

/// Sends calibrated frames on as VMC to a fixed list of receivers.
#[derive(Debug)]
pub struct Forwarder {
    /// The receivers.
    targets: Vec<SocketAddr>,
    /// The socket for IPv4 receivers, if any.
    v4: Option<UdpSocket>,
    /// The socket for IPv6 receivers, if any.
    v6: Option<UdpSocket>,
    /// Channel name spelling.
    names: ForwardNames,
    /// The encode buffer, reused for every frame.
    buf: Vec<u8>,
    /// Counters.
    stats: ForwardStats,
    /// Limits the send-failure log lines.
    error_log: RateLimiter,
}

/// Binds a non-blocking sending socket on `addr`.
fn sending_socket(addr: SocketAddr) -> Result<UdpSocket, ForwardError> {
    let socket = UdpSocket::bind(addr).map_err(|source| ForwardError::Bind { addr, source })?;
    socket.set_nonblocking(true).map_err(ForwardError::Socket)?;
    Ok(socket)
}

impl Forwarder {
    /// A forwarder for `section`, or `None` when `section.to` is empty (forwarding off).
    pub fn new(section: &ForwardSection) -> Result<Option<Forwarder>, ForwardError> {
        if section.to.is_empty() {
            return Ok(None);
        }
        let v4 = section
            .to
            .iter()
            .any(SocketAddr::is_ipv4)
            .then(|| sending_socket(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))))
            .transpose()?;
        let v6 = section
            .to
            .iter()
            .any(SocketAddr::is_ipv6)
            .then(|| sending_socket(SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))))
            .transpose()?;
        for to in &section.to {
            info!(%to, names = ?section.names, "forwarding the calibrated stream as VMC to {to}");
        }
        Ok(Some(Forwarder {
            targets: section.to.clone(),
            v4,
            v6,
            names: section.names,
            buf: Vec::with_capacity(4096),
            stats: ForwardStats::default(),
            error_log: RateLimiter::new(std::time::Duration::from_secs(5)),
        }))
    }

    /// The counters.
    pub fn stats(&self) -> ForwardStats {
        self.stats
    }

    /// Encodes `frame` as one VMC bundle and sends it to every receiver without blocking.
    /// Failures are counted and logged (at most once every 5 s), never returned.
    pub fn send(&mut self, frame: &FaceFrame) {
        self.stats.frames += 1;
        encode_vmc(frame, self.names, &mut self.buf);
        for &to in &self.targets {
            let socket = if to.is_ipv4() { &self.v4 } else { &self.v6 };
            let Some(socket) = socket else {
                continue;
            };
            match socket.send_to(&self.buf, to) {
                Ok(_) => {
                    self.stats.sent += 1;
                    trace!(%to, len = self.buf.len(), "forwarded a frame");
                }
                Err(err) => {
                    if err.kind() == io::ErrorKind::WouldBlock {
                        self.stats.would_block += 1;
                    } else {
                        self.stats.errors += 1;
                    }
                    if let Some(suppressed) = self.error_log.allow(Instant::now()) {
                        warn!(%to, cause = %err, suppressed, "cannot forward a frame to {to}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_receivers_means_no_forwarder() {
        assert!(Forwarder::new(&ForwardSection::default())
            .unwrap()
            .is_none());
    }
}
