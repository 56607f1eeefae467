//! Response curves of mapped targets: linear, smoothstep, piecewise linear and the
//! Fritsch–Carlson monotone cubic, evaluated without allocating.

use super::file::CurveSpec;

/// A compiled response curve.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Curve {
    /// `y = x`.
    #[default]
    Linear,
    /// `y = 3x² − 2x³` on `x` clamped to [0, 1].
    Smoothstep,
    /// Straight lines between points, flat beyond the ends.
    Points(Vec<[f32; 2]>),
    /// A monotone cubic Hermite spline: points `[x, y]` with one tangent each.
    Spline(Vec<[f32; 3]>),
}

impl Curve {
    /// Compiles a curve as written (the points are already checked: at least two, x strictly
    /// increasing, finite).
    pub fn from_spec(spec: &CurveSpec) -> Curve {
        match spec {
            CurveSpec::Linear => Curve::Linear,
            CurveSpec::Smoothstep => Curve::Smoothstep,
            CurveSpec::Points(p) => Curve::Points(p.clone()),
            CurveSpec::Spline(p) => Curve::Spline(fritsch_carlson(p)),
        }
    }

    /// `y(x)`; finite for every finite `x` (non-finite `x` counts as 0).
    pub fn eval(&self, x: f32) -> f32 {
        let x = if x.is_finite() { x } else { 0.0 };
        let y = match self {
            Curve::Linear => x,
            Curve::Smoothstep => {
                let t = x.clamp(0.0, 1.0);
                t * t * (3.0 - 2.0 * t)
            }
            Curve::Points(p) => piecewise(p, x),
            Curve::Spline(p) => hermite(p, x),
        };
        if y.is_finite() {
            y
        } else {
            0.0
        }
    }
}

/// Index `i` of the segment `[p[i], p[i + 1]]` holding `x`, or the end value when `x` lies
/// outside the points.
fn segment<T>(p: &[T], x: f32, xof: impl Fn(&T) -> f32) -> Result<usize, usize> {
    let n = p.len();
    if n == 0 {
        return Err(0);
    }
    if x <= xof(&p[0]) {
        return Err(0);
    }
    if x >= xof(&p[n - 1]) {
        return Err(n - 1);
    }
    // The first point whose x exceeds `x`; it is in 1..n because of the checks above.
    let upper = p.partition_point(|q| xof(q) <= x);
    Ok(upper.clamp(1, n - 1) - 1)
}

fn piecewise(p: &[[f32; 2]], x: f32) -> f32 {
    match segment(p, x, |q| q[0]) {
        Err(i) => p.get(i).map_or(x, |q| q[1]),
        Ok(i) => {
            let ([x0, y0], [x1, y1]) = (p[i], p[i + 1]);
            let t = (x - x0) / (x1 - x0);
            y0 + t * (y1 - y0)
        }
    }
}

fn hermite(p: &[[f32; 3]], x: f32) -> f32 {
    match segment(p, x, |q| q[0]) {
        Err(i) => p.get(i).map_or(x, |q| q[1]),
        Ok(i) => {
            let ([x0, y0, m0], [x1, y1, m1]) = (p[i], p[i + 1]);
            let h = x1 - x0;
            let t = (x - x0) / h;
            let (t2, t3) = (t * t, t * t * t);
            let h00 = 2.0 * t3 - 3.0 * t2 + 1.0;
            let h10 = t3 - 2.0 * t2 + t;
            let h01 = -2.0 * t3 + 3.0 * t2;
            let h11 = t3 - t2;
            let y = h00 * y0 + h10 * h * m0 + h01 * y1 + h11 * h * m1;
            // Rounding can put y a hair outside the segment's range; monotone data never
            // overshoots, so clamp to it.
            y.clamp(y0.min(y1), y0.max(y1))
        }
    }
}

