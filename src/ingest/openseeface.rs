//! OpenSeeFace's UDP tracking packets (the webcam tracker behind VSeeFace and VTube Studio's
//! webcam tracking) decoded into one `FaceFrame`.
//!
//! OpenSeeFace's `facetracker.py` sends one datagram per camera frame in which it sees a face, to
//! port 11573 unless told otherwise (`--ip`, `--port`). A datagram is one or more face records
//! back to back, each exactly [`RECORD_LEN`] bytes, all little-endian:
//!
//! | offset | field |
//! |---|---|
//! | 0 | `f64` time (Unix seconds) |
//! | 8 | `i32` face id (given in order of first detection; kept while the face stays tracked) |
//! | 12 | `f32` width, `f32` height: the camera image's size |
//! | 20 | `f32` right eye openness, `f32` left eye openness (about 0 closed to 1 open) |
//! | 28 | `u8` success: whether the face's 3D pose was found |
//! | 29 | `f32` error of that fit |
//! | 33 | `f32` quaternion x, y, z, w |
//! | 49 | `f32` Euler angles x, y, z (degrees) |
//! | 61 | `f32` translation x, y, z |
//! | 73 | 68 `f32` landmark confidences |
//! | 345 | 68 image points, each `f32` y then `f32` x |
//! | 889 | 70 3D points, each `f32` x, −y, −z |
//! | 1729 | 14 `f32` features, in [`feature`] order |
//!
//! A datagram whose length is not a whole number of records is rejected (OpenSeeFace's own Unity
//! receiver drops it too). Only the fields the mapping below reads are checked; the landmarks are
//! not read at all.
//!
//! **Which face.** With `--faces` above 1 a datagram carries a record per face. facewire follows
//! the record with the lowest face id: ids are handed out in the order faces were first seen, so
//! the lowest is the face that has been in front of the camera longest (the performer, as a rule),
//! and it keeps its place even when its 3D fit fails for a frame, rather than handing the avatar
//! to a face behind it. When two records share the lowest id the first one is used.
//!
//! **Sides.** OpenSeeFace names its features from the face's own point of view (its `_l` eye
//! feature measures landmarks 42–47, the face's left eye in the 68-point layout, which its 3D
//! face model puts at −X). The camera image is not mirrored unless `--mirror-input` is given, so
//! its left is the performer's left, which is the avatar's left in facewire.
//!
//! **Features.** tracker.py's `Feature` turns each measurement into a value between −1 and 1: 0
//! at the running median of the measurement (the face at rest), −1 at the smallest and +1 at the
//! largest value seen so far, smoothed. They are mapped onto ARKit channels by the ramps below
//! ([`Ramp`]: 0 up to `zero`, rising linearly to 1 at `full`, clamped), whose constants follow
//! how OpenSeeFace's own Unity components (`OpenSeeExpression.cs`, `OpenSeeVRMDriver.cs`, the
//! reading VSeeFace is built on) use the features:
//!
//! | channel | from | ramp |
//! |---|---|---|
//! | `eyeBlinkLeft`, `eyeBlinkRight` | the eye openness (not a feature) | [`EYE_OPEN`], [`EYE_CLOSED`] |
//! | `jawOpen` | `mouth_open` | [`JAW`] |
//! | `mouthSmileLeft`, `…Right` | −`mouth_corner_updown` (negative is a raised corner) | [`SMILE`] |
//! | `mouthFrownLeft`, `…Right` | `mouth_corner_updown` | [`FROWN`] |
//! | `mouthStretchLeft`, `…Right` | `mouth_wide` | [`STRETCH`] |
//! | `mouthPucker`, `mouthFunnel` | −`mouth_wide`, shared by how far the jaw is open: closed lips pucker ("oo"), open ones funnel ("oh") | [`PUCKER`], [`JAW`] |
//! | `browInnerUp` | the mean of both `eyebrow_updown` | [`BROW`] |
//! | `browOuterUpLeft`, `…Right` | `eyebrow_updown`, or −`eyebrow_steepness` (outer end raised), whichever is more | [`BROW`], [`BROW_TILT`] |
//! | `browDownLeft`, `…Right` | −`eyebrow_updown` | [`BROW`] |
//!
//! The sign of `mouth_corner_updown` follows what tracker.py measures, the upper lip's height
//! above the corner, which falls as the corner rises; OpenSeeExpression.cs reads it the same way
//! (a face smiles below −0.2), while OpenSeeVRMDriver's perfect-sync example reads it the other
//! way round. `eye_l`, `eye_r` (the openness is derived from them), `eyebrow_quirk` and
//! `mouth_corner_inout` (the corners move out with `mouth_wide` already) are not used.
//!
//! **Head.** The quaternion goes through [`axes::openseeface_head`] (see the table in
//! [`axes`]); the Euler angles and the translation are not used.

use std::net::SocketAddr;
use std::time::Instant;

use super::axes::{self, BadRotation};
use super::decoded::{Decoded, ProtocolError, MAX_PHONE_DATAGRAM};
use crate::arkit::{Channel, FaceFrame, Protocol, TrackingFlag};

/// The port `facetracker.py` sends to by default (`--port`).
pub const DEFAULT_PORT: u16 = 11573;

/// Landmarks per face: 66 points of the face and two pupils.
pub const LANDMARKS: usize = 68;

/// 3D points per face: the landmarks and the two eyeball centres.
pub const POINTS_3D: usize = 70;

/// Features per face ([`feature`]).
pub const FEATURES: usize = 14;

