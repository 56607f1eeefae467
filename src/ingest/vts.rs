//! VTube Studio's phone protocol (also spoken by MeowFace): the request the PC sends and the JSON tracking datagram decoded into one `FaceFrame`.
//!
//! See `shared/docs/protocols.md` §5. The PC sends [`vts_request`] to the phone's
//! [`PHONE_PORT`] again and again; the phone answers with one JSON object per datagram on every
//! port the request named. Blendshape keys come in any dialect (iOS `EyeBlinkLeft`, Android
//! `eyeBlink_L`, MeowFace `eyeBlinkLeft`); MeowFace's extra keys (`headLeft`, `browInnerUpLeft`)
//! are counted and ignored, as are unknown fields. The blendshape list is folded straight into the
//! frame, so a datagram costs no allocation beyond serde_json's scratch space, which the size cap
//! bounds.

use std::borrow::Cow;
use std::fmt;
use std::net::SocketAddr;
use std::time::Instant;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use thiserror::Error;

use super::axes;
use super::decoded::{Decoded, ProtocolError, MAX_PHONE_DATAGRAM};
use crate::arkit::{Channel, Protocol, TrackingFlag};

/// The phone's port for requests ("or whatever is displayed in the app").
pub const PHONE_PORT: u16 = 21412;

/// The PC port facewire asks the phone to send to by default. The protocol lets the PC choose;
/// this is the first port of the official sample's request.
pub const DEFAULT_PC_PORT: u16 = 11125;

/// The request's `messageType`.
pub const REQUEST_TYPE: &str = "iOSTrackingDataRequest";

/// Most ports one request may name.
pub const MAX_REQUEST_PORTS: usize = super::section::MAX_VTS_REQUEST_PORTS;

/// Longest `sentBy`, in characters.
pub const MAX_SENT_BY: usize = 32;

/// Shortest and longest streaming time one request may ask for, in seconds.
pub const REQUEST_TIME_RANGE: std::ops::RangeInclusive<f32> = 0.5..=10.0;

/// Why [`vts_request`] refused to build a request.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RequestError {
    /// The port list is empty or longer than [`MAX_REQUEST_PORTS`].
    #[error("a request names 1 to {MAX_REQUEST_PORTS} ports, not {0}")]
    Ports(usize),
    /// A port is 0.
    #[error("port 0 cannot receive")]
    PortZero,
    /// `sentBy` is empty or longer than [`MAX_SENT_BY`] characters.
    #[error("sentBy must be 1 to {MAX_SENT_BY} characters, not {0}")]
    SentBy(usize),
    /// The time is outside [`REQUEST_TIME_RANGE`] (or not finite).
    #[error("time must be 0.5 to 10 seconds, not {0}")]
    Time(f32),
}

/// Builds the tracking-data request
/// `{"messageType":"iOSTrackingDataRequest","time":…,"sentBy":"…","ports":[…]}`, which asks the
/// phone to stream to the request's source address on every one of `ports` for `time_s` seconds.
pub fn vts_request(sent_by: &str, ports: &[u16], time_s: f32) -> Result<String, RequestError> {
    if ports.is_empty() || ports.len() > MAX_REQUEST_PORTS {
        return Err(RequestError::Ports(ports.len()));
    }
    if ports.contains(&0) {
        return Err(RequestError::PortZero);
    }
    let chars = sent_by.chars().count();
    if chars == 0 || chars > MAX_SENT_BY {
        return Err(RequestError::SentBy(chars));
    }
    if !REQUEST_TIME_RANGE.contains(&time_s) {
        return Err(RequestError::Time(time_s));
    }
    let request = serde_json::json!({
        "messageType": REQUEST_TYPE,
        "time": time_s,
        "sentBy": sent_by,
        "ports": ports,
    });
    Ok(request.to_string())
}

/// A JSON `{x, y, z}` triple.
#[derive(Debug, Clone, Copy, Deserialize)]
struct Xyz {
    /// `x`.
    x: f64,
    /// `y`.
    y: f64,
    /// `z`.
    z: f64,
}