/// Tangents for a monotone cubic through `points` (Fritsch and Carlson, 1980): secant averages,
/// zeroed at local extrema and flat segments, then shrunk where they would overshoot.
fn fritsch_carlson(points: &[[f32; 2]]) -> Vec<[f32; 3]> {
    let n = points.len();
    if n < 2 {
        return points.iter().map(|&[x, y]| [x, y, 0.0]).collect();
    }
    let secant: Vec<f32> = points
        .windows(2)
        .map(|w| (w[1][1] - w[0][1]) / (w[1][0] - w[0][0]))
        .collect();
    let mut m = vec![0.0f32; n];
    m[0] = secant[0];
    m[n - 1] = secant[n - 2];
    for k in 1..n - 1 {
        let (a, b) = (secant[k - 1], secant[k]);
        m[k] = if a * b <= 0.0 { 0.0 } else { (a + b) * 0.5 };
    }
    for k in 0..n - 1 {
        let d = secant[k];
        if d == 0.0 {
            m[k] = 0.0;
            m[k + 1] = 0.0;
            continue;
        }
        let (a, b) = (m[k] / d, m[k + 1] / d);
        let s = a * a + b * b;
        if s > 9.0 {
            let tau = 3.0 / s.sqrt();
            m[k] = tau * a * d;
            m[k + 1] = tau * b * d;
        }
    }
    points
        .iter()
        .zip(m)
        .map(|(&[x, y], m)| [x, y, if m.is_finite() { m } else { 0.0 }])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoothstep_and_linear() {
        assert_eq!(Curve::Linear.eval(0.3), 0.3);
        assert_eq!(Curve::Smoothstep.eval(0.5), 0.5);
        assert_eq!(Curve::Smoothstep.eval(-2.0), 0.0);
        assert_eq!(Curve::Smoothstep.eval(7.0), 1.0);
        assert!((Curve::Smoothstep.eval(0.25) - 0.15625).abs() < 1e-6);
        assert_eq!(Curve::Linear.eval(f32::NAN), 0.0);
    }

    #[test]
    fn piecewise_interpolates_and_holds_the_ends() {
        let c = Curve::from_spec(&CurveSpec::Points(vec![[0.0, 0.0], [0.5, 0.1], [1.0, 1.0]]));
        assert!((c.eval(0.25) - 0.05).abs() < 1e-6);
        assert!((c.eval(0.75) - 0.55).abs() < 1e-6);
        assert_eq!(c.eval(0.5), 0.1);
        assert_eq!(c.eval(-1.0), 0.0);
        assert_eq!(c.eval(3.0), 1.0);
    }

    #[test]
    fn the_spline_passes_its_points_and_stays_monotone() {
        let pts = vec![[0.0, 0.0], [0.2, 0.0], [0.5, 0.1], [0.6, 0.9], [1.0, 1.0]];
        let c = Curve::from_spec(&CurveSpec::Spline(pts.clone()));
        for [x, y] in &pts {
            assert!((c.eval(*x) - y).abs() < 1e-5, "{x}");
        }
        let mut last = f32::NEG_INFINITY;
        for i in 0..=1000 {
            let y = c.eval(i as f32 / 1000.0);
            assert!(y >= last - 1e-6, "not monotone at {i}: {y} < {last}");
            assert!((0.0..=1.0).contains(&y));
            last = y;
        }
        // The flat stretch between the first two points stays flat: no overshoot below 0.
        assert_eq!(c.eval(0.1), 0.0);
    }

    #[test]
    fn curves_are_finite_for_extreme_inputs() {
        let c = Curve::from_spec(&CurveSpec::Spline(vec![
            [-1e4, -1e4],
            [0.0, 0.0],
            [1e4, 1e4],
        ]));
        for x in [f32::MAX, f32::MIN, 1e-30, -0.0, f32::INFINITY, f32::NAN] {
            assert!(c.eval(x).is_finite());
            assert!(Curve::Smoothstep.eval(x).is_finite());
        }
    }
}
