//! Offline calibration from a recording (`facewire calibrate --from FILE`): finding the
//! performer's rest in the take, then calibrating every channel with the guided routine's rule,
//! that rest standing in for the neutral step.
//!
//! A recording has no step markers, so the neutral is found. The take is cut into windows of
//! [`WINDOW`] seconds, one starting at every frame, and each is scored by
//!
//! - its activation: over every channel, the window's mean above the channel's low value for
//!   the take (its 5th percentile), in units of the channel's spread over the take (5th to 99th
//!   percentile, at least [`BARELY_MOVED`] so a quiet channel's noise does not count for much);
//! - plus its motion: over every channel, the window's highest minus lowest value, same units.
//!
//! Activation keeps out held extremes (a jaw held wide open is as still as a resting face);
//! motion keeps out moments that only pass through low values. The rest is the calmest window;
//! among windows scoring within [`EARLY_TOLERANCE`] of it, the earliest, since performers
//! usually start a take at rest. `--neutral-at SECONDS` names the window instead. Takes shorter
//! than half a window are their own rest.
//!
//! Ranges then follow [`super::routine`]: a channel's neutral is its median over the rest and
//! `min` is that neutral, except for the eyelids' blink channels, whose `min` is the performer's
//! typical open eye over the whole take (the upper quartile of the frames that are not blinks,
//! [`super::routine::OPEN_EYE_PERCENTILE`]), whatever the rest showed: the calmest window is often
//! one where the eyes were wider than usual, and taken from there an ordinary open eye would read
//! partly closed. `max` is the take's 99th percentile, not the routine's 95th, because extremes
//! are rare in a free take (in a recording of the guided routine each pose fills about 3% of the
//! time). Frames the sender marks as lost are skipped. Channels absent from the take keep the old
//! calibration and get no row; channels that barely moved are flagged and keep the old
//! calibration.

use std::fmt;
use std::ops::Range;

use tracing::info;

use super::routine::{
    base_profile, measure, percentile, settle, Calibration, Samples, Summary, SummaryRow,
    BARELY_MOVED,
};
use super::Profile;
use crate::arkit::{Channel, ChannelMask, FaceFrame, TrackingFlag, COUNT};

/// The length of a window scored as a possible rest, and of a named rest, in seconds.
pub const WINDOW: f64 = 0.5;

/// A window scoring at most this much (relatively) above the calmest one is as good a rest; the
/// earliest such window is taken.
pub const EARLY_TOLERANCE: f32 = 0.05;

/// The percentile of a whole take that is a channel's low value (for scoring windows).
pub const TAKE_LOW_PERCENTILE: f32 = 0.05;

/// The percentile of a whole take that becomes a channel's `max`.
pub const TAKE_HIGH_PERCENTILE: f32 = 0.99;

/// The most frames offline calibration keeps (ten minutes at 60 Hz); longer takes are thinned
/// evenly.
pub const TAKE_CAP: usize = 36_000;

/// Fewer frames than this do not make a window.
const MIN_FRAMES: usize = 3;

/// Errors of offline calibration.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// The recording holds no face frames at all.
    #[error("the recording holds no face frames")]
    Empty,
    /// No frame falls in the named neutral window.
    #[error(
        "no face frames between {at:.2} s and {end:.2} s of the recording, which lasts \
         {length:.2} s"
    )]
    NothingAt {
        /// The named start, in seconds into the take.
        at: f64,
        /// The window's end.
        end: f64,
        /// The take's length.
        length: f64,
    },
}

/// Where the neutral face of a take was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestSource {
    /// The calmest stretch, found in the take.
    Found,
    /// Named by the performer (`--neutral-at`).
    Named,
}

/// The stretch of a take whose medians are the neutral values.
#[derive(Debug, Clone, PartialEq)]
pub struct Rest {
    /// Seconds into the take of its first frame.
    pub start: f64,
    /// Seconds into the take of its last frame.
    pub end: f64,
    /// How many frames it holds.
    pub frames: usize,
    /// Found or named.
    pub source: RestSource,
    /// Its frames, as indices into the take's kept frames.
    range: Range<usize>,
}

impl fmt::Display for Rest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.source {
            RestSource::Found => {
                "the calmest stretch of the take (name another with --neutral-at SECONDS)"
            }
            RestSource::Named => "as named with --neutral-at",
        };
        write!(
            f,
            "neutral face: {:.2}-{:.2} s into the take ({} frames), {how}",
            self.start, self.end, self.frames
        )
    }
}

