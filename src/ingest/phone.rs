//! The phone apps' one-datagram-one-frame decoders picked by protocol and counted for a listener.
//!
//! iFacialMocap, Facemotion3d, Live Link Face, VTube Studio and OpenSeeFace each send one complete
//! frame per datagram, so their decoders are pure functions (`decode(datagram, from, received)`) that give
//! at most one [`FaceFrame`](crate::arkit::FaceFrame); the result, the error and the size cap
//! they share live in decoded.rs. [`phone_decoder`] picks one by protocol and [`PhoneDecoder`]
//! wraps it with [`PhoneStats`] counters and rate-limited logging, for a listener to own.

use std::net::SocketAddr;
use std::time::Instant;

use tracing::{debug, trace};

use super::decoded::{DecodeFn, Decoded, ProtocolError};
use super::stats::RateLimiter;
use super::{ifacialmocap, livelink, openseeface, vts};
use crate::arkit::{Protocol, TrackingFlag};

/// The pure decoder of a phone protocol: [`ifacialmocap::decode`] for iFacialMocap and (with its
/// tag) Facemotion3d, [`livelink::decode`], [`vts::decode`], [`openseeface::decode`]. `None` for
/// VMC and Face Cap, which are OSC and go through the [`Decoder`](super::Decoder) with its
/// per-sender state, and for the webcam, which sends no datagrams.
pub fn phone_decoder(protocol: Protocol) -> Option<DecodeFn> {
    match protocol {
        Protocol::Vmc | Protocol::FaceCap => None,
        Protocol::IFacialMocap => Some(|datagram, from, received| {
            ifacialmocap::decode(
                datagram,
                from,
                received,
                ifacialmocap::TextSender::IFacialMocap,
            )
        }),
        Protocol::Facemotion3d => Some(|datagram, from, received| {
            ifacialmocap::decode(
                datagram,
                from,
                received,
                ifacialmocap::TextSender::Facemotion3d,
            )
        }),
        Protocol::LiveLinkFace => Some(livelink::decode),
        Protocol::VTubeStudio => Some(vts::decode),
        Protocol::OpenSeeFace => Some(openseeface::decode),
        Protocol::Webcam => None,
    }
}

/// Counters of one phone listener, as plain numbers.
///
/// The datagram identity `datagrams == frames + oversized + truncated + malformed + unsupported`
/// holds at every snapshot: every datagram either gives exactly one frame or is rejected for
/// exactly one reason. [`PhoneStats::is_consistent`] checks it. `lost_frames` counts the frames
/// flagged [`TrackingFlag::Lost`] among `frames`; the value counters count inside decoded frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhoneStats {
    /// Datagrams handed to the decoder.
    pub datagrams: u64,
    /// Bytes in all datagrams.
    pub bytes: u64,
    /// Frames decoded (one per accepted datagram).
    pub frames: u64,
    /// Decoded frames that say the face is lost.
    pub lost_frames: u64,
    /// Datagrams rejected as [`ProtocolError::Oversized`].
    pub oversized: u64,
    /// Datagrams rejected as [`ProtocolError::Truncated`].
    pub truncated: u64,
    /// Datagrams rejected as [`ProtocolError::Malformed`] or [`ProtocolError::Json`].
    pub malformed: u64,
    /// Datagrams rejected as [`ProtocolError::UnsupportedVersion`].
    pub unsupported: u64,
    /// Sum of [`Decoded::unknown_keys`].
    pub unknown_keys: u64,
    /// Sum of [`Decoded::non_finite_values`].
    pub non_finite_values: u64,
    /// Sum of [`Decoded::bad_values`].
    pub bad_values: u64,
}

impl PhoneStats {
    /// Counts one datagram of `len` bytes and what became of it.
    pub fn record(&mut self, len: usize, result: &Result<Decoded, ProtocolError>) {
        self.datagrams += 1;
        self.bytes += len as u64;
        match result {
            Ok(decoded) => {
                self.frames += 1;
                if decoded.frame.tracking == TrackingFlag::Lost {
                    self.lost_frames += 1;
                }
                self.unknown_keys += u64::from(decoded.unknown_keys);
                self.non_finite_values += u64::from(decoded.non_finite_values);
                self.bad_values += u64::from(decoded.bad_values);
            }
            Err(ProtocolError::Oversized { .. }) => self.oversized += 1,
            Err(ProtocolError::Truncated(_)) => self.truncated += 1,
            Err(ProtocolError::Malformed(_) | ProtocolError::Json { .. }) => self.malformed += 1,
            Err(ProtocolError::UnsupportedVersion(_)) => self.unsupported += 1,
        }
    }

    /// Whether the datagram identity documented on [`PhoneStats`] holds.
    pub fn is_consistent(&self) -> bool {
        self.datagrams
            == self.frames + self.oversized + self.truncated + self.malformed + self.unsupported
            && self.lost_frames <= self.frames
    }
}

/// One phone protocol's decoder with its counters and rate-limited logs, for one listener.
#[derive(Debug, Clone)]
pub struct PhoneDecoder {
    /// The protocol decoded.
    protocol: Protocol,
    /// Its pure decoder.
    decode: DecodeFn,
    /// Counters.
    stats: PhoneStats,
    /// Limits the rejected-datagram log lines.
    rejected_log: RateLimiter,
    /// Limits the dropped-value log lines.
    dropped_log: RateLimiter,
}

