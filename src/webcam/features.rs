//! The face's features: fourteen measurements of the landmarks (eyes, brows, mouth corners, the
//! mouth's opening and width), each expressed against the performer's own face at rest.
//!
//! This is the measurement OpenSeeFace sends in its packets (the same names and order as
//! [`crate::ingest::openseeface::feature`]), so the webcam and OpenSeeFace's own tracker feed one
//! mapping to ARKit channels ([`crate::ingest::openseeface::set_feature_channels`]). Each raw
//! measurement is a ratio of distances in the fitted face, so it does not change with the face's
//! size in the image or with head turns. A [`Feature`] then learns that measurement's running
//! median (the face at rest) and the furthest it has been seen on each side, and reports −1..1:
//! 0 at rest, ±1 at the extremes seen so far. Extremes relax slowly towards the middle so that
//! one outlier does not flatten the range for the rest of the session.

use crate::ingest::openseeface::{feature, FEATURES};

/// Values one [`Median`] level holds before it passes their median up a level.
const MEDIAN_BLOCK: usize = 64;

/// Levels of a [`Median`]: four of 64 summarise 16.7 million values in fixed memory.
const MEDIAN_LEVELS: usize = 4;

/// A running median in fixed memory (Rousseeuw and Bassett's remedian): values fill a block of
/// 64; a full block passes its median to the next level and starts again. The median is the
/// highest non-empty level's.
#[derive(Debug, Clone)]
pub struct Median {
    /// The levels' blocks, the first taking every value.
    levels: [Vec<f32>; MEDIAN_LEVELS],
    /// The median as last worked out, `None` after a new value.
    cached: Option<f32>,
}

impl Default for Median {
    fn default() -> Median {
        Median {
            levels: std::array::from_fn(|_| Vec::with_capacity(MEDIAN_BLOCK)),
            cached: None,
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
fn median_of(values: &[f32]) -> f32 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f32::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        1 | 2 => 0.5 * (sorted[0] + sorted[n - 1]),
        _ if n.is_multiple_of(2) => 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]),
        _ => sorted[n / 2],
    }
}

impl Median {
    /// Adds a value (finite values only; others are ignored).
    pub fn push(&mut self, value: f32) {
        if !value.is_finite() {
            return;
        }
        self.cached = None;
        let mut carry = value;
        for level in 0..MEDIAN_LEVELS {
            self.levels[level].push(carry);
            if self.levels[level].len() < MEDIAN_BLOCK || level + 1 == MEDIAN_LEVELS {
                // The top level keeps its last block's worth: older summaries drop out first.
                if self.levels[level].len() > MEDIAN_BLOCK {
                    self.levels[level].remove(0);
                }
                return;
            }
            carry = median_of(&self.levels[level]);
            self.levels[level].clear();
        }
    }

    /// The running median; 0 before the first value.
    pub fn get(&mut self) -> f32 {
        if let Some(m) = self.cached {
            return m;
        }
        let m = self
            .levels
            .iter()
            .rev()
            .find(|l| !l.is_empty())
            .map_or(0.0, |l| median_of(l));
        self.cached = Some(m);
        m
    }
}

/// One feature's normaliser: its measurement against the running median and the extremes seen.
#[derive(Debug, Clone)]
pub struct Feature {
    /// The running median of the measurement: the face at rest.
    median: Median,
    /// The lowest measurement seen (once one was `threshold` below the median), and where it
    /// relaxes towards.
    low: Option<(f32, f32)>,
    /// The highest measurement seen, and where it relaxes towards.
    high: Option<(f32, f32)>,
    /// How far from the median, as a fraction of it, a measurement must be to start a side.
    threshold: f32,
    /// The last output, for the smoothing.
    last: f32,
}

/// How much of the last output each new one keeps (OpenSeeFace's 0.2).
const SMOOTHING: f32 = 0.2;

/// Where an extreme relaxes towards: this fraction of the way from it to the median.
const HARD_FACTOR: f32 = 0.15;

/// How fast an extreme relaxes, per frame.
const DECAY: f32 = 0.001;

impl Feature {
    /// A normaliser whose sides start `threshold` (a fraction of the median) away from rest.
    pub fn new(threshold: f32) -> Feature {
        Feature {
            median: Median::default(),
            low: None,
            high: None,
            threshold,
            last: 0.0,
        }
    }