/// A few neutral values of a summary's rows, for the review: the highest ones (what a resting
/// face would have read without a neutral) and jawOpen's.
pub(super) fn rest_values(rows: &[SummaryRow]) -> String {
    let mut shown: Vec<(Channel, f32)> = rows
        .iter()
        .filter_map(|r| Some((r.channel, r.neutral?)))
        .collect();
    shown.sort_by(|a, b| b.1.total_cmp(&a.1));
    shown.truncate(4);
    if let Some(jaw) = rows.iter().find(|r| r.channel == Channel::JawOpen) {
        if let (Some(v), false) = (jaw.neutral, shown.iter().any(|s| s.0 == Channel::JawOpen)) {
            shown.push((Channel::JawOpen, v));
        }
    }
    let text: Vec<String> = shown
        .iter()
        .map(|(c, v)| format!("{} {v:.3}", c.name()))
        .collect();
    text.join(", ")
}

/// One kept frame of a take.
#[derive(Debug, Clone, Copy)]
struct Moment {
    /// Seconds since the take's first frame.
    t: f64,
    /// Raw channel values.
    weights: [f32; COUNT],
    /// Which channels the frame carried.
    present: ChannelMask,
}

/// The frames of a recording, thinned evenly to at most [`TAKE_CAP`], lost ones left out.
#[derive(Debug, Clone)]
pub struct Take {
    /// The kept frames, in time order.
    moments: Samples<Moment>,
}

impl Take {
    /// Collects `frames` (raw, in time order); times count from the first frame received.
    pub fn collect(frames: impl IntoIterator<Item = FaceFrame>) -> Take {
        let mut moments = Samples::bounded(TAKE_CAP);
        let mut first = None;
        for frame in frames {
            if frame.tracking == TrackingFlag::Lost || frame.present.is_empty() {
                continue;
            }
            let first = *first.get_or_insert(frame.received);
            moments.offer(Moment {
                t: frame
                    .received
                    .saturating_duration_since(first)
                    .as_secs_f64(),
                weights: frame.weights,
                present: frame.present,
            });
        }
        Take { moments }
    }

    /// Whether the take kept no frame.
    pub fn is_empty(&self) -> bool {
        self.moments.is_empty()
    }

    /// Seconds from the first kept frame to the last.
    pub fn length(&self) -> f64 {
        self.moments.values().last().map_or(0.0, |m| m.t)
    }

    /// The values of `channel` in `range` of the kept frames (those that carried it).
    fn values(&self, channel: Channel, range: Range<usize>) -> Vec<f32> {
        self.moments.values()[range]
            .iter()
            .filter(|m| m.present.contains(channel))
            .map(|m| m.weights[channel.index()])
            .filter(|v| v.is_finite())
            .collect()
    }

    fn rest(&self, range: Range<usize>, source: RestSource) -> Rest {
        let m = self.moments.values();
        Rest {
            start: m[range.start].t,
            end: m[range.end - 1].t,
            frames: range.len(),
            source,
            range,
        }
    }

    /// The calmest low-activation window of the take (see the module's documentation); `None`
    /// for an empty take.
    pub fn find_rest(&self) -> Option<Rest> {
        let m = self.moments.values();
        if m.is_empty() {
            return None;
        }
        let mut low = [0.0f32; COUNT];
        let mut scale = [1.0f32; COUNT];
        for c in Channel::ALL {
            let all = self.values(c, 0..m.len());
            if let (Some(lo), Some(hi)) = (
                percentile(&all, TAKE_LOW_PERCENTILE),
                percentile(&all, TAKE_HIGH_PERCENTILE),
            ) {
                low[c.index()] = lo;
                scale[c.index()] = (hi - lo).max(BARELY_MOVED);
            }
        }
        let mut scored: Vec<(f32, Range<usize>)> = Vec::new();
        let mut end = 0;
        for (i, first) in m.iter().enumerate() {
            end = end.max(i);
            while end < m.len() && m[end].t < first.t + WINDOW {
                end += 1;
            }
            let window = &m[i..end];
            if window.len() < MIN_FRAMES || m[end - 1].t - first.t < WINDOW / 2.0 {
                continue;
            }
            scored.push((score(window, &low, &scale), i..end));
        }
        let Some(calmest) = scored.iter().map(|s| s.0).min_by(f32::total_cmp) else {
            return Some(self.rest(0..m.len(), RestSource::Found));
        };
        let limit = calmest * (1.0 + EARLY_TOLERANCE) + 1e-6;
        let (score, range) = scored.into_iter().find(|s| s.0 <= limit)?;
        let rest = self.rest(range, RestSource::Found);
        info!(
            start = rest.start,
            end = rest.end,
            frames = rest.frames,
            score,
            calmest,
            "rest found in the take"
        );
        Some(rest)
    }

