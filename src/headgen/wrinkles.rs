//! Wrinkle normal maps for the default head: forehead lines, the frown between the brows, and
//! per side the crow's feet and nasolabial fold a smile makes.
//!
//! Each wrinkle is a height field over the skin's grid (longitude `theta`, latitude `phi`, see
//! [`super::face`]), in metres, negative in a groove. Its tangent-space normal map is the
//! field's slope per metre of skin, measured on the neutral surface: `x` along increasing `u`,
//! `y` towards decreasing `v` (up in the image, glTF's convention), `z` out of the skin.
//!
//! Two maps share one RGBA texture, the first in red and green, the second in blue and alpha.
//! A channel stores `128 + 127·c` for a component `c` in [-1, 1], so a flat texel is exactly
//! 128 and reads as exactly no tilt (the renderer decodes `(byte − 128) / 127`); the maps are
//! flat away from their wrinkles, so blending one in never touches the rest of the face.

use glam::{Vec2, Vec3};

use super::face::{base_shape, skin_param, skin_uv, EYE_OUTER, EYE_PHI, MOUTH_HALF, SKIN_V};
use super::math::{sin, smoothstep, sq};

/// Width and height of a wrinkle texture in pixels (it covers the same texture coordinates as
/// the colour atlas; the skin fills its upper [`SKIN_V`]).
pub const SIZE: u32 = 512;

/// One wrinkle map of the default head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrinkle {
    /// Three lines across the forehead (raised brows).
    Forehead,
    /// Two creases between the brows and a fold across the bridge of the nose (lowered brows).
    Frown,
    /// Crow's feet and the nasolabial fold on the avatar's left (+x) side (a smile).
    SmileLeft,
    /// The same on the right (−x) side.
    SmileRight,
}

/// The textures the default head carries, by glTF texture name: each packs two maps.
pub const TEXTURES: [(&str, [Wrinkle; 2]); 2] = [
    ("wrinkles_brow", [Wrinkle::Forehead, Wrinkle::Frown]),
    ("wrinkles_smile", [Wrinkle::SmileLeft, Wrinkle::SmileRight]),
];

/// A smooth bump of height 1 at `d = 0`, falling to exactly 0 at `|d| = 2·width` and
/// beyond (so the skin away from a wrinkle stays exactly flat).
fn kernel(d: f32, width: f32) -> f32 {
    let x = d / (2.0 * width);
    if x.abs() >= 1.0 {
        0.0
    } else {
        sq(1.0 - x * x) * (1.0 - x * x)
    }
}

/// A groove of depth `depth` (m) and half-width about `width` at signed distance `d` from its
/// line.
fn groove(d: f32, width: f32, depth: f32) -> f32 {
    -depth * kernel(d, width)
}

/// Fades a line in over its first stretch and out over its last (`t` along it, 0..1).
fn ends(t: f32, fade: f32) -> f32 {
    smoothstep(0.0, fade, t) * smoothstep(1.0, 1.0 - fade, t)
}

/// Forehead lines between the brows' arch and the bangs, longest and deepest in the middle;
/// the lowest stops short of the brows' arch.
fn forehead(at: f32, phi: f32) -> f32 {
    let mut h = 0.0;
    for (k, reach) in [0.27f32, 0.42, 0.5].into_iter().enumerate() {
        let kf = k as f32;
        // Each line wavers a little, so they do not look ruled.
        let centre = 0.121 + 0.027 * kf + 0.003 * sin(at * 11.0 + 1.7 * kf);
        let along = ends((at / reach).min(1.0) * 0.5 + 0.5, 0.3);
        h += groove(phi - centre, 0.0065, 0.00055 * (1.0 - 0.15 * kf)) * along;
    }
    h
}

/// Frown creases between the brows, spreading a little upwards, and a fold across the bridge.
fn frown(at: f32, phi: f32) -> f32 {
    let lines = {
        let t = (phi + 0.03) / 0.16;
        let x = 0.052 + 0.05 * t;
        groove(at - x, 0.0085, 0.00055) * ends(t.clamp(0.0, 1.0), 0.3) * step_in(t)
    };
    let bridge = groove(phi + 0.075, 0.012, 0.00028) * smoothstep(0.085, 0.03, at);
    lines + bridge
}

/// 1 inside [0, 1], 0 outside.
fn step_in(t: f32) -> f32 {
    if (0.0..=1.0).contains(&t) {
        1.0
    } else {
        0.0
    }
}