    /// Takes one measurement and returns the smoothed feature in −1..=1.
    pub fn update(&mut self, x: f32) -> f32 {
        if !x.is_finite() {
            return self.last;
        }
        let raw = self.normalise(x);
        self.last = self.last * SMOOTHING + raw * (1.0 - SMOOTHING);
        self.last
    }

    /// Takes one measurement of a face turned away from its usual pose, where the measurements
    /// are distorted: read against what was learnt facing the camera, without learning from it.
    /// Past a learnt extreme reads ±1; a side not learnt yet reads 0.
    pub fn read(&mut self, x: f32) -> f32 {
        if !x.is_finite() {
            return self.last;
        }
        let median = self.median.get();
        let raw = match (x < median, self.low, self.high) {
            (true, Some((low, _)), _) if median - low > f32::EPSILON => {
                -(1.0 - (x - low) / (median - low))
            }
            (false, _, Some((high, _))) if x > median && high - median > f32::EPSILON => {
                (x - median) / (high - median)
            }
            _ => 0.0,
        };
        self.last = self.last * SMOOTHING + raw.clamp(-1.0, 1.0) * (1.0 - SMOOTHING);
        self.last
    }

    /// The measurement against the median and the extremes, −1..=1, learning as it goes. The
    /// two sides learn apart: a side reports 0 until a measurement has gone `threshold` past
    /// the median on it, and a new extreme reports ±1.
    fn normalise(&mut self, x: f32) -> f32 {
        self.median.push(x);
        let median = self.median.get();
        let threshold = self.threshold;
        let far = |d: f32| median.abs() > f32::EPSILON && d / median.abs() > threshold;
        let hard = |extreme: f32| extreme + HARD_FACTOR * (median - extreme);
        if x < median {
            match self.low {
                Some((low, _)) if x >= low => {}
                Some(_) => {
                    self.low = Some((x, hard(x)));
                    return -1.0;
                }
                None if far(median - x) => {
                    self.low = Some((x, hard(x)));
                    return -1.0;
                }
                None => return 0.0,
            }
        } else if x > median {
            match self.high {
                Some((high, _)) if x <= high => {}
                Some(_) => {
                    self.high = Some((x, hard(x)));
                    return 1.0;
                }
                None if far(x - median) => {
                    self.high = Some((x, hard(x)));
                    return 1.0;
                }
                None => return 0.0,
            }
        } else {
            return 0.0;
        }
        // Both extremes relax towards the middle, so that one outlier does not flatten the
        // range for good.
        for side in [&mut self.low, &mut self.high].into_iter().flatten() {
            let (extreme, target) = *side;
            side.0 = extreme + (target - extreme) * DECAY;
        }
        let out = match (x < median, self.low, self.high) {
            (true, Some((low, _)), _) if median - low > f32::EPSILON => {
                -(1.0 - (x - low) / (median - low))
            }
            (false, _, Some((high, _))) if high - median > f32::EPSILON => {
                (x - median) / (high - median)
            }
            _ => 0.0,
        };
        out.clamp(-1.0, 1.0)
    }
}

/// The fourteen normalisers, in [`feature`] order.
#[derive(Debug, Clone)]
pub struct Features {
    /// One normaliser per feature.
    each: [Feature; FEATURES],
}

impl Default for Features {
    fn default() -> Features {
        // The brows' bends and tilts and the mouth corners' in-out movements are small ratios
        // that start a side sooner.
        let fine = [
            feature::EYEBROW_QUIRK_L,
            feature::EYEBROW_QUIRK_R,
            feature::EYEBROW_STEEPNESS_L,
            feature::EYEBROW_STEEPNESS_R,
        ];
        let finer = [
            feature::MOUTH_CORNER_INOUT_L,
            feature::MOUTH_CORNER_INOUT_R,
            feature::MOUTH_WIDE,
        ];
        Features {
            each: std::array::from_fn(|i| {
                Feature::new(if fine.contains(&i) {
                    0.05
                } else if finer.contains(&i) {
                    0.02
                } else {
                    0.15
                })
            }),
        }
    }
}

/// A 2D point.
type P = [f32; 2];

/// The angle of the line from `a` to `b`, folded into −90°..90° so that the line's direction
/// does not matter, in radians.
fn line_angle(a: P, b: P) -> f32 {
    let mut angle = (b[1] - a[1]).atan2(b[0] - a[0]);
    let half = std::f32::consts::FRAC_PI_2;
    if angle > half {
        angle -= std::f32::consts::PI;
    } else if angle < -half {
        angle += std::f32::consts::PI;
    }
    angle
}

