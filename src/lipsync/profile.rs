//! Vowel profiles: one mean cepstrum per vowel, learnt from recordings of a voice saying it, and
//! the classification of a window against them.

use super::features::{Analyzer, Features, COEFFICIENTS, HOP, WINDOW};
use super::resample::Resampler;
use super::Viseme;

/// The vowels a profile holds, in [`Viseme`] order after `sil`.
pub const VOWELS: [Viseme; 5] = [Viseme::Aa, Viseme::Ih, Viseme::Ou, Viseme::Ee, Viseme::Oh];

/// How far (root mean square over the coefficients) a window may lie from a vowel's mean before
/// its score falls to about 0.6 of a perfect match.
const SPREAD: f32 = 3.0;

/// A voice's vowels: the mean cepstrum of each.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The mean c1..c12 of each of [`VOWELS`].
    pub means: [[f32; COEFFICIENTS]; 5],
}

impl Default for Profile {
    fn default() -> Self {
        Profile::builtin()
    }
}

impl Profile {
    /// The profile facewire starts with before a performer records their own: the means of a
    /// synthetic voice saying the five vowels at several pitches (see
    /// `examples/vowel_profile.rs`, which prints these numbers).
    pub fn builtin() -> Profile {
        Profile { means: BUILTIN }
    }

    /// Learns a profile from `recordings`: for each of [`VOWELS`], mono samples at `rate` Hz of
    /// a voice holding it. Windows quieter than `floor_db` are left out; a vowel with no loud
    /// window keeps the built-in mean.
    pub fn learn(recordings: &[(Viseme, &[f32])], rate: u32, floor_db: f32) -> Profile {
        let mut sums = [[0.0f64; COEFFICIENTS]; 5];
        let mut counts = [0usize; 5];
        let mut analyzer = Analyzer::new();
        for (viseme, samples) in recordings {
            let Some(v) = VOWELS.iter().position(|x| x == viseme) else {
                continue;
            };
            let mut resampled = Vec::with_capacity(samples.len());
            Resampler::new(rate, super::features::SAMPLE_RATE).push(samples, &mut resampled);
            let mut start = 0;
            while start + WINDOW <= resampled.len() {
                let Features { volume_db, mfcc } = analyzer.analyze(&resampled[start..]);
                if volume_db >= floor_db {
                    for (s, c) in sums[v].iter_mut().zip(mfcc) {
                        *s += f64::from(c);
                    }
                    counts[v] += 1;
                }
                start += HOP;
            }
        }
        let mut means = BUILTIN;
        for v in 0..5 {
            if counts[v] > 0 {
                for (m, s) in means[v].iter_mut().zip(sums[v]) {
                    *m = (s / counts[v] as f64) as f32;
                }
            }
        }
        Profile { means }
    }

    /// How well `mfcc` matches each of [`VOWELS`], summing to 1: a Gaussian of the distance to
    /// each mean, normalised.
    pub fn scores(&self, mfcc: &[f32; COEFFICIENTS]) -> [f32; 5] {
        let mut scores = [0.0f32; 5];
        for (score, mean) in scores.iter_mut().zip(&self.means) {
            let d2 = mean
                .iter()
                .zip(mfcc)
                .map(|(m, c)| (m - c) * (m - c))
                .sum::<f32>()
                / COEFFICIENTS as f32;
            *score = (-d2 / (2.0 * SPREAD * SPREAD)).exp();
        }
        let total: f32 = scores.iter().sum();
        if total > 1e-30 && total.is_finite() {
            for s in &mut scores {
                *s /= total;
            }
        } else {
            // Far from every vowel: the nearest one takes it all.
            let nearest = self
                .means
                .iter()
                .map(|m| {
                    m.iter()
                        .zip(mfcc)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f32>()
                })
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map_or(0, |(i, _)| i);
            scores = [0.0; 5];
            scores[nearest] = 1.0;
        }
        scores
    }
}

/// The built-in means: espeak-ng's Japanese voice holding each vowel at pitches 30, 50 and 70,
/// from `cargo run --example vowel_profile`.
const BUILTIN: [[f32; COEFFICIENTS]; 5] = [
    // aa
    [
        4.442, -4.504, -1.118, -4.270, -0.498, 5.663, -3.210, -0.904, -0.093, 0.986, -1.194, -1.664,
    ],
    // ih
    [
        -3.498, 0.822, 10.846, 1.593, -4.916, 2.399, -2.659, -0.589, -2.858, -0.897, 1.231, -1.619,
    ],
    // ou
    [
        3.006, 3.544, 4.128, -4.852, -5.288, 1.805, -0.769, 2.074, -3.251, -1.002, 0.223, -3.400,
    ],
    // ee
    [
        0.333, -2.382, 8.237, -0.010, -7.494, -1.485, -2.585, 3.218, -0.828, -0.465, 1.516, 0.297,
    ],
    // oh
    [
        3.665, 1.696, 2.341, -6.225, -7.148, 4.713, -2.006, 1.136, 0.673, -0.358, -1.192, 0.172,
    ],
];
