//! iFacialMocap and Facemotion3d UDP text frames (`name-int|…|=head#…|rightEye#…|leftEye#…|`) decoded into one `FaceFrame`.
//!
//! See `shared/docs/protocols.md` §3. One datagram is one frame: `|`-separated tokens in no fixed
//! order. A blendshape token is `name-int` (iFacialMocap v1) or `name&int` (v2 and Facemotion3d),
//! the value 0..100; a block token is `name#f,f,…` (`head#` with Euler degrees and a position,
//! `rightEye#` and `leftEye#` with Euler degrees), the head one preceded by `=`. Names come in any
//! dialect ([`Channel::parse`]); unknown keys (`trackingStatus`, `hapihapi`, `FM_*`) are counted and
//! ignored. Parsing borrows the datagram and allocates nothing.

use std::net::SocketAddr;
use std::time::Instant;

use super::axes::{self, AxisMap};
use super::decoded::{Decoded, ProtocolError, MAX_PHONE_DATAGRAM};
use crate::arkit::{Channel, Protocol};

/// The string the PC sends to the phone's [`IFM_PORT`] to start iFacialMocap's v1 UDP stream.
pub const IFM_START: &str = "iFacialMocap_sahuasouryya9218sauhuiayeta91555dy3719";

/// Appended to [`IFM_START`] to ask for the v2 stream (`&` separators).
pub const IFM_V2_SUFFIX: &str = "|sendDataVersion=v2";

/// The string the PC sends to the phone's [`FM3D_PORT`] to start Facemotion3d's UDP stream.
pub const FM3D_START: &str = "FACEMOTION3D_OtherStreaming";

/// iFacialMocap's port, on the phone (handshake) and on the PC (data).
pub const IFM_PORT: u16 = 49983;

/// Facemotion3d's phone port (handshake). Its vendor page says data comes back to this port on
/// the PC too, while its own Python example binds [`IFM_PORT`]: UNCONFIRMED.
pub const FM3D_PORT: u16 = 49993;

/// iFacialMocap and Facemotion3d send 0..100; facewire's channels are 0..1.
const VALUE_SCALE: f32 = 100.0;

/// Which app sent a text frame; both share the grammar and this decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextSender {
    /// iFacialMocap (v1 `-` or v2 `&` separators, ARKit raw names such as `eyeBlink_L`).
    IFacialMocap,
    /// Facemotion3d (`&` separators, camelCase names, extra `FM_*` keys).
    Facemotion3d,
}

impl TextSender {
    /// The protocol tag of its frames.
    pub fn protocol(self) -> Protocol {
        match self {
            TextSender::IFacialMocap => Protocol::IFacialMocap,
            TextSender::Facemotion3d => Protocol::Facemotion3d,
        }
    }

    /// Its row in the axes table.
    fn axes(self) -> AxisMap {
        match self {
            TextSender::IFacialMocap => axes::IFACIALMOCAP,
            TextSender::Facemotion3d => axes::FACEMOTION3D,
        }
    }
}

/// The handshake datagram that starts `sender`'s UDP stream; `v2` asks iFacialMocap for `&`
/// separators (Facemotion3d has only one form).
pub fn handshake(sender: TextSender, v2: bool) -> String {
    match (sender, v2) {
        (TextSender::IFacialMocap, false) => IFM_START.to_string(),
        (TextSender::IFacialMocap, true) => format!("{IFM_START}{IFM_V2_SUFFIX}"),
        (TextSender::Facemotion3d, _) => FM3D_START.to_string(),
    }
}

/// Whether a text frame comes from Facemotion3d rather than iFacialMocap, judged from its bytes
/// without decoding: Facemotion3d sends camelCase names with `&` (`eyeBlinkLeft&29`) and its own
/// `FM_` keys, while iFacialMocap sends ARKit raw names (`eyeBlink_L-29` or `eyeBlink_L&29`). One
/// listener can therefore take both dialects.
pub fn looks_like_facemotion3d(datagram: &[u8]) -> bool {
    const MARKERS: [&[u8]; 3] = [b"FM_", b"eyeBlinkLeft&", b"eyeBlinkRight&"];
    MARKERS
        .iter()
        .any(|marker| datagram.windows(marker.len()).any(|w| w == *marker))
}

