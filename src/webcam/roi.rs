//! The part of a frame a network looks at: a rectangle that may be turned, cut out and scaled to
//! the network's square input as MediaPipe's image-to-tensor step does (bilinear sampling, the
//! rectangle's corners on the input's corners, 8-bit values mapped to the network's range).

use super::frame::Frame;

/// A rectangle in frame pixels, turned by `rotation` about its centre.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roi {
    /// Centre, x right.
    pub cx: f32,
    /// Centre, y down.
    pub cy: f32,
    /// Width along the rectangle's own x axis.
    pub w: f32,
    /// Height along its own y axis.
    pub h: f32,
    /// Radians; positive turns the rectangle's x axis from the frame's +x towards +y (down),
    /// clockwise on screen.
    pub rotation: f32,
}

/// What lies beyond the frame's edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Border {
    /// Black (the detector's letterbox).
    Zero,
    /// The nearest edge pixel.
    Replicate,
}

/// How much a face's box is grown, each way, into the crop the landmark model sees
/// (MediaPipe's 1.5).
pub const GROW: f32 = 1.5;

impl Roi {
    /// The whole frame, made square by adding equal bands to the shorter sides (the
    /// detector's letterbox).
    pub fn letterbox(width: u32, height: u32) -> Roi {
        let side = width.max(height) as f32;
        Roi {
            cx: width as f32 / 2.0,
            cy: height as f32 / 2.0,
            w: side,
            h: side,
            rotation: 0.0,
        }
    }

    /// The crop around a detected face: its box grown [`GROW`] times, turned so that the line
    /// from `from` to `to` (the eyes, or the eye corners) is level.
    pub fn around_box(
        [x0, y0, x1, y1]: [f32; 4],
        from: [f32; 2],
        to: [f32; 2],
        square: bool,
    ) -> Option<Roi> {
        let (mut w, mut h) = (x1 - x0, y1 - y0);
        if square {
            w = w.max(h);
            h = w;
        }
        let roi = Roi {
            cx: (x0 + x1) / 2.0,
            cy: (y0 + y1) / 2.0,
            w: w * GROW,
            h: h * GROW,
            rotation: level(from, to),
        };
        roi.is_usable().then_some(roi)
    }

    /// The crop for the next frame from a face's landmarks: the box they span made square
    /// on its longer side, grown [`GROW`] times, turned so that the outer eye corners (33 and
    /// 263) are level. `None` when the points do not make a usable rectangle.
    pub fn around_points(points: &[[f32; 3]], from: usize, to: usize) -> Option<Roi> {
        let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
        for p in points {
            x0 = x0.min(p[0]);
            y0 = y0.min(p[1]);
            x1 = x1.max(p[0]);
            y1 = y1.max(p[1]);
        }
        let (a, b) = (points.get(from)?, points.get(to)?);
        Roi::around_box([x0, y0, x1, y1], [a[0], a[1]], [b[0], b[1]], true)
    }

    /// Whether the rectangle is finite and at least 4 pixels each way.
    pub fn is_usable(&self) -> bool {
        [self.cx, self.cy, self.w, self.h, self.rotation]
            .iter()
            .all(|v| v.is_finite())
            && self.w >= 4.0
            && self.h >= 4.0
            && self.w < 1e6
            && self.h < 1e6
    }

    /// The frame position of the point (`u`, `v`) of the rectangle, each in 0..1 from its
    /// top-left corner.
    pub fn to_frame(&self, u: f32, v: f32) -> [f32; 2] {
        let (s, c) = self.rotation.sin_cos();
        let x = (u - 0.5) * self.w;
        let y = (v - 0.5) * self.h;
        [self.cx + c * x - s * y, self.cy + s * x + c * y]
    }

