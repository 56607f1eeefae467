//! Calibrated eyes at rest: the Live Link Face range-of-motion take in the fixtures
//! (JMTechArt/Pipeline-Examples, MIT) calibrated offline as `facewire calibrate --from` does,
//! then its own frames through the profile: the eyelids read open on its calm, still frames and
//! closed at its blinks.
//!
//! The calm frames and the blinks are chosen from the raw take alone, so the test does not lean
//! on the rule it checks.

use facewire::arkit::{Channel, FaceFrame};
use facewire::calibrate::{calibrate_offline, ChannelRange};

const TAKE: &str = "protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv";

const LIDS: [Channel; 2] = [Channel::EyeBlinkLeft, Channel::EyeBlinkRight];

/// A lid reading at most this much above the take's median (raw) is an eye at rest, not part
/// of a blink or a squint.
const OPEN_MARGIN: f32 = 0.05;

/// A jaw reading at most this much above the take's 5th percentile (raw) is at rest.
const JAW_MARGIN: f32 = 0.05;

/// A head turning less than this from one frame to the next (radians: half a degree, 30 degrees
/// a second at 60 Hz) is still.
const HEAD_STILL: f32 = 0.5 * std::f32::consts::PI / 180.0;

/// What a calibrated lid may read on the calm frames (90th percentile), and must reach at a
/// blink.
const AT_REST: f32 = 0.05;
const CLOSED: f32 = 0.95;

/// The `p` quantile of `values`, interpolated between ranks; NaN for none.
fn quantile(values: &[f32], p: f32) -> f32 {
    let mut v: Vec<f32> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f32::NAN;
    }
    v.sort_by(f32::total_cmp);
    let pos = p * (v.len() - 1) as f32;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f32)
}

/// `channel`'s raw value in every frame (NaN where a frame lacks it).
fn raw(frames: &[FaceFrame], channel: Channel) -> Vec<f32> {
    frames
        .iter()
        .map(|f| f.get(channel).unwrap_or(f32::NAN))
        .collect()
}

/// The calm, still frames: both lids within [`OPEN_MARGIN`] of the take's median, the jaw within
/// [`JAW_MARGIN`] of its 5th percentile, and the head (where the take has one) turning less
/// than [`HEAD_STILL`] since the frame before.
fn calm_frames(frames: &[FaceFrame]) -> Vec<usize> {
    let lids: Vec<(Vec<f32>, f32)> = LIDS
        .iter()
        .map(|&c| {
            let v = raw(frames, c);
            let limit = quantile(&v, 0.5) + OPEN_MARGIN;
            (v, limit)
        })
        .collect();
    let jaw = raw(frames, Channel::JawOpen);
    let jaw_limit = quantile(&jaw, 0.05) + JAW_MARGIN;
    (0..frames.len())
        .filter(|&i| lids.iter().all(|(v, limit)| v[i] <= *limit))
        .filter(|&i| jaw[i] <= jaw_limit)
        .filter(|&i| {
            let before = i.checked_sub(1).and_then(|j| frames[j].head);
            match (before, frames[i].head) {
                (Some(a), Some(b)) => a.angle_between(b) < HEAD_STILL,
                // A take without head rotations says nothing about the head.
                _ => true,
            }
        })
        .collect()
}

/// The deepest frame of each blink: each run of frames where the lid is past half way from the
/// take's median to its highest value.
fn blink_peaks(v: &[f32]) -> Vec<usize> {
    let top = v
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(0.0f32, f32::max);
    let threshold = (quantile(v, 0.5) + top) / 2.0;
    let mut peaks = Vec::new();
    let mut run: Option<usize> = None;
    for (i, &x) in v.iter().enumerate() {
        if x > threshold {
            run = Some(run.map_or(i, |p| if x > v[p] { i } else { p }));
        } else if let Some(p) = run.take() {
            peaks.push(p);
        }
    }
    peaks.extend(run);
    peaks
}