/// Byte offsets of the fields inside one record.
pub mod offset {
    /// `f64` time.
    pub const TIME: usize = 0;
    /// `i32` face id.
    pub const ID: usize = 8;
    /// `f32` image width.
    pub const WIDTH: usize = 12;
    /// `f32` image height.
    pub const HEIGHT: usize = 16;
    /// `f32` right eye openness.
    pub const EYE_OPEN_RIGHT: usize = 20;
    /// `f32` left eye openness.
    pub const EYE_OPEN_LEFT: usize = 24;
    /// `u8` success.
    pub const SUCCESS: usize = 28;
    /// `f32` fit error.
    pub const PNP_ERROR: usize = 29;
    /// 4 × `f32` quaternion x, y, z, w.
    pub const QUATERNION: usize = 33;
    /// 3 × `f32` Euler angles.
    pub const EULER: usize = 49;
    /// 3 × `f32` translation.
    pub const TRANSLATION: usize = 61;
    /// [`LANDMARKS`](super::LANDMARKS) × `f32` confidences.
    pub const CONFIDENCES: usize = 73;
    /// [`LANDMARKS`](super::LANDMARKS) × 2 `f32` image points.
    pub const POINTS: usize = CONFIDENCES + 4 * super::LANDMARKS;
    /// [`POINTS_3D`](super::POINTS_3D) × 3 `f32` 3D points.
    pub const POINTS_3D: usize = POINTS + 8 * super::LANDMARKS;
    /// [`FEATURES`](super::FEATURES) × `f32` features.
    pub const FEATURES: usize = POINTS_3D + 12 * super::POINTS_3D;
}

/// Bytes in one face record.
pub const RECORD_LEN: usize = offset::FEATURES + 4 * FEATURES;

const _: () = assert!(RECORD_LEN == 1785);

/// The most face records one datagram may carry: as many as fit in [`MAX_PHONE_DATAGRAM`] (9).
/// OpenSeeFace tracks one face unless `--faces` asks for more.
pub const MAX_FACES: usize = MAX_PHONE_DATAGRAM / RECORD_LEN;

/// The largest datagram decoded: [`MAX_FACES`] records.
pub const MAX_DATAGRAM: usize = MAX_FACES * RECORD_LEN;

const _: () = assert!(MAX_DATAGRAM <= MAX_PHONE_DATAGRAM);

/// The features' places in a record, in the order `facetracker.py` writes them.
pub mod feature {
    /// How open the left eye is against its usual height.
    pub const EYE_L: usize = 0;
    /// How open the right eye is against its usual height.
    pub const EYE_R: usize = 1;
    /// How steep the left brow is (negative: its outer end raised).
    pub const EYEBROW_STEEPNESS_L: usize = 2;
    /// How high the left brow is (positive: raised).
    pub const EYEBROW_UPDOWN_L: usize = 3;
    /// How bent the left brow is.
    pub const EYEBROW_QUIRK_L: usize = 4;
    /// How steep the right brow is (negative: its outer end raised).
    pub const EYEBROW_STEEPNESS_R: usize = 5;
    /// How high the right brow is (positive: raised).
    pub const EYEBROW_UPDOWN_R: usize = 6;
    /// How bent the right brow is.
    pub const EYEBROW_QUIRK_R: usize = 7;
    /// The upper lip's height over the left mouth corner (negative: the corner raised).
    pub const MOUTH_CORNER_UPDOWN_L: usize = 8;
    /// How far out the left mouth corner is.
    pub const MOUTH_CORNER_INOUT_L: usize = 9;
    /// The upper lip's height over the right mouth corner (negative: the corner raised).
    pub const MOUTH_CORNER_UPDOWN_R: usize = 10;
    /// How far out the right mouth corner is.
    pub const MOUTH_CORNER_INOUT_R: usize = 11;
    /// How far apart the lips are.
    pub const MOUTH_OPEN: usize = 12;
    /// How far apart the mouth corners are.
    pub const MOUTH_WIDE: usize = 13;
}

/// The eye openness at or above which the eye counts as fully open (`eyeBlink` 0).
/// OpenSeeFace reports 1 for an eye at or above its usual height and lowers it as the lids close;
/// 0.55 is the "fully open" threshold of OpenSeeVRMDriver (and VSeeFace), so the flicker of an
/// open eye around its median never shows as a half-closed lid.
pub const EYE_OPEN: f32 = 0.55;

/// The eye openness at or below which the eye counts as fully closed (`eyeBlink` 1):
/// OpenSeeVRMDriver's "fully closed" threshold, just under the 0.3 that `facetracker.py` itself
/// prints as closed.
pub const EYE_CLOSED: f32 = 0.2;

/// A linear ramp from a feature to a channel: 0 up to `zero`, 1 from `full` on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    /// The feature value below which the channel is 0.
    pub zero: f32,
    /// The feature value from which the channel is 1.
    pub full: f32,
}

impl Ramp {
    /// The channel's value for feature value `x`, in 0..=1; finite for any finite `x`.
    pub fn at(self, x: f32) -> f32 {
        // An overflow to ±infinity on huge inputs clamps to 0 or 1, never to NaN: the constants
        // keep `full - zero` non-zero.
        ((x - self.zero) / (self.full - self.zero)).clamp(0.0, 1.0)
    }
}

/// `mouth_open` to `jawOpen`: a mouth a tenth of the way from rest to the widest opening seen
/// stays shut (the flicker of a mouth at rest), and nine tenths opens it fully. ARKit's jawOpen
/// grows with the opening all the way; OpenSeeVRMDriver's jaw (`open / 0.55 − 0.1`) opens a VRM
/// `A` mouth fully at 0.6 of the widest, which would read every wider mouth the same.
pub const JAW: Ramp = Ramp {
    zero: 0.1,
    full: 0.9,
};

/// −`mouth_corner_updown` to `mouthSmile`: OpenSeeExpression.cs calls a face smiling ("fun")
/// once the corners rise past 0.2, and a corner 0.8 of the way to the highest it has been seen
/// is a full smile.
pub const SMILE: Ramp = Ramp {
    zero: 0.2,
    full: 0.8,
};

