//! Reader of Live Link Face's CSV export (`MySlate_<n>_<device>.csv`, protocols.md §4.2).
//!
//! Columns are matched by header name, not position: `Timecode`, every blendshape name
//! [`Channel::parse`] understands (PascalCase in the app's files), and the head and eye angles
//! `HeadYaw`, `HeadPitch`, `HeadRoll`, `LeftEyeYaw`, … `RightEyeRoll` in radians. Other columns
//! (`BlendShapeCount`, anything a later app version adds) are ignored. CRLF line endings and
//! blank lines are accepted.
//!
//! # Time
//!
//! The timecode is `HH:MM:SS:FF.fff`: a frame number with a fractional subframe at the file's
//! frame rate. The rate is not written in the file; it is inferred as the smallest common rate
//! (24, 25, 30, 48, 50, 60, 120) above the largest frame number seen, provided the rows cross a
//! second boundary (so that the largest frame number is known to be near the rate's end), and
//! taken as 60, the app's rate, otherwise. Both public samples are 60 fps. A timecode that goes
//! past midnight keeps counting up.

use std::borrow::Cow;
use std::io::{BufRead, Read};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use glam::Quat;

use crate::arkit::{Channel, ChannelMask, FaceFrame, Protocol, TrackingFlag, COUNT};
use crate::diagnostic::excerpt;
use crate::ingest::axes::AxisMap;

/// How the CSV's yaw, pitch and roll (radians) become rotations in facewire's avatar frame, in
/// the same terms as `src/ingest/axes.rs` (whose table and Euler order `Ry(yaw)·Rx(pitch)·Rz(roll)`
/// this follows): yaw about +Y, pitch about +X (+X is the performer's left), roll about +Z (the
/// face looks down +Z). ARKit's face anchor has the same axes as ours, so no sign is flipped.
/// UNCONFIRMED: both public CSVs have the head angles off, and one tool reports that pitch and
/// yaw are inverted in landscape orientation; fix a sign here and nowhere else.
pub const LLF_CSV_AXES: AxisMap = AxisMap {
    quat: [1.0, 1.0, 1.0],
    euler: [1.0, 1.0, 1.0],
};

/// The frame rate assumed when the file does not show it.
pub const DEFAULT_FPS: u32 = 60;

/// The longest line read: an export's rows are under a kilobyte (61 columns).
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// Frame rates the inference picks from.
const COMMON_RATES: [u32; 7] = [24, 25, 30, 48, 50, 60, 120];

/// Errors reading a Live Link Face CSV.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlfCsvError {
    /// The text holds no header line.
    #[error("empty file: no header line")]
    Empty,
    /// A required column is missing from the header.
    #[error("line {line}: no `{name}` column in the header")]
    MissingColumn {
        /// The header's line, 1-based.
        line: usize,
        /// The column's name.
        name: &'static str,
    },
    /// A row has fewer fields than a column it needs.
    #[error("line {line}: {found} fields, but the `{name}` column is field {needed}")]
    ShortRow {
        /// 1-based line.
        line: usize,
        /// Fields present.
        found: usize,
        /// The 1-based field number needed.
        needed: usize,
        /// That column's header name.
        name: String,
    },
    /// A timecode is not `HH:MM:SS:FF.fff`.
    #[error("line {line}, column {column}: `{text}` is not a HH:MM:SS:FF timecode")]
    BadTimecode {
        /// 1-based line.
        line: usize,
        /// 1-based character column where the field starts.
        column: usize,
        /// The field.
        text: String,
    },
    /// A line is longer than any export's ([`MAX_LINE_BYTES`]).
    #[error("line {line} is longer than {} KiB: not a Live Link Face export", MAX_LINE_BYTES >> 10)]
    LineTooLong {
        /// 1-based line.
        line: usize,
    },
    /// The file has more rows than a recording may hold.
    #[error(
        "more than {max} rows (about {} minutes at 60 a second), more than facewire replays: \
         split the file",
        max / 3600
    )]
    TooManyRows {
        /// [`super::MAX_RECORDING_ITEMS`].
        max: usize,
    },
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(String),
    /// A value is not a finite number.
    #[error("line {line}, column {column} (`{name}`): `{text}` is not a number")]
    BadNumber {
        /// 1-based line.
        line: usize,
        /// 1-based character column where the field starts.
        column: usize,
        /// The column's header name.
        name: String,
        /// The field.
        text: String,
    },
}