    /// The [`WINDOW`] starting `at` seconds into the take, as the rest.
    pub fn rest_at(&self, at: f64) -> Result<Rest, OfflineError> {
        let m = self.moments.values();
        let start = m.partition_point(|x| x.t < at);
        let end = m.partition_point(|x| x.t < at + WINDOW);
        if start >= end {
            return Err(OfflineError::NothingAt {
                at,
                end: at + WINDOW,
                length: self.length(),
            });
        }
        Ok(self.rest(start..end, RestSource::Named))
    }

    /// The calibration of `performer` on top of `old` with `rest` as the neutral face.
    pub fn calibrate(&self, rest: &Rest, performer: &str, old: Option<&Profile>) -> Calibration {
        let all = 0..self.moments.values().len();
        let mut profile = base_profile(performer, old);
        let mut summary = Summary {
            rest: Some(rest.clone()),
            ..Summary::default()
        };
        for channel in Channel::ALL {
            let everything = self.values(channel, all.clone());
            if everything.is_empty() {
                continue;
            }
            let neutrals = self.values(channel, rest.range.clone());
            let high = percentile(&everything, TAKE_HIGH_PERCENTILE);
            let measured = measure(channel, &neutrals, high, &everything);
            summary
                .rows
                .push(settle(&mut profile, old, channel, None, measured));
        }
        Calibration { profile, summary }
    }
}

