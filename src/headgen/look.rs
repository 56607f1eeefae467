//! The face-shape ("look") targets of the face mesh: per-vertex displacement fields that reshape
//! the neutral face, two per slider (its +1 and -1 ends).
//!
//! A character creator sets these once and the expression targets play on top of them. Morph
//! targets add linearly, so the fields are built to stay out of the expressions' way:
//!
//! - The eyeballs are separate, unmorphed meshes. Eye fields move lid and socket vertices
//!   around the eye centre and then put every vertex of the lid wrap back at its distance from
//!   the eyeball's centre, so no lid cuts into the eyeball. `eye_size` scales the lid
//!   opening (more sideways than up and down) and `eye_tilt` shears it. A blink or another lid
//!   expression on a reshaped eye is fixed by corrective targets (see [`super::correctives`]),
//!   which apply the look to the expressed lids, so the fields are functions of position. `eye_spacing` translates the whole
//!   socket (lids included) rigidly by [`EYE_SPACING_SHIFT`]; the renderer moves the
//!   `LeftEye`/`RightEye` nodes with it.
//! - The closed lips' edges (upper and lower copies) always move together, so the mouth stays
//!   closed at rest, and the mouth interior gets the same field as the skin in front of it.
//! - Broad fields (face, jaw and cheek width) are functions of position alone, and the hair cap
//!   gets the same field as the skin it covers, so no skin pokes through it.
//!
//! Fields are sculpted on the avatar's left half (+X); the right half is its exact mirror image,
//! so every target is symmetric.

use std::f32::consts::FRAC_PI_2;

use glam::Vec3;

use super::face::{
    base_shape, eye_center, mouth_y, SkinVertex, Slit, CENTER_Y, EYE_RADIUS, LID_GAP, MOUTH_PHI,
    RADIUS_Y,
};
use super::math::{bump, cos, sin, smoothstep, sq};
use super::mesh::mirror;
use super::parts::{cavity_center, MouthPart};
use super::targets::Rig;

/// One face-shape slider: a value from -1 to 1, 0 at the neutral face, driving its `up` target
/// above 0 and its `down` target below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookSlider {
    /// The slider's name, e.g. `eye_size`.
    pub name: &'static str,
    /// The target at +1 (`look_<name>_up`).
    pub up: &'static str,
    /// The target at -1 (`look_<name>_down`).
    pub down: &'static str,
}

impl LookSlider {
    const fn new(name: &'static str, up: &'static str, down: &'static str) -> LookSlider {
        LookSlider { name, up, down }
    }
}

/// Every look slider, in the order their targets follow the 52 ARKit targets (up, then down).
pub const LOOK_SLIDERS: [LookSlider; 12] = [
    LookSlider::new("eye_size", "look_eye_size_up", "look_eye_size_down"),
    LookSlider::new(
        "eye_spacing",
        "look_eye_spacing_up",
        "look_eye_spacing_down",
    ),
    LookSlider::new("eye_tilt", "look_eye_tilt_up", "look_eye_tilt_down"),
    LookSlider::new(
        "brow_height",
        "look_brow_height_up",
        "look_brow_height_down",
    ),
    LookSlider::new(
        "nose_length",
        "look_nose_length_up",
        "look_nose_length_down",
    ),
    LookSlider::new("nose_width", "look_nose_width_up", "look_nose_width_down"),
    LookSlider::new(
        "mouth_width",
        "look_mouth_width_up",
        "look_mouth_width_down",
    ),
    LookSlider::new(
        "lip_fullness",
        "look_lip_fullness_up",
        "look_lip_fullness_down",
    ),
    LookSlider::new("jaw_width", "look_jaw_width_up", "look_jaw_width_down"),
    LookSlider::new(
        "chin_length",
        "look_chin_length_up",
        "look_chin_length_down",
    ),
    LookSlider::new(
        "cheek_fullness",
        "look_cheek_fullness_up",
        "look_cheek_fullness_down",
    ),
    LookSlider::new("face_width", "look_face_width_up", "look_face_width_down"),
];

/// The look target names in file order: each slider's up target, then its down target.
pub fn target_names() -> Vec<&'static str> {
    LOOK_SLIDERS.iter().flat_map(|s| [s.up, s.down]).collect()
}