/// One row of the CSV.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LlfRow {
    /// Seconds since the first row, from the timecode at the file's frame rate.
    pub time: f64,
    /// Blendshape values in canonical order (0 where the file has no column).
    pub weights: [f32; COUNT],
    /// Which channels the file has columns for.
    pub present: ChannelMask,
    /// Head rotation; `None` when the file has no head columns or they are all exactly 0
    /// (head rotation switched off in the app).
    pub head: Option<Quat>,
    /// Left eye rotation (the performer's left), `None` like `head`.
    pub left_eye: Option<Quat>,
    /// Right eye rotation, `None` like `head`.
    pub right_eye: Option<Quat>,
}

impl LlfRow {
    /// The row as a frame received at `start + time` from `from`, with `sender_time = time`.
    pub fn to_frame(&self, start: Instant, from: SocketAddr) -> FaceFrame {
        let offset = Duration::try_from_secs_f64(self.time).unwrap_or(Duration::ZERO);
        FaceFrame {
            weights: self.weights,
            present: self.present,
            head: self.head,
            left_eye: self.left_eye,
            right_eye: self.right_eye,
            sender_time: Some(self.time),
            tracking: TrackingFlag::Unknown,
            received: start + offset,
            protocol: Protocol::LiveLinkFace,
            from,
            layer_weights: [0.0; crate::arkit::MAX_LAYERS],
            visemes: [0.0; crate::arkit::VISEMES],
            params: crate::arkit::Params::EMPTY,
        }
    }
}

/// The angle columns of one rotation: yaw, pitch, roll header names.
const ANGLES: [[&str; 3]; 3] = [
    ["HeadYaw", "HeadPitch", "HeadRoll"],
    ["LeftEyeYaw", "LeftEyePitch", "LeftEyeRoll"],
    ["RightEyeYaw", "RightEyePitch", "RightEyeRoll"],
];

/// Parses a whole CSV export.
pub fn parse(text: &str) -> Result<Vec<LlfRow>, LlfCsvError> {
    parse_reader(text.as_bytes(), super::MAX_RECORDING_ITEMS)
}

/// Parses a CSV export line by line from `input`, holding one line at a time, at most `max`
/// rows. Invalid UTF-8 is replaced, so the bad cell is what gets reported.
pub fn parse_reader(mut input: impl BufRead, max: usize) -> Result<Vec<LlfRow>, LlfCsvError> {
    let mut buf = Vec::new();
    let mut number = 0usize;
    // The next line that is not blank, with its 1-based number.
    let mut next_line = |buf: &mut Vec<u8>| -> Result<Option<usize>, LlfCsvError> {
        loop {
            buf.clear();
            let read = input
                .by_ref()
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', buf)
                .map_err(|e| LlfCsvError::Read(e.to_string()))?;
            if read == 0 {
                return Ok(None);
            }
            number += 1;
            if buf.len() > MAX_LINE_BYTES {
                return Err(LlfCsvError::LineTooLong { line: number });
            }
            if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                return Ok(Some(number));
            }
        }
    };
    let header_line = next_line(&mut buf)?.ok_or(LlfCsvError::Empty)?;
    let header = text_of(&buf).into_owned();
    let header = header.strip_prefix('\u{feff}').unwrap_or(&header);
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let find = |name: &str| names.iter().position(|n| n.eq_ignore_ascii_case(name));
    let timecode = find("Timecode").ok_or(LlfCsvError::MissingColumn {
        line: header_line,
        name: "Timecode",
    })?;
    let mut channels: Vec<(usize, Channel)> = Vec::new();
    let mut present = ChannelMask::EMPTY;
    for (i, n) in names.iter().enumerate() {
        if let Some(c) = Channel::parse(n) {
            if !present.contains(c) {
                present.insert(c);
                channels.push((i, c));
            }
        }
    }
    let angles: [Option<[usize; 3]>; 3] = ANGLES.map(|set| {
        let [y, p, r] = set.map(find);
        Some([y?, p?, r?])
    });

    // Each row's whole seconds wait in its `time`, and its frame part in `frames`, until the
    // rate is known.
    let mut rows: Vec<LlfRow> = Vec::new();
    let mut frames: Vec<f32> = Vec::new();
    let mut max_frame = 0u32;
    let mut seconds_seen: Option<u64> = None;
    let mut crosses_second = false;
    while let Some(line) = next_line(&mut buf)? {
        if rows.len() == max {
            return Err(LlfCsvError::TooManyRows { max });
        }
        let text = text_of(&buf);
        let fields: Vec<(usize, &str)> = split_fields(&text);
        let field = |i: usize| -> Result<(usize, &str), LlfCsvError> {
            fields.get(i).copied().ok_or_else(|| LlfCsvError::ShortRow {
                line,
                found: fields.len(),
                needed: i + 1,
                name: names[i].to_string(),
            })
        };
        let (column, tc) = field(timecode)?;
        let (whole_seconds, frame) =
            parse_timecode(tc).ok_or_else(|| LlfCsvError::BadTimecode {
                line,
                column,
                text: excerpt(tc),
            })?;
        if seconds_seen.is_some_and(|s| s != whole_seconds) {
            crosses_second = true;
        }
        seconds_seen = Some(whole_seconds);
        max_frame = max_frame.max(frame.floor() as u32);
        let number = |i: usize| -> Result<f32, LlfCsvError> {
            let (column, s) = field(i)?;
            s.trim()
                .parse::<f32>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| LlfCsvError::BadNumber {
                    line,
                    column,
                    name: names[i].to_string(),
                    text: excerpt(s),
                })
        };
        let mut row = LlfRow {
            time: 0.0,
            weights: [0.0; COUNT],
            present,
            head: None,
            left_eye: None,
            right_eye: None,
        };
        for &(i, c) in &channels {
            row.weights[c.index()] = number(i)?;
        }
        let mut rotations = [None; 3];
        for (slot, cols) in rotations.iter_mut().zip(angles) {
            if let Some([y, p, r]) = cols {
                *slot = rotation(number(y)?, number(p)?, number(r)?);
            }
        }
        [row.head, row.left_eye, row.right_eye] = rotations;
        row.time = whole_seconds as f64;
        rows.push(row);
        frames.push(frame);
    }
    let fps = if crosses_second {
        COMMON_RATES
            .into_iter()
            .find(|&r| r > max_frame)
            .unwrap_or(max_frame + 1)
    } else {
        DEFAULT_FPS
    };
    let mut first: Option<f64> = None;
    let mut previous = 0.0;
    let mut wrap = 0.0;
    for (row, frame) in rows.iter_mut().zip(frames) {
        let absolute = row.time + f64::from(frame) / f64::from(fps) + wrap;
        // A timecode that passes midnight starts again from 0.
        let absolute = if absolute + 43_200.0 < previous {
            wrap += 86_400.0;
            absolute + 86_400.0
        } else {
            absolute
        };
        previous = absolute;
        let t0 = *first.get_or_insert(absolute);
        row.time = absolute - t0;
    }
    Ok(rows)
}