/// `mouth_corner_updown` to `mouthFrown`: a frown starts 0.3 from rest (OpenSeeVRMDriver's
/// threshold) and has its full weight at the lowest corner seen.
pub const FROWN: Ramp = Ramp {
    zero: 0.3,
    full: 1.0,
};

/// `mouth_wide` to `mouthStretch`: widening below 0.3 (OpenSeeVRMDriver's wide-mouth stabiliser)
/// is left out, so that talking does not stretch the mouth all the time.
pub const STRETCH: Ramp = Ramp {
    zero: 0.3,
    full: 1.0,
};

/// −`mouth_wide` to `mouthPucker`: a mouth narrower than at rest, as for "oo" (OpenSeeVRMDriver's
/// `U` and its pucker), past the same stabiliser.
pub const PUCKER: Ramp = Ramp {
    zero: 0.3,
    full: 1.0,
};

/// ±`eyebrow_updown` to `browInnerUp`, `browOuterUp` (raised) and `browDown` (lowered): 0.1 of
/// rest flicker is left out, and 0.6 is where OpenSeeVRMDriver's brow reaches its full weight.
pub const BROW: Ramp = Ramp {
    zero: 0.1,
    full: 0.6,
};

/// −`eyebrow_steepness` to `browOuterUp`: the outer end raised against the inner one
/// (OpenSeeVRMDriver's `browOuterUp`), past 0.2 of rest flicker.
pub const BROW_TILT: Ramp = Ramp {
    zero: 0.2,
    full: 1.0,
};

/// One face record's fields that facewire may read; the landmarks are left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaceRecord {
    /// When the camera frame was tracked, in Unix seconds.
    pub time: f64,
    /// The face id.
    pub id: i32,
    /// The camera image's width in pixels.
    pub width: f32,
    /// The camera image's height in pixels.
    pub height: f32,
    /// The right eye's openness (about 0 closed to 1 open).
    pub eye_open_right: f32,
    /// The left eye's openness.
    pub eye_open_left: f32,
    /// Non-zero when the face's 3D pose was found.
    pub success: u8,
    /// The error of the 3D fit.
    pub pnp_error: f32,
    /// The head quaternion x, y, z, w as sent.
    pub quaternion: [f32; 4],
    /// The Euler angles as sent (degrees).
    pub euler: [f32; 3],
    /// The translation as sent.
    pub translation: [f32; 3],
    /// The features, in [`feature`] order.
    pub features: [f32; FEATURES],
}

/// The four bytes at `at` in `record` (zeros past its end, which a whole record never reaches).
fn word(record: &[u8], at: usize) -> [u8; 4] {
    let mut out = [0; 4];
    if let Some(bytes) = record.get(at..at + 4) {
        out.copy_from_slice(bytes);
    }
    out
}

/// The `f32` at `at`.
fn f32_at(record: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(word(record, at))
}

/// `N` consecutive `f32`s from `at`.
fn f32s_at<const N: usize>(record: &[u8], at: usize) -> [f32; N] {
    std::array::from_fn(|i| f32_at(record, at + 4 * i))
}

impl FaceRecord {
    /// Reads one record from its [`RECORD_LEN`] bytes (a shorter slice reads as zeros past its
    /// end).
    pub fn read(record: &[u8]) -> FaceRecord {
        let mut time = [0; 8];
        if let Some(bytes) = record.get(offset::TIME..offset::TIME + 8) {
            time.copy_from_slice(bytes);
        }
        FaceRecord {
            time: f64::from_le_bytes(time),
            id: i32::from_le_bytes(word(record, offset::ID)),
            width: f32_at(record, offset::WIDTH),
            height: f32_at(record, offset::HEIGHT),
            eye_open_right: f32_at(record, offset::EYE_OPEN_RIGHT),
            eye_open_left: f32_at(record, offset::EYE_OPEN_LEFT),
            success: record.get(offset::SUCCESS).copied().unwrap_or(0),
            pnp_error: f32_at(record, offset::PNP_ERROR),
            quaternion: f32s_at(record, offset::QUATERNION),
            euler: f32s_at(record, offset::EULER),
            translation: f32s_at(record, offset::TRANSLATION),
            features: f32s_at(record, offset::FEATURES),
        }
    }

    /// Appends the record's [`RECORD_LEN`] bytes to `out` (for tests and tools): its fields where
    /// the layout puts them, every landmark confidence 1 and every image and 3D point at 0.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
        let floats = |values: &[f32], out: &mut Vec<u8>| {
            for v in values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        };
        floats(
            &[
                self.width,
                self.height,
                self.eye_open_right,
                self.eye_open_left,
            ],
            out,
        );
        out.push(self.success);
        floats(&[self.pnp_error], out);
        floats(&self.quaternion, out);
        floats(&self.euler, out);
        floats(&self.translation, out);
        floats(&[1.0; LANDMARKS], out);
        floats(&[0.0; 2 * LANDMARKS], out);
        floats(&[0.0; 3 * POINTS_3D], out);
        floats(&self.features, out);
        debug_assert_eq!(out.len() - start, RECORD_LEN);
    }
}

/// Checks a datagram's length: at least one and at most [`MAX_FACES`] whole records.
fn check_len(len: usize) -> Result<(), ProtocolError> {
    if len > MAX_DATAGRAM {
        return Err(ProtocolError::Oversized {
            len,
            max: MAX_DATAGRAM,
        });
    }
    if len == 0 {
        return Err(ProtocolError::Truncated("no face record"));
    }
    if !len.is_multiple_of(RECORD_LEN) {
        return Err(ProtocolError::Malformed(
            "length is not a whole number of 1785-byte face records",
        ));
    }
    Ok(())
}

