//! How open an eye looks in the picture: the contrast inside the eye's opening.
//!
//! The fast landmark model places the eyelids' landmarks from the shape of the whole eye and
//! often leaves them where they were while the lids close, so the lids' distance alone misses
//! blinks. What a camera always sees is that an open eye shows the dark iris and the white of
//! the eye between the lids, while a closed eye shows skin: the spread of brightness across the
//! eye's opening falls as the lids close. [`contrast`] measures that spread in a box laid along
//! the line between the eye's corners, relative to its mean brightness, so that it does not
//! depend on the light's strength; the tracker multiplies it into the eye feature, which then
//! learns the performer's own open and closed eye like every other feature.

use super::frame::Frame;

/// Samples across the eye's box, along the corners' line and across it.
const GRID: (usize, usize) = (12, 7);

/// The box's half-length along the corners' line, as a fraction of the corners' distance: short
/// of the corners, whose skin folds are there open or closed.
const HALF_LENGTH: f32 = 0.4;

/// The box's half-height across the line, as a fraction of the corners' distance: an open eye's
/// opening is about a third of its length.
const HALF_HEIGHT: f32 = 0.2;

/// The luminance (BT.601) at (`x`, `y`), sampled bilinearly; `None` outside the frame.
fn luminance(frame: &Frame, x: f32, y: f32) -> Option<f32> {
    let (w, h) = (frame.width as usize, frame.height as usize);
    if !(x >= 0.0 && y >= 0.0 && x <= (w - 1) as f32 && y <= (h - 1) as f32) {
        return None;
    }
    let (x0, y0) = (x.floor() as usize, y.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (tx, ty) = (x - x0 as f32, y - y0 as f32);
    let at = |px: usize, py: usize| {
        let i = (py * w + px) * 3;
        let rgb = &frame.rgb[i..i + 3];
        0.299 * f32::from(rgb[0]) + 0.587 * f32::from(rgb[1]) + 0.114 * f32::from(rgb[2])
    };
    let top = at(x0, y0) + (at(x1, y0) - at(x0, y0)) * tx;
    let bottom = at(x0, y1) + (at(x1, y1) - at(x0, y1)) * tx;
    Some(top + (bottom - top) * ty)
}

/// The spread of brightness (standard deviation over mean) in the box between an eye's corners
/// `outer` and `inner` (pixels); `None` when the corners coincide, are not finite or the box
/// leaves the frame.
pub fn contrast(frame: &Frame, outer: [f32; 2], inner: [f32; 2]) -> Option<f32> {
    if frame.width < 2
        || frame.height < 2
        || frame.rgb.len() < frame.width as usize * frame.height as usize * 3
    {
        return None;
    }
    let (dx, dy) = (inner[0] - outer[0], inner[1] - outer[1]);
    let length = dx.hypot(dy);
    if !length.is_finite() || length < 2.0 {
        return None;
    }
    let (ux, uy) = (dx / length, dy / length);
    let (vx, vy) = (-uy, ux);
    let centre = [0.5 * (outer[0] + inner[0]), 0.5 * (outer[1] + inner[1])];
    let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
    let (cols, rows) = GRID;
    for i in 0..cols {
        let s = ((i as f32 + 0.5) / cols as f32 * 2.0 - 1.0) * HALF_LENGTH * length;
        for j in 0..rows {
            let t = ((j as f32 + 0.5) / rows as f32 * 2.0 - 1.0) * HALF_HEIGHT * length;
            let y = luminance(
                frame,
                centre[0] + s * ux + t * vx,
                centre[1] + s * uy + t * vy,
            )?;
            sum += f64::from(y);
            sum_sq += f64::from(y) * f64::from(y);
        }
    }
    let n = (cols * rows) as f64;
    let mean = sum / n;
    let variance = (sum_sq / n - mean * mean).max(0.0);
    Some((variance.sqrt() / (mean + 8.0)) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skin with an eye from (200, 100) to (240, 100): open shows a dark iris between the lids.
    fn face(open: bool) -> Frame {
        let mut f = Frame::filled(320, 200, [220, 170, 140]);
        if open {
            for y in 94..107u32 {
                for x in 205..236u32 {
                    let dark = (x as f32 - 220.0).abs() < 7.0;
                    let i = ((y * 320 + x) * 3) as usize;
                    let c = if dark { [40, 30, 30] } else { [235, 235, 230] };
                    f.rgb[i..i + 3].copy_from_slice(&c);
                }
            }
        } else {
            // The lids' line.
            for x in 205..236u32 {
                let i = ((100 * 320 + x) * 3) as usize;
                f.rgb[i..i + 3].copy_from_slice(&[120, 80, 70]);
            }
        }
        f
    }

    #[test]
    fn an_open_eye_has_far_more_contrast_than_a_closed_one() {
        let open = contrast(&face(true), [200.0, 100.0], [240.0, 100.0]).unwrap();
        let closed = contrast(&face(false), [200.0, 100.0], [240.0, 100.0]).unwrap();
        assert!(open > 2.0 * closed, "open {open}, closed {closed}");
        // Dimmer light, the same eye: about the same measure.
        let mut dim = face(true);
        dim.rgb.iter_mut().for_each(|c| *c /= 2);
        let dimmed = contrast(&dim, [200.0, 100.0], [240.0, 100.0]).unwrap();
        assert!((dimmed - open).abs() < 0.15 * open, "{dimmed} vs {open}");
        // The corners the other way round, or the box turned: the same region.
        let back = contrast(&face(true), [240.0, 100.0], [200.0, 100.0]).unwrap();
        assert!((back - open).abs() < 0.05 * open);
    }

    #[test]
    fn degenerate_eyes_give_none() {
        let f = face(true);
        assert_eq!(contrast(&f, [10.0, 10.0], [10.5, 10.0]), None);
        assert_eq!(contrast(&f, [f32::NAN, 10.0], [40.0, 10.0]), None);
        assert_eq!(contrast(&f, [-50.0, 10.0], [0.0, 10.0]), None);
        assert_eq!(contrast(&f, [300.0, 190.0], [1e30, 190.0]), None);
    }
}