/// The datagram's fields that facewire reads; the rest are ignored.
#[derive(Debug, Deserialize)]
struct Payload {
    /// Unix milliseconds, as an integer (a float is accepted).
    #[serde(rename = "Timestamp", default)]
    timestamp: Option<serde_json::Number>,
    /// Whether a face is tracked.
    #[serde(rename = "FaceFound", default)]
    face_found: Option<bool>,
    /// Head Euler degrees.
    #[serde(rename = "Rotation", default)]
    rotation: Option<Xyz>,
    /// Left eye Euler degrees.
    #[serde(rename = "EyeLeft", default)]
    eye_left: Option<Xyz>,
    /// Right eye Euler degrees.
    #[serde(rename = "EyeRight", default)]
    eye_right: Option<Xyz>,
    /// The blendshapes, folded as they are read.
    #[serde(rename = "BlendShapes", default)]
    blend_shapes: Option<Shapes>,
}

/// One `{"k": name, "v": value}` entry.
#[derive(Debug, Deserialize)]
struct Shape<'a> {
    /// The name, in any dialect.
    #[serde(borrow)]
    k: Cow<'a, str>,
    /// The value.
    v: f64,
}

/// The blendshape list folded into fixed storage while it is read.
#[derive(Debug, Clone, Copy)]
struct Shapes {
    /// The value of each channel seen (the last one wins).
    values: [Option<f32>; crate::arkit::COUNT],
    /// Names that are not ARKit channels.
    unknown: u32,
    /// Values that do not fit a finite `f32`.
    non_finite: u32,
}

impl<'de> Deserialize<'de> for Shapes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Shapes, D::Error> {
        deserializer.deserialize_seq(ShapesVisitor)
    }
}

/// Folds a sequence of [`Shape`]s into [`Shapes`] without collecting it.
struct ShapesVisitor;

impl<'de> Visitor<'de> for ShapesVisitor {
    type Value = Shapes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of {\"k\": name, \"v\": value} objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shapes, A::Error> {
        let mut shapes = Shapes {
            values: [None; crate::arkit::COUNT],
            unknown: 0,
            non_finite: 0,
        };
        while let Some(shape) = seq.next_element::<Shape<'de>>()? {
            let Some(channel) = Channel::parse(&shape.k) else {
                shapes.unknown += 1;
                continue;
            };
            // JSON has no NaN, but a double beyond f32's range becomes infinite here.
            let value = shape.v as f32;
            if value.is_finite() {
                shapes.values[channel.index()] = Some(value);
            } else {
                shapes.non_finite += 1;
            }
        }
        Ok(shapes)
    }
}

/// Makes sure a datagram is one JSON object before serde reads it as a struct (serde would also
/// accept a JSON array for a struct).
fn is_object(datagram: &[u8]) -> bool {
    datagram
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}