/// The frames of the top 1% of raw values (one at least).
fn top_percent(v: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..v.len()).filter(|&i| v[i].is_finite()).collect();
    order.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
    order.truncate((v.len() / 100).max(1));
    order
}

/// The median and 90th percentile of `range` applied to `v` at `frames`.
fn at_frames(range: ChannelRange, v: &[f32], frames: &[usize]) -> (f32, f32) {
    let reads: Vec<f32> = frames.iter().map(|&i| range.apply(v[i])).collect();
    (quantile(&reads, 0.5), quantile(&reads, 0.9))
}

#[test]
fn calibrated_eyes_rest_open_on_calm_frames_and_close_at_blinks() {
    let Some(dir) = crate::support::fixtures("calibrated eyes at rest on the Live Link Face take")
    else {
        return;
    };
    let path = dir.join(TAKE);
    let recording = facewire::record::Recording::load(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let frames: Vec<FaceFrame> = facewire::record::frames(&recording).collect();
    assert!(frames.len() > 300, "{} frames", frames.len());
    let result = calibrate_offline(frames.iter().copied(), None, "jason", None).unwrap();
    let ranges = result.profile.ranges();

    let calm = calm_frames(&frames);
    // Half a second at least, or the percentiles below say little.
    assert!(calm.len() >= 30, "only {} calm frames", calm.len());
    for lid in LIDS {
        let v = raw(&frames, lid);
        let range = ranges[lid.index()];
        let (median, p90) = at_frames(range, &v, &calm);
        let peaks = blink_peaks(&v);
        let blinks: Vec<f32> = peaks.iter().map(|&i| range.apply(v[i])).collect();
        let top = top_percent(&v);
        let shallowest_top = top
            .iter()
            .map(|&i| range.apply(v[i]))
            .fold(f32::INFINITY, f32::min);
        eprintln!(
            "{lid}: range {:.3}..{:.3}; {} calm frames (raw median {:.3}) read median {median:.3}, \
             90th percentile {p90:.3}; blink peaks read {blinks:.3?}, the top 1% at least \
             {shallowest_top:.3}",
            range.min,
            range.max,
            calm.len(),
            quantile(&calm.iter().map(|&i| v[i]).collect::<Vec<_>>(), 0.5),
        );
        assert!(
            p90 <= AT_REST,
            "{lid}: the calm, still frames read {p90:.3} at the 90th percentile (median \
             {median:.3}, {} frames), above {AT_REST}: the eyes look partly closed at rest; \
             range {range:?}",
            calm.len()
        );
        assert!(!peaks.is_empty(), "{lid}: no blink found in the take");
        let shallowest = blinks.iter().copied().fold(f32::INFINITY, f32::min);
        assert!(
            shallowest >= CLOSED,
            "{lid}: a blink's deepest frame reads only {shallowest:.3} (all: {blinks:.3?}), \
             below {CLOSED}; range {range:?}"
        );
        assert!(
            shallowest_top >= CLOSED,
            "{lid}: the top 1% of the take's raw values read down to {shallowest_top:.3}, below \
             {CLOSED}; range {range:?}"
        );
    }
    // Squint and wide keep the rest's neutral (see `EYELIDS` in src/calibrate/routine.rs); their
    // numbers are shown, not checked.
    for c in [
        Channel::EyeSquintLeft,
        Channel::EyeSquintRight,
        Channel::EyeWideLeft,
        Channel::EyeWideRight,
    ] {
        let v = raw(&frames, c);
        let range = ranges[c.index()];
        let (median, p90) = at_frames(range, &v, &calm);
        let top = quantile(&v, 0.99);
        eprintln!(
            "{c}: range {:.3}..{:.3}; calm frames read median {median:.3}, 90th percentile \
             {p90:.3}; the take's 99th percentile reads {:.3}",
            range.min,
            range.max,
            range.apply(top)
        );
    }
}