/// Crow's feet fanning out from the outer eye corner and the fold from the nose's wing past
/// the mouth corner, on one side (`at` = |theta| on that side).
fn smile(at: f32, phi: f32) -> f32 {
    let mut h = 0.0;
    // Crow's feet: three short rays.
    let corner = Vec2::new(EYE_OUTER + 0.05, EYE_PHI + 0.005);
    let p = Vec2::new(at, phi) - corner;
    for (k, angle) in [-0.42f32, 0.0, 0.4].into_iter().enumerate() {
        let dir = Vec2::new(super::math::cos(angle), sin(angle));
        let along = p.dot(dir) / 0.13;
        let across = p.perp_dot(dir);
        let depth = 0.00032 * (1.0 - 0.15 * k as f32);
        h += groove(across, 0.0065, depth) * ends(along.clamp(0.0, 1.0), 0.35) * step_in(along);
    }
    // The nasolabial fold: a groove with the cheek bulging above and outside it.
    let s = (-0.52 - phi) / 0.40;
    if (-0.1..=1.1).contains(&s) {
        let line = 0.19 + 0.15 * s + 0.03 * sin(std::f32::consts::PI * s.clamp(0.0, 1.0));
        let d = at - line;
        let fade = smoothstep(0.02, 0.25, s) * smoothstep(0.9, 0.62, s);
        let fold = groove(d, 0.011, 0.00055) + 0.0003 * kernel(d - 0.028, 0.022);
        h += fold * fade;
    }
    // Keep the lips and the mouth's slit smooth.
    h * smoothstep(MOUTH_HALF * 0.95, MOUTH_HALF * 1.1, at).max(smoothstep(-0.7, -0.62, phi))
}

/// Height of `wrinkle` at grid longitude/latitude (m; negative in a groove).
pub fn height(wrinkle: Wrinkle, theta: f32, phi: f32) -> f32 {
    let at = theta.abs();
    match wrinkle {
        Wrinkle::Forehead => forehead(at, phi),
        Wrinkle::Frown => frown(at, phi),
        Wrinkle::SmileLeft if theta > 0.0 => smile(at, phi),
        Wrinkle::SmileRight if theta < 0.0 => smile(at, phi),
        Wrinkle::SmileLeft | Wrinkle::SmileRight => 0.0,
    }
}

/// Tangent-space slope `(x, y)` of `wrinkle` at texture coordinates `uv` (x along +u, y along
/// −v, both per metre of skin): the normal map's tilt before encoding.
pub fn tilt(wrinkle: Wrinkle, uv: Vec2) -> Vec2 {
    let step = 0.5 / SIZE as f32;
    let sample = |d: Vec2| {
        let (theta, phi) = skin_param(uv + d);
        (height(wrinkle, theta, phi), base_shape(theta, phi))
    };
    let (hu0, pu0) = sample(Vec2::new(-step, 0.0));
    let (hu1, pu1) = sample(Vec2::new(step, 0.0));
    let (hv0, pv0) = sample(Vec2::new(0.0, -step));
    let (hv1, pv1) = sample(Vec2::new(0.0, step));
    let du = (pu1 - pu0).length().max(1e-6);
    let dv = (pv1 - pv0).length().max(1e-6);
    // Facing a groove's wall, the normal tilts away from the groove: −∂h/∂x; with y up (−v),
    // −∂h/∂y = +∂h/∂v.
    Vec2::new(-(hu1 - hu0) / du, (hv1 - hv0) / dv)
}

/// One channel byte of a tangent-space component in [-1, 1]: exactly 128 for 0.
fn encode(c: f32) -> u8 {
    (128.0 + 127.0 * c.clamp(-1.0, 1.0)).round() as u8
}

/// A unit normal's `(x, y)` for a slope.
fn normal_xy(slope: Vec2) -> Vec2 {
    let n = Vec3::new(slope.x, slope.y, 1.0).normalize();
    Vec2::new(n.x, n.y)
}