    /// Samples the rectangle into `side` x `side` RGB pixels, rows top to bottom, each value
    /// mapped from 0..255 to `low`..`high`, into `out` (cleared first).
    pub fn sample(
        &self,
        frame: &Frame,
        side: usize,
        border: Border,
        [low, high]: [f32; 2],
        out: &mut Vec<f32>,
    ) {
        out.clear();
        out.reserve(side * side * 3);
        let (fw, fh) = (frame.width as i64, frame.height as i64);
        let scale = (high - low) / 255.0;
        if fw < 1 || fh < 1 || frame.rgb.len() < (fw * fh * 3) as usize {
            out.resize(side * side * 3, low);
            return;
        }
        let (s, c) = self.rotation.sin_cos();
        // Output pixel (i, j) samples the frame at origin + i·du + j·dv (OpenCV's pixel centres
        // at whole coordinates, the rectangle's corners on the output's corners).
        let step = 1.0 / side as f32;
        let du = [c * self.w * step, s * self.w * step];
        let dv = [-s * self.h * step, c * self.h * step];
        let origin = self.to_frame(0.0, 0.0);
        let pixel = |x: i64, y: i64| -> Option<&[u8]> {
            let (x, y) = match border {
                Border::Replicate => (x.clamp(0, fw - 1), y.clamp(0, fh - 1)),
                Border::Zero if x < 0 || y < 0 || x >= fw || y >= fh => return None,
                Border::Zero => (x, y),
            };
            let i = ((y * fw + x) * 3) as usize;
            Some(&frame.rgb[i..i + 3])
        };
        // When every sample and its neighbours lie inside the frame (a face well in the
        // picture), no border is looked at: the plain loop, about four times as fast.
        let last = (side.max(1) - 1) as f32;
        let corners = [
            origin,
            [origin[0] + last * du[0], origin[1] + last * du[1]],
            [origin[0] + last * dv[0], origin[1] + last * dv[1]],
            [
                origin[0] + last * (du[0] + dv[0]),
                origin[1] + last * (du[1] + dv[1]),
            ],
        ];
        let inside = corners.iter().all(|&[x, y]| {
            x.is_finite()
                && y.is_finite()
                && x >= 0.0
                && y >= 0.0
                && x + 1.0 < (fw - 1) as f32
                && y + 1.0 < (fh - 1) as f32
        });
        if inside {
            let stride = fw as usize * 3;
            let rgb = &frame.rgb;
            for j in 0..side {
                let row = [origin[0] + j as f32 * dv[0], origin[1] + j as f32 * dv[1]];
                for i in 0..side {
                    let x = row[0] + i as f32 * du[0];
                    let y = row[1] + i as f32 * du[1];
                    let (xf, yf) = (x.floor(), y.floor());
                    let (tx, ty) = (x - xf, y - yf);
                    let at = yf as usize * stride + xf as usize * 3;
                    let (a, b) = (&rgb[at..at + 6], &rgb[at + stride..at + stride + 6]);
                    for k in 0..3 {
                        let top = f32::from(a[k]) + (f32::from(a[k + 3]) - f32::from(a[k])) * tx;
                        let bottom = f32::from(b[k]) + (f32::from(b[k + 3]) - f32::from(b[k])) * tx;
                        let v = top + (bottom - top) * ty;
                        out.push(v.round().clamp(0.0, 255.0) * scale + low);
                    }
                }
            }
            return;
        }
        for j in 0..side {
            for i in 0..side {
                let x = origin[0] + i as f32 * du[0] + j as f32 * dv[0];
                let y = origin[1] + i as f32 * du[1] + j as f32 * dv[1];
                let mut rgb = [0.0f32; 3];
                if x.is_finite() && y.is_finite() && x.abs() < 1e7 && y.abs() < 1e7 {
                    let (xf, yf) = (x.floor(), y.floor());
                    let (tx, ty) = (x - xf, y - yf);
                    let (x0, y0) = (xf as i64, yf as i64);
                    for (dx, dy, weight) in [
                        (0, 0, (1.0 - tx) * (1.0 - ty)),
                        (1, 0, tx * (1.0 - ty)),
                        (0, 1, (1.0 - tx) * ty),
                        (1, 1, tx * ty),
                    ] {
                        if let Some(p) = pixel(x0 + dx, y0 + dy) {
                            for k in 0..3 {
                                rgb[k] += weight * f32::from(p[k]);
                            }
                        }
                    }
                }
                // The crop is 8-bit before it is scaled, as MediaPipe's is.
                for v in rgb {
                    out.push(v.round().clamp(0.0, 255.0) * scale + low);
                }
            }
        }
    }
}

