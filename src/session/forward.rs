//! Forwarding of the calibrated stream as VMC (one OSC bundle per frame) to other tools such as VSeeFace, Warudo or VNyan.
//!
//! Each frame becomes one bundle: a `/VMC/Ext/Blend/Val s f` for every channel the frame carries
//! (PascalCase "perfect sync" names by default, camelCase on request), then
//! `/VMC/Ext/Bone/Pos "Head" 0 0 0 qx qy qz qw` with the head rotation converted back into VMC's
//! Unity axes through [`axes::VMC`], then `/VMC/Ext/Blend/Apply`. The position is sent as the
//! origin, as the iFacialMocap PC app does, because facewire has no head translation. Sending is a
//! non-blocking UDP `send_to` from a socket bound to an ephemeral port; a datagram that cannot be
//! sent is counted and logged (rate-limited), never retried, so a slow or absent receiver cannot
//! hold up the caller. The encode buffer is allocated once and reused.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Instant;

use thiserror::Error;
use tracing::{info, trace, warn};

use crate::arkit::FaceFrame;
use crate::config::{ForwardNames, ForwardSection};
use crate::ingest::{axes, RateLimiter};

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
        encode_bundle(frame, self.names, &mut self.buf);
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

/// OSC's "immediately" time tag.
const IMMEDIATELY: u64 = 1;

/// Encodes `frame` as one VMC bundle into `out` (cleared first): a `/VMC/Ext/Blend/Val` for
/// each present channel with a finite value, `/VMC/Ext/Bone/Pos "Head"` when the frame has a
/// finite head rotation, then `/VMC/Ext/Blend/Apply`. Allocates only when `out` must grow.
pub fn encode_bundle(frame: &FaceFrame, names: ForwardNames, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(b"#bundle\0");
    out.extend_from_slice(&IMMEDIATELY.to_be_bytes());
    for channel in frame.present.iter() {
        let value = frame.weights[channel.index()];
        if !value.is_finite() {
            continue;
        }
        element(out, |out| {
            osc_string(out, b"/VMC/Ext/Blend/Val");
            osc_string(out, b",sf");
            let name = channel.name().as_bytes();
            let start = out.len();
            osc_string(out, name);
            if names == ForwardNames::Pascal {
                out[start] = out[start].to_ascii_uppercase();
            }
            out.extend_from_slice(&value.to_be_bytes());
        });
    }
    if let Some(head) = frame.head.filter(|q| q.is_finite()) {
        let wire = axes::VMC.to_wire_quat(head.normalize());
        element(out, |out| {
            osc_string(out, b"/VMC/Ext/Bone/Pos");
            osc_string(out, b",sfffffff");
            osc_string(out, b"Head");
            for v in [0.0f32, 0.0, 0.0].into_iter().chain(wire) {
                out.extend_from_slice(&v.to_be_bytes());
            }
        });
    }
    element(out, |out| {
        osc_string(out, b"/VMC/Ext/Blend/Apply");
        osc_string(out, b",");
    });
}

/// Appends one bundle element: its int32 size, then what `write` appends.
fn element(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let size_at = out.len();
    out.extend_from_slice(&[0; 4]);
    write(out);
    // An element is at most a few hundred bytes, far below i32::MAX.
    let size = (out.len() - size_at - 4) as u32;
    out[size_at..size_at + 4].copy_from_slice(&size.to_be_bytes());
}

/// Appends an OSC string: the bytes, a NUL, then NULs up to a multiple of 4.
fn osc_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    let pad = 4 - s.len() % 4;
    out.extend(std::iter::repeat_n(0u8, pad));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::ingest::Decoder;
    use glam::Quat;

    fn frame() -> FaceFrame {
        let mut frame = FaceFrame::empty(
            Protocol::IFacialMocap,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        frame.set(Channel::EyeBlinkLeft, 0.25);
        frame.set(Channel::JawOpen, 0.5);
        frame.set(Channel::MouthSmileRight, f32::NAN);
        frame.head = Some(Quat::from_rotation_y(0.4) * Quat::from_rotation_x(0.1));
        frame
    }

    #[test]
    fn bundles_decode_as_osc_in_order() {
        let mut buf = Vec::new();
        encode_bundle(&frame(), ForwardNames::Pascal, &mut buf);
        let (_, packet) = rosc::decoder::decode_udp(&buf).unwrap();
        let rosc::OscPacket::Bundle(bundle) = packet else {
            panic!("not a bundle")
        };
        let messages: Vec<_> = bundle
            .content
            .iter()
            .map(|p| match p {
                rosc::OscPacket::Message(m) => m.clone(),
                rosc::OscPacket::Bundle(_) => panic!("nested bundle"),
            })
            .collect();
        let addrs: Vec<&str> = messages.iter().map(|m| m.addr.as_str()).collect();
        assert_eq!(
            addrs,
            [
                "/VMC/Ext/Blend/Val",
                "/VMC/Ext/Blend/Val",
                "/VMC/Ext/Bone/Pos",
                "/VMC/Ext/Blend/Apply"
            ]
        );
        assert_eq!(
            messages[0].args,
            [
                rosc::OscType::String("EyeBlinkLeft".into()),
                rosc::OscType::Float(0.25)
            ]
        );
        assert_eq!(messages[1].args[0], rosc::OscType::String("JawOpen".into()));
        assert_eq!(messages[2].args.len(), 8);
        assert!(messages[3].args.is_empty());
    }

    #[test]
    fn facewire_reads_its_own_forwarded_frames_back() {
        let original = frame();
        for names in [ForwardNames::Pascal, ForwardNames::Camel] {
            let mut buf = Vec::new();
            encode_bundle(&original, names, &mut buf);
            let mut decoder = Decoder::new();
            let mut got = Vec::new();
            decoder.decode(&buf, original.from, Instant::now(), |f| got.push(*f));
            assert_eq!(got.len(), 1);
            let back = got[0];
            assert_eq!(back.get(Channel::EyeBlinkLeft), Some(0.25));
            assert_eq!(back.get(Channel::JawOpen), Some(0.5));
            assert_eq!(back.get(Channel::MouthSmileRight), None);
            let head = back.head.unwrap();
            assert!(head.dot(original.head.unwrap()).abs() > 1.0 - 1e-5);
        }
    }

    #[test]
    fn camel_names_stay_camel() {
        let mut buf = Vec::new();
        encode_bundle(&frame(), ForwardNames::Camel, &mut buf);
        assert!(buf.windows(12).any(|w| w == b"eyeBlinkLeft"));
        assert!(!buf.windows(12).any(|w| w == b"EyeBlinkLeft"));
    }

    #[test]
    fn no_receivers_means_no_forwarder() {
        assert!(Forwarder::new(&ForwardSection::default())
            .unwrap()
            .is_none());
    }
}