/// `p` turned by −`angle` about `origin`: into the frame of a line at `angle`.
fn unrotate(origin: P, p: P, angle: f32) -> P {
    let (s, c) = (-angle).sin_cos();
    let (dx, dy) = (p[0] - origin[0], p[1] - origin[1]);
    [origin[0] + c * dx - s * dy, origin[1] + s * dx + c * dy]
}

fn mean(values: &[f32]) -> f32 {
    values.iter().sum::<f32>() / values.len().max(1) as f32
}

/// The raw measurements of one face, in [`feature`] order, from its landmarks in the fitted and
/// normalised face ([`super::pose::Fit::face_points`] as x, y with +X towards the face's right
/// and +Y up, OpenSeeFace's face frame).
pub fn measure(pts: &[P; 66]) -> [f32; FEATURES] {
    use feature::*;
    let x = |i: usize| pts[i][0];
    let y = |i: usize| pts[i][1];
    let width = mean(&[x(0) - x(16), x(1) - x(15)]);
    let height = mean(&[y(27) - y(28), y(28) - y(29), y(29) - y(30)]);
    let mut m = [0.0; FEATURES];

    // An eye's opening: its upper lid over its lower lid, along the line of its corners.
    let eye = |outer: usize, inner: usize, lids: [usize; 4]| {
        let a = line_angle(pts[outer], pts[inner]);
        let l = lids.map(|i| unrotate(pts[outer], pts[i], a)[1]);
        (((l[0] + l[1]) - (l[2] + l[3])) * 0.5 / height).abs()
    };
    m[EYE_L] = eye(42, 45, [43, 44, 47, 46]);
    m[EYE_R] = eye(36, 39, [37, 38, 41, 40]);

    // The brows: their tilt against the face's own tilt, and how far they bend.
    let tilt = [(42, 45), (36, 39), (0, 16), (31, 35)]
        .map(|(a, b)| line_angle(pts[a], pts[b]).to_degrees());
    let face_tilt = mean(&tilt);
    let brow = |from: usize| {
        let a = line_angle(pts[from], pts[from + 4]);
        let ys: Vec<f32> = (from..from + 5)
            .map(|i| unrotate(pts[from], pts[i], a)[1])
            .collect();
        let bend = ys[1..4]
            .iter()
            .map(|v| (v - ys[0]).abs())
            .fold(0.0, f32::max);
        (a.to_degrees(), bend / height)
    };
    let (angle_l, bend_l) = brow(22);
    m[EYEBROW_STEEPNESS_L] = -angle_l - face_tilt;
    m[EYEBROW_QUIRK_L] = bend_l;
    let (angle_r, bend_r) = brow(17);
    m[EYEBROW_STEEPNESS_R] = angle_r - face_tilt;
    m[EYEBROW_QUIRK_R] = bend_r;
    m[EYEBROW_UPDOWN_L] = (mean(&[y(22), y(26)]) - y(27)) / height;
    m[EYEBROW_UPDOWN_R] = (mean(&[y(17), y(21)]) - y(27)) / height;

    // The mouth: its corners (62 on the face's left, 58 on its right) against the upper lip and
    // the face's midline, its opening and its width.
    let upper_lip = mean(&[y(49), y(50), y(51)]);
    let midline = mean(&[x(50), x(60), x(27), x(30), x(64), x(55)]);
    m[MOUTH_CORNER_UPDOWN_L] = (upper_lip - y(62)) / height;
    m[MOUTH_CORNER_INOUT_L] = (midline - x(62)).abs() / width;
    m[MOUTH_CORNER_UPDOWN_R] = (upper_lip - y(58)) / height;
    m[MOUTH_CORNER_INOUT_R] = (midline - x(58)).abs() / width;
    m[MOUTH_OPEN] = (mean(&[y(59), y(60), y(61)]) - mean(&[y(63), y(64), y(65)])).abs() / height;
    m[MOUTH_WIDE] = (x(58) - x(62)).abs() / width;
    m
}

impl Features {
    /// Measures one face and returns its features, each −1..=1 against the face at rest.
    pub fn update(&mut self, pts: &[P; 66]) -> [f32; FEATURES] {
        self.update_measured(&measure(pts))
    }