/// The datagram's face records, after checking its length ([`decode`] says what is rejected).
pub fn records(datagram: &[u8]) -> Result<impl Iterator<Item = FaceRecord> + '_, ProtocolError> {
    check_len(datagram.len())?;
    Ok(datagram.chunks_exact(RECORD_LEN).map(FaceRecord::read))
}

/// The record facewire follows: the lowest face id, the first of equals. `None` only for a
/// datagram without records, which [`records`] rejects.
fn followed(records: impl Iterator<Item = FaceRecord>) -> Option<FaceRecord> {
    records.reduce(|best, next| if next.id < best.id { next } else { best })
}

/// Whether `datagram` looks like OpenSeeFace's, for [`looks_like`](super::sniff::looks_like):
/// whole records, each with a camera size in whole pixels (1 to 65,536) and a success byte of 0
/// or 1. Bounded by [`MAX_FACES`] records; never panics.
pub fn plausible(datagram: &[u8]) -> bool {
    let pixels = |v: f32| (1.0..=65_536.0).contains(&v) && v.fract() == 0.0;
    check_len(datagram.len()).is_ok()
        && datagram
            .chunks_exact(RECORD_LEN)
            .map(FaceRecord::read)
            .all(|r| pixels(r.width) && pixels(r.height) && r.success <= 1)
}

/// The values the mapping reads from one record, each `None` when it was not finite.
struct Inputs {
    /// Left, right eye openness.
    eye_open: [Option<f32>; 2],
    /// The features, `None` for the ones not finite or not read.
    features: [Option<f32>; FEATURES],
}

/// The features the mapping reads.
const READ: [usize; 8] = [
    feature::EYEBROW_STEEPNESS_L,
    feature::EYEBROW_UPDOWN_L,
    feature::EYEBROW_STEEPNESS_R,
    feature::EYEBROW_UPDOWN_R,
    feature::MOUTH_CORNER_UPDOWN_L,
    feature::MOUTH_CORNER_UPDOWN_R,
    feature::MOUTH_OPEN,
    feature::MOUTH_WIDE,
];

impl Inputs {
    /// The record's read values; each one that is not finite is left out and counted.
    fn of(record: &FaceRecord, non_finite: &mut u32) -> Inputs {
        let eye_open = [record.eye_open_left, record.eye_open_right];
        let all_features = &record.features;
        let mut finite = |v: f32| {
            if v.is_finite() {
                Some(v)
            } else {
                *non_finite += 1;
                None
            }
        };
        let eye_open = eye_open.map(&mut finite);
        let mut features = [None; FEATURES];
        for i in READ {
            features[i] = finite(all_features[i]);
        }
        Inputs { eye_open, features }
    }

    /// Feature `i`, when read and finite.
    fn feature(&self, i: usize) -> Option<f32> {
        self.features.get(i).copied().flatten()
    }
}

/// `eyeBlink` from an eye's openness: 0 at [`EYE_OPEN`] and above, 1 at [`EYE_CLOSED`] and below.
pub fn eye_blink(openness: f32) -> f32 {
    ((EYE_OPEN - openness) / (EYE_OPEN - EYE_CLOSED)).clamp(0.0, 1.0)
}

/// Sets the channels the inputs give (see the module's table).
fn set_channels(frame: &mut FaceFrame, inputs: &Inputs) {
    use feature::*;
    let mut set = |channel: Channel, value: Option<f32>| {
        if let Some(v) = value {
            frame.set(channel, v);
        }
    };
    let [left_open, right_open] = inputs.eye_open;
    set(Channel::EyeBlinkLeft, left_open.map(eye_blink));
    set(Channel::EyeBlinkRight, right_open.map(eye_blink));
    set(
        Channel::JawOpen,
        inputs.feature(MOUTH_OPEN).map(|x| JAW.at(x)),
    );
    let corners = [
        (
            MOUTH_CORNER_UPDOWN_L,
            Channel::MouthSmileLeft,
            Channel::MouthFrownLeft,
        ),
        (
            MOUTH_CORNER_UPDOWN_R,
            Channel::MouthSmileRight,
            Channel::MouthFrownRight,
        ),
    ];
    for (updown, smile, frown) in corners {
        let updown = inputs.feature(updown);
        set(smile, updown.map(|x| SMILE.at(-x)));
        set(frown, updown.map(|x| FROWN.at(x)));
    }
    let wide = inputs.feature(MOUTH_WIDE);
    set(Channel::MouthStretchLeft, wide.map(|x| STRETCH.at(x)));
    set(Channel::MouthStretchRight, wide.map(|x| STRETCH.at(x)));
    // A narrow mouth is a pucker while the lips are closed and a funnel as the jaw opens.
    let narrow = wide.map(|x| PUCKER.at(-x));
    let open = inputs.feature(MOUTH_OPEN).map_or(0.0, |x| JAW.at(x));
    set(Channel::MouthPucker, narrow.map(|n| n * (1.0 - open)));
    set(Channel::MouthFunnel, narrow.map(|n| n * open));
    let brows = [
        (
            EYEBROW_UPDOWN_L,
            EYEBROW_STEEPNESS_L,
            Channel::BrowOuterUpLeft,
            Channel::BrowDownLeft,
        ),
        (
            EYEBROW_UPDOWN_R,
            EYEBROW_STEEPNESS_R,
            Channel::BrowOuterUpRight,
            Channel::BrowDownRight,
        ),
    ];
    for (updown, steepness, outer_up, down) in brows {
        let updown = inputs.feature(updown);
        let raised = updown.map(|x| BROW.at(x));
        let tilted = inputs.feature(steepness).map(|x| BROW_TILT.at(-x));
        set(outer_up, raised.into_iter().chain(tilted).reduce(f32::max));
        set(down, updown.map(|x| BROW.at(-x)));
    }
    // Halves first, so that two huge finite values cannot overflow their sum.
    let inner = match (
        inputs.feature(EYEBROW_UPDOWN_L),
        inputs.feature(EYEBROW_UPDOWN_R),
    ) {
        (Some(l), Some(r)) => Some(0.5 * l + 0.5 * r),
        (one, other) => one.or(other),
    };
    set(Channel::BrowInnerUp, inner.map(|x| BROW.at(x)));
}