/// How far the left eye's centre moves along X at `eye_spacing` = +1 (m): positive, the eyes
/// move apart. The avatar's left eye is the `LeftEye` node, at +X; the right eye (`RightEye`,
/// at -X) moves by the mirror image, -X by the same amount.
pub const EYE_SPACING_SHIFT: f32 = 0.0032;
/// How far the left eye's centre moves along X at `eye_spacing` = -1 (m): negative, the eyes
/// move closer together; `RightEye` moves by the opposite.
pub const EYE_SPACING_SHIFT_DOWN: f32 = -EYE_SPACING_SHIFT;

/// How far the `LeftEye` node must move along X at `eye_spacing` = `value` (clamped to -1..1),
/// so the eyeball follows its socket; `RightEye` moves by the negated amount. Linear in the
/// value, like the targets' weights.
pub fn eye_spacing_shift(value: f32) -> f32 {
    let v = value.clamp(-1.0, 1.0);
    if v >= 0.0 {
        v * EYE_SPACING_SHIFT
    } else {
        -v * EYE_SPACING_SHIFT_DOWN
    }
}

/// Sideways stretch of the lid opening about the eye centre at `eye_size` ±1 (fraction).
const EYE_SIZE_STRETCH: f32 = 0.28;
/// Vertical stretch of the lid opening about the eye centre at `eye_size` ±1 (fraction); the
/// correctives with the lid expressions keep a blink closing it.
const EYE_SIZE_RAISE: f32 = 0.1;
/// Shear of the lid opening at `eye_tilt` ±1 (rise of the outer corner per metre outwards).
const EYE_TILT_SHEAR: f32 = 0.2;
/// How far `brow_height` ±1 slides the brows along the forehead (radians of latitude).
const BROW_SLIDE: f32 = 0.05;
/// How far `nose_length` ±1 moves the nose tip down (m).
const NOSE_DROP: f32 = 0.0045;
/// Relative change of the nose's width at `nose_width` ±1.
const NOSE_WIDEN: f32 = 0.45;
/// Relative change of the mouth's width at `mouth_width` ±1.
const MOUTH_WIDEN: f32 = 0.22;
/// Relative change of the lips' height at `lip_fullness` ±1.
const LIP_THICKEN: f32 = 0.3;
/// How far `lip_fullness` +1 pushes the lips forwards, and -1 draws them back (m).
const LIP_PUSH: f32 = 0.0015;
/// Relative change of the jaw's width at `jaw_width` ±1.
const JAW_WIDEN: f32 = 0.13;
/// How far `chin_length` ±1 moves the chin down (m).
const CHIN_DROP: f32 = 0.006;
/// How far `cheek_fullness` ±1 pushes the cheeks out (m).
const CHEEK_PUSH: f32 = 0.0045;
/// Relative change of the upper face's width at `face_width` ±1.
const FACE_WIDEN: f32 = 0.09;

/// Inner radius (beyond the eyeball) of the socket that eye fields move rigidly (m).
const SOCKET_INNER: f32 = 0.005;
/// Outer radius (beyond the eyeball) where eye fields have faded out (m).
const SOCKET_OUTER: f32 = 0.016;
/// Radius beyond the eyeball within which `eye_spacing` moves the skin rigidly (m): the whole
/// lid opening, corners included, so the lids move exactly with the eyeball.
const SPACING_RIGID: f32 = 0.008;

/// What kind of vertex a field is evaluated at.
#[derive(Debug, Clone, Copy)]
enum Vertex {
    /// A skin vertex with its grid placement.
    Skin(SkinVertex),
    /// A mouth-interior vertex.
    Mouth(MouthPart),
    /// A hair-cap vertex.
    Hair,
}

/// Landmarks of the left half the fields are centred on.
struct Marks {
    eye: Vec3,
    mouth_y: f32,
    mouth_z: f32,
    cheek: Vec3,
    cavity: Vec3,
    /// Sideways curvature of the face along the mouth line (1/m), as in the expression targets.
    mouth_curve: f32,
}

impl Marks {
    fn new() -> Marks {
        let (a, b) = (base_shape(0.45, MOUTH_PHI), base_shape(0.7, MOUTH_PHI));
        Marks {
            eye: eye_center(),
            mouth_y: mouth_y(),
            mouth_z: base_shape(0.0, MOUTH_PHI).z,
            cheek: base_shape(0.58, -0.52),
            cavity: cavity_center(),
            mouth_curve: (a.z - b.z) / (b.x * b.x - a.x * a.x),
        }
    }