/// Most numbers a block carries (`head#` has 3 angles and 3 position components).
const BLOCK_MAX: usize = 6;

/// Decodes one text frame from `sender`. Never panics, allocates nothing.
///
/// Rejects datagrams larger than [`MAX_PHONE_DATAGRAM`], that are not UTF-8, that do not end with
/// `|` (truncated) or that carry no known channel or block at all. Otherwise gives one frame with
/// the channels found (values ÷ 100, not clamped), the head and eye rotations through the axes
/// table, [`TrackingFlag::Unknown`](crate::arkit::TrackingFlag) (the protocol has no face flag) and
/// no sender time.
pub fn decode(
    datagram: &[u8],
    from: SocketAddr,
    received: Instant,
    sender: TextSender,
) -> Result<Decoded, ProtocolError> {
    if datagram.len() > MAX_PHONE_DATAGRAM {
        return Err(ProtocolError::Oversized {
            len: datagram.len(),
            max: MAX_PHONE_DATAGRAM,
        });
    }
    let text = std::str::from_utf8(datagram).map_err(|_| ProtocolError::Malformed("not UTF-8"))?;
    // Some senders and tools add a newline or a NUL after the final `|`.
    let text = text.trim_end_matches(|c: char| c.is_ascii_whitespace() || c == '\0');
    if text.is_empty() {
        return Err(ProtocolError::Malformed("empty"));
    }
    let Some(body) = text.strip_suffix('|') else {
        return Err(ProtocolError::Truncated("the frame does not end with '|'"));
    };
    let map = sender.axes();
    let mut out = Decoded::empty(sender.protocol(), from, received);
    let mut known = false;
    for token in body.split('|') {
        let token = token.trim();
        if token.is_empty() {
            continue;
        }
        // `=` marks the start of the blocks, just before `head#`.
        let token = token.strip_prefix('=').unwrap_or(token);
        if let Some((name, numbers)) = token.split_once('#') {
            known |= block(name, numbers, map, &mut out);
        } else if let Some(split) = token.bytes().position(|b| b == b'-' || b == b'&') {
            let (name, value) = (&token[..split], &token[split + 1..]);
            let Some(channel) = Channel::parse(name) else {
                out.unknown_keys += 1;
                continue;
            };
            known = true;
            match value.trim().parse::<f32>() {
                Ok(v) if v.is_finite() => out.frame.set(channel, v / VALUE_SCALE),
                Ok(_) => out.non_finite_values += 1,
                Err(_) => out.bad_values += 1,
            }
        } else {
            out.unknown_keys += 1;
        }
    }
    if !known {
        return Err(ProtocolError::Malformed(
            "no blendshape or head/eye block in the frame",
        ));
    }
    Ok(out)
}

/// Applies one `name#f,f,…` block; returns whether the name is a block this decoder knows.
fn block(name: &str, numbers: &str, map: AxisMap, out: &mut Decoded) -> bool {
    let name = name.trim();
    let (slot, want): (Slot, &[usize]) = if name.eq_ignore_ascii_case("head") {
        (Slot::Head, &[3, 6])
    } else if name.eq_ignore_ascii_case("rightEye") {
        (Slot::RightEye, &[3])
    } else if name.eq_ignore_ascii_case("leftEye") {
        (Slot::LeftEye, &[3])
    } else {
        out.unknown_keys += 1;
        return false;
    };
    let mut values = [0f32; BLOCK_MAX];
    let mut len = 0;
    for part in numbers.split(',') {
        if len == BLOCK_MAX {
            out.bad_values += 1;
            return true;
        }
        match part.trim().parse::<f32>() {
            Ok(v) => values[len] = v,
            Err(_) => {
                out.bad_values += 1;
                return true;
            }
        }
        len += 1;
    }
    if !want.contains(&len) {
        out.bad_values += 1;
        return true;
    }
    // `x` = pitch, `y` = yaw, `z` = roll (axes.rs); the head's position is not used.
    match map.euler_degrees(values[0], values[1], values[2]) {
        Ok(q) => {
            let target = match slot {
                Slot::Head => &mut out.frame.head,
                Slot::RightEye => &mut out.frame.right_eye,
                Slot::LeftEye => &mut out.frame.left_eye,
            };
            *target = Some(q);
        }
        // Euler angles are never degenerate; only a non-finite angle fails.
        Err(_) => out.non_finite_values += 1,
    }
    true
}