/// A line as read, without its line ending; borrowed unless it holds invalid UTF-8.
fn text_of(buf: &[u8]) -> Cow<'_, str> {
    let line = buf.strip_suffix(b"\n").unwrap_or(buf);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line)
}

/// Fields of one line with the 1-based character column each starts at.
fn split_fields(line: &str) -> Vec<(usize, &str)> {
    let mut column = 1;
    line.split(',')
        .map(|f| {
            let at = column;
            column += f.chars().count() + 1;
            (at, f.trim())
        })
        .collect()
}

/// `HH:MM:SS:FF.fff` → (whole seconds, frame with its fraction).
fn parse_timecode(tc: &str) -> Option<(u64, f32)> {
    let mut parts = tc.trim().split(':');
    let h: u64 = parts.next()?.parse().ok()?;
    let m: u64 = parts.next()?.parse().ok()?;
    let s: u64 = parts.next()?.parse().ok()?;
    let f: f32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || m >= 60 || s >= 60 || !(0.0..1000.0).contains(&f) {
        return None;
    }
    Some((h.checked_mul(3600)?.checked_add(m * 60 + s)?, f))
}

/// Yaw, pitch, roll in radians → a rotation in our frame; all three exactly 0 means the app sent
/// no rotation.
fn rotation(yaw: f32, pitch: f32, roll: f32) -> Option<Quat> {
    if yaw == 0.0 && pitch == 0.0 && roll == 0.0 {
        return None;
    }
    LLF_CSV_AXES
        .euler_degrees(pitch.to_degrees(), yaw.to_degrees(), roll.to_degrees())
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "Timecode,BlendShapeCount,EyeBlinkLeft,JawRight,JawOpen,HeadYaw,HeadPitch,HeadRoll,LeftEyeYaw,LeftEyePitch,LeftEyeRoll,Extra";

    #[test]
    fn columns_are_matched_by_name() {
        let text = format!(
            "{HEADER}\r\n00:00:01:30.500,61,0.25,0.125,0.5,0,0,0,0.1,0,0,x\r\n\r\n00:00:01:31.500,61,0.3,0,0.75,0,0.2,0,0,0,0,y\r\n"
        );
        let rows = parse(&text).unwrap();
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert_eq!(r.weights[Channel::EyeBlinkLeft.index()], 0.25);
        assert_eq!(r.weights[Channel::JawRight.index()], 0.125);
        assert_eq!(r.weights[Channel::JawOpen.index()], 0.5);
        assert_eq!(r.present.len(), 3);
        assert_eq!(r.head, None);
        assert!(
            r.left_eye
                .unwrap()
                .angle_between(Quat::from_rotation_y(0.1))
                < 1e-5
        );
        assert!(
            rows[1]
                .head
                .unwrap()
                .angle_between(Quat::from_rotation_x(0.2))
                < 1e-5
        );
        assert!((rows[1].time - 1.0 / 60.0).abs() < 1e-9, "{}", rows[1].time);
    }

    #[test]
    fn frame_rate_is_inferred_across_a_second() {
        let text = format!(
            "{HEADER}\n00:00:01:28,61,0,0,0,0,0,0,0,0,0\n00:00:01:29,61,0,0,0,0,0,0,0,0,0\n00:00:02:00,61,0,0,0,0,0,0,0,0,0\n"
        );
        let rows = parse(&text).unwrap();
        assert!((rows[2].time - 2.0 / 30.0).abs() < 1e-9, "{}", rows[2].time);
    }

    #[test]
    fn a_bad_field_is_quoted_short_and_escaped() {
        let long = "9".repeat(50_000) + "x";
        let text = format!("{HEADER}\n00:00:01:01,61,{long}\n");
        let message = parse(&text).unwrap_err().to_string();
        assert!(message.len() < 200, "a {}-byte message", message.len());
        assert!(message.contains("bytes in all"), "{message}");
        // A line longer than any export's is refused by its number, before it is all read.
        let huge = "9".repeat(5 << 20);
        let text = format!("{HEADER}\n00:00:01:01,61,{huge}\n");
        let error = parse(&text).unwrap_err();
        assert_eq!(error, LlfCsvError::LineTooLong { line: 2 });
        let text = format!("{HEADER}\n00:00:01:01,61,\u{1b}[2J\n");
        let message = parse(&text).unwrap_err().to_string();
        assert!(
            message.contains("\\u{1b}[2J") && !message.contains('\u{1b}'),
            "{message}"
        );
    }

    #[test]
    fn rows_past_the_most_a_recording_holds_are_refused() {
        let mut text = format!("{HEADER}\n");
        for i in 0..4 {
            text.push_str(&format!("00:00:00:{i:02},61,0,0,0,0,0,0,0,0,0,0\n"));
        }
        assert_eq!(parse_reader(text.as_bytes(), 4).unwrap().len(), 4);
        text.push_str("00:00:00:05,61,0,0,0,0,0,0,0,0,0,0\n");
        let error = parse_reader(text.as_bytes(), 4).unwrap_err();
        assert_eq!(error, LlfCsvError::TooManyRows { max: 4 });
        assert!(error.to_string().contains("split the file"), "{error}");
    }

    #[test]
    fn errors_name_line_and_column() {
        let text = format!("{HEADER}\n00:00:01:01,61,0.1,zz,0,0,0,0,0,0,0\n");
        match parse(&text).unwrap_err() {
            LlfCsvError::BadNumber {
                line, column, name, ..
            } => {
                assert_eq!((line, column, name.as_str()), (2, 20, "JawRight"));
            }
            e => panic!("{e}"),
        }
        let text = format!("{HEADER}\n\n00:00:01,61\n");
        assert!(matches!(
            parse(&text).unwrap_err(),
            LlfCsvError::BadTimecode {
                line: 3,
                column: 1,
                ..
            }
        ));
        let text = format!("{HEADER}\n00:00:01:01,61,0.1\n");
        assert!(matches!(
            parse(&text).unwrap_err(),
            LlfCsvError::ShortRow { line: 2, .. }
        ));
        assert_eq!(parse("\n\n"), Err(LlfCsvError::Empty));
        assert!(matches!(
            parse("A,B\n1,2\n"),
            Err(LlfCsvError::MissingColumn { line: 1, .. })
        ));
        let text = format!("{HEADER}\n00:00:01:01,61,NaN,0,0,0,0,0,0,0,0\n");
        assert!(parse(&text).is_err());
    }

    #[test]
    fn rows_become_live_link_frames() {
        let text = format!(
            "{HEADER}\n00:00:01:00,61,0.1,0,0,0,0,0,0,0,0\n00:00:01:06,61,0.1,0,0,0,0,0,0,0,0\n"
        );
        let rows = parse(&text).unwrap();
        let t0 = Instant::now();
        let f = rows[1].to_frame(t0, "127.0.0.1:11111".parse().unwrap());
        assert_eq!(f.protocol, Protocol::LiveLinkFace);
        assert_eq!(f.sender_time, Some(rows[1].time));
        assert_eq!(f.received, t0 + Duration::from_secs_f64(0.1));
        assert_eq!(f.get(Channel::EyeBlinkLeft), Some(0.1));
    }
}
