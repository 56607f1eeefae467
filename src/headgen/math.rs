//! Platform-independent scalar maths for the head generator: sine, cosine and easing curves.
//!
//! The standard library's `sin`/`cos` call the platform's libm, whose last bits differ between
//! operating systems. The generated GLB must be identical everywhere, so these are computed here
//! with plain IEEE arithmetic (range reduction and Taylor series in `f64`), which every platform
//! rounds the same way.

use std::f64::consts::{FRAC_PI_2, PI, TAU};

/// Taylor series of sine on [-π/2, π/2], accurate to about 1e-12.
fn sin_reduced(x: f64) -> f64 {
    let x2 = x * x;
    let mut term = x;
    let mut sum = x;
    for k in 1..10 {
        let k = k as f64;
        term *= -x2 / ((2.0 * k) * (2.0 * k + 1.0));
        sum += term;
    }
    sum
}

/// Sine of `x` radians; odd (`sin(-x) == -sin(x)` bit for bit), which keeps mirrored geometry
/// exactly symmetric.
pub fn sin(x: f32) -> f32 {
    let ax = f64::from(x).abs();
    let mut r = ax - (ax / TAU).round() * TAU;
    if r > FRAC_PI_2 {
        r = PI - r;
    } else if r < -FRAC_PI_2 {
        r = -PI - r;
    }
    let s = sin_reduced(r) as f32;
    if x < 0.0 {
        -s
    } else {
        s
    }
}

/// Cosine of `x` radians; even (`cos(-x) == cos(x)` bit for bit).
pub fn cos(x: f32) -> f32 {
    let ax = f64::from(x).abs();
    let r = (ax - (ax / TAU).round() * TAU).abs();
    // cos(r) = sin(π/2 - r), with π/2 - r in [-π/2, π/2] for r in [0, π].
    sin_reduced(FRAC_PI_2 - r) as f32
}

/// Hermite smoothstep from 0 at `e0` to 1 at `e1`; `e0 > e1` gives a falling edge.
pub fn smoothstep(e0: f32, e1: f32, x: f32) -> f32 {
    let t = clamp01((x - e0) / (e1 - e0));
    t * t * (3.0 - 2.0 * t)
}

/// `x` clamped to [0, 1]; NaN maps to 0.
pub fn clamp01(x: f32) -> f32 {
    if x > 0.0 {
        x.min(1.0)
    } else {
        0.0
    }
}

/// `x * x`.
pub fn sq(x: f32) -> f32 {
    x * x
}

/// Linear interpolation from `a` (t = 0) to `b` (t = 1).
pub fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// Sign of `x` as -1, 0 or 1 (unlike `f32::signum`, zero stays zero).
pub fn sgn(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// A smooth maximum of `a` and `b` that blends over a band of width `k` (polynomial smooth max).
pub fn smooth_max(a: f32, b: f32, k: f32) -> f32 {
    let h = clamp01(0.5 + 0.5 * (a - b) / k);
    lerp(b, a, h) + k * h * (1.0 - h)
}

/// A bump that is 1 at distance 0 and falls smoothly to 0 at distance `radius`.
pub fn bump(distance: f32, radius: f32) -> f32 {
    1.0 - smoothstep(0.0, radius, distance)
}

/// A small deterministic integer hash mapped to [0, 1), used for painted noise.
pub fn hash01(mut x: u32) -> f32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    (x >> 8) as f32 / (1u32 << 24) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sine_and_cosine_match_std_closely() {
        let mut x = -10.0f32;
        while x < 10.0 {
            assert!((sin(x) - x.sin()).abs() < 2e-6, "sin({x})");
            assert!((cos(x) - x.cos()).abs() < 2e-6, "cos({x})");
            x += 0.0137;
        }
    }

    #[test]
    fn sine_is_odd_and_cosine_even_bit_for_bit() {
        for i in 0..1000 {
            let x = i as f32 * 0.00731;
            // `==` rather than bit equality: sin(0) and -sin(0) are +0 and -0.
            assert!(sin(-x) == -sin(x));
            assert_eq!(cos(-x).to_bits(), cos(x).to_bits());
        }
    }

    #[test]
    fn smoothstep_handles_both_directions() {
        assert_eq!(smoothstep(0.0, 1.0, -1.0), 0.0);
        assert_eq!(smoothstep(0.0, 1.0, 2.0), 1.0);
        assert_eq!(smoothstep(1.0, 0.0, 2.0), 0.0);
        assert_eq!(smoothstep(1.0, 0.0, -1.0), 1.0);
        assert!((smoothstep(0.0, 1.0, 0.5) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn smooth_max_never_goes_below_either_argument() {
        for i in 0..100 {
            let a = i as f32 * 0.01;
            let m = smooth_max(a, 0.5, 0.1);
            assert!(m >= a && m >= 0.5 - 1e-6);
        }
    }
}
