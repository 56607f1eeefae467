//! The painted texture atlas: skin (blush, brows, lash lines, lips), eyeball (sclera, iris,
//! pupil, highlights), hair and the mouth swatches; encoded as PNG.
//!
//! Layout of the 1024×1024 atlas (texture coordinates, v down): the skin fills the rows above
//! [`SKIN_V`], addressed by the grid's longitude/latitude ([`skin_uv_of`]); below it sit the
//! eyeball disc, the hair strip and the cavity, teeth and tongue swatches. Colours are painted
//! directly in sRGB, which is what glTF expects of a base colour texture.

use glam::{Vec2, Vec3};

use super::face::{
    skin_param, skin_uv, EYE_INNER, EYE_OUTER, EYE_PHI, MOUTH_HALF, MOUTH_PHI, SKIN_V,
};
use super::math::{hash01, lerp, smoothstep, sq};
use super::parts::hairline;

/// Atlas width and height in pixels.
pub const SIZE: u32 = 1024;

/// A rectangle of the atlas in texture coordinates.
#[derive(Debug, Clone, Copy)]
pub struct Rect {
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
}

const fn px_rect(x0: u32, y0: u32, x1: u32, y1: u32) -> Rect {
    let s = SIZE as f32;
    Rect {
        x0: x0 as f32 / s,
        y0: y0 as f32 / s,
        x1: x1 as f32 / s,
        y1: y1 as f32 / s,
    }
}

/// Centre of the eyeball disc (the pupil).
pub const EYE_CENTER: Vec2 = Vec2::new(192.0 / SIZE as f32, 832.0 / SIZE as f32);
/// Radius of the eyeball's front hemisphere in the atlas.
pub const EYE_RHO: f32 = 170.0 / SIZE as f32;
/// Angular radius of the iris on the eyeball (radians from the front pole).
pub const IRIS_ANGLE: f32 = 0.76;
/// The hair strip: s runs around the head, t from the crown (0) to the tips (1).
pub const HAIR_RECT: Rect = px_rect(388, 644, 892, 1020);
/// The mouth cavity swatch.
pub const BAG_RECT: Rect = px_rect(904, 648, 1016, 760);
/// The teeth swatch.
pub const TEETH_RECT: Rect = px_rect(904, 776, 1016, 888);
/// The tongue swatch.
pub const TONGUE_RECT: Rect = px_rect(904, 904, 1016, 1016);

/// Skin texture coordinates of grid longitude/latitude (see [`super::face::skin_uv`]).
pub fn skin_uv_of(theta: f32, phi: f32) -> Vec2 {
    skin_uv(theta, phi)
}

type Rgb = Vec3;

const fn rgb(r: u8, g: u8, b: u8) -> Rgb {
    Vec3::new(r as f32 / 255.0, g as f32 / 255.0, b as f32 / 255.0)
}

const SKIN: Rgb = rgb(255, 234, 222);
const SKIN_SHADE: Rgb = rgb(238, 196, 186);
const SKIN_DEEP: Rgb = rgb(222, 172, 165);
const BLUSH: Rgb = rgb(255, 150, 150);
const BROW: Rgb = rgb(98, 60, 48);
const LASH: Rgb = rgb(48, 30, 34);
const LOWER_LASH: Rgb = rgb(150, 96, 92);
const CREASE: Rgb = rgb(214, 150, 140);
const LIP: Rgb = rgb(244, 160, 160);
const LIP_LINE: Rgb = rgb(150, 70, 80);
const SCLERA: Rgb = rgb(252, 252, 255);
const SCLERA_SHADE: Rgb = rgb(206, 214, 236);
const IRIS_TOP: Rgb = rgb(34, 58, 128);
const IRIS_BOTTOM: Rgb = rgb(86, 182, 224);
const IRIS_RIM: Rgb = rgb(20, 26, 64);
const PUPIL: Rgb = rgb(14, 14, 34);
const HAIR_LIGHT: Rgb = rgb(152, 96, 70);
const HAIR_DARK: Rgb = rgb(96, 56, 44);
const HAIR_SHINE: Rgb = rgb(214, 160, 126);

