//! Live Link Face UDP packets (big-endian, version 6) parsed and decoded into one `FaceFrame`.
//!
//! See `shared/docs/protocols.md` §4.1. Layout: `u8` version, `i32` device-id length N and N
//! bytes, `i32` subject length M and M bytes, `i32` frame number, `f32` subframe, `i32` rate
//! numerator and denominator, then `u8` count and count × `f32`: the 52 blendshapes in canonical
//! order, then HeadYaw, HeadPitch, HeadRoll, LeftEyeYaw, LeftEyePitch, LeftEyeRoll, RightEyeYaw,
//! RightEyePitch, RightEyeRoll in radians. A packet that stops after the rate (no count byte) says
//! the face is lost. Every read is bounds-checked; the lengths are read, never assumed.

use std::net::SocketAddr;
use std::time::Instant;

use super::axes;
use super::decoded::{Decoded, ProtocolError, MAX_PHONE_DATAGRAM};
use crate::arkit::{Channel, Protocol, TrackingFlag, COUNT};

/// The PC port Live Link Face sends to by default (set per target in the app).
pub const DEFAULT_PORT: u16 = 11111;

/// The only packet version this decoder reads (the one the app sends).
pub const PACKET_VERSION: u8 = 6;

/// Values in a full packet: 52 blendshapes, 3 head angles and 3 angles per eye.
pub const VALUE_COUNT: usize = 61;

/// Index of `HeadYaw` among the values (pinned by LLV's synthetic HeadYaw sweep); `HeadPitch`
/// and `HeadRoll` follow.
pub const HEAD_YAW: usize = 52;

/// Index of `LeftEyeYaw`; `LeftEyePitch` and `LeftEyeRoll` follow.
pub const LEFT_EYE_YAW: usize = 55;

/// Index of `RightEyeYaw`; `RightEyePitch` and `RightEyeRoll` follow.
pub const RIGHT_EYE_YAW: usize = 58;

/// One parsed packet, borrowing the datagram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveLinkPacket<'a> {
    /// The packet version ([`PACKET_VERSION`] for every packet [`parse`] accepts).
    pub version: u8,
    /// The device id bytes (a UUID string in practice; not checked for UTF-8).
    pub device_id: &'a [u8],
    /// The subject name bytes (the phone's name by default; not checked for UTF-8).
    pub subject: &'a [u8],
    /// The frame number of the timecode.
    pub frame_number: i32,
    /// The fraction of a frame, as sent.
    pub subframe: f32,
    /// The frame rate numerator (60 in practice).
    pub rate_numerator: i32,
    /// The frame rate denominator (1 in practice).
    pub rate_denominator: i32,
    /// The count byte as sent; `None` for a header-only packet (face lost).
    pub declared_count: Option<u8>,
    /// The values read, in wire order; only the first `value_len` are meaningful.
    pub values: [f32; VALUE_COUNT],
    /// How many values were read: `min(declared_count, 61)`, or 0.
    pub value_len: usize,
}

impl LiveLinkPacket<'_> {
    /// The values read.
    pub fn values(&self) -> &[f32] {
        &self.values[..self.value_len.min(VALUE_COUNT)]
    }

    /// The timecode in seconds, `(frame_number + subframe) × denominator / numerator`, in `f64`
    /// throughout; `None` when the rate is not positive or the subframe is not finite.
    pub fn time_seconds(&self) -> Option<f64> {
        if self.rate_numerator <= 0 || self.rate_denominator <= 0 || !self.subframe.is_finite() {
            return None;
        }
        let frames = f64::from(self.frame_number) + f64::from(self.subframe);
        Some(frames * f64::from(self.rate_denominator) / f64::from(self.rate_numerator))
    }
}

