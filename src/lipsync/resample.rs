//! Any input rate to the analysis rate: a streaming windowed-sinc resampler whose cut-off sits
//! below the lower of the two Nyquist frequencies, so nothing folds back into the voice band.

use std::collections::VecDeque;

/// Input samples on each side of an output sample.
const TAPS: usize = 16;

/// The most kernel phases precomputed. Output samples fall at `up` distinct fractional
/// positions between input samples (`up` = the output rate over the rates' greatest common
/// divisor: 1 from 48 kHz, 160 from 44.1 kHz, 320 from 22.05 kHz); rate pairs with more phases
/// than this compute the kernel tap by tap instead.
const MAX_PHASES: u64 = 4096;

/// Turns a stream at one rate into a stream at another.
#[derive(Debug, Clone)]
pub struct Resampler {
    /// Input samples per output sample, `down / up` in lowest terms.
    down: u64,
    /// See `down`.
    up: u64,
    /// The cut-off as a fraction of the input rate's Nyquist frequency.
    cutoff: f64,
    /// Per phase `p` (an output sample `p / up` of an input sample past its centre input), the
    /// kernel's weights of the inputs from `centre - TAPS + 1` to `centre + TAPS`, divided by
    /// their sum; empty when there are more than [`MAX_PHASES`] phases.
    table: Vec<[f32; 2 * TAPS]>,
    /// Input not yet fully used; `history[0]` is input sample `offset`.
    history: VecDeque<f32>,
    /// The input index of `history[0]`.
    offset: u64,
    /// Output samples made so far: the next lies at input position `produced * down / up`.
    produced: u64,
}

/// The greatest common divisor.
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Resampler {
    /// A resampler from `from` Hz to `to` Hz (both above 0).
    pub fn new(from: u32, to: u32) -> Resampler {
        let (from, to) = (u64::from(from.max(1)), u64::from(to.max(1)));
        let g = gcd(from, to);
        let mut r = Resampler {
            down: from / g,
            up: to / g,
            cutoff: (to as f64 / from as f64).min(1.0) * 0.92,
            table: Vec::new(),
            history: VecDeque::with_capacity(4 * TAPS),
            offset: 0,
            produced: 0,
        };
        if r.up <= MAX_PHASES && !r.is_identity() {
            r.table = (0..r.up)
                .map(|p| {
                    let frac = p as f64 / r.up as f64;
                    let weights: [f64; 2 * TAPS] = std::array::from_fn(|j| {
                        kernel(r.cutoff, frac + (TAPS - 1) as f64 - j as f64)
                    });
                    let norm: f64 = weights.iter().sum();
                    weights.map(|w| if norm > 0.0 { (w / norm) as f32 } else { 0.0 })
                })
                .collect();
        }
        r
    }

    /// Whether the two rates are equal (the samples pass through unchanged).
    pub fn is_identity(&self) -> bool {
        self.down == self.up
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
        let cutoff = self.cutoff;
        let history = self.history.make_contiguous();
        loop {
            let at = self.produced * self.down;
            let centre = at / self.up;
            if centre + TAPS as u64 >= end {
                break;
            }
            // The inputs from `centre - TAPS + 1`, those before the stream's start or already
            // dropped (no later output reaches them) counting as silence.
            let first = centre as i64 - TAPS as i64 + 1;
            let input = |j: usize| {
                let k = first + j as i64 - self.offset as i64;
                usize::try_from(k)
                    .ok()
                    .and_then(|k| history.get(k))
                    .copied()
            };
            let whole = usize::try_from(first - self.offset as i64)
                .ok()
                .and_then(|k| history.get(k..k + 2 * TAPS));
            let value = match self.table.get((at % self.up) as usize) {
                Some(weights) => match whole {
                    Some(inputs) => weights.iter().zip(inputs).map(|(w, s)| w * s).sum(),
                    None => weights
                        .iter()
                        .enumerate()
                        .filter_map(|(j, w)| input(j).map(|s| w * s))
                        .sum(),
                },
                None => {
                    let position = at as f64 / self.up as f64;
                    let mut sum = 0.0f64;
                    let mut norm = 0.0f64;
                    for j in 0..2 * TAPS {
                        let w = kernel(cutoff, position - (first + j as i64) as f64);
                        norm += w;
                        if let Some(s) = input(j) {
                            sum += w * f64::from(s);
                        }
                    }
                    if norm > 0.0 {
                        (sum / norm) as f32
                    } else {
                        0.0
                    }
                }
            };
            out.push(value);
            self.produced += 1;
        }
        // Drop what no later output sample reaches.
        let next = self.produced * self.down / self.up;
        let keep_from = next.saturating_sub(TAPS as u64);
        while self.offset < keep_from && !self.history.is_empty() {
            self.history.pop_front();
            self.offset += 1;
        }
    }
}

/// The low-pass kernel at `x` input samples from the output sample: a sinc at `cutoff` (a
/// fraction of the input's Nyquist frequency) under a Blackman window.
fn kernel(cutoff: f64, x: f64) -> f64 {
    let span = TAPS as f64;
    if x.abs() >= span {
        return 0.0;
    }
    let arg = std::f64::consts::PI * cutoff * x;
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

    #[test]
    fn the_precomputed_kernel_gives_what_the_kernel_gives() {
        for rate in [48_000, 44_100, 22_050, 8_000] {
            let input = tone(440.0, rate, 0.3);
            let mut fast = Resampler::new(rate, 16_000);
            assert!(!fast.table.is_empty(), "{rate}");
            let mut exact = fast.clone();
            exact.table.clear();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for block in input.chunks(441) {
                fast.push(block, &mut a);
                exact.push(block, &mut b);
            }
            assert_eq!(a.len(), b.len(), "{rate}");
            let worst = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max);
            assert!(worst < 1e-5, "{rate}: {worst}");
        }
        // Rates with too many phases for a table still resample.
        let mut odd = Resampler::new(44_057, 16_000);
        assert!(odd.table.is_empty());
        let mut out = Vec::new();
        odd.push(&tone(440.0, 44_057, 1.0), &mut out);
        assert!((out.len() as f64 - 16_000.0).abs() < 40.0, "{}", out.len());
        assert!((rms(&out[400..]) - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.02);
    }
}