/// Decodes one tracking datagram. Never panics.
///
/// - Rejects datagrams larger than [`MAX_PHONE_DATAGRAM`], invalid JSON, anything but an object,
///   and known fields of the wrong type.
/// - `FaceFound: false` gives [`TrackingFlag::Lost`] (the values sent are kept), `true`
///   [`TrackingFlag::Tracked`], absent [`TrackingFlag::Unknown`].
/// - `Timestamp` (Unix milliseconds) becomes `sender_time` in seconds through `f64` only.
/// - `Rotation`, `EyeLeft`, `EyeRight` (Euler degrees, `x` = pitch, `y` = yaw, `z` = roll) go
///   through [`axes::VTUBESTUDIO`]; `Position` and `Hotkey` are not used.
pub fn decode(
    datagram: &[u8],
    from: SocketAddr,
    received: Instant,
) -> Result<Decoded, ProtocolError> {
    if datagram.len() > MAX_PHONE_DATAGRAM {
        return Err(ProtocolError::Oversized {
            len: datagram.len(),
            max: MAX_PHONE_DATAGRAM,
        });
    }
    if !is_object(datagram) {
        return Err(ProtocolError::Malformed("not a JSON object"));
    }
    let payload: Payload = serde_json::from_slice(datagram)?;
    let mut out = Decoded::empty(Protocol::VTubeStudio, from, received);
    out.frame.tracking = match payload.face_found {
        Some(true) => TrackingFlag::Tracked,
        Some(false) => TrackingFlag::Lost,
        None => TrackingFlag::Unknown,
    };
    if let Some(ts) = payload.timestamp {
        // Milliseconds since 1970 need 41 bits: exact in f64, never in f32.
        let ms = ts.as_i64().map(|ms| ms as f64).or_else(|| ts.as_f64());
        match ms {
            Some(ms) if ms.is_finite() => out.frame.sender_time = Some(ms / 1000.0),
            _ => out.bad_values += 1,
        }
    }
    if let Some(shapes) = payload.blend_shapes {
        for (channel, value) in Channel::ALL.iter().zip(shapes.values) {
            if let Some(value) = value {
                out.frame.set(*channel, value);
            }
        }
        out.unknown_keys += shapes.unknown;
        out.non_finite_values += shapes.non_finite;
    }
    let mut rotation = |xyz: Option<Xyz>| {
        let Xyz { x, y, z } = xyz?;
        match axes::VTUBESTUDIO.euler_degrees(x as f32, y as f32, z as f32) {
            Ok(q) => Some(q),
            Err(_) => {
                out.non_finite_values += 1;
                None
            }
        }
    };
    let head = rotation(payload.rotation);
    let left_eye = rotation(payload.eye_left);
    let right_eye = rotation(payload.eye_right);
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
        "192.168.1.30:21412".parse().unwrap()
    }

    fn vts(text: &str) -> Result<Decoded, ProtocolError> {
        decode(text.as_bytes(), addr(), Instant::now())
    }

    fn close(a: Quat, b: Quat) -> bool {
        a.dot(b).abs() > 1.0 - 1e-5
    }

    #[test]
    fn full_payload() {
        let d = vts(r#"{"Timestamp":1664817520079,"Hotkey":-1,"FaceFound":true,
            "Rotation":{"x":-11.0,"y":9.5,"z":3.0},"Position":{"x":0.4,"y":1.3,"z":4.7},
            "EyeLeft":{"x":3.5,"y":9.0,"z":0.5},"EyeRight":{"x":3.4,"y":12.8,"z":0.7},
            "BlendShapes":[{"k":"EyeBlinkRight","v":0.25},{"k":"JawOpen","v":5.0197301176835299e-11}],
            "SomethingNew":[1,2,{"a":null}]}"#)
        .unwrap();
        let f = d.frame;
        assert_eq!(f.protocol, Protocol::VTubeStudio);
        assert_eq!(f.tracking, TrackingFlag::Tracked);
        assert_eq!(f.sender_time, Some(1_664_817_520.079));
        assert_eq!(f.present.len(), 2);
        assert_eq!(f.get(Channel::EyeBlinkRight), Some(0.25));
        assert_eq!(f.get(Channel::JawOpen), Some(5.019_730_1e-11_f64 as f32));
        let head = axes::VTUBESTUDIO.euler_degrees(-11.0, 9.5, 3.0).unwrap();
        assert!(close(f.head.unwrap(), head));
        // + y looks to the performer's left.
        assert!((f.left_eye.unwrap() * Vec3::Z).x > 0.1);
        assert!(f.right_eye.is_some());
        assert_eq!(
            (d.unknown_keys, d.non_finite_values, d.bad_values),
            (0, 0, 0)
        );
    }

    #[test]
    fn every_dialect_and_meowface_extras() {
        let d = vts(
            r#"{"BlendShapes":[{"k":"EyeBlinkLeft","v":0.1},{"k":"eyeLookOut_L","v":0.2},
            {"k":"eyeBlinkRight","v":0.3},{"k":"headLeft","v":0.4},{"k":"browInnerUpLeft","v":0.5},
            {"k":"jaw\u004fpen","v":0.6}]}"#,
        )
        .unwrap();
        let f = d.frame;
        assert_eq!(f.get(Channel::EyeBlinkLeft), Some(0.1));
        assert_eq!(f.get(Channel::EyeLookOutLeft), Some(0.2));
        assert_eq!(f.get(Channel::EyeBlinkRight), Some(0.3));
        assert_eq!(f.get(Channel::JawOpen), Some(0.6));
        assert_eq!(f.present.len(), 4);
        assert_eq!(d.unknown_keys, 2);
        assert_eq!(f.tracking, TrackingFlag::Unknown);
        assert_eq!((f.head, f.sender_time), (None, None));
    }

    #[test]
    fn face_lost_and_odd_values() {
        let d = vts(r#"{"FaceFound":false,"Timestamp":1.5e3,"BlendShapes":[{"k":"JawOpen","v":1e300},{"k":"MouthClose","v":-0.5}],"Rotation":{"x":1e300,"y":0,"z":0}}"#).unwrap();
        assert_eq!(d.frame.tracking, TrackingFlag::Lost);
        assert_eq!(d.frame.sender_time, Some(1.5));
        assert_eq!(d.frame.get(Channel::JawOpen), None);
        assert_eq!(d.frame.get(Channel::MouthClose), Some(-0.5));
        assert_eq!(d.non_finite_values, 2);
        assert_eq!(d.frame.head, None);
    }

    #[test]
    fn timestamps_keep_millisecond_precision() {
        let d = vts(r#"{"Timestamp":9007199254740}"#).unwrap();
        assert_eq!(d.frame.sender_time, Some(9_007_199_254.740));
        let d = vts(r#"{"Timestamp":-1}"#).unwrap();
        assert_eq!(d.frame.sender_time, Some(-0.001));
    }

    #[test]
    fn rejected_datagrams() {
        for bad in [
            "",
            "[]",
            "[1,2,3,4,5,6]",
            "null",
            "{",
            "{\"BlendShapes\":{}}",
            "{\"BlendShapes\":[{\"k\":1,\"v\":0}]}",
            "{\"BlendShapes\":[{\"k\":\"JawOpen\"}]}",
            "{\"FaceFound\":1}",
            "{\"Rotation\":{\"x\":1,\"y\":2}}",
            "{\"Timestamp\":\"now\"}",
            "{\"FaceFound\":true,\"FaceFound\":false}",
            "{} trailing",
        ] {
            assert!(vts(bad).is_err(), "{bad:?}");
        }
        let huge = vec![b' '; MAX_PHONE_DATAGRAM + 1];
        assert!(matches!(
            decode(&huge, addr(), Instant::now()),
            Err(ProtocolError::Oversized { .. })
        ));
        // An empty object is a valid, empty frame.
        assert!(vts("  {}\n").unwrap().frame.present.is_empty());
    }

    #[test]
    fn request_builder() {
        let r = vts_request("facewire", &[11125, 11126], 1.0).unwrap();
        let v: serde_json::Value = serde_json::from_str(&r).unwrap();
        assert_eq!(v["messageType"], "iOSTrackingDataRequest");
        assert_eq!(v["time"].as_f64(), Some(1.0));
        assert_eq!(v["sentBy"], "facewire");
        assert_eq!(v["ports"], serde_json::json!([11125, 11126]));
        let quoted = vts_request("a\"b\\c", &[1], 2.5).unwrap();
        let v: serde_json::Value = serde_json::from_str(&quoted).unwrap();
        assert_eq!(v["sentBy"], "a\"b\\c");
        assert_eq!(v["time"].as_f64(), Some(2.5));
        assert_eq!(vts_request("x", &[], 1.0), Err(RequestError::Ports(0)));
        assert_eq!(
            vts_request("x", &[1; 17], 1.0),
            Err(RequestError::Ports(17))
        );
        assert_eq!(vts_request("x", &[0], 1.0), Err(RequestError::PortZero));
        assert_eq!(vts_request("", &[1], 1.0), Err(RequestError::SentBy(0)));
        assert_eq!(
            vts_request(&"é".repeat(33), &[1], 1.0),
            Err(RequestError::SentBy(33))
        );
        assert!(vts_request(&"é".repeat(32), &[1; 16], 10.0).is_ok());
        assert!(vts_request("x", &[1], 0.5).is_ok());
        assert!(matches!(
            vts_request("x", &[1], 0.4),
            Err(RequestError::Time(_))
        ));
        assert!(matches!(
            vts_request("x", &[1], f32::NAN),
            Err(RequestError::Time(_))
        ));
        assert_eq!(PHONE_PORT, 21412);
    }
}