fn mix(a: Rgb, b: Rgb, t: f32) -> Rgb {
    a + (b - a) * t.clamp(0.0, 1.0)
}

/// The colours a look can choose for the default head, in sRGB (0..1 per channel). The atlas is
/// painted from them: each painted shade keeps its relation to the base colour it belongs to
/// (the skin's shadows, lips and creases follow the skin tone; the hair's dark ends, its shine
/// and the brows follow the hair; the iris's gradient and rim follow the iris).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Palette {
    /// The skin's base tone.
    pub skin: Vec3,
    /// The hair's light tone (the crown); brows follow it.
    pub hair: Vec3,
    /// The iris's light tone (its lower half).
    pub iris: Vec3,
    /// The blush's colour.
    pub blush: Vec3,
    /// How strongly the blush shows, 0 (none) to 1 (full colour at the cheek's centre).
    pub blush_strength: f32,
}

/// How strongly the default head blushes.
const BLUSH_STRENGTH: f32 = 0.42;

impl Palette {
    /// The default head's own colours: painting with it gives the committed atlas bit for bit.
    pub const DEFAULT: Palette = Palette {
        skin: SKIN,
        hair: HAIR_LIGHT,
        iris: IRIS_BOTTOM,
        blush: BLUSH,
        blush_strength: BLUSH_STRENGTH,
    };
}

impl Default for Palette {
    fn default() -> Palette {
        Palette::DEFAULT
    }
}

/// Every colour the painter uses, derived from a [`Palette`].
#[derive(Debug, Clone, Copy)]
struct Paints {
    skin: Rgb,
    skin_shade: Rgb,
    skin_deep: Rgb,
    blush: Rgb,
    blush_strength: f32,
    brow: Rgb,
    crease: Rgb,
    lower_lash: Rgb,
    lip: Rgb,
    lip_line: Rgb,
    iris_top: Rgb,
    iris_bottom: Rgb,
    iris_rim: Rgb,
    hair_light: Rgb,
    hair_dark: Rgb,
    hair_shine: Rgb,
}

/// `to / from` per channel, guarded against a black reference; exactly 1 where they are equal.
fn ratio(to: Vec3, from: Vec3) -> Vec3 {
    let safe = |t: f32, f: f32| if f > 1e-3 { t / f } else { 1.0 };
    Vec3::new(safe(to.x, from.x), safe(to.y, from.y), safe(to.z, from.z))
}