impl PhoneDecoder {
    /// A decoder for `protocol` with zero counters; `None` for VMC and Face Cap, which are not
    /// phone protocols ([`phone_decoder`]).
    pub fn new(protocol: Protocol) -> Option<PhoneDecoder> {
        Some(PhoneDecoder {
            protocol,
            decode: phone_decoder(protocol)?,
            stats: PhoneStats::default(),
            rejected_log: RateLimiter::per_second(),
            dropped_log: RateLimiter::per_second(),
        })
    }

    /// The protocol decoded.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PhoneStats {
        self.stats
    }

    /// Decodes one datagram, counts it, and logs problems (at most one line per second per kind).
    /// Never panics.
    pub fn decode(
        &mut self,
        datagram: &[u8],
        from: SocketAddr,
        received: Instant,
    ) -> Result<Decoded, ProtocolError> {
        let result = (self.decode)(datagram, from, received);
        self.stats.record(datagram.len(), &result);
        let protocol = self.protocol.name();
        match &result {
            Ok(decoded) => {
                trace!(
                    %from,
                    protocol,
                    present = decoded.frame.present.len(),
                    tracking = ?decoded.frame.tracking,
                    "phone frame"
                );
                let dropped = decoded.unknown_keys + decoded.non_finite_values + decoded.bad_values;
                if dropped > 0 {
                    if let Some(suppressed) = self.dropped_log.allow(received) {
                        debug!(
                            %from,
                            protocol,
                            unknown_keys = decoded.unknown_keys,
                            non_finite_values = decoded.non_finite_values,
                            bad_values = decoded.bad_values,
                            suppressed,
                            "dropped parts of a phone datagram"
                        );
                    }
                }
            }
            Err(error) => {
                trace!(%from, protocol, %error, "rejected phone datagram");
                if let Some(suppressed) = self.rejected_log.allow(received) {
                    debug!(
                        %from,
                        protocol,
                        len = datagram.len(),
                        %error,
                        suppressed,
                        "rejected a phone datagram"
                    );
                }
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::super::decoded::MAX_PHONE_DATAGRAM;
    use super::*;

    fn addr() -> SocketAddr {
        "127.0.0.1:5000".parse().unwrap()
    }

    #[test]
    fn stats_account_for_every_outcome() {
        let now = Instant::now();
        let mut stats = PhoneStats::default();
        let mut lost = Decoded::empty(Protocol::LiveLinkFace, addr(), now);
        lost.frame.tracking = TrackingFlag::Lost;
        lost.unknown_keys = 2;
        stats.record(10, &Ok(lost));
        stats.record(3, &Err(ProtocolError::Truncated("x")));
        stats.record(3, &Err(ProtocolError::Malformed("x")));
        stats.record(
            3,
            &Err(ProtocolError::Json {
                category: "syntax",
                line: 1,
                column: 1,
            }),
        );
        stats.record(3, &Err(ProtocolError::UnsupportedVersion(5)));
        stats.record(
            99_999,
            &Err(ProtocolError::Oversized {
                len: 99_999,
                max: 1,
            }),
        );
        assert!(stats.is_consistent(), "{stats:?}");
        assert_eq!(stats.datagrams, 6);
        assert_eq!(stats.frames, 1);
        assert_eq!(stats.lost_frames, 1);
        assert_eq!(stats.malformed, 2);
        assert_eq!(stats.unknown_keys, 2);
        assert_eq!(stats.bytes, 10 + 3 * 4 + 99_999);
    }

    #[test]
    fn decoder_tags_frames_with_its_protocol() {
        let now = Instant::now();
        for protocol in [Protocol::IFacialMocap, Protocol::Facemotion3d] {
            let mut decoder = PhoneDecoder::new(protocol).unwrap();
            assert_eq!(decoder.protocol(), protocol);
            let decoded = decoder.decode(b"jawOpen-50|", addr(), now).unwrap();
            assert_eq!(decoded.frame.protocol, protocol);
            assert_eq!(decoder.stats().frames, 1);
        }
        let mut decoder = PhoneDecoder::new(Protocol::VTubeStudio).unwrap();
        assert!(decoder.decode(b"{", addr(), now).is_err());
        assert_eq!(decoder.stats().malformed, 1);
        assert!(decoder.stats().is_consistent());
    }

    #[test]
    fn only_the_phone_protocols_have_a_phone_decoder() {
        let now = Instant::now();
        assert!(phone_decoder(Protocol::Vmc).is_none());
        assert!(phone_decoder(Protocol::FaceCap).is_none());
        assert!(PhoneDecoder::new(Protocol::FaceCap).is_none());
        for protocol in [
            Protocol::IFacialMocap,
            Protocol::Facemotion3d,
            Protocol::LiveLinkFace,
            Protocol::VTubeStudio,
            Protocol::OpenSeeFace,
        ] {
            let decode = phone_decoder(protocol).unwrap();
            // Hostile input is an error, never a panic.
            assert!(decode(&[0xFF; 3], addr(), now).is_err(), "{protocol}");
            let oversized = vec![b'a'; MAX_PHONE_DATAGRAM + 1];
            assert!(
                matches!(
                    decode(&oversized, addr(), now),
                    Err(ProtocolError::Oversized { .. })
                ),
                "{protocol}"
            );
        }
    }
}
