//! One analysis window of 16 kHz audio to its loudness and 12 mel-frequency cepstral
//! coefficients: pre-emphasis, a Hamming window, a real FFT, 30 triangular mel bands, their
//! log energies and a DCT-II without its first coefficient (so the shape of the spectrum, not
//! its loudness).

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

/// The analysis sample rate, Hz.
pub const SAMPLE_RATE: u32 = 16_000;
/// Samples per analysis window: 32 ms.
pub const WINDOW: usize = 512;
/// Samples between windows: 16 ms.
pub const HOP: usize = 256;
/// Mel bands.
pub const MEL_BANDS: usize = 30;
/// Cepstral coefficients kept (c1 to c12).
pub const COEFFICIENTS: usize = 12;
/// The pre-emphasis filter's coefficient.
const PRE_EMPHASIS: f32 = 0.97;
/// The quietest level reported, dB (full scale).
pub const SILENT_DB: f32 = -120.0;

/// What one window holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Features {
    /// The window's RMS level in dB full scale (0 dB: a full-scale square wave).
    pub volume_db: f32,
    /// c1 to c12.
    pub mfcc: [f32; COEFFICIENTS],
}

/// A mel frequency from Hz.
fn mel(hz: f32) -> f32 {
    1127.0 * (1.0 + hz / 700.0).ln()
}

/// Hz from a mel frequency.
fn hz(mel: f32) -> f32 {
    700.0 * ((mel / 1127.0).exp() - 1.0)
}

/// Computes [`Features`] of [`WINDOW`]-sample windows; reuses its buffers (no allocation per
/// window).
pub struct Analyzer {
    fft: Arc<dyn RealToComplex<f32>>,
    window: Vec<f32>,
    /// Per band: the first FFT bin and the triangle's weights from there.
    bands: Vec<(usize, Vec<f32>)>,
    /// `dct[k][m]`: the DCT-II basis for coefficient k + 1.
    dct: Vec<[f32; MEL_BANDS]>,
    input: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer").finish_non_exhaustive()
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer::new()
    }
}

impl Analyzer {
    /// An analyzer for [`WINDOW`]-sample windows at [`SAMPLE_RATE`].
    pub fn new() -> Analyzer {
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(WINDOW);
        let window = (0..WINDOW)
            .map(|i| {
                0.54 - 0.46 * (2.0 * std::f32::consts::PI * i as f32 / (WINDOW - 1) as f32).cos()
            })
            .collect();
        let bins = WINDOW / 2 + 1;
        let bin_hz = SAMPLE_RATE as f32 / WINDOW as f32;
        let (low, high) = (mel(60.0), mel(SAMPLE_RATE as f32 / 2.0));
        let edges: Vec<f32> = (0..MEL_BANDS + 2)
            .map(|i| hz(low + (high - low) * i as f32 / (MEL_BANDS + 1) as f32) / bin_hz)
            .collect();
        let bands = (0..MEL_BANDS)
            .map(|b| {
                let (left, centre, right) = (edges[b], edges[b + 1], edges[b + 2]);
                let first = left.ceil() as usize;
                let last = (right.floor() as usize).min(bins - 1);
                let weights = (first..=last)
                    .map(|k| {
                        let k = k as f32;
                        if k <= centre {
                            (k - left) / (centre - left).max(1e-6)
                        } else {
                            (right - k) / (right - centre).max(1e-6)
                        }
                        .max(0.0)
                    })
                    .collect();
                (first, weights)
            })
            .collect();
        let dct = (1..=COEFFICIENTS)
            .map(|k| {
                std::array::from_fn(|m| {
                    (std::f32::consts::PI * k as f32 * (m as f32 + 0.5) / MEL_BANDS as f32).cos()
                })
            })
            .collect();
        Analyzer {
            input: fft.make_input_vec(),
            spectrum: fft.make_output_vec(),
            scratch: fft.make_scratch_vec(),
            fft,
            window,
            bands,
            dct,
        }
    }

    /// The features of `samples` ([`WINDOW`] of them at [`SAMPLE_RATE`], -1 to 1; a shorter
    /// slice is padded with silence, a longer one cut). Non-finite samples count as silence.
    pub fn analyze(&mut self, samples: &[f32]) -> Features {
        let sample = |i: usize| {
            samples
                .get(i)
                .copied()
                .filter(|s| s.is_finite())
                .unwrap_or(0.0)
        };
        let energy: f32 = (0..WINDOW).map(|i| sample(i) * sample(i)).sum();
        let rms = (energy / WINDOW as f32).sqrt();
        let volume_db = if rms > 0.0 {
            (20.0 * rms.log10()).max(SILENT_DB)
        } else {
            SILENT_DB
        };
        for i in 0..WINDOW {
            let previous = if i == 0 { sample(0) } else { sample(i - 1) };
            self.input[i] = (sample(i) - PRE_EMPHASIS * previous) * self.window[i];
        }
        let mut mfcc = [0.0; COEFFICIENTS];
        if self
            .fft
            .process_with_scratch(&mut self.input, &mut self.spectrum, &mut self.scratch)
            .is_err()
        {
            return Features { volume_db, mfcc };
        }
        let mut log_mel = [0.0f32; MEL_BANDS];
        for (out, (first, weights)) in log_mel.iter_mut().zip(&self.bands) {
            let power: f32 = weights
                .iter()
                .zip(&self.spectrum[*first..])
                .map(|(w, c)| w * c.norm_sqr())
                .sum();
            *out = 10.0 * power.max(1e-10).log10();
        }
        for (c, basis) in mfcc.iter_mut().zip(&self.dct) {
            *c = basis.iter().zip(&log_mel).map(|(b, m)| b * m).sum::<f32>() / MEL_BANDS as f32;
        }
        Features { volume_db, mfcc }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(hz: f32, amplitude: f32) -> Vec<f32> {
        (0..WINDOW)
            .map(|i| {
                amplitude * (2.0 * std::f32::consts::PI * hz * i as f32 / SAMPLE_RATE as f32).sin()
            })
            .collect()
    }

    #[test]
    fn volume_is_in_decibels_full_scale() {
        let mut a = Analyzer::new();
        // A sine's RMS is its amplitude over root two: -3 dB at full scale.
        let loud = a.analyze(&tone(440.0, 1.0)).volume_db;
        assert!((loud + 3.01).abs() < 0.05, "{loud}");
        let quiet = a.analyze(&tone(440.0, 0.01)).volume_db;
        assert!((quiet + 43.01).abs() < 0.05, "{quiet}");
        assert_eq!(a.analyze(&[0.0; WINDOW]).volume_db, SILENT_DB);
        assert_eq!(a.analyze(&[f32::NAN; WINDOW]).volume_db, SILENT_DB);
    }

    #[test]
    fn cepstra_follow_the_spectrum_not_the_loudness() {
        let mut a = Analyzer::new();
        let low = a.analyze(&tone(300.0, 0.5)).mfcc;
        let low_quiet = a.analyze(&tone(300.0, 0.05)).mfcc;
        let high = a.analyze(&tone(3000.0, 0.5)).mfcc;
        let distance = |x: &[f32; COEFFICIENTS], y: &[f32; COEFFICIENTS]| {
            x.iter()
                .zip(y)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f32>()
                .sqrt()
        };
        assert!(distance(&low, &low_quiet) < 0.5, "{low:?} {low_quiet:?}");
        assert!(distance(&low, &high) > 5.0, "{low:?} {high:?}");
        assert!(low.iter().chain(&high).all(|c| c.is_finite()));
    }
}