/// A colour made finite and clamped to [0, 1].
fn unit_rgb(c: Vec3) -> Vec3 {
    let f = |v: f32| {
        if v.is_finite() {
            v.clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    Vec3::new(f(c.x), f(c.y), f(c.z))
}

impl Paints {
    fn of(palette: &Palette) -> Paints {
        let skin = unit_rgb(palette.skin);
        let hair = unit_rgb(palette.hair);
        let iris = unit_rgb(palette.iris);
        let s = ratio(skin, SKIN);
        // Lips and creases follow the skin more gently than its shadows do.
        let soft = Vec3::ONE + (s - Vec3::ONE) * 0.6;
        let h = ratio(hair, HAIR_LIGHT);
        let i = ratio(iris, IRIS_BOTTOM);
        let strength = palette.blush_strength;
        Paints {
            skin,
            skin_shade: unit_rgb(SKIN_SHADE * s),
            skin_deep: unit_rgb(SKIN_DEEP * s),
            blush: unit_rgb(palette.blush),
            blush_strength: if strength.is_finite() {
                strength.clamp(0.0, 1.0)
            } else {
                BLUSH_STRENGTH
            },
            brow: unit_rgb(BROW * h),
            crease: unit_rgb(CREASE * soft),
            lower_lash: unit_rgb(LOWER_LASH * soft),
            lip: unit_rgb(LIP * soft),
            lip_line: unit_rgb(LIP_LINE * soft),
            iris_top: unit_rgb(IRIS_TOP * i),
            iris_bottom: iris,
            iris_rim: unit_rgb(IRIS_RIM * i),
            hair_light: hair,
            hair_dark: unit_rgb(HAIR_DARK * h),
            hair_shine: unit_rgb(HAIR_SHINE * h),
        }
    }
}

/// Skin colour at grid longitude/latitude, in the default head's colours.
pub fn paint_skin(theta: f32, phi: f32) -> Rgb {
    skin_with(&Paints::of(&Palette::DEFAULT), theta, phi)
}

fn skin_with(p: &Paints, theta: f32, phi: f32) -> Rgb {
    let at = theta.abs();
    let mut c = p.skin;
    // Soft shading: the sides and the underside of the jaw are a little darker.
    c = mix(c, p.skin_shade, 0.5 * smoothstep(0.5, 1.7, at));
    c = mix(c, p.skin_deep, 0.6 * smoothstep(-1.05, -1.4, phi));
    // The bangs cast a soft shadow on the forehead.
    let h = hairline(theta);
    c = mix(
        c,
        p.skin_shade,
        0.6 * smoothstep(h - 0.09, h - 0.005, phi) * smoothstep(1.0, 0.7, at),
    );

    // Blush on the cheeks.
    let e = (sq((at - 0.6) / 0.22) + sq((phi + 0.5) / 0.085)).sqrt();
    c = mix(
        c,
        p.blush,
        p.blush_strength * (1.0 - smoothstep(0.1, 1.0, e)),
    );

    // Nose: a small shadow under the tip.
    let n = (sq(at / 0.05) + sq((phi + 0.545) / 0.016)).sqrt();
    c = mix(c, p.skin_deep, 0.55 * (1.0 - smoothstep(0.3, 1.0, n)));

    // Lips: soft tints and a drawn mouth line that curls up at the corners.
    let tm = at / MOUTH_HALF;
    let dm = phi - MOUTH_PHI;
    let lower = (sq(tm / 0.95) + sq((dm + 0.03) / 0.035)).sqrt();
    c = mix(c, p.lip, 0.45 * (1.0 - smoothstep(0.4, 1.0, lower)));
    let upper = (sq(tm / 0.9) + sq((dm - 0.02) / 0.025)).sqrt();
    c = mix(c, p.lip, 0.2 * (1.0 - smoothstep(0.4, 1.0, upper)));
    let curl = 0.06 * smoothstep(0.95, 1.35, tm) * (tm - 0.95);
    let line_w = 0.009 * (1.0 - 0.6 * smoothstep(0.7, 1.3, tm));
    let line = smoothstep(line_w + 0.004, line_w, (dm - curl).abs()) * smoothstep(1.35, 1.05, tm);
    c = mix(c, p.lip_line, 0.95 * line);

    // Eyes: upper lash line with a wing, lid crease, lower lash line, inner corner tint.
    let t = (at - EYE_INNER) / (EYE_OUTER - EYE_INNER);
    let de = phi - EYE_PHI;
    let lash_w = 0.016 + 0.02 * t.clamp(0.0, 1.0);
    let lash = if de >= -0.0005 {
        smoothstep(lash_w + 0.005, lash_w, de)
            * smoothstep(-0.04, 0.03, t)
            * smoothstep(1.06, 0.98, t)
    } else {
        0.0
    };
    let wt = (t - 0.95) / 0.3;
    let wing_c = 0.015 + 0.09 * wt;
    let wing_w = 0.014 * (1.0 - wt.clamp(0.0, 1.0));
    let wing = smoothstep(wing_w + 0.004, wing_w, (de - wing_c).abs())
        * smoothstep(-0.05, 0.05, wt)
        * smoothstep(1.0, 0.9, wt);
    c = mix(c, LASH, lash.max(wing));
    let crease = smoothstep(0.006, 0.002, (de - 0.085 - 0.01 * t).abs())
        * smoothstep(0.1, 0.3, t)
        * smoothstep(1.0, 0.8, t);
    c = mix(c, p.crease, 0.55 * crease);
    let lower_lash = if de < 0.0005 {
        smoothstep(-0.016, -0.010, de) * smoothstep(0.3, 0.7, t) * smoothstep(1.05, 0.95, t)
    } else {
        0.0
    };
    c = mix(c, p.lower_lash, 0.7 * lower_lash);
    let corner = (sq((at - EYE_INNER - 0.012) / 0.03) + sq(de / 0.02)).sqrt();
    c = mix(c, p.lip, 0.35 * (1.0 - smoothstep(0.3, 1.0, corner)));

    // Brows: a soft arch, thick at the inner end and tapering outwards.
    let s = (at - 0.14) / (0.74 - 0.14);
    let sc = s.clamp(0.0, 1.0);
    let brow_c = 0.045 + 0.06 * (4.0 * sc * (1.0 - sc)).sqrt() * (1.0 - 0.3 * sc);
    let brow_w = 0.013 * (1.0 - 0.55 * sc) + 0.002;
    let brow = smoothstep(brow_w + 0.005, brow_w, (phi - brow_c).abs())
        * smoothstep(-0.06, 0.02, s)
        * smoothstep(1.06, 0.96, s);
    mix(c, p.brow, 0.95 * brow)
}

/// A monotone stand-in for the polar angle of (x, y), in [0, 4): exact arithmetic only, unlike
/// `atan2`, whose last bits differ between platforms.
fn diamond_angle(x: f32, y: f32) -> f32 {
    let s = x.abs() + y.abs();
    if s == 0.0 {
        return 0.0;
    }
    match (x >= 0.0, y >= 0.0) {
        (true, true) => y / s,
        (false, true) => 1.0 - x / s,
        (false, false) => 2.0 - y / s,
        (true, false) => 3.0 + x / s,
    }
}

/// Eyeball colour at texture offset `d` from [`EYE_CENTER`].
#[cfg(test)]
fn paint_eye(d: Vec2) -> Rgb {
    eye_with(&Paints::of(&Palette::DEFAULT), d)
}

fn eye_with(p: &Paints, d: Vec2) -> Rgb {
    let rho = d.length();
    let alpha = rho / EYE_RHO * std::f32::consts::FRAC_PI_2;
    // Eye-space offsets in radians: +x is the eye's +X, +y is up.
    let (ex, ey) = if rho > 0.0 {
        (alpha * d.x / rho, -alpha * d.y / rho)
    } else {
        (0.0, 0.0)
    };
    let mut c = mix(SCLERA, SCLERA_SHADE, 0.7 * smoothstep(0.1, 1.0, ey));
    let r = alpha / IRIS_ANGLE;
    let iris_y = ey / IRIS_ANGLE;
    let mut iris = mix(p.iris_top, p.iris_bottom, smoothstep(0.55, -0.85, iris_y));
    // Fine radial streaks give the iris some depth.
    let streak = hash01(((diamond_angle(ex, ey) * 24.0) as u32).wrapping_add(77));
    iris *= 0.92 + 0.12 * streak * smoothstep(0.3, 0.8, r);
    iris = mix(iris, p.iris_rim, smoothstep(0.78, 0.97, r));
    iris = mix(iris, PUPIL, smoothstep(0.47, 0.41, r));
    let hl1 = (sq(ex / IRIS_ANGLE + 0.36) + sq(iris_y - 0.38)).sqrt();
    iris = mix(iris, Vec3::ONE, smoothstep(0.22, 0.18, hl1));
    let hl2 = (sq(ex / IRIS_ANGLE - 0.33) + sq(iris_y + 0.4)).sqrt();
    iris = mix(iris, Vec3::ONE, 0.9 * smoothstep(0.1, 0.07, hl2));
    c = mix(c, iris, smoothstep(1.015, 0.985, r));
    c
}

/// Hair colour at strip coordinates `s` (around) and `t` (crown 0 to tips 1).
fn hair_with(p: &Paints, s: f32, t: f32) -> Rgb {
    let mut c = mix(p.hair_light, p.hair_dark, smoothstep(0.2, 1.0, t));
    // Strands: value noise across the strip.
    let x = s * 96.0;
    let i = x.floor();
    let f = x - i;
    let n = lerp(
        hash01(i as u32),
        hash01(i as u32 + 1),
        f * f * (3.0 - 2.0 * f),
    );
    c *= 0.9 + 0.16 * n;
    // The glossy ring, with a jagged edge.
    let zig = ((s * 60.0).fract() - 0.5).abs();
    let ring = smoothstep(0.06, 0.02, (t - 0.34 - 0.04 * zig).abs());
    mix(c, p.hair_shine, 0.55 * ring * (0.7 + 0.3 * n))
}

fn in_rect(r: Rect, u: f32, v: f32) -> Option<(f32, f32)> {
    (u >= r.x0 && u < r.x1 && v >= r.y0 && v < r.y1)
        .then(|| ((u - r.x0) / (r.x1 - r.x0), (v - r.y0) / (r.y1 - r.y0)))
}

/// Paints the whole atlas in the default head's colours: `SIZE * SIZE * 4` RGBA bytes, rows
/// top to bottom.
pub fn paint() -> Vec<u8> {
    paint_with(&Palette::DEFAULT)
}

/// Paints the whole atlas in `palette`'s colours (same layout as [`paint`]).
pub fn paint_with(palette: &Palette) -> Vec<u8> {
    let p = Paints::of(palette);
    let mut out = Vec::with_capacity((SIZE * SIZE * 4) as usize);
    let eye_reach = EYE_RHO * 1.1;
    for py in 0..SIZE {
        for px in 0..SIZE {
            let u = (px as f32 + 0.5) / SIZE as f32;
            let v = (py as f32 + 0.5) / SIZE as f32;
            let c = if v < SKIN_V {
                let (theta, phi) = skin_param(Vec2::new(u, v));
                skin_with(&p, theta, phi)
            } else if (Vec2::new(u, v) - EYE_CENTER).length() < eye_reach {
                eye_with(&p, Vec2::new(u, v) - EYE_CENTER)
            } else if let Some((s, t)) = in_rect(HAIR_RECT, u, v) {
                hair_with(&p, s, t)
            } else if let Some((_, t)) = in_rect(BAG_RECT, u, v) {
                mix(rgb(92, 30, 40), rgb(46, 12, 20), t)
            } else if let Some((_, t)) = in_rect(TEETH_RECT, u, v) {
                mix(rgb(252, 251, 248), rgb(226, 228, 234), t)
            } else if let Some((s, t)) = in_rect(TONGUE_RECT, u, v) {
                let r = (sq(s - 0.5) + sq(t - 0.5)).sqrt();
                mix(
                    rgb(236, 140, 146),
                    rgb(200, 92, 104),
                    smoothstep(0.1, 0.5, r),
                )
            } else {
                p.skin_shade
            };
            for ch in [c.x, c.y, c.z] {
                out.push((ch.clamp(0.0, 1.0) * 255.0 + 0.5) as u8);
            }
            out.push(255);
        }
    }
    out
}

/// Encodes RGBA8 pixels as PNG with fixed settings, so the bytes never vary.
pub fn encode_png(
    width: u32,
    height: u32,
    rgba: &[u8],
) -> Result<Vec<u8>, crate::image::ImageError> {
    crate::image::encode_png(width, height, rgba, png::Compression::High)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eye_disc_has_a_dark_pupil_and_a_white_sclera() {
        let pupil = paint_eye(Vec2::ZERO);
        assert!(pupil.x < 0.1 && pupil.y < 0.1);
        let sclera = paint_eye(Vec2::new(EYE_RHO * 0.9, 0.0));
        assert!(sclera.min_element() > 0.9);
        let iris = paint_eye(Vec2::new(0.0, EYE_RHO * 0.3));
        assert!(iris.z > iris.x, "the iris is blue");
    }

    #[test]
    fn brows_and_lashes_are_dark_on_the_skin() {
        let brow = paint_skin(0.4, 0.09);
        assert!(brow.x < 0.5, "{brow:?}");
        let lash = paint_skin(0.6, EYE_PHI + 0.01);
        assert!(lash.x < 0.4, "{lash:?}");
        let cheek = paint_skin(1.2, -0.3);
        assert!(cheek.x > 0.85);
    }

    #[test]
    fn each_colour_recolours_its_own_parts_only() {
        let base = Paints::of(&Palette::DEFAULT);
        let look = Paints::of(&Palette {
            skin: rgb(120, 80, 60),
            hair: rgb(40, 40, 46),
            iris: rgb(60, 160, 80),
            blush: rgb(255, 120, 140),
            blush_strength: 0.0,
        });
        let cheek = (1.2, -0.3);
        let brow = (0.4, 0.09);
        let blush_centre = (0.6, -0.5);
        // Skin: darker everywhere on the face; brows follow the hair.
        let (a, b) = (
            skin_with(&base, cheek.0, cheek.1),
            skin_with(&look, cheek.0, cheek.1),
        );
        assert!(b.x < a.x * 0.6, "{a:?} -> {b:?}");
        let (a, b) = (
            skin_with(&base, brow.0, brow.1),
            skin_with(&look, brow.0, brow.1),
        );
        assert!(b.x < a.x * 0.6 && b.z < a.z, "{a:?} -> {b:?}");
        // No blush: the cheek's centre is the plain skin tone.
        let c = skin_with(&look, blush_centre.0, blush_centre.1);
        assert!((c - look.skin).length() < 0.02, "{c:?} vs {:?}", look.skin);
        // Iris: green instead of blue; the sclera stays white; the pupil stays dark.
        let iris = eye_with(&look, Vec2::new(0.0, EYE_RHO * 0.3));
        assert!(iris.y > iris.z && iris.y > iris.x, "{iris:?}");
        let sclera = eye_with(&look, Vec2::new(EYE_RHO * 0.9, 0.0));
        assert_eq!(sclera, eye_with(&base, Vec2::new(EYE_RHO * 0.9, 0.0)));
        let pupil = eye_with(&look, Vec2::ZERO);
        assert!(pupil.x < 0.1 && pupil.y < 0.1, "{pupil:?}");
        // Hair: dark, at the crown and the tips.
        for t in [0.05, 0.9] {
            let h = hair_with(&look, 0.3, t);
            assert!(h.max_element() < 0.25, "{h:?}");
        }
    }

    #[test]
    fn colours_out_of_range_are_clamped_and_never_nan() {
        let p = Paints::of(&Palette {
            skin: Vec3::new(f32::NAN, 2.0, -1.0),
            hair: Vec3::splat(f32::INFINITY),
            iris: Vec3::ZERO,
            blush: Vec3::new(0.5, f32::NAN, 0.5),
            blush_strength: f32::NAN,
        });
        for c in [
            skin_with(&p, 0.6, -0.5),
            eye_with(&p, Vec2::new(0.0, EYE_RHO * 0.3)),
            hair_with(&p, 0.2, 0.5),
        ] {
            assert!(c.is_finite() && c.min_element() >= 0.0 && c.max_element() <= 1.0);
        }
    }

    #[test]
    fn png_encoding_is_deterministic() {
        let pixels: Vec<u8> = (0..64u32 * 64 * 4).map(|i| (i % 251) as u8).collect();
        let a = encode_png(64, 64, &pixels).unwrap();
        let b = encode_png(64, 64, &pixels).unwrap();
        assert_eq!(a, b);
    }
}