    /// 1 in the socket around the (left) eyeball, fading to 0 over the skin around it.
    fn socket(&self, p: Vec3) -> f32 {
        let r = (p - self.eye).length() - EYE_RADIUS;
        smoothstep(SOCKET_OUTER, SOCKET_INNER, r) * smoothstep(0.002, 0.012, p.x)
    }

    /// The weight of `eye_spacing`'s shift: 1 over the lids and the socket out to
    /// [`SPACING_RIGID`] beyond the eyeball, so they move rigidly with it, fading to 0 over the
    /// skin around them.
    fn spacing(&self, p: Vec3) -> f32 {
        let r = (p - self.eye).length() - EYE_RADIUS;
        smoothstep(SOCKET_OUTER, SPACING_RIGID, r) * smoothstep(0.002, 0.012, p.x)
    }

    /// An eye field: `map` moves a point relative to the eye centre; the result is faded over
    /// the socket and lid-wrap vertices keep their distance from the eyeball's centre.
    fn eye_field(&self, p: Vec3, map: impl Fn(Vec3) -> Vec3) -> Vec3 {
        let w = self.socket(p);
        if w == 0.0 {
            return Vec3::ZERO;
        }
        let d = p - self.eye;
        let q = p + (map(d) - d) * w;
        let r0 = d.length();
        // Kept at their distance from its centre over the whole socket, the skin slides over
        // the eye's bulge instead of keeping its depth, which sank it into a ring around a
        // shrunk opening.
        let keep = smoothstep(EYE_RADIUS + SOCKET_OUTER, EYE_RADIUS + 0.002, r0);
        // Back onto the sphere it was on, radially: continuous everywhere, so neighbouring lid
        // vertices never part.
        let dq = q - self.eye;
        let l = dq.length();
        let on_sphere = if l > 0.0 { self.eye + dq * (r0 / l) } else { q };
        let q = q.lerp(on_sphere, keep);
        // Skin drawn towards the eye slides around the eyeball instead of sinking into it.
        let floor = r0.min(EYE_RADIUS + LID_GAP + 0.0002);
        let dq = q - self.eye;
        let l = dq.length();
        let q = if l < floor && l > 0.0 {
            self.eye + dq * (floor / l)
        } else {
            q
        };
        q - p
    }

    /// 1 on the mouth and the skin right around it, flat over the lips.
    fn mouth_zone(&self, p: Vec3) -> f32 {
        let e = (sq(p.x / 0.032) + sq((p.y - self.mouth_y) / 0.02)).sqrt();
        smoothstep(1.0, 0.45, e)
    }

    /// 1 on the lips, fading over the skin around them.
    fn lips(&self, p: Vec3) -> f32 {
        let e = (sq(p.x / 0.017) + sq((p.y - self.mouth_y) / 0.011)).sqrt();
        bump(e, 1.0)
    }

    /// Excludes the back of the head from face-front fields.
    fn front(&self, p: Vec3, reach: f32) -> f32 {
        smoothstep(self.mouth_z - reach, self.mouth_z - 0.5 * reach, p.z)
    }
}

/// Latitude of a height on the skull's ellipsoid (clamped to the poles).
fn phi_of(y: f32) -> f32 {
    let s = ((y - CENTER_Y) / RADIUS_Y).clamp(-1.0, 1.0);
    // asin by Newton iterations on the portable sine, so the result is the same everywhere.
    let mut a = s;
    for _ in 0..20 {
        let c = cos(a).max(0.05);
        a = (a - (sin(a) - s) / c).clamp(-FRAC_PI_2, FRAC_PI_2);
    }
    a
}

/// The nose's depth offset as [`base_shape`] adds it, with its tip and base moved down by
/// `drop` (m) and its width scaled by `widen`.
fn nose(x: f32, y: f32, ct: f32, drop: f32, widen: f32) -> f32 {
    let tip_y = 0.101 - drop;
    let top = 0.136;
    let base = 0.093 - drop;
    let rise = if y > tip_y {
        smoothstep(top, tip_y, y)
    } else {
        smoothstep(base, tip_y, y)
    };
    let width = (0.005 + 0.006 * smoothstep(0.13, 0.095 - drop, y)) * widen;
    0.0085
        * (1.0 + 0.1 * drop / NOSE_DROP)
        * rise
        * rise
        * bump(x.abs(), width)
        * smoothstep(0.3, 0.8, ct)
}