    /// Normalises raw measurements (as [`measure`] gives them, perhaps refined from the
    /// picture) into features, each −1..=1 against the face at rest.
    pub fn update_measured(&mut self, raw: &[f32; FEATURES]) -> [f32; FEATURES] {
        std::array::from_fn(|i| self.each[i].update(raw[i]))
    }

    /// [`Features::update_measured`] for a face turned away from its usual pose: read against
    /// what was learnt, without learning (see [`Feature::read`]).
    pub fn read_measured(&mut self, raw: &[f32; FEATURES]) -> [f32; FEATURES] {
        std::array::from_fn(|i| self.each[i].read(raw[i]))
    }
}

/// An eye's openness as OpenSeeFace sends it (1 open, 0 closed) from its eye feature: 1 at rest
/// and above, falling as the lids close past rest.
pub fn eye_openness(eye_feature: f32) -> f32 {
    1.0 - (-eye_feature).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_a_turned_face_learns_nothing() {
        let mut f = Feature::new(0.15);
        for _ in 0..50 {
            f.update(1.0);
        }
        // A side never seen facing the camera reads nothing, however far the reading.
        for _ in 0..20 {
            assert_eq!(f.read(3.0), 0.0);
        }
        // ...and taught nothing: facing the camera, a little above rest is still rest.
        assert_eq!(f.update(1.1), 0.0);
        // A side learnt facing the camera is read against what was learnt.
        f.update(2.0);
        let mut v = 0.0;
        for _ in 0..30 {
            v = f.read(1.5);
        }
        assert!((v - 0.5).abs() < 0.05, "{v}");
        for _ in 0..30 {
            v = f.read(9.0);
        }
        assert!((v - 1.0).abs() < 1e-3, "{v}");
    }

    #[test]
    fn the_running_median_follows_the_middle_in_fixed_memory() {
        let mut m = Median::default();
        assert_eq!(m.get(), 0.0);
        for v in [5.0, 1.0, 3.0] {
            m.push(v);
        }
        assert_eq!(m.get(), 3.0);
        m.push(f32::NAN);
        assert_eq!(m.get(), 3.0);
        // A million values of a skewed stream: the median of medians lands near the true one,
        // and no level grows past its block.
        let mut m = Median::default();
        let mut state = 1u32;
        for _ in 0..1_000_000 {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let u = (state >> 8) as f32 / (1u32 << 24) as f32;
            m.push(u * u);
        }
        assert!((m.get() - 0.25).abs() < 0.03, "{}", m.get());
        assert!(m.levels.iter().all(|l| l.len() <= MEDIAN_BLOCK));
    }

    #[test]
    fn a_feature_is_zero_at_rest_and_reaches_its_ends_at_the_extremes_seen() {
        let mut f = Feature::new(0.15);
        for _ in 0..100 {
            assert_eq!(f.update(1.0), 0.0);
        }
        // Far above rest: the first such value is the top.
        let mut v = 0.0;
        for _ in 0..20 {
            v = f.update(2.0);
        }
        assert!(v > 0.99, "{v}");
        // Half way is about half.
        for _ in 0..20 {
            v = f.update(1.5);
        }
        assert!((v - 0.5).abs() < 0.05, "{v}");
        for _ in 0..20 {
            v = f.update(0.5);
        }
        assert!(v < -0.99, "{v}");
        for _ in 0..20 {
            v = f.update(0.75);
        }
        assert!((v + 0.5).abs() < 0.05, "{v}");
        // Non-finite input changes nothing.
        assert_eq!(f.update(f32::INFINITY), v);
    }

    #[test]
    fn small_wobble_around_rest_stays_zero_until_a_side_is_seen() {
        let mut f = Feature::new(0.15);
        for i in 0..200 {
            let v = f.update(1.0 + 0.05 * ((i % 7) as f32 - 3.0) / 3.0);
            assert_eq!(v, 0.0);
        }
    }

    /// A face drawn on the mean face's 2D layout: eye lids, mouth and brows moved by hand.
    fn face(mouth_open: f32, eyes_open: f32, corners_up: f32) -> [P; 66] {
        let mut p = [[0.0f32; 2]; 66];
        // Jaw line: 0 on the face's right (+X), 16 on its left.
        for (i, q) in p.iter_mut().enumerate().take(17) {
            let t = i as f32 / 16.0 * std::f32::consts::PI;
            *q = [0.45 * t.cos(), -0.6 * t.sin() + 0.2];
        }
        // Brows 17..=21 over the right eye, 22..=26 over the left.
        for i in 0..5 {
            p[17 + i] = [
                0.38 - 0.065 * i as f32,
                0.42 + 0.02 * (2.0 - (i as f32 - 2.0).abs()),
            ];
            p[22 + i] = [
                -0.12 - 0.065 * i as f32,
                0.42 + 0.02 * (2.0 - (i as f32 - 2.0).abs()),
            ];
        }
        // Nose bridge 27..=30, nostrils 31..=35.
        for i in 0..4 {
            p[27 + i] = [0.0, 0.3 - 0.1 * i as f32];
        }
        for i in 0..5 {
            p[31 + i] = [0.08 - 0.04 * i as f32, -0.05];
        }
        // Eyes: corners 36, 39 (right) and 42, 45 (left); lids above and below.
        let eye = |p: &mut [P; 66], first: usize, outer: f32, inner: f32| {
            let (top, bottom) = (0.29 + 0.02 * eyes_open, 0.29 - 0.02 * eyes_open);
            p[first] = [outer, 0.29];
            p[first + 3] = [inner, 0.29];
            p[first + 1] = [outer + (inner - outer) / 3.0, top];
            p[first + 2] = [outer + 2.0 * (inner - outer) / 3.0, top];
            p[first + 5] = [outer + (inner - outer) / 3.0, bottom];
            p[first + 4] = [outer + 2.0 * (inner - outer) / 3.0, bottom];
        };
        eye(&mut p, 36, 0.32, 0.13);
        eye(&mut p, 42, -0.13, -0.32);
        // Mouth: outer 48..=57 (48 isn't read), corners 58 (right) and 62 (left), inner lips.
        p[58] = [0.13, -0.24 + corners_up];
        p[62] = [-0.13, -0.24 + corners_up];
        for (k, i) in [49, 50, 51].into_iter().enumerate() {
            p[i] = [0.05 - 0.05 * k as f32, -0.2];
        }
        for (k, i) in [59, 60, 61].into_iter().enumerate() {
            p[i] = [0.06 - 0.06 * k as f32, -0.24 + mouth_open / 2.0];
        }
        for (k, i) in [63, 64, 65].into_iter().enumerate() {
            p[i] = [-0.06 + 0.06 * k as f32, -0.24 - mouth_open / 2.0];
        }
        p[55] = [0.0, -0.34];
        p
    }

    #[test]
    fn measurements_follow_the_mouth_the_eyes_and_the_corners() {
        let rest = measure(&face(0.01, 1.0, 0.0));
        let open = measure(&face(0.2, 1.0, 0.0));
        assert!(open[feature::MOUTH_OPEN] > 5.0 * rest[feature::MOUTH_OPEN]);
        let shut = measure(&face(0.01, 0.1, 0.0));
        assert!(shut[feature::EYE_L] < 0.2 * rest[feature::EYE_L]);
        assert!(shut[feature::EYE_R] < 0.2 * rest[feature::EYE_R]);
        let smile = measure(&face(0.01, 1.0, 0.05));
        // The corners rise above their rest: updown goes down (OpenSeeFace's sign: −x smiles).
        assert!(smile[feature::MOUTH_CORNER_UPDOWN_L] < rest[feature::MOUTH_CORNER_UPDOWN_L]);
        assert!(smile[feature::MOUTH_CORNER_UPDOWN_R] < rest[feature::MOUTH_CORNER_UPDOWN_R]);
        assert!(rest.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn features_of_a_session_open_the_jaw_and_close_the_eyes() {
        let mut f = Features::default();
        for _ in 0..100 {
            f.update(&face(0.01, 1.0, 0.0));
        }
        let mut last = [0.0; FEATURES];
        for _ in 0..10 {
            last = f.update(&face(0.2, 0.05, 0.0));
        }
        assert!(last[feature::MOUTH_OPEN] > 0.9, "{last:?}");
        assert!(eye_openness(last[feature::EYE_L]) < 0.1, "{last:?}");
        for _ in 0..10 {
            last = f.update(&face(0.01, 1.0, 0.0));
        }
        assert!(last[feature::MOUTH_OPEN].abs() < 0.05, "{last:?}");
        assert!(eye_openness(last[feature::EYE_R]) > 0.95, "{last:?}");
    }
}