/// Paints one wrinkle texture: `SIZE * SIZE * 4` RGBA bytes, rows top to bottom, `maps[0]` in
/// red and green, `maps[1]` in blue and alpha.
pub fn paint(maps: [Wrinkle; 2]) -> Vec<u8> {
    let mut out = Vec::with_capacity((SIZE * SIZE * 4) as usize);
    for py in 0..SIZE {
        for px in 0..SIZE {
            let uv = Vec2::new(
                (px as f32 + 0.5) / SIZE as f32,
                (py as f32 + 0.5) / SIZE as f32,
            );
            for map in maps {
                let n = if uv.y < SKIN_V - 0.5 / SIZE as f32 {
                    normal_xy(tilt(map, uv))
                } else {
                    Vec2::ZERO
                };
                out.push(encode(n.x));
                out.push(encode(n.y));
            }
        }
    }
    out
}

/// Where on the texture a grid point lies, in whole pixels.
pub fn pixel_of(theta: f32, phi: f32) -> (u32, u32) {
    let uv = skin_uv(theta, phi) * SIZE as f32;
    (uv.x as u32, uv.y as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texel(img: &[u8], (x, y): (u32, u32), second: bool) -> (u8, u8) {
        let i = ((y * SIZE + x) * 4) as usize + if second { 2 } else { 0 };
        (img[i], img[i + 1])
    }

    #[test]
    fn flat_skin_encodes_exactly_128() {
        assert_eq!(encode(0.0), 128);
        assert_eq!(encode(1.0), 255);
        assert_eq!(encode(-1.0), 1);
        let img = paint([Wrinkle::Forehead, Wrinkle::Frown]);
        // The cheek, the chin and the back of the head carry no brow wrinkles.
        for (theta, phi) in [(1.0, -0.4), (0.0, -1.1), (2.8, 0.2)] {
            assert_eq!(texel(&img, pixel_of(theta, phi), false), (128, 128));
            assert_eq!(texel(&img, pixel_of(theta, phi), true), (128, 128));
        }
    }

    #[test]
    fn each_wrinkle_tilts_its_own_region() {
        let tilted = |w, theta: f32, phi: f32| {
            let uv = skin_uv(theta, phi);
            normal_xy(tilt(w, uv)).length()
        };
        let most = |w, thetas: &[f32], phis: &[f32]| {
            let mut m: f32 = 0.0;
            for &t in thetas {
                for &p in phis {
                    m = m.max(tilted(w, t, p));
                }
            }
            m
        };
        let grid = |a: f32, b: f32| {
            (0..=40)
                .map(|i| a + (b - a) * i as f32 / 40.0)
                .collect::<Vec<_>>()
        };
        // The forehead lines sit between the brows' arch and the bangs.
        assert!(most(Wrinkle::Forehead, &grid(-0.3, 0.3), &grid(0.13, 0.23)) > 0.2);
        assert_eq!(
            most(Wrinkle::Forehead, &grid(-1.0, 1.0), &grid(-1.2, 0.1)),
            0.0
        );
        // The frown sits between the brows, not on the cheeks or the mouth.
        assert!(most(Wrinkle::Frown, &grid(-0.12, 0.12), &grid(-0.1, 0.12)) > 0.2);
        assert!(most(Wrinkle::Frown, &grid(0.3, 1.0), &grid(-1.2, 0.3)) < 1e-3);
        // A smile's wrinkles are on its own side only.
        assert!(most(Wrinkle::SmileLeft, &grid(0.15, 0.95), &grid(-0.95, -0.1)) > 0.2);
        assert_eq!(
            most(Wrinkle::SmileLeft, &grid(-1.0, -0.01), &grid(-1.2, 0.3)),
            0.0
        );
        assert_eq!(
            most(Wrinkle::SmileRight, &grid(0.01, 1.0), &grid(-1.2, 0.3)),
            0.0
        );
    }

    #[test]
    fn left_and_right_smiles_mirror_each_other() {
        for (theta, phi) in [(0.3, -0.7), (0.8, -0.2), (0.22, -0.6)] {
            assert_eq!(
                height(Wrinkle::SmileLeft, theta, phi),
                height(Wrinkle::SmileRight, -theta, phi)
            );
            assert!(height(Wrinkle::SmileLeft, theta, phi) != 0.0);
        }
    }

    #[test]
    fn symmetric_wrinkles_are_symmetric() {
        for w in [Wrinkle::Forehead, Wrinkle::Frown] {
            for (theta, phi) in [(0.1, 0.16), (0.06, 0.05), (0.3, 0.2)] {
                assert_eq!(height(w, theta, phi), height(w, -theta, phi));
            }
        }
    }
}