/// Delta of one left-half (x ≥ 0) vertex at neutral position `p` for slider `slider` at
/// value `a` (±1).
fn field(m: &Marks, slider: &str, a: f32, v: Vertex, p: Vec3) -> Vec3 {
    let skin = match v {
        Vertex::Skin(s) => Some(s),
        _ => None,
    };
    match slider {
        "eye_size" => {
            let s = 1.0 + EYE_SIZE_STRETCH * a;
            let t = 1.0 + EYE_SIZE_RAISE * a;
            m.eye_field(p, |d| Vec3::new(d.x * s, d.y * t, d.z))
        }
        "eye_spacing" => Vec3::new(EYE_SPACING_SHIFT * a, 0.0, 0.0) * m.spacing(p),
        "eye_tilt" => {
            let t = EYE_TILT_SHEAR * a;
            m.eye_field(p, |d| Vec3::new(d.x, d.y + t * d.x, d.z))
        }
        "brow_height" => {
            let Some(s) = skin else { return Vec3::ZERO };
            if s.slit != Slit::None {
                return Vec3::ZERO;
            }
            let at = s.theta.abs();
            let w = bump(
                (sq((at - 0.4) / 0.5) + sq((s.phi - 0.06) / 0.2)).sqrt(),
                1.0,
            ) * smoothstep(-0.1, 0.02, s.phi)
                * smoothstep(0.36, 0.2, s.phi);
            let guard = 1.0 - m.socket(p);
            (base_shape(at, s.phi + BROW_SLIDE * a) - base_shape(at, s.phi)) * (w * guard)
        }
        "nose_length" | "nose_width" => {
            let Some(s) = skin else { return Vec3::ZERO };
            let ct = cos(s.theta);
            let (drop, widen) = if slider == "nose_length" {
                (NOSE_DROP * a, 1.0)
            } else {
                (0.0, 1.0 + NOSE_WIDEN * a)
            };
            let dz = nose(p.x, p.y, ct, drop, widen) - nose(p.x, p.y, ct, 0.0, 1.0);
            // The tip moves down with the length, carrying the nostrils' skin below it along.
            let dy = if slider == "nose_length" {
                let tip = (sq(p.x / 0.012) + sq((p.y - 0.098) / 0.011)).sqrt();
                -drop * 0.5 * bump(tip, 1.0) * smoothstep(0.3, 0.8, ct)
            } else {
                0.0
            };
            Vec3::new(0.0, dy, dz)
        }
        "mouth_width" => {
            // One field of position for the skin and everything inside the mouth, so the
            // cavity, teeth and tongue move exactly like the skin in front of them, wherever an
            // expression has taken either (the correctives evaluate it there).
            if let Vertex::Hair = v {
                return Vec3::ZERO;
            }
            let w = m.mouth_zone(p) * m.front(p, 0.04);
            let dx = MOUTH_WIDEN * a * p.x * w;
            // The skin slides over the face's curve, so it stays on the surface.
            Vec3::new(dx, 0.0, -m.mouth_curve * (2.0 * p.x * dx + dx * dx))
        }
        "lip_fullness" => match v {
            Vertex::Skin(s) => {
                let w = m.lips(p) * m.front(p, 0.03);
                match s.slit {
                    // The inner lips stay where they are, in front of the teeth.
                    Slit::MouthInner { .. } => Vec3::ZERO,
                    // Fuller lips also push forwards, thinner ones draw back.
                    _ => Vec3::new(0.0, (p.y - m.mouth_y) * LIP_THICKEN * a, LIP_PUSH * a) * w,
                }
            }
            // The cavity's front follows the lips: half way when they push forwards, so no gap
            // opens behind them, all the way when they draw back, so it stays behind them.
            Vertex::Mouth(MouthPart::Cavity) => {
                let front = smoothstep(m.cavity.z, m.cavity.z + 0.012, p.z);
                let follow = if a > 0.0 { 0.5 } else { 1.0 };
                Vec3::new(0.0, 0.0, follow * LIP_PUSH * a) * (front * m.lips(p))
            }
            _ => Vec3::ZERO,
        },
        "jaw_width" => {
            // The lower face, from the cheeks down, widening away from the centre line (the
            // chin's middle and the mouth keep their width) and not at the back, where the neck
            // rises into the head.
            let lower = smoothstep(-0.42, -0.85, phi_of(p.y));
            let side = smoothstep(0.008, 0.04, p.x);
            let front = smoothstep(-0.005, 0.03, p.z);
            Vec3::new(JAW_WIDEN * a * p.x * lower * side * front, 0.0, 0.0)
        }
        "chin_length" => {
            let below = smoothstep(m.mouth_y - 0.008, m.mouth_y - 0.03, p.y);
            let front = smoothstep(0.02, 0.05, p.z) * smoothstep(0.05, 0.025, p.x);
            Vec3::new(0.0, -CHIN_DROP * a, 0.25 * CHIN_DROP * a) * (below * front)
        }
        "cheek_fullness" => {
            let d = p - m.cheek;
            let e = (sq(d.x / 0.03) + sq(d.y / 0.026) + sq(d.z / 0.03)).sqrt();
            let out = Vec3::new(p.x, 0.0, p.z + 0.01).normalize_or_zero();
            let w = bump(e, 1.0) * (1.0 - m.socket(p)) * (1.0 - m.lips(p));
            out * (CHEEK_PUSH * a * w)
        }
        "face_width" => {
            // The cheekbones, temples and skull widen; the eye sockets (whose eyeballs stay
            // put), the nose and the lower jaw keep their place.
            let upper = smoothstep(0.07, 0.105, p.y);
            let side = smoothstep(0.01, 0.035, p.x);
            let keep = 1.0 - m.socket(p);
            Vec3::new(FACE_WIDEN * a * p.x * upper * side * keep, 0.0, 0.0)
        }
        _ => Vec3::ZERO,
    }
}

