//! The smoothing filters: time-constant exponential smoothing and the One Euro filter, for
//! scalars (blendshape weights) and for rotations. Allocation-free, timed by the caller's `dt`.

use std::f32::consts::PI;

use glam::Quat;

use super::settings::{FilterKind, FilterSpec};

/// `x > limit`, false for NaN: the comparisons below reject NaN by failing.
fn is_above(x: f32, limit: f32) -> bool {
    x > limit
}

/// The blend factor of a first-order low-pass with cutoff `cutoff` (Hz) over `dt` seconds, as
/// the One Euro paper writes it: `α = 1 / (1 + τ/dt)` with `τ = 1 / (2π·cutoff)`.
pub fn cutoff_alpha(dt: f32, cutoff: f32) -> f32 {
    if !is_above(dt, 0.0) || !dt.is_finite() {
        return if dt.is_infinite() && dt > 0.0 {
            1.0
        } else {
            0.0
        };
    }
    if !is_above(cutoff, 0.0) {
        return 0.0;
    }
    let tau = 1.0 / (2.0 * PI * cutoff.min(1e6));
    let a = 1.0 / (1.0 + tau / dt);
    if a.is_finite() {
        a.clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// The blend factor of an exponential filter with time constant `tau` seconds over `dt`:
/// `1 − exp(−dt/τ)`. Applying it twice over `dt/2` equals applying it once over `dt`, which is
/// what makes the filter independent of the frame rate. `tau <= 0` means no smoothing.
pub fn ema_alpha(dt: f32, tau: f32) -> f32 {
    if !is_above(tau, 0.0) || !tau.is_finite() {
        return 1.0;
    }
    if !is_above(dt, 0.0) {
        return 0.0;
    }
    let a = 1.0 - (-dt / tau).exp();
    if a.is_finite() {
        a.clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// A scalar filter of any [`FilterKind`]: the state of one channel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Filter {
    /// The settings.
    spec: FilterSpec,
    /// The filtered value, once primed.
    value: Option<f32>,
    /// The low-passed derivative (One Euro only), per second.
    speed: f32,
}

impl Filter {
    /// A filter with no history.
    pub fn new(spec: FilterSpec) -> Filter {
        Filter {
            spec,
            value: None,
            speed: 0.0,
        }
    }

    /// The settings.
    pub fn spec(&self) -> FilterSpec {
        self.spec
    }

    /// Forgets the history, so the next sample is taken as it is.
    pub fn reset(&mut self) {
        self.value = None;
        self.speed = 0.0;
    }

    /// The current filtered value, if any sample arrived.
    pub fn value(&self) -> Option<f32> {
        self.value
    }

    /// Feeds sample `x`, taken `dt` seconds after the previous one, and returns the filtered
    /// value. A non-finite `x` is ignored (the last value is returned, or 0 before any sample);
    /// `dt <= 0` leaves the state as it is apart from priming.
    pub fn step(&mut self, x: f32, dt: f32) -> f32 {
        if self.spec.filter == FilterKind::None && x.is_finite() {
            self.value = Some(x);
            return x;
        }
        let Some(prev) = self.value else {
            if !x.is_finite() {
                return 0.0;
            }
            self.value = Some(x);
            self.speed = 0.0;
            return x;
        };
        if !x.is_finite() || !is_above(dt, 0.0) {
            return prev;
        }
        let alpha = match self.spec.filter {
            FilterKind::None => 1.0,
            FilterKind::Ema => ema_alpha(dt, self.spec.tau),
            FilterKind::OneEuro => {
                // The derivative is taken against the filtered value, as in the reference
                // implementation, and low-passed at its own cutoff so that noise does not open
                // the main cutoff.
                let raw_speed = (x - prev) / dt;
                let ad = cutoff_alpha(dt, self.spec.d_cutoff);
                if raw_speed.is_finite() {
                    self.speed += ad * (raw_speed - self.speed);
                }
                let cutoff = self.spec.min_cutoff + self.spec.beta * self.speed.abs();
                cutoff_alpha(dt, cutoff)
            }
        };
        let next = prev + alpha * (x - prev);
        let next = if next.is_finite() { next } else { x };
        self.value = Some(next);
        next
    }
}

/// A rotation filter of any [`FilterKind`]: slerps towards each new rotation by the filter's
/// blend factor; the One Euro variant adapts its cutoff to the angular speed (radians/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RotationFilter {
    /// The settings.
    spec: FilterSpec,
    /// The filtered rotation, once primed.
    value: Option<Quat>,
    /// The low-passed angular speed, radians per second.
    speed: f32,
}

impl RotationFilter {
    /// A filter with no history.
    pub fn new(spec: FilterSpec) -> RotationFilter {
        RotationFilter {
            spec,
            value: None,
            speed: 0.0,
        }
    }

    /// Forgets the history.
    pub fn reset(&mut self) {
        self.value = None;
        self.speed = 0.0;
    }

    /// The current filtered rotation, if any arrived.
    pub fn value(&self) -> Option<Quat> {
        self.value
    }

    /// Feeds rotation `q` (ignored unless finite and non-degenerate), `dt` seconds after the
    /// previous one, and returns the filtered, unit-length rotation.
    pub fn step(&mut self, q: Quat, dt: f32) -> Option<Quat> {
        let Some(q) = sane_rotation(q) else {
            return self.value;
        };
        if self.spec.filter == FilterKind::None {
            self.value = Some(q);
            return self.value;
        }
        let Some(prev) = self.value else {
            self.value = Some(q);
            self.speed = 0.0;
            return self.value;
        };
        if !is_above(dt, 0.0) {
            return self.value;
        }
        let alpha = match self.spec.filter {
            FilterKind::None => 1.0,
            FilterKind::Ema => ema_alpha(dt, self.spec.tau),
            FilterKind::OneEuro => {
                let raw_speed = prev.angle_between(q) / dt;
                let ad = cutoff_alpha(dt, self.spec.d_cutoff);
                if raw_speed.is_finite() {
                    self.speed += ad * (raw_speed - self.speed);
                }
                cutoff_alpha(dt, self.spec.min_cutoff + self.spec.beta * self.speed)
            }
        };
        let next = sane_rotation(prev.slerp(q, alpha)).unwrap_or(q);
        self.value = Some(next);
        self.value
    }
}

/// `q` normalised, or `None` when it is not finite or has no direction.
pub fn sane_rotation(q: Quat) -> Option<Quat> {
    if !q.is_finite() {
        return None;
    }
    let len = q.length();
    if !is_above(len, 1e-6) || !len.is_finite() {
        return None;
    }
    let n = q / len;
    n.is_finite().then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn euro(min_cutoff: f32, beta: f32, d_cutoff: f32) -> FilterSpec {
        FilterSpec {
            filter: FilterKind::OneEuro,
            tau: 0.0,
            min_cutoff,
            beta,
            d_cutoff,
        }
    }

    #[test]
    fn alphas_stay_in_range_for_any_input() {
        for dt in [-1.0, 0.0, 1e-30, 0.016, 1e30, f32::NAN, f32::INFINITY] {
            for c in [-1.0, 0.0, 1e-30, 1.0, 1e30, f32::NAN, f32::INFINITY] {
                let a = cutoff_alpha(dt, c);
                assert!((0.0..=1.0).contains(&a), "cutoff_alpha({dt}, {c}) = {a}");
                let e = ema_alpha(dt, c);
                assert!((0.0..=1.0).contains(&e), "ema_alpha({dt}, {c}) = {e}");
            }
        }
    }

    #[test]
    fn cutoff_alpha_matches_the_paper() {
        // fc = 1 Hz at 60 Hz: tau = 1/(2π) s, alpha = 1/(1 + 60/(2π)).
        let expected = 1.0 / (1.0 + 60.0 / (2.0 * PI));
        assert!((cutoff_alpha(1.0 / 60.0, 1.0) - expected).abs() < 1e-6);
    }

    #[test]
    fn one_euro_smooths_a_still_signal_strongly() {
        // Small alternating noise around 0.3: the speed estimate stays low, so the cutoff stays
        // near min_cutoff and the output barely moves.
        let mut f = Filter::new(euro(1.0, 0.5, 1.0));
        f.step(0.3, 0.0);
        let mut worst = 0.0f32;
        for i in 0..240 {
            let x = if i % 2 == 0 { 0.31 } else { 0.29 };
            let y = f.step(x, 1.0 / 60.0);
            if i > 30 {
                worst = worst.max((y - 0.3).abs());
            }
        }
        // The input swings ±0.01; the output must swing well under a fifth of that.
        assert!(worst < 0.002, "{worst}");
    }

    #[test]
    fn one_euro_follows_fast_motion_with_little_lag() {
        // A ramp 0 → 1 in 100 ms: with beta the filter must be far closer to the input than a
        // filter with the same min_cutoff and no beta.
        let run = |beta: f32| {
            let mut f = Filter::new(euro(1.0, beta, 1.0));
            f.step(0.0, 0.0);
            let mut out = 0.0;
            for i in 1..=6 {
                out = f.step(i as f32 / 6.0, 1.0 / 60.0);
            }
            out
        };
        let (slow, fast) = (run(0.0), run(5.0));
        assert!(slow < 0.4, "{slow}");
        assert!(fast > 0.8, "{fast}");
    }

    #[test]
    fn derivative_cutoff_keeps_noise_from_opening_the_filter() {
        // The same noisy still signal through a low and a high derivative cutoff: a high
        // d_cutoff lets the noise's speed through, opening the main cutoff, so more noise gets
        // out.
        let run = |d_cutoff: f32| {
            let mut f = Filter::new(euro(1.0, 2.0, d_cutoff));
            f.step(0.5, 0.0);
            let mut energy = 0.0f32;
            for i in 0..300 {
                let x = 0.5 + if i % 2 == 0 { 0.02 } else { -0.02 };
                let y = f.step(x, 1.0 / 60.0);
                if i > 60 {
                    energy += (y - 0.5) * (y - 0.5);
                }
            }
            energy
        };
        let (low, high) = (run(0.5), run(30.0));
        assert!(low * 2.0 < high, "low {low} high {high}");
    }

    #[test]
    fn garbage_input_leaves_the_state_finite() {
        let mut f = Filter::new(euro(1.0, 10.0, 1.0));
        assert_eq!(f.step(f32::NAN, 0.0), 0.0);
        f.step(0.5, 0.0);
        for (x, dt) in [
            (f32::NAN, 0.016),
            (f32::INFINITY, 0.016),
            (1e30, 1e-30),
            (0.5, f32::NAN),
            (0.5, -1.0),
            (-1e30, 1e30),
        ] {
            assert!(f.step(x, dt).is_finite());
        }
        let mut r = RotationFilter::new(euro(1.0, 1.0, 1.0));
        assert_eq!(r.step(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0), 0.0), None);
        r.step(Quat::IDENTITY, 0.0);
        let q = r.step(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0), 0.016).unwrap();
        assert!((q.length() - 1.0).abs() < 1e-5);
        let q = r.step(Quat::from_rotation_y(3.0), 1e-30).unwrap();
        assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-5);
    }
}