/// Decodes one datagram into a frame from the face it follows. Never panics.
///
/// - Rejects datagrams longer than [`MAX_DATAGRAM`] ([`ProtocolError::Oversized`]), empty ones
///   ([`ProtocolError::Truncated`]) and any other length that is not a whole number of
///   [`RECORD_LEN`]-byte records ([`ProtocolError::Malformed`]).
/// - Follows the record with the lowest face id (see the module's notes).
/// - Its time becomes `sender_time` (dropped and counted when not finite).
/// - A success byte of 0 (no 3D pose: OpenSeeFace sends zeros for it) gives
///   [`TrackingFlag::Lost`] with no channel and no head; any other value
///   [`TrackingFlag::Tracked`], the channels of the module's table (each in 0..=1) and the head.
/// - A value the mapping reads that is not finite is dropped with the channels it feeds, and
///   counted once; a quaternion that is not finite counts once, an all-zero one is a bad value.
pub fn decode(
    datagram: &[u8],
    from: SocketAddr,
    received: Instant,
) -> Result<Decoded, ProtocolError> {
    let record = followed(records(datagram)?).ok_or(ProtocolError::Truncated("no face record"))?;
    let mut out = Decoded::empty(Protocol::OpenSeeFace, from, received);
    if record.time.is_finite() {
        out.frame.sender_time = Some(record.time);
    } else {
        out.non_finite_values += 1;
    }
    if record.success == 0 {
        out.frame.tracking = TrackingFlag::Lost;
        return Ok(out);
    }
    out.frame.tracking = TrackingFlag::Tracked;
    let inputs = Inputs::of(&record, &mut out.non_finite_values);
    set_channels(&mut out.frame, &inputs);
    match axes::openseeface_head(record.quaternion) {
        Ok(head) => out.frame.head = Some(head),
        Err(BadRotation::NonFinite) => out.non_finite_values += 1,
        Err(BadRotation::Degenerate) => out.bad_values += 1,
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Mat3, Quat, Vec3};

    fn addr() -> SocketAddr {
        "127.0.0.1:50123".parse().unwrap()
    }

    fn close(a: Quat, b: Quat) -> bool {
        a.dot(b).abs() > 1.0 - 1e-5
    }

    /// OpenSeeFace's quaternion for a face looking straight into the camera, upright, worked out
    /// here from first principles (not from the decoder's constant): its face model (+X the
    /// face's right, +Y up, +Z out of the face) turned into OpenCV's frame of the image as
    /// tracker.py hands it to solvePnP, rows first (x down the image, y to its right, z into the
    /// scene). The face's right shows on the image's left (−y), its up is the image's up (−x), it
    /// looks into the camera (−z). OpenSeeFace sends the conjugate of that matrix's quaternion.
    fn camera_from_model() -> Mat3 {
        Mat3::from_cols(Vec3::NEG_Y, Vec3::NEG_X, Vec3::NEG_Z)
    }

    /// The quaternion OpenSeeFace sends for a head turned by `turn` (a rotation in its face
    /// model's frame) from facing the camera.
    fn wire_quaternion(turn: Quat) -> [f32; 4] {
        let rotation = camera_from_model() * Mat3::from_quat(turn);
        Quat::from_mat3(&rotation).conjugate().to_array()
    }

    /// One record, written byte by byte at the offsets of the layout (not through
    /// [`FaceRecord::encode`]), with landmarks that must be ignored.
    struct Spec {
        time: f64,
        id: i32,
        eye_open: (f32, f32),
        success: u8,
        quaternion: [f32; 4],
        features: [f32; FEATURES],
    }

    impl Default for Spec {
        fn default() -> Spec {
            Spec {
                time: 1_700_000_000.25,
                id: 0,
                eye_open: (1.0, 1.0),
                success: 1,
                quaternion: wire_quaternion(Quat::IDENTITY),
                features: [0.0; FEATURES],
            }
        }
    }

    fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
        buf[at..at + bytes.len()].copy_from_slice(bytes);
    }

    fn record_bytes(spec: &Spec) -> Vec<u8> {
        let mut b = vec![0u8; 1785];
        put(&mut b, 0, &spec.time.to_le_bytes());
        put(&mut b, 8, &spec.id.to_le_bytes());
        put(&mut b, 12, &640f32.to_le_bytes());
        put(&mut b, 16, &480f32.to_le_bytes());
        // Right eye first, then left.
        put(&mut b, 20, &spec.eye_open.1.to_le_bytes());
        put(&mut b, 24, &spec.eye_open.0.to_le_bytes());
        b[28] = spec.success;
        put(&mut b, 29, &12.5f32.to_le_bytes());
        for (i, q) in spec.quaternion.iter().enumerate() {
            put(&mut b, 33 + 4 * i, &q.to_le_bytes());
        }
        // Euler angles and translation that disagree with the quaternion: not read.
        for i in 0..6 {
            put(&mut b, 49 + 4 * i, &(77.0f32 + i as f32).to_le_bytes());
        }
        // Confidences, image points, 3D points: junk, NaN among them, never read.
        for i in 0..(68 + 136 + 210) {
            let v = if i % 17 == 0 { f32::NAN } else { i as f32 };
            put(&mut b, 73 + 4 * i, &v.to_le_bytes());
        }
        for (i, f) in spec.features.iter().enumerate() {
            put(&mut b, 1729 + 4 * i, &f.to_le_bytes());
        }
        b
    }

    fn one(spec: &Spec) -> Decoded {
        decode(&record_bytes(spec), addr(), Instant::now()).unwrap()
    }

    fn features(pairs: &[(usize, f32)]) -> [f32; FEATURES] {
        let mut out = [0.0; FEATURES];
        for &(i, v) in pairs {
            out[i] = v;
        }
        out
    }

    #[test]
    fn layout_offsets_add_up() {
        assert_eq!(RECORD_LEN, 1785);
        assert_eq!(offset::CONFIDENCES, 73);
        assert_eq!(offset::POINTS, 345);
        assert_eq!(offset::POINTS_3D, 889);
        assert_eq!(offset::FEATURES, 1729);
        assert_eq!(MAX_FACES, 9);
    }

    #[test]
    fn one_face_at_rest_reads_neutral() {
        let d = one(&Spec::default());
        let f = d.frame;
        assert_eq!(f.protocol, Protocol::OpenSeeFace);
        assert_eq!(f.tracking, TrackingFlag::Tracked);
        assert_eq!(f.sender_time, Some(1_700_000_000.25));
        assert_eq!(f.present.len(), 16);
        for channel in f.present.iter() {
            assert_eq!(f.get(channel), Some(0.0), "{channel} at rest");
        }
        assert!(close(f.head.unwrap(), Quat::IDENTITY), "{:?}", f.head);
        assert_eq!(
            (d.unknown_keys, d.non_finite_values, d.bad_values),
            (0, 0, 0)
        );
        // The reader agrees with the bytes, and encode writes the same fields back.
        let bytes = record_bytes(&Spec::default());
        let record = FaceRecord::read(&bytes);
        assert_eq!((record.width, record.height), (640.0, 480.0));
        assert_eq!((record.eye_open_right, record.pnp_error), (1.0, 12.5));
        assert_eq!(record.euler, [77.0, 78.0, 79.0]);
        let mut again = Vec::new();
        record.encode(&mut again);
        assert_eq!(again.len(), RECORD_LEN);
        assert_eq!(FaceRecord::read(&again), record);
        assert_eq!(again[..73], bytes[..73]);
        assert_eq!(again[1729..], bytes[1729..]);
    }

    #[test]
    fn an_open_and_a_closed_eye() {
        // A wink of the left eye: its openness is the second value on the wire.
        let d = one(&Spec {
            eye_open: (0.0, 1.0),
            ..Spec::default()
        });
        assert_eq!(d.frame.get(Channel::EyeBlinkLeft), Some(1.0));
        assert_eq!(d.frame.get(Channel::EyeBlinkRight), Some(0.0));
        // An open eye that OpenSeeFace reads a little under its usual height is still open;
        // one at its "closed" line of 0.3 is most of the way shut.
        assert_eq!(eye_blink(0.8), 0.0);
        assert_eq!(eye_blink(EYE_OPEN), 0.0);
        assert!((eye_blink(0.3) - 0.714_285_7).abs() < 1e-5);
        assert_eq!(eye_blink(EYE_CLOSED), 1.0);
        assert_eq!(eye_blink(-0.4), 1.0);
        assert_eq!(eye_blink(1.7), 0.0);
        let half = one(&Spec {
            eye_open: (0.375, 0.375),
            ..Spec::default()
        });
        let v = half.frame.get(Channel::EyeBlinkRight).unwrap();
        assert!((v - 0.5).abs() < 1e-6, "{v}");
    }

    #[test]
    fn features_map_onto_their_channels_by_side() {
        use feature::*;
        let d = one(&Spec {
            features: features(&[
                (MOUTH_OPEN, 0.5),
                (MOUTH_CORNER_UPDOWN_L, -1.0),
                (MOUTH_CORNER_UPDOWN_R, 1.0),
                (MOUTH_WIDE, 0.65),
                (EYEBROW_UPDOWN_L, 0.6),
                (EYEBROW_UPDOWN_R, -0.6),
                (EYEBROW_STEEPNESS_R, -1.0),
                // Not read.
                (EYE_L, -1.0),
                (EYEBROW_QUIRK_L, 1.0),
                (MOUTH_CORNER_INOUT_R, 1.0),
            ]),
            ..Spec::default()
        });
        let f = d.frame;
        let get = |c| f.get(c).unwrap();
        assert!((get(Channel::JawOpen) - 0.5).abs() < 1e-6);
        // The left corner raised (negative): a smile on the left only.
        assert_eq!(get(Channel::MouthSmileLeft), 1.0);
        assert_eq!(get(Channel::MouthFrownLeft), 0.0);
        assert_eq!(get(Channel::MouthSmileRight), 0.0);
        assert_eq!(get(Channel::MouthFrownRight), 1.0);
        assert!((get(Channel::MouthStretchLeft) - 0.5).abs() < 1e-6);
        assert_eq!(
            get(Channel::MouthStretchRight),
            get(Channel::MouthStretchLeft)
        );
        assert_eq!(get(Channel::MouthPucker), 0.0);
        assert_eq!(get(Channel::BrowOuterUpLeft), 1.0);
        assert_eq!(get(Channel::BrowDownLeft), 0.0);
        assert_eq!(get(Channel::BrowDownRight), 1.0);
        // The right brow is low, but its outer end is raised against the inner one.
        assert_eq!(get(Channel::BrowOuterUpRight), 1.0);
        // One brow up and one down: the inner brows at their mean, at rest.
        assert_eq!(get(Channel::BrowInnerUp), 0.0);
        assert_eq!(get(Channel::EyeBlinkLeft), 0.0);
        assert_eq!(f.present.len(), 16);

        let narrow = one(&Spec {
            features: features(&[
                (MOUTH_WIDE, -1.0),
                (EYEBROW_UPDOWN_L, 0.35),
                (EYEBROW_UPDOWN_R, 0.35),
            ]),
            ..Spec::default()
        })
        .frame;
        assert_eq!(narrow.get(Channel::MouthPucker), Some(1.0));
        assert_eq!(narrow.get(Channel::MouthFunnel), Some(0.0));
        assert_eq!(narrow.get(Channel::MouthStretchLeft), Some(0.0));
        // The same narrow mouth with the jaw open is a funnel ("oh"), half open half each.
        let round = |open: f32| {
            one(&Spec {
                features: features(&[(MOUTH_WIDE, -1.0), (MOUTH_OPEN, open)]),
                ..Spec::default()
            })
            .frame
        };
        let oh = round(1.0);
        assert_eq!(oh.get(Channel::MouthFunnel), Some(1.0));
        assert_eq!(oh.get(Channel::MouthPucker), Some(0.0));
        let half = round(0.5);
        let (funnel, pucker) = (
            half.get(Channel::MouthFunnel).unwrap(),
            half.get(Channel::MouthPucker).unwrap(),
        );
        assert!((funnel - 0.5).abs() < 1e-6 && (pucker - 0.5).abs() < 1e-6);
        let inner = narrow.get(Channel::BrowInnerUp).unwrap();
        assert!((inner - 0.5).abs() < 1e-6, "{inner}");
    }

    #[test]
    fn values_out_of_range_are_clamped() {
        let d = one(&Spec {
            eye_open: (f32::MAX, -f32::MAX),
            features: [f32::MAX; FEATURES],
            ..Spec::default()
        });
        for channel in d.frame.present.iter() {
            let v = d.frame.get(channel).unwrap();
            assert!((0.0..=1.0).contains(&v), "{channel} = {v}");
        }
        assert_eq!(d.frame.get(Channel::JawOpen), Some(1.0));
        assert_eq!(d.frame.get(Channel::EyeBlinkRight), Some(1.0));
        assert_eq!(d.frame.get(Channel::BrowInnerUp), Some(1.0));
        let low = one(&Spec {
            features: [-f32::MAX; FEATURES],
            ..Spec::default()
        });
        assert_eq!(low.frame.get(Channel::JawOpen), Some(0.0));
        assert_eq!(low.frame.get(Channel::MouthSmileLeft), Some(1.0));
        assert_eq!(low.frame.get(Channel::BrowDownRight), Some(1.0));
    }

    #[test]
    fn non_finite_values_are_dropped_and_counted() {
        let mut nan = features(&[(feature::MOUTH_OPEN, 0.95)]);
        nan[feature::MOUTH_CORNER_UPDOWN_L] = f32::NAN;
        nan[feature::EYEBROW_UPDOWN_R] = f32::INFINITY;
        // Not read, so not counted.
        nan[feature::EYEBROW_QUIRK_L] = f32::NAN;
        let d = one(&Spec {
            time: f64::NAN,
            eye_open: (f32::NEG_INFINITY, 1.0),
            quaternion: [0.0, f32::NAN, 0.0, 1.0],
            features: nan,
            ..Spec::default()
        });
        let f = d.frame;
        assert_eq!(
            d.non_finite_values, 5,
            "time, eye, corner, brow, quaternion"
        );
        assert_eq!(f.sender_time, None);
        assert_eq!(f.head, None);
        assert_eq!(f.tracking, TrackingFlag::Tracked);
        for gone in [
            Channel::EyeBlinkLeft,
            Channel::MouthSmileLeft,
            Channel::MouthFrownLeft,
            Channel::BrowDownRight,
        ] {
            assert_eq!(f.get(gone), None, "{gone}");
        }
        // The right brow's outer end still has its steepness; the inner brows the left one.
        assert_eq!(f.get(Channel::BrowOuterUpRight), Some(0.0));
        assert_eq!(f.get(Channel::BrowInnerUp), Some(0.0));
        assert!(f.get(Channel::JawOpen).unwrap() > 0.9);
        assert_eq!(f.present.len(), 12);
        for channel in f.present.iter() {
            assert!(f.weights[channel.index()].is_finite());
        }
        // An all-zero quaternion has no direction: a bad value, not a non-finite one.
        let d = one(&Spec {
            quaternion: [0.0; 4],
            ..Spec::default()
        });
        assert_eq!((d.non_finite_values, d.bad_values), (0, 1));
        assert_eq!(d.frame.head, None);
    }

    #[test]
    fn success_zero_means_the_face_is_lost() {
        let d = one(&Spec {
            success: 0,
            quaternion: [0.0; 4],
            features: [0.7; FEATURES],
            ..Spec::default()
        });
        assert_eq!(d.frame.tracking, TrackingFlag::Lost);
        assert!(d.frame.present.is_empty());
        assert_eq!(d.frame.head, None);
        assert_eq!(d.frame.sender_time, Some(1_700_000_000.25));
        assert_eq!((d.non_finite_values, d.bad_values), (0, 0));
        // Any other byte is success, as OpenSeeFace's own receiver reads it.
        let d = one(&Spec {
            success: 7,
            ..Spec::default()
        });
        assert_eq!(d.frame.tracking, TrackingFlag::Tracked);
    }

    #[test]
    fn with_two_faces_the_lowest_id_is_followed() {
        let jaw = |open: f32| features(&[(feature::MOUTH_OPEN, open)]);
        let near = Spec {
            id: 1,
            features: jaw(0.9),
            ..Spec::default()
        };
        let far = Spec {
            id: 3,
            features: jaw(0.0),
            ..Spec::default()
        };
        for order in [[&far, &near], [&near, &far]] {
            let mut datagram = record_bytes(order[0]);
            datagram.extend(record_bytes(order[1]));
            assert_eq!(datagram.len(), 2 * 1785);
            let f = decode(&datagram, addr(), Instant::now()).unwrap().frame;
            assert_eq!(f.get(Channel::JawOpen), Some(1.0));
        }
        // The followed face keeps its place while its fit fails for a frame.
        let lost = Spec { success: 0, ..near };
        let mut datagram = record_bytes(&far);
        datagram.extend(record_bytes(&lost));
        let f = decode(&datagram, addr(), Instant::now()).unwrap().frame;
        assert_eq!(f.tracking, TrackingFlag::Lost);
        // Equal ids: the first record wins. Negative ids sort below.
        let twin = Spec {
            id: 1,
            features: jaw(0.5),
            ..Spec::default()
        };
        let mut datagram = record_bytes(&twin);
        datagram.extend(record_bytes(&near));
        let v = decode(&datagram, addr(), Instant::now())
            .unwrap()
            .frame
            .get(Channel::JawOpen)
            .unwrap();
        assert!((v - 0.5).abs() < 1e-6);
        let offset_ids = Spec {
            id: -5,
            features: jaw(0.0),
            ..Spec::default()
        };
        let mut datagram = record_bytes(&near);
        datagram.extend(record_bytes(&offset_ids));
        let f = decode(&datagram, addr(), Instant::now()).unwrap().frame;
        assert_eq!(f.get(Channel::JawOpen), Some(0.0));
    }

    #[test]
    fn wrong_lengths_are_rejected() {
        let good = record_bytes(&Spec::default());
        assert_eq!(
            decode(&[], addr(), Instant::now()),
            Err(ProtocolError::Truncated("no face record"))
        );
        for len in [1, 28, 1784, 1786, 2 * 1785 - 1, 2 * 1785 + 1] {
            let mut bytes = good.clone();
            bytes.resize(len, 0);
            assert!(
                matches!(
                    decode(&bytes, addr(), Instant::now()),
                    Err(ProtocolError::Malformed(_))
                ),
                "{len} bytes"
            );
        }
        let most: Vec<u8> = good.repeat(MAX_FACES);
        assert!(decode(&most, addr(), Instant::now()).is_ok());
        let too_many: Vec<u8> = good.repeat(MAX_FACES + 1);
        assert_eq!(
            decode(&too_many, addr(), Instant::now()),
            Err(ProtocolError::Oversized {
                len: (MAX_FACES + 1) * 1785,
                max: MAX_DATAGRAM
            })
        );
        let huge = vec![0u8; MAX_PHONE_DATAGRAM + 1];
        assert!(matches!(
            decode(&huge, addr(), Instant::now()),
            Err(ProtocolError::Oversized { .. })
        ));
        // Every cut of a valid datagram is an error or a frame, never a panic.
        let two = good.repeat(2);
        for cut in 0..two.len() {
            let result = decode(&two[..cut], addr(), Instant::now());
            assert_eq!(result.is_ok(), cut == 1785, "{cut}");
        }
    }

    #[test]
    fn a_turned_head_keeps_the_performers_own_left_and_right() {
        let deg = |d: f32| d.to_radians();
        let head = |turn: Quat| {
            one(&Spec {
                quaternion: wire_quaternion(turn),
                ..Spec::default()
            })
            .frame
            .head
            .unwrap()
        };
        // The face model's +X is the face's right, so turning to the performer's own left is a
        // negative turn about its +Y.
        let left = head(Quat::from_rotation_y(deg(-30.0)));
        let forward = left * Vec3::Z;
        assert!(
            forward.x > 0.45,
            "faces the performer's left (+X): {forward}"
        );
        assert!(close(left, Quat::from_rotation_y(deg(30.0))), "{left}");
        // As with the other decoders: a positive yaw about our +Y looks to the performer's left.
        let ifm = axes::IFACIALMOCAP.euler_degrees(0.0, 30.0, 0.0).unwrap();
        assert!(close(left, ifm));
        let right = head(Quat::from_rotation_y(deg(25.0))) * Vec3::Z;
        assert!(right.x < -0.4, "{right}");
        // Chin up: the face looks up (+Y).
        let up = head(Quat::from_rotation_x(deg(-20.0))) * Vec3::Z;
        assert!(up.y > 0.3 && up.x.abs() < 1e-5, "{up}");
        // The head tilted towards the performer's left shoulder: its top goes to +X.
        let tilt = head(Quat::from_rotation_z(deg(20.0))) * Vec3::Y;
        assert!(tilt.x > 0.3, "{tilt}");
        // A quaternion that is not normalised (q and a multiple of it) gives the same head.
        let q = wire_quaternion(Quat::from_rotation_y(deg(-30.0)));
        let scaled = one(&Spec {
            quaternion: q.map(|v| -3.0 * v),
            ..Spec::default()
        });
        assert!(close(scaled.frame.head.unwrap(), left));
    }

    #[test]
    fn plausible_datagrams_are_whole_records_from_a_camera() {
        let good = record_bytes(&Spec::default());
        assert!(plausible(&good));
        assert!(plausible(&good.repeat(3)));
        assert!(!plausible(&good[..1784]));
        assert!(!plausible(&[]));
        assert!(!plausible(&good.repeat(MAX_FACES + 1)));
        let mut odd = good.clone();
        odd[28] = 2;
        assert!(!plausible(&odd));
        let mut no_camera = good.clone();
        no_camera[12..16].copy_from_slice(&0.5f32.to_le_bytes());
        assert!(!plausible(&no_camera));
        assert!(!plausible(&[0u8; 1785]));
        assert!(!plausible(&[0xFFu8; 2 * 1785]));
    }
}
