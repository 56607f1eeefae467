//! Any input rate to the analysis rate: a streaming windowed-sinc resampler whose cut-off sits
//! below the lower of the two Nyquist frequencies, so nothing folds back into the voice band.

use std::collections::VecDeque;

/// Input samples on each side of an output sample.
const TAPS: usize = 16;

/// Turns a stream at one rate into a stream at another.
#[derive(Debug, Clone)]
pub struct Resampler {
    /// Input samples per output sample.
    step: f64,
    /// The cut-off as a fraction of the input rate's Nyquist frequency.
    cutoff: f64,
    /// Input not yet fully used; `history[0]` is input sample `offset`.
    history: VecDeque<f32>,
    /// The input index of `history[0]`.
    offset: u64,
    /// The next output sample's position in input samples.
    position: f64,
}

impl Resampler {
    /// A resampler from `from` Hz to `to` Hz (both above 0).
    pub fn new(from: u32, to: u32) -> Resampler {
        let (from, to) = (f64::from(from.max(1)), f64::from(to.max(1)));
        Resampler {
            step: from / to,
            cutoff: (to / from).min(1.0) * 0.92,
            history: VecDeque::with_capacity(4 * TAPS),
            offset: 0,
            position: 0.0,
        }
    }

    /// Whether the two rates are equal (the samples pass through unchanged).
    pub fn is_identity(&self) -> bool {
        self.step == 1.0
    }

    /// Takes `input` and appends every output sample it completes to `out`.
    pub fn push(&mut self, input: &[f32], out: &mut Vec<f32>) {
        if self.is_identity() {
            out.extend(input.iter().map(|s| if s.is_finite() { *s } else { 0.0 }));
            return;
        }
        self.history
            .extend(input.iter().map(|s| if s.is_finite() { *s } else { 0.0 }));
        let end = self.offset + self.history.len() as u64;
        loop {
            let centre = self.position.floor() as i64;
            if centre + TAPS as i64 >= end as i64 {
                break;
            }
            let mut sum = 0.0f64;
            let mut norm = 0.0f64;
            for k in (centre - TAPS as i64 + 1)..=(centre + TAPS as i64) {
                let x = self.position - k as f64;
                let w = self.kernel(x);
                norm += w;
                if k >= self.offset as i64 {
                    if let Some(s) = self.history.get((k - self.offset as i64) as usize) {
                        sum += w * f64::from(*s);
                    }
                }
            }
            out.push(if norm > 0.0 { (sum / norm) as f32 } else { 0.0 });
            self.position += self.step;
        }
        // Drop what no later output sample reaches.
        let keep_from = (self.position.floor() as i64 - TAPS as i64).max(0) as u64;
        while self.offset < keep_from && !self.history.is_empty() {
            self.history.pop_front();
            self.offset += 1;
        }
    }

    /// The low-pass kernel at `x` input samples from the output sample: a sinc at the cut-off
    /// under a Blackman window.
    fn kernel(&self, x: f64) -> f64 {
        let span = TAPS as f64;
        if x.abs() >= span {
            return 0.0;
        }
        let arg = std::f64::consts::PI * self.cutoff * x;
        let sinc = if arg.abs() < 1e-9 {
            1.0
        } else {
            arg.sin() / arg
        };
        let t = (x / span + 1.0) / 2.0;
        let window = 0.42 - 0.5 * (2.0 * std::f64::consts::PI * t).cos()
            + 0.08 * (4.0 * std::f64::consts::PI * t).cos();
        sinc * window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(hz: f64, rate: u32, seconds: f64) -> Vec<f32> {
        let n = (f64::from(rate) * seconds) as usize;
        (0..n)
            .map(|i| (2.0 * std::f64::consts::PI * hz * i as f64 / f64::from(rate)).sin() as f32)
            .collect()
    }

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|s| s * s).sum::<f32>() / x.len().max(1) as f32).sqrt()
    }

    #[test]
    fn a_tone_keeps_its_level_and_the_length_scales() {
        for rate in [22_050, 44_100, 48_000, 8_000] {
            let mut r = Resampler::new(rate, 16_000);
            let mut out = Vec::new();
            // In uneven blocks, as a device delivers them.
            for block in tone(440.0, rate, 1.0).chunks(333) {
                r.push(block, &mut out);
            }
            let expected = 16_000.0;
            assert!(
                (out.len() as f64 - expected).abs() < 40.0,
                "{rate}: {}",
                out.len()
            );
            let level = rms(&out[400..out.len() - 400]);
            assert!(
                (level - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.02,
                "{rate}: {level}"
            );
        }
    }

    #[test]
    fn what_cannot_be_represented_is_filtered_out() {
        // 12 kHz at 48 kHz has no place at 16 kHz: it must not fold back to 4 kHz.
        let mut r = Resampler::new(48_000, 16_000);
        let mut out = Vec::new();
        r.push(&tone(12_000.0, 48_000, 0.5), &mut out);
        assert!(rms(&out[200..]) < 0.02, "{}", rms(&out[200..]));
        let mut same = Resampler::new(16_000, 16_000);
        let mut passed = Vec::new();
        same.push(&[0.5, f32::NAN, -0.5], &mut passed);
        assert_eq!(passed, [0.5, 0.0, -0.5]);
    }
}