/// Delta of any vertex: sculpted on the left half, mirrored onto the right.
fn delta(m: &Marks, slider: &str, a: f32, v: Vertex, p: Vec3) -> Vec3 {
    if p.x < 0.0 {
        let v = match v {
            Vertex::Skin(s) => Vertex::Skin(SkinVertex {
                theta: -s.theta,
                ..s
            }),
            other => other,
        };
        mirror(field(m, slider, a, v, mirror(p)))
    } else {
        let d = field(m, slider, a, v, p);
        if p.x == 0.0 {
            Vec3::new(0.0, d.y, d.z)
        } else {
            d
        }
    }
}

/// Position deltas of the target of `slider` at value `a` (±1) for the face's three
/// primitives (skin, mouth, hair).
pub fn deltas(rig: &Rig, slider: &LookSlider, a: f32) -> [Vec<Vec3>; 3] {
    let [skin, mouth, hair] = rig.primitives();
    deltas_at(
        rig,
        slider,
        a,
        [&skin.positions, &mouth.positions, &hair.positions],
    )
}

/// The look field of `slider` at value `a` (±1) evaluated at `positions` (one list per
/// primitive, in the rig's vertex order) instead of at the neutral vertices: each vertex keeps
/// its kind (its grid placement, its mouth part), only the point moves. Evaluated where an
/// expression has taken the vertices, this is the look applied on top of that expression.
pub fn deltas_at(
    rig: &Rig,
    slider: &LookSlider,
    a: f32,
    positions: [&[Vec3]; 3],
) -> [Vec<Vec3>; 3] {
    let m = Marks::new();
    let name = slider.name;
    let skin = positions[0]
        .iter()
        .enumerate()
        .map(|(i, &p)| match rig.grid.get(i) {
            Some(&s) => delta(&m, name, a, Vertex::Skin(s), p),
            None => Vec3::ZERO,
        })
        .collect();
    let mouth = positions[1]
        .iter()
        .zip(&rig.mouth_parts)
        .map(|(&p, &part)| delta(&m, name, a, Vertex::Mouth(part), p))
        .collect();
    let hair = positions[2]
        .iter()
        .map(|&p| delta(&m, name, a, Vertex::Hair, p))
        .collect();
    [skin, mouth, hair]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_pattern() {
        for s in LOOK_SLIDERS {
            assert_eq!(s.up, format!("look_{}_up", s.name));
            assert_eq!(s.down, format!("look_{}_down", s.name));
        }
        assert_eq!(target_names().len(), 24);
    }

    #[test]
    fn phi_of_inverts_the_skull_height() {
        for phi in [-1.2f32, -0.5, 0.0, 0.7] {
            let y = CENTER_Y + RADIUS_Y * sin(phi);
            assert!((phi_of(y) - phi).abs() < 1e-4);
        }
    }
}