/// The rotation that makes the line from `from` to `to` level (MediaPipe's
/// `target_angle − atan2(−dy, dx)`, with a target of 0), in (−π, π].
pub fn level(from: [f32; 2], to: [f32; 2]) -> f32 {
    let angle = -(-(to[1] - from[1])).atan2(to[0] - from[0]);
    if angle.is_finite() {
        angle
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame whose red value is x and green value is y (as 0..255 bytes).
    fn ramp(width: u32, height: u32) -> Frame {
        let mut rgb = Vec::new();
        for y in 0..height {
            for x in 0..width {
                rgb.extend_from_slice(&[x as u8, y as u8, 7]);
            }
        }
        Frame { width, height, rgb }
    }

    #[test]
    fn an_upright_crop_scales_and_a_turned_one_turns() {
        let frame = ramp(200, 100);
        let roi = Roi {
            cx: 100.0,
            cy: 50.0,
            w: 64.0,
            h: 64.0,
            rotation: 0.0,
        };
        let mut out = Vec::new();
        roi.sample(&frame, 32, Border::Replicate, [0.0, 255.0], &mut out);
        assert_eq!(out.len(), 32 * 32 * 3);
        // Output (i, j) reads frame (68 + 2i, 18 + 2j).
        assert_eq!(&out[0..3], &[68.0, 18.0, 7.0]);
        let at = |i: usize, j: usize| &out[(j * 32 + i) * 3..(j * 32 + i) * 3 + 2];
        assert_eq!(at(10, 5), &[88.0, 28.0]);
        // Turned a quarter clockwise: the crop's x axis runs down the frame.
        let turned = Roi {
            rotation: std::f32::consts::FRAC_PI_2,
            ..roi
        };
        turned.sample(&frame, 32, Border::Replicate, [0.0, 255.0], &mut out);
        let [x, y] = turned.to_frame(10.0 / 32.0, 5.0 / 32.0);
        let got = &out[(5 * 32 + 10) * 3..(5 * 32 + 10) * 3 + 2];
        assert!((got[0] - x.round()).abs() <= 1.0 && (got[1] - y.round()).abs() <= 1.0);
        assert!(y > 18.0 && x > 100.0, "({x}, {y})");
    }

    #[test]
    fn a_crop_inside_the_frame_samples_as_one_at_its_edge_does() {
        // A picture with detail, and a turned crop well inside it (the plain loop) against the
        // same crop nudged so that one corner touches the edge (the loop that checks borders):
        // the pixels away from that corner agree.
        let mut rgb = Vec::new();
        for y in 0..120u32 {
            for x in 0..160u32 {
                rgb.extend_from_slice(&[
                    (x * 7 % 256) as u8,
                    (y * 13 % 256) as u8,
                    ((x + y) % 256) as u8,
                ]);
            }
        }
        let frame = Frame {
            width: 160,
            height: 120,
            rgb,
        };
        let inside = Roi {
            cx: 80.0,
            cy: 60.0,
            w: 60.0,
            h: 50.0,
            rotation: 0.3,
        };
        let mut fast = Vec::new();
        inside.sample(&frame, 16, Border::Replicate, [0.0, 255.0], &mut fast);
        let mut checked = Vec::new();
        // The same crop, sampled by the checking loop: a wider output whose extra row and
        // column fall outside (its first 16x16 pixels are the same positions).
        let wide = Roi {
            w: inside.w * 40.0 / 16.0,
            h: inside.h * 40.0 / 16.0,
            cx: 0.0,
            cy: 0.0,
            ..inside
        };
        let [x0, y0] = inside.to_frame(0.0, 0.0);
        let wide = Roi {
            cx: wide.cx + x0 - wide.to_frame(0.0, 0.0)[0],
            cy: wide.cy + y0 - wide.to_frame(0.0, 0.0)[1],
            ..wide
        };
        wide.sample(&frame, 40, Border::Replicate, [0.0, 255.0], &mut checked);
        for j in 0..16 {
            for i in 0..16 {
                let a = &fast[(j * 16 + i) * 3..(j * 16 + i) * 3 + 3];
                let b = &checked[(j * 40 + i) * 3..(j * 40 + i) * 3 + 3];
                for k in 0..3 {
                    assert!((a[k] - b[k]).abs() <= 1.0, "({i}, {j}): {a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn borders_are_black_or_the_edge_and_values_map_to_the_range() {
        let frame = Frame::filled(10, 10, [255, 255, 255]);
        let roi = Roi::letterbox(10, 10);
        let far = Roi { cx: -100.0, ..roi };
        let mut out = Vec::new();
        far.sample(&frame, 4, Border::Zero, [-1.0, 1.0], &mut out);
        assert!(out.iter().all(|&v| v == -1.0));
        far.sample(&frame, 4, Border::Replicate, [0.0, 1.0], &mut out);
        assert!(out.iter().all(|&v| v == 1.0));
        // A hostile rectangle gives a picture of the edge or black, never a panic.
        let wild = Roi {
            cx: f32::NAN,
            w: f32::INFINITY,
            ..roi
        };
        wild.sample(&frame, 4, Border::Zero, [0.0, 1.0], &mut out);
        assert_eq!(out.len(), 48);
        assert!(!wild.is_usable());
    }

    #[test]
    fn the_crop_from_points_is_square_grown_and_levels_the_eye_line() {
        // Eye corners at (40, 50) and (60, 70): a line falling 45° to the right.
        let points = [[40.0, 50.0, 0.0], [60.0, 70.0, 0.0], [30.0, 40.0, 0.0]];
        let roi = Roi::around_points(&points, 0, 1).unwrap();
        assert_eq!((roi.cx, roi.cy), (45.0, 55.0));
        assert_eq!((roi.w, roi.h), (45.0, 45.0));
        assert!((roi.rotation - std::f32::consts::FRAC_PI_4).abs() < 1e-6);
        assert_eq!(level([0.0, 0.0], [1.0, 0.0]), 0.0);
    }
}