/// A window's activation plus motion, in units of each channel's spread over the take.
fn score(window: &[Moment], low: &[f32; COUNT], scale: &[f32; COUNT]) -> f32 {
    let mut total = 0.0;
    for c in Channel::ALL {
        let i = c.index();
        let (mut sum, mut n, mut lo, mut hi) = (0.0f32, 0usize, f32::INFINITY, f32::NEG_INFINITY);
        for m in window.iter().filter(|m| m.present.contains(c)) {
            let v = (m.weights[i] - low[i]) / scale[i];
            if !v.is_finite() {
                continue;
            }
            sum += v;
            n += 1;
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if n > 0 {
            total += (sum / n as f32).max(0.0) + (hi - lo);
        }
    }
    total
}

/// Calibrates `performer` offline from a recording's raw frames, on top of their `old` profile:
/// the neutral face is the [`WINDOW`] starting `neutral_at` seconds into the take, or the rest
/// found in it (see the module's documentation).
pub fn calibrate_offline(
    frames: impl IntoIterator<Item = FaceFrame>,
    old: Option<&Profile>,
    performer: &str,
    neutral_at: Option<f64>,
) -> Result<Calibration, OfflineError> {
    let take = Take::collect(frames);
    if take.is_empty() {
        return Err(OfflineError::Empty);
    }
    let rest = match neutral_at {
        Some(at) => take.rest_at(at)?,
        None => take.find_rest().ok_or(OfflineError::Empty)?,
    };
    Ok(take.calibrate(&rest, performer, old))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::arkit::Protocol;

    /// 60 Hz frames of the jaw: `jaw(i)` for frame `i`, every other channel at 0.02.
    fn frames(n: usize, jaw: impl Fn(usize) -> f32) -> Vec<FaceFrame> {
        let t0 = Instant::now();
        (0..n)
            .map(|i| {
                let t = t0 + Duration::from_secs_f64(i as f64 / 60.0);
                let mut f = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:9".parse().unwrap(), t);
                for c in Channel::ALL {
                    f.set(c, 0.02);
                }
                f.set(Channel::JawOpen, jaw(i));
                f
            })
            .collect()
    }

    #[test]
    fn the_eyes_open_reference_is_the_usual_open_eye_not_the_calm_windows() {
        // A second at rest with the eyes wider than usual (blink 0.13), then nine seconds of
        // talking with the eyes as they usually are (0.26, looking about: +-0.03) and a blink
        // of a sixth of a second every three seconds (0.9).
        let eye = |i: usize| match i {
            0..60 => 0.13,
            _ if i % 180 < 10 => 0.9,
            _ => 0.26 + 0.03 * (i as f32 * 0.13).sin(),
        };
        let mut take = frames(600, |i| match i {
            0..60 => 0.1,
            _ => 0.3 + 0.2 * (i as f32 * 0.2).sin(),
        });
        for (i, f) in take.iter_mut().enumerate() {
            f.set(Channel::EyeBlinkLeft, eye(i));
            f.set(Channel::EyeBlinkRight, eye(i));
        }
        let cal = calibrate_offline(take, None, "a", None).unwrap();
        // The rest found is still the calm second, and it still sets the other channels.
        let rest = cal.summary.rest.clone().unwrap();
        assert!(rest.end <= 1.0, "{rest}");
        let jaw = cal.profile.channel(Channel::JawOpen);
        assert!((jaw.neutral - 0.1).abs() < 1e-6, "{jaw:?}");
        for lid in [Channel::EyeBlinkLeft, Channel::EyeBlinkRight] {
            let p = cal.profile.channel(lid);
            assert!((p.neutral - 0.13).abs() < 1e-6, "{lid}: {p:?}");
            let range = p.range();
            let usual = (60..600)
                .filter(|i| i % 180 >= 10)
                .map(|i| range.apply(eye(i)))
                .fold(0.0f32, f32::max);
            assert!(usual <= 0.05, "{lid}: an open eye reads {usual}, {range:?}");
            assert_eq!(range.apply(0.13), 0.0, "{lid}: {range:?}");
            assert!(range.apply(0.9) >= 0.95, "{lid}: {range:?}");
        }
    }

    #[test]
    fn a_still_extreme_is_not_a_rest_and_a_still_rest_is() {
        // A second of wide-open jaw held still, a second of moving, a second at rest.
        let take = Take::collect(frames(180, |i| match i {
            0..60 => 0.8,
            60..120 => 0.45 + 0.3 * (i as f32 * 0.5).sin(),
            _ => 0.1,
        }));
        let rest = take.find_rest().unwrap();
        assert!(rest.start >= 2.0 - 1e-6, "{rest}");
        assert_eq!(rest.source, RestSource::Found);
        let cal = take.calibrate(&rest, "a", None);
        let jaw = cal.profile.channel(Channel::JawOpen);
        assert!((jaw.neutral - 0.1).abs() < 1e-6 && (jaw.max - 0.8).abs() < 1e-6);
        assert!(cal.summary.to_string().contains("neutral face: 2.00-"));
    }

    #[test]
    fn the_earliest_of_equal_rests_wins_and_a_named_one_is_used() {
        let take = Take::collect(frames(240, |i| match i {
            60..120 => 0.45 + 0.3 * (i as f32 * 0.5).sin(),
            _ => 0.1,
        }));
        assert_eq!(take.find_rest().unwrap().start, 0.0);
        let named = take.rest_at(3.0).unwrap();
        assert_eq!(named.source, RestSource::Named);
        assert!(named.start >= 3.0 && named.end <= 3.5, "{named}");
        let err = take.rest_at(4.5).unwrap_err();
        assert!(err.to_string().contains("lasts 3.98 s"), "{err}");
        assert!(take.rest_at(f64::NAN).is_err());
    }

    #[test]
    fn an_empty_take_is_refused_and_a_tiny_one_is_its_own_rest() {
        let err = calibrate_offline(Vec::new(), None, "a", None).unwrap_err();
        assert!(matches!(err, OfflineError::Empty));
        let take = Take::collect(frames(2, |_| 0.1));
        assert_eq!(take.find_rest().unwrap().frames, 2);
    }

    #[test]
    fn the_review_shows_the_highest_neutrals_and_the_jaw() {
        let row = |channel, neutral| SummaryRow {
            channel,
            step: None,
            old: None,
            new: super::super::ChannelRange::default(),
            neutral: Some(neutral),
            flag: None,
        };
        let rows: Vec<SummaryRow> = [
            (Channel::JawOpen, 0.05),
            (Channel::BrowDownLeft, 0.3),
            (Channel::BrowDownRight, 0.29),
            (Channel::MouthClose, 0.1),
            (Channel::NoseSneerLeft, 0.2),
            (Channel::CheekPuff, 0.01),
        ]
        .into_iter()
        .map(|(c, n)| row(c, n))
        .collect();
        assert_eq!(
            rest_values(&rows),
            "browDownLeft 0.300, browDownRight 0.290, noseSneerLeft 0.200, mouthClose 0.100, \
             jawOpen 0.050"
        );
    }
}