/// A bounds-checked big-endian reader.
struct Reader<'a> {
    /// The bytes not read yet.
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ProtocolError> {
        if n > self.rest.len() {
            return Err(ProtocolError::Truncated(what));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    /// The next four bytes.
    fn four(&mut self, what: &'static str) -> Result<[u8; 4], ProtocolError> {
        let bytes = self.take(4, what)?;
        Ok([bytes[0], bytes[1], bytes[2], bytes[3]])
    }

    /// A big-endian `i32`.
    fn i32(&mut self, what: &'static str) -> Result<i32, ProtocolError> {
        self.four(what).map(i32::from_be_bytes)
    }

    /// A big-endian `f32`.
    fn f32(&mut self, what: &'static str) -> Result<f32, ProtocolError> {
        self.four(what).map(f32::from_be_bytes)
    }

    /// An `i32` length followed by that many bytes.
    fn prefixed(&mut self, what: &'static str) -> Result<&'a [u8], ProtocolError> {
        let len = self.i32(what)?;
        let len = usize::try_from(len).map_err(|_| ProtocolError::Malformed(what))?;
        self.take(len, what)
    }
}

/// Parses one packet. Rejects oversized datagrams, versions other than [`PACKET_VERSION`],
/// negative lengths and any field that runs past the end. A count other than 61 is accepted
/// when its values are there (at most 61 are read); bytes after the values are ignored.
pub fn parse(datagram: &[u8]) -> Result<LiveLinkPacket<'_>, ProtocolError> {
    if datagram.len() > MAX_PHONE_DATAGRAM {
        return Err(ProtocolError::Oversized {
            len: datagram.len(),
            max: MAX_PHONE_DATAGRAM,
        });
    }
    let mut r = Reader { rest: datagram };
    let version = r.take(1, "packet version")?[0];
    if version != PACKET_VERSION {
        return Err(ProtocolError::UnsupportedVersion(version));
    }
    let device_id = r.prefixed("device id")?;
    let subject = r.prefixed("subject name")?;
    let frame_number = r.i32("frame number")?;
    let subframe = r.f32("subframe")?;
    let rate_numerator = r.i32("frame rate numerator")?;
    let rate_denominator = r.i32("frame rate denominator")?;
    let mut packet = LiveLinkPacket {
        version,
        device_id,
        subject,
        frame_number,
        subframe,
        rate_numerator,
        rate_denominator,
        declared_count: None,
        values: [0.0; VALUE_COUNT],
        value_len: 0,
    };
    if r.rest.is_empty() {
        return Ok(packet);
    }
    let count = r.take(1, "value count")?[0];
    packet.declared_count = Some(count);
    let len = usize::from(count).min(VALUE_COUNT);
    for value in packet.values.iter_mut().take(len) {
        *value = r.f32("values")?;
    }
    packet.value_len = len;
    Ok(packet)
}

/// Encodes `packet` (for tests and tools): the header, then, unless `declared_count` is `None`,
/// the count byte and the first `value_len` values. Lengths longer than `i32::MAX` are not
/// representable and are written as `i32::MAX`.
pub fn encode(packet: &LiveLinkPacket<'_>) -> Vec<u8> {
    let values = packet.values();
    let mut out =
        Vec::with_capacity(30 + packet.device_id.len() + packet.subject.len() + 4 * values.len());
    out.push(packet.version);
    for field in [packet.device_id, packet.subject] {
        let len = i32::try_from(field.len()).unwrap_or(i32::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(field);
    }
    out.extend_from_slice(&packet.frame_number.to_be_bytes());
    out.extend_from_slice(&packet.subframe.to_be_bytes());
    out.extend_from_slice(&packet.rate_numerator.to_be_bytes());
    out.extend_from_slice(&packet.rate_denominator.to_be_bytes());
    if let Some(count) = packet.declared_count {
        out.push(count);
        for v in values {
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
    out
}

/// Decodes one packet into a frame. Never panics.
///
/// - A header-only packet, or one with a count of 0, gives [`TrackingFlag::Lost`] and no channel.
/// - Otherwise the frame is [`TrackingFlag::Tracked`] with the blendshapes it carries (not
///   clamped), the head when values 52–54 are all there, each eye when its three are there (all
///   through [`axes::LIVELINKFACE`]); a non-finite value is dropped and counted.
/// - `sender_time` is [`LiveLinkPacket::time_seconds`] (a time-of-day timecode).
pub fn decode(
    datagram: &[u8],
    from: SocketAddr,
    received: Instant,
) -> Result<Decoded, ProtocolError> {
    let packet = parse(datagram)?;
    let mut out = Decoded::empty(Protocol::LiveLinkFace, from, received);
    out.frame.sender_time = packet.time_seconds();
    if packet.subframe.is_nan() || packet.subframe.is_infinite() {
        out.non_finite_values += 1;
    }
    let values = packet.values();
    if values.is_empty() {
        out.frame.tracking = TrackingFlag::Lost;
        return Ok(out);
    }
    out.frame.tracking = TrackingFlag::Tracked;
    for (channel, &value) in Channel::ALL.iter().zip(values.iter().take(COUNT)) {
        if value.is_finite() {
            out.frame.set(*channel, value);
        } else {
            out.non_finite_values += 1;
        }
    }
    let mut rotation = |first: usize| {
        let [yaw, pitch, roll] = match values.get(first..first + 3) {
            Some(&[yaw, pitch, roll]) => [yaw, pitch, roll],
            _ => return None,
        };
        match axes::LIVELINKFACE.euler_radians(pitch, yaw, roll) {
            Ok(q) => Some(q),
            Err(_) => {
                out.non_finite_values += 1;
                None
            }
        }
    };
    let head = rotation(HEAD_YAW);
    let left_eye = rotation(LEFT_EYE_YAW);
    let right_eye = rotation(RIGHT_EYE_YAW);
    out.frame.head = head;
    out.frame.left_eye = left_eye;
    out.frame.right_eye = right_eye;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};

    fn addr() -> SocketAddr {
        "10.0.0.7:50000".parse().unwrap()
    }

    fn packet(values: &[f32]) -> LiveLinkPacket<'static> {
        let mut all = [0.0; VALUE_COUNT];
        let len = values.len().min(VALUE_COUNT);
        all[..len].copy_from_slice(&values[..len]);
        LiveLinkPacket {
            version: PACKET_VERSION,
            device_id: b"1EACAA6D-D06B-4A50-9463-283791062EB9",
            subject: b"Ahmeds_iPhone",
            frame_number: 1_095_835,
            subframe: 0.25,
            rate_numerator: 60,
            rate_denominator: 1,
            declared_count: Some(VALUE_COUNT as u8),
            values: all,
            value_len: len,
        }
    }

    fn close(a: Quat, b: Quat) -> bool {
        a.dot(b).abs() > 1.0 - 1e-5
    }

    #[test]
    fn round_trip_of_a_full_packet() {
        let values: Vec<f32> = (0..VALUE_COUNT).map(|i| i as f32 / 100.0).collect();
        let bytes = encode(&packet(&values));
        assert_eq!(bytes.len(), 270 + 36 + 13);
        let parsed = parse(&bytes).unwrap();
        assert_eq!(parsed, packet(&values));
        let d = decode(&bytes, addr(), Instant::now()).unwrap();
        let f = d.frame;
        assert_eq!(f.protocol, Protocol::LiveLinkFace);
        assert_eq!(f.tracking, TrackingFlag::Tracked);
        assert_eq!(f.present.len(), 52);
        assert_eq!(f.get(Channel::EyeBlinkLeft), Some(0.0));
        assert_eq!(f.get(Channel::JawOpen), Some(0.17));
        assert_eq!(f.get(Channel::TongueOut), Some(0.51));
        let head = axes::LIVELINKFACE.euler_radians(0.53, 0.52, 0.54).unwrap();
        assert!(close(f.head.unwrap(), head));
        let left = axes::LIVELINKFACE.euler_radians(0.56, 0.55, 0.57).unwrap();
        let right = axes::LIVELINKFACE.euler_radians(0.59, 0.58, 0.60).unwrap();
        assert!(close(f.left_eye.unwrap(), left));
        assert!(close(f.right_eye.unwrap(), right));
        let t = f.sender_time.unwrap();
        assert!((t - 1_095_835.25 / 60.0).abs() < 1e-9, "{t}");
    }

    #[test]
    fn lengths_are_read_not_assumed() {
        let mut p = packet(&[0.5; VALUE_COUNT]);
        p.device_id = b"DEADC0DE-1337-1337-1337-CAFEBABE";
        p.subject = b"";
        let bytes = encode(&p);
        let parsed = parse(&bytes).unwrap();
        assert_eq!(parsed.device_id.len(), 32);
        assert_eq!(parsed.subject, b"");
        assert_eq!(parsed.value_len, VALUE_COUNT);
    }

    #[test]
    fn header_only_packet_means_face_lost() {
        let mut p = packet(&[]);
        p.declared_count = None;
        let bytes = encode(&p);
        assert_eq!(bytes.len(), 25 + 36 + 13);
        let d = decode(&bytes, addr(), Instant::now()).unwrap();
        assert_eq!(d.frame.tracking, TrackingFlag::Lost);
        assert!(d.frame.present.is_empty());
        assert_eq!(d.frame.head, None);
        assert!(d.frame.sender_time.is_some());
        // A count of zero carries nothing either.
        p.declared_count = Some(0);
        let d = decode(&encode(&p), addr(), Instant::now()).unwrap();
        assert_eq!(d.frame.tracking, TrackingFlag::Lost);
    }

    #[test]
    fn other_counts_are_accepted_when_the_data_is_there() {
        // 52 values: blendshapes, no pose.
        let mut p = packet(&[0.25; 52]);
        p.declared_count = Some(52);
        let d = decode(&encode(&p), addr(), Instant::now()).unwrap();
        assert_eq!(d.frame.present.len(), 52);
        assert_eq!(d.frame.head, None);
        // 56 values: the head but no whole eye.
        let mut p = packet(&[0.0; 56]);
        p.declared_count = Some(56);
        let d = decode(&encode(&p), addr(), Instant::now()).unwrap();
        assert!(d.frame.head.is_some());
        assert_eq!((d.frame.left_eye, d.frame.right_eye), (None, None));
        // A count of 200 with 200 values: only 61 are read.
        let mut bytes = encode(&packet(&[0.0; VALUE_COUNT]));
        let count_at = bytes.len() - 4 * VALUE_COUNT - 1;
        bytes[count_at] = 200;
        bytes.extend(std::iter::repeat_n(0u8, 4 * (200 - VALUE_COUNT)));
        let parsed = parse(&bytes).unwrap();
        assert_eq!((parsed.declared_count, parsed.value_len), (Some(200), 61));
        // A count of 61 with 60 values is truncated.
        let bytes = encode(&packet(&[0.0; VALUE_COUNT]));
        assert_eq!(
            parse(&bytes[..bytes.len() - 4]),
            Err(ProtocolError::Truncated("values"))
        );
    }

    #[test]
    fn hostile_headers_are_rejected() {
        let good = encode(&packet(&[0.0; VALUE_COUNT]));
        assert_eq!(parse(&[]), Err(ProtocolError::Truncated("packet version")));
        let mut v5 = good.clone();
        v5[0] = 5;
        assert_eq!(parse(&v5), Err(ProtocolError::UnsupportedVersion(5)));
        for len in [i32::MAX, 10_000, 37] {
            let mut huge = good.clone();
            huge[1..5].copy_from_slice(&len.to_be_bytes());
            assert!(parse(&huge).is_err(), "{len}");
        }
        let mut negative = good.clone();
        negative[1..5].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(parse(&negative), Err(ProtocolError::Malformed("device id")));
        for cut in 0..good.len() {
            // Every prefix either parses (header-only, or fewer values than declared is an
            // error) or is rejected; none panics.
            let _ = decode(&good[..cut], addr(), Instant::now());
        }
        let huge = vec![6u8; MAX_PHONE_DATAGRAM + 1];
        assert!(matches!(parse(&huge), Err(ProtocolError::Oversized { .. })));
    }

    #[test]
    fn non_finite_values_and_rates() {
        let mut values = [0.0; VALUE_COUNT];
        values[17] = f32::NAN;
        values[HEAD_YAW] = f32::INFINITY;
        let mut p = packet(&values);
        p.rate_numerator = 0;
        let d = decode(&encode(&p), addr(), Instant::now()).unwrap();
        assert_eq!(d.frame.present.len(), 51);
        assert_eq!(d.frame.get(Channel::JawOpen), None);
        assert_eq!(d.frame.head, None);
        assert!(d.frame.left_eye.is_some());
        assert_eq!(d.non_finite_values, 2);
        assert_eq!(d.frame.sender_time, None);
        p.rate_numerator = 60;
        p.subframe = f32::NAN;
        let d = decode(&encode(&p), addr(), Instant::now()).unwrap();
        assert_eq!(d.frame.sender_time, None);
        assert_eq!(d.non_finite_values, 3);
    }

    #[test]
    fn positive_head_yaw_turns_to_the_performers_right() {
        let mut values = [0.0; VALUE_COUNT];
        values[HEAD_YAW] = 0.5;
        let d = decode(&encode(&packet(&values)), addr(), Instant::now()).unwrap();
        let forward = d.frame.head.unwrap() * Vec3::Z;
        assert!(forward.x < -0.4, "{forward}");
    }
}
