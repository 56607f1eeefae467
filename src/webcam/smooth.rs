//! Smoothing of a followed face's landmarks from frame to frame, as MediaPipe's Face Landmarker
//! does in video mode: a One Euro filter on every coordinate (in pixels, z scaled as x), its
//! speed measured against the face's size so that a near face and a far one are smoothed alike.
//! Still landmarks are held steady (1/20 Hz cut-off); moving ones follow at once (beta 80).

/// The cut-off, in hertz, for a landmark at rest.
pub const MIN_CUTOFF: f64 = 0.05;

/// How fast the cut-off rises with the landmark's speed (in face sizes a second).
pub const BETA: f64 = 80.0;

/// The cut-off of the speed's own smoothing, in hertz.
pub const DERIVATE_CUTOFF: f64 = 1.0;

/// The frame rate assumed before two frames have been seen.
const FIRST_RATE: f64 = 30.0;

/// A first-order low-pass filter.
#[derive(Debug, Clone, Copy, Default)]
struct LowPass {
    /// The last raw value, once one has been seen.
    raw: Option<f64>,
    /// The last filtered value.
    value: f64,
}

impl LowPass {
    fn apply(&mut self, x: f64, alpha: f64) -> f64 {
        self.value = match self.raw {
            Some(_) => alpha * x + (1.0 - alpha) * self.value,
            None => x,
        };
        self.raw = Some(x);
        self.value
    }
}

/// One coordinate's One Euro filter.
#[derive(Debug, Clone, Copy, Default)]
struct OneEuro {
    x: LowPass,
    dx: LowPass,
}

/// The smoothing factor for a cut-off at a frame rate.
fn alpha(cutoff: f64, rate: f64) -> f64 {
    let tau = 1.0 / (2.0 * std::f64::consts::PI * cutoff);
    1.0 / (1.0 + tau * rate)
}

impl OneEuro {
    fn apply(&mut self, value: f64, rate: f64, scale: f64) -> f64 {
        let speed = match self.x.raw {
            Some(last) => (value - last) * scale * rate,
            None => 0.0,
        };
        let speed = self.dx.apply(speed, alpha(DERIVATE_CUTOFF, rate));
        let cutoff = MIN_CUTOFF + BETA * speed.abs();
        self.x.apply(value, alpha(cutoff, rate))
    }
}

/// The filters of a face's landmarks.
#[derive(Debug, Clone, Default)]
pub struct Smoother {
    /// Three filters a landmark; empty until the first face.
    filters: Vec<[OneEuro; 3]>,
    /// The last frame's time, seconds.
    last: Option<f64>,
    /// The frame rate measured between the last two frames.
    rate: f64,
}

impl Smoother {
    /// Smoothing starts afresh (the face was lost).
    pub fn reset(&mut self) {
        self.filters.clear();
        self.last = None;
    }

    /// Smooths `points` (pixels: x right, y down, z as x) seen at `time` seconds, in place.
    /// A time not after the last one leaves the points as they are.
    pub fn apply(&mut self, points: &mut [[f32; 3]], time: f64) {
        if !time.is_finite() {
            return;
        }
        match self.last {
            Some(last) if time <= last => return,
            Some(last) => self.rate = 1.0 / (time - last),
            None => self.rate = FIRST_RATE,
        }
        self.last = Some(time);
        if self.filters.len() != points.len() {
            self.filters = vec![[OneEuro::default(); 3]; points.len()];
        }
        let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
        for p in points.iter() {
            x0 = x0.min(p[0]);
            y0 = y0.min(p[1]);
            x1 = x1.max(p[0]);
            y1 = y1.max(p[1]);
        }
        let size = f64::from((x1 - x0 + y1 - y0) / 2.0);
        if !(size.is_finite() && size > 1e-6) {
            return;
        }
        let scale = 1.0 / size;
        for (p, filters) in points.iter_mut().zip(self.filters.iter_mut()) {
            for (v, f) in p.iter_mut().zip(filters.iter_mut()) {
                *v = f.apply(f64::from(*v), self.rate, scale) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn face(offset: f32) -> Vec<[f32; 3]> {
        vec![[offset, 0.0, 0.0], [offset + 100.0, 100.0, 5.0]]
    }

    #[test]
    fn still_landmarks_hold_and_a_jump_is_followed_at_once() {
        let mut s = Smoother::default();
        let mut first = face(0.0);
        s.apply(&mut first, 0.0);
        assert_eq!(first, face(0.0));
        // Half a pixel of flicker on a 100-pixel face is mostly held back.
        let mut flicker = face(0.5);
        s.apply(&mut flicker, 1.0 / 30.0);
        assert!(flicker[0][0] < 0.25, "{flicker:?}");
        // A 30-pixel move is mostly followed in one frame.
        let mut moved = face(30.0);
        s.apply(&mut moved, 2.0 / 30.0);
        assert!(moved[0][0] > 20.0, "{moved:?}");
        // A repeated time changes nothing; a reset starts afresh.
        let mut again = face(90.0);
        s.apply(&mut again, 2.0 / 30.0);
        assert_eq!(again, face(90.0));
        s.reset();
        let mut fresh = face(50.0);
        s.apply(&mut fresh, 3.0 / 30.0);
        assert_eq!(fresh, face(50.0));
    }
}
