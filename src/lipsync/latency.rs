//! How quickly lip sync answers a sound, in audio time: from the sound's onset to a weight
//! reaching half way to its peak. The measure depends only on the samples, never on the
//! machine, so tests can hold it to a bound; `benches/lipsync.rs` prints it beside the cost.

use std::f32::consts::PI;
use std::time::Duration;

use super::{LipFrame, Viseme};

/// How open the mouth is in `frame`, whatever the vowel: the sum of the vowels' weights (at
/// most 1). Not 1 − `sil`: `sil` falls at the release time constant as a vowel rises at the
/// attack one, so it trails the opening mouth.
pub fn openness(frame: &LipFrame) -> f32 {
    frame.weights[Viseme::Sil.index() + 1..]
        .iter()
        .sum::<f32>()
        .min(1.0)
}

/// The time from `onset` (seconds into the audio) to the first frame after it whose `weight`
/// has come half way from its value at the onset (the last frame at or before it, else 0) to
/// its largest value after the onset. A frame counts from its time, the end of its window, when
/// the value is first known. `None` when the weight never rises after the onset.
///
/// Pass the frames up to the end of one sound: a louder sound later would set the peak.
pub fn onset_latency(
    frames: &[LipFrame],
    onset: f64,
    weight: impl Fn(&LipFrame) -> f32,
) -> Option<Duration> {
    let start = frames
        .iter()
        .take_while(|f| f.t <= onset)
        .last()
        .map_or(0.0, &weight);
    let after = || frames.iter().filter(|f| f.t > onset);
    let peak = after().map(&weight).fold(f32::NEG_INFINITY, f32::max);
    if peak.is_nan() || peak <= start {
        return None;
    }
    let half = start + (peak - start) / 2.0;
    let reached = after().find(|f| weight(f) >= half)?;
    Some(Duration::from_secs_f64(reached.t - onset))
}

/// A vowel-like test signal, `seconds` long at `rate` Hz: a buzz at `f0` Hz whose harmonics
/// (up to 7 kHz, falling as 1/k like a voice's) are shaped by two formant resonances at
/// `formants` Hz, scaled to a peak of `peak`. It stands in for speech where a recording would
/// make a measurement depend on a file; the built-in profile reads `[750.0, 1200.0]` as `aa`.
pub fn buzz(rate: u32, seconds: f64, f0: f32, formants: [f32; 2], peak: f32) -> Vec<f32> {
    let n = (seconds * f64::from(rate)) as usize;
    let harmonics: Vec<(f32, f32)> = (1..)
        .map(|k| k as f32 * f0)
        .take_while(|&f| f < 7000.0_f32.min(rate as f32 / 2.0))
        .enumerate()
        .map(|(i, f)| {
            // A resonance 100 Hz wide around each formant, on a floor so no harmonic vanishes.
            let gain: f32 = formants
                .iter()
                .map(|&formant| 1.0 / (1.0 + ((f - formant) / 100.0).powi(2)))
                .sum::<f32>()
                + 0.05;
            (f, gain / (i + 1) as f32)
        })
        .collect();
    let mut out: Vec<f32> = (0..n)
        .map(|i| {
            let t = i as f32 / rate as f32;
            harmonics
                .iter()
                .map(|&(f, a)| a * (2.0 * PI * f * t).sin())
                .sum()
        })
        .collect();
    let max = out.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    if max > 0.0 {
        for s in &mut out {
            *s *= peak / max;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{analyze, LipSettings, VISEMES};
    use super::*;

    fn frame(t: f64, open: f32) -> LipFrame {
        let mut weights = [0.0; VISEMES];
        weights[Viseme::Sil.index()] = 1.0 - open;
        weights[Viseme::Aa.index()] = open * 0.75;
        weights[Viseme::Oh.index()] = open * 0.25;
        LipFrame {
            t,
            volume_db: -20.0,
            viseme: Viseme::Aa,
            weights,
            gate: (-50.0, -30.0),
            closure: 0.0,
        }
    }

    #[test]
    fn latency_runs_from_the_onset_to_half_way_to_the_peak() {
        let frames: Vec<LipFrame> = [(0.1, 0.0), (0.2, 0.0), (0.3, 0.3), (0.4, 0.6), (0.5, 1.0)]
            .map(|(t, w)| frame(t, w))
            .to_vec();
        let ms = |d: Option<Duration>| d.map(|d| (d.as_secs_f64() * 1000.0).round());
        // Half of 1.0 is first reached at 0.4 s.
        assert_eq!(ms(onset_latency(&frames, 0.25, openness)), Some(150.0));
        // From 0.3 at the onset, half way to 1.0 is 0.65: 0.5 s.
        assert_eq!(ms(onset_latency(&frames, 0.3, openness)), Some(200.0));
        let sil = |f: &LipFrame| f.weights[Viseme::Sil.index()];
        assert_eq!(onset_latency(&frames, 0.25, sil), None, "sil only falls");
        assert_eq!(onset_latency(&frames, 0.5, openness), None, "nothing after");
    }

    /// Silence, then an "a" from `onset` seconds, at 48 kHz.
    fn a_after(onset: f64) -> Vec<f32> {
        let mut samples = vec![0.0; (onset * 48_000.0) as usize];
        samples.extend(buzz(48_000, 0.4, 130.0, [750.0, 1200.0], 0.5));
        samples
    }

    #[test]
    fn the_mouth_opens_within_40_ms_of_a_vowel() {
        // Onsets on and between the 16 ms hops (at 16 kHz, hops end every 256 samples).
        for onset in [0.5, 0.5037, 0.5081, 0.5123] {
            let frames = analyze(
                &a_after(onset),
                48_000,
                Default::default(),
                LipSettings::default(),
            );
            let open = onset_latency(&frames, onset, openness).unwrap();
            assert!(open <= Duration::from_millis(40), "{onset}: {open:?}");
            let aa = |f: &LipFrame| f.weights[Viseme::Aa.index()];
            let aa = onset_latency(&frames, onset, aa).unwrap();
            assert!(aa <= Duration::from_millis(40), "{onset}: aa {aa:?}");
        }
    }

    #[test]
    fn the_buzz_is_read_as_its_vowel() {
        let samples = buzz(48_000, 0.5, 130.0, [750.0, 1200.0], 0.5);
        let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!((peak - 0.5).abs() < 1e-6);
        let frames = analyze(&samples, 48_000, Default::default(), LipSettings::default());
        assert!(frames[3..].iter().all(|f| f.viseme == Viseme::Aa));
    }
}