/// Which rotation a block sets.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// `head#`.
    Head,
    /// `rightEye#` (the performer's right eye).
    RightEye,
    /// `leftEye#`.
    LeftEye,
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};

    fn addr() -> SocketAddr {
        "192.168.1.20:49983".parse().unwrap()
    }

    #[test]
    fn dialects_are_told_apart() {
        assert!(!looks_like_facemotion3d(
            b"eyeBlink_L-29|jawLeft-3|=head#0,0,0,0,0,0|"
        ));
        assert!(!looks_like_facemotion3d(
            b"eyeBlink_L&29|jawLeft&3|mouthLeft&1|"
        ));
        assert!(looks_like_facemotion3d(b"eyeBlinkLeft&29|jawOpen&3|"));
        assert!(looks_like_facemotion3d(b"jawOpen&3|FM_SAD&0|"));
    }

    fn ifm(text: &str) -> Result<Decoded, ProtocolError> {
        decode(
            text.as_bytes(),
            addr(),
            Instant::now(),
            TextSender::IFacialMocap,
        )
    }

    fn close(a: Quat, b: Quat) -> bool {
        a.dot(b).abs() > 1.0 - 1e-5
    }

    #[test]
    fn v1_frame_in_any_order_with_blocks() {
        let d = ifm("trackingStatus-1|jawOpen-50|eyeBlink_L-100|mouthLeft-3|hapihapi-0|=head#10,-20,5,0.1,0.2,-0.5|rightEye#1,2,3|leftEye#4,5,6|").unwrap();
        let f = d.frame;
        assert_eq!(f.protocol, Protocol::IFacialMocap);
        assert_eq!(f.present.len(), 3);
        assert_eq!(f.get(Channel::JawOpen), Some(0.5));
        assert_eq!(f.get(Channel::EyeBlinkLeft), Some(1.0));
        assert_eq!(f.get(Channel::MouthLeft), Some(0.03));
        assert_eq!(f.get(Channel::EyeBlinkRight), None);
        assert_eq!(d.unknown_keys, 2);
        assert_eq!((d.non_finite_values, d.bad_values), (0, 0));
        let head = axes::IFACIALMOCAP.euler_degrees(10.0, -20.0, 5.0).unwrap();
        assert!(close(f.head.unwrap(), head));
        let right = axes::IFACIALMOCAP.euler_degrees(1.0, 2.0, 3.0).unwrap();
        let left = axes::IFACIALMOCAP.euler_degrees(4.0, 5.0, 6.0).unwrap();
        assert!(close(f.right_eye.unwrap(), right));
        assert!(close(f.left_eye.unwrap(), left));
        assert_eq!(f.sender_time, None);
    }

    #[test]
    fn eye_blocks_are_found_by_name_in_any_order() {
        let d = ifm("=head#0,0,0,0,0,0|leftEye#0,30,0|rightEye#0,-30,0|").unwrap();
        // + yaw looks to the performer's left (+X).
        assert!((d.frame.left_eye.unwrap() * Vec3::Z).x > 0.4);
        assert!((d.frame.right_eye.unwrap() * Vec3::Z).x < -0.4);
        assert!(close(d.frame.head.unwrap(), Quat::IDENTITY));
    }

    #[test]
    fn v2_and_facemotion3d_use_ampersands() {
        let d = ifm("eyeBlink_R&25|jawOpen&-5|").unwrap();
        assert_eq!(d.frame.get(Channel::EyeBlinkRight), Some(0.25));
        // A negative value is kept: clamping is calibration's job.
        assert_eq!(d.frame.get(Channel::JawOpen), Some(-0.05));
        let d = decode(
            b"eyeBlinkLeft&29|FM_SAD&3|FM_browUpRight&0|mouthSmileRight&7|=head#1,2,3,0,0,0|rightEye#0,0,0|leftEye#0,0,0|",
            addr(),
            Instant::now(),
            TextSender::Facemotion3d,
        )
        .unwrap();
        assert_eq!(d.frame.protocol, Protocol::Facemotion3d);
        assert_eq!(d.frame.get(Channel::EyeBlinkLeft), Some(0.29));
        assert_eq!(d.frame.get(Channel::MouthSmileRight), Some(0.07));
        assert_eq!(d.unknown_keys, 2);
    }

    #[test]
    fn floats_are_parsed_without_locale() {
        let d = ifm("jawOpen-12.5|=head#1.5,-2.25,0.125,0,0,0|").unwrap();
        assert_eq!(d.frame.get(Channel::JawOpen), Some(0.125));
        // A comma decimal separator is not a number here: the block has too many parts.
        let d = ifm("jawOpen-1|=head#1,5,2,0,0,0,0|").unwrap();
        assert_eq!(d.bad_values, 1);
        assert_eq!(d.frame.head, None);
    }

    #[test]
    fn bad_values_are_dropped_and_counted() {
        let d = ifm("jawOpen-NaN|mouthClose-inf|eyeBlink_L-abc|eyeBlink_R-|cheekPuff-10|=head#nan,0,0,0,0,0|leftEye#1,2|rightEye#x,1,2|").unwrap();
        assert_eq!(d.frame.present.len(), 1);
        assert_eq!(d.frame.get(Channel::CheekPuff), Some(0.1));
        assert_eq!(d.non_finite_values, 3);
        assert_eq!(d.bad_values, 4);
        assert_eq!(d.frame.head, None);
        assert_eq!(d.frame.left_eye, None);
        assert_eq!(d.frame.right_eye, None);
        // A NaN in the unused head position does not drop the rotation; an angle of 1e30 is finite.
        let d = ifm("=head#1e30,0,0,nan,0,0|").unwrap();
        assert!(d.frame.head.unwrap().is_finite());
    }

    #[test]
    fn rejected_datagrams() {
        assert_eq!(ifm(""), Err(ProtocolError::Malformed("empty")));
        assert!(matches!(
            ifm("jawOpen-50|leftEye#1,2"),
            Err(ProtocolError::Truncated(_))
        ));
        assert!(matches!(
            ifm("hapihapi-0|trackingStatus-1|"),
            Err(ProtocolError::Malformed(_))
        ));
        assert!(matches!(ifm("|||"), Err(ProtocolError::Malformed(_))));
        assert!(matches!(
            decode(
                b"jawOpen-\xff|",
                addr(),
                Instant::now(),
                TextSender::IFacialMocap
            ),
            Err(ProtocolError::Malformed("not UTF-8"))
        ));
        let huge = vec![b'|'; MAX_PHONE_DATAGRAM + 1];
        assert!(matches!(
            decode(&huge, addr(), Instant::now(), TextSender::IFacialMocap),
            Err(ProtocolError::Oversized { .. })
        ));
        // A trailing newline is tolerated.
        assert!(ifm("jawOpen-50|\n").is_ok());
    }

    #[test]
    fn handshakes() {
        assert_eq!(
            handshake(TextSender::IFacialMocap, false),
            "iFacialMocap_sahuasouryya9218sauhuiayeta91555dy3719"
        );
        assert_eq!(
            handshake(TextSender::IFacialMocap, true),
            "iFacialMocap_sahuasouryya9218sauhuiayeta91555dy3719|sendDataVersion=v2"
        );
        assert_eq!(
            handshake(TextSender::Facemotion3d, false),
            "FACEMOTION3D_OtherStreaming"
        );
        assert_eq!((IFM_PORT, FM3D_PORT), (49983, 49993));
    }
}
