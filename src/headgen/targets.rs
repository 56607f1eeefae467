//! The 52 ARKit morph targets of the face mesh, as per-vertex position deltas.
//!
//! Eyelid channels re-evaluate the skin with different lid states (so the lids slide over the
//! eyeball); everything else is a smooth displacement field around a landmark. Only left-side
//! channels are sculpted; their `…Right` partners are the mirror images through the vertex
//! mirror map, which makes the pairs exactly symmetric.

use glam::Vec3;

use super::face::{
    base_shape, build_skin, eye_center, mouth_y, skin_point, Lids, Skin, SkinVertex, Slit, EYE_PHI,
    EYE_RADIUS, MOUTH_HALF, MOUTH_PHI,
};
use super::math::{bump, cos, lerp, sin, smoothstep, sq};
use super::mesh::{mirror, mirror_map, MeshBuilder};
use super::parts::{cavity_center, hair, mouth_interior, tongue_center, MouthPart};
use crate::arkit::Channel;

/// Jaw hinge, a little in front of and below the ears (m).
const JAW_PIVOT: Vec3 = Vec3::new(0.0, 0.100, 0.005);
/// How far `jawOpen` rotates the jaw (radians).
const JAW_ANGLE: f32 = 0.30;
/// How far `jawOpen` slides the jaw forwards (m), as the jaw's condyles glide forwards while it
/// opens: the chin drops more than it swings back.
const JAW_SLIDE: f32 = 0.0045;
/// How far `jawOpen` lifts the middle of the upper lip (m), rounding the opening.
const JAW_UPPER_LIP: f32 = 0.0022;
/// Latitude band below the mouth over which the lower lip's arched drop blends into the chin's
/// rigid rotation.
const JAW_LIP_BAND: f32 = 0.2;
/// Longitude over which the line below which the jaw carries the skin bends down beside the
/// mouth corners.
const JAW_CORNER_BAND: f32 = 0.15;
/// Half-width (longitude) of the lower lip's drop on the skin right under its edge: wider than
/// the mouth, so the skin under and beside each corner comes down with the lip next to it.
/// Its profile, `(1 - (θ/w)²)²`, stays at or above the edge's [`lip_arch`] near the corners and
/// falls to zero with zero slope beyond them: the skin under the lip never rises past the
/// lip's edge (a fold, seen from the front as a dark slit under the corner), and no sliver of
/// skin stands edge-on between a corner and the dropping lip beside it (seen from the side as
/// a hole into the head).
const JAW_LIP_SPREAD: f32 = 0.42;
/// Latitude band below the lower lip's edge over which that profile relaxes into one that
/// reaches the corners with zero slope, slowly enough that each row of skin under the lip drops
/// about as far as the row above it (the chin's share grows as the lip's shrinks).
const JAW_LIP_RELAX: f32 = 0.2;
/// Fraction of the jaw's drop at the lips' middle by which `mouthClose` lowers both lips.
const MOUTH_CLOSE_MEET: f32 = 0.75;
/// Latitude over which `mouthClose`'s motion of the upper lip fades upwards: wide, so the
/// stretch of the lowered upper lip spreads over the skin below the nose.
const MOUTH_CLOSE_UPPER_REACH: f32 = 0.3;
/// Latitude over which `mouthClose`'s motion of the lower lip fades downwards.
const MOUTH_CLOSE_LOWER_REACH: f32 = 0.16;
/// How far `mouthClose` pushes the upper lip forwards just above its edge (m), so the lower
/// lip, rising when `mouthClose` is used alone, tucks behind it.
const MOUTH_CLOSE_TUCK: f32 = 0.003;
/// Fraction of `jawOpen` that `tongueOut` applies, so the tongue passes between parted lips
/// instead of through closed ones.
const TONGUE_JAW: f32 = 0.4;

/// The face mesh's three primitives with what the targets need to know about their vertices.
#[derive(Debug, Clone)]
pub struct Rig {
    /// The skin grid.
    pub skin: MeshBuilder,
    /// Grid placement of every skin vertex.
    pub grid: Vec<SkinVertex>,
    /// Mouth cavity, teeth and tongue.
    pub mouth: MeshBuilder,
    /// Which mouth piece each mouth vertex belongs to.
    pub mouth_parts: Vec<MouthPart>,
    /// The hair cap.
    pub hair: MeshBuilder,
    /// Mirror maps of the three primitives.
    pub mirrors: [Vec<u32>; 3],
}

impl Rig {
    /// Builds the neutral face at level of detail `lod` (0 is the full mesh; see
    /// [`super::face::LEVELS`]).
    pub fn new(lod: usize) -> Rig {
        let Skin {
            mesh: skin,
            vertices: grid,
        } = build_skin(lod);
        let (mouth, mouth_parts) = mouth_interior(lod);
        let hair = hair(lod);
        let mirrors = [
            mirror_map(&skin.positions, &skin.tags),
            mirror_map(&mouth.positions, &mouth.tags),
            mirror_map(&hair.positions, &hair.tags),
        ];
        Rig {
            skin,
            grid,
            mouth,
            mouth_parts,
            hair,
            mirrors,
        }
    }

    /// The primitives in glTF order: skin, mouth, hair.
    pub fn primitives(&self) -> [&MeshBuilder; 3] {
        [&self.skin, &self.mouth, &self.hair]
    }

    /// Position deltas of `channel` for each primitive.
    pub fn deltas(&self, channel: Channel) -> [Vec<Vec3>; 3] {
        if channel.name().ends_with("Right") {
            let left = self.deltas(channel.mirror());
            let flip = |i: usize, d: &[Vec3]| -> Vec<Vec3> {
                self.mirrors[i]
                    .iter()
                    .map(|&m| mirror(d[m as usize]))
                    .collect()
            };
            return [flip(0, &left[0]), flip(1, &left[1]), flip(2, &left[2])];
        }
        let lm = Landmarks::new();
        let skin = self
            .skin
            .positions
            .iter()
            .enumerate()
            .map(|(i, &p)| match self.grid.get(i) {
                Some(v) => skin_delta(&lm, channel, v, p),
                None => Vec3::ZERO,
            })
            .collect();
        let mouth = self
            .mouth
            .positions
            .iter()
            .zip(&self.mouth_parts)
            .map(|(&p, &part)| mouth_delta(&lm, channel, part, p))
            .collect();
        [skin, mouth, vec![Vec3::ZERO; self.hair.len()]]
    }
}

impl Default for Rig {
    fn default() -> Self {
        Rig::new(0)
    }
}

/// Landmarks the displacement fields are centred on (left side where sided).
pub(super) struct Landmarks {
    mouth_y: f32,
    mouth_z: f32,
    /// The left mouth corner.
    pub(super) corner: Vec3,
    eye: Vec3,
    cheek: Vec3,
    nose_wing: Vec3,
    nose_side: Vec3,
    cavity: Vec3,
    tongue: Vec3,
    jaw_cos: f32,
    jaw_sin: f32,
    /// The face's sideways curvature along the mouth line: its depth falls off as
    /// `mouth_curve * x²` away from the centre line (1/m).
    mouth_curve: f32,
}

impl Landmarks {
    pub(super) fn new() -> Landmarks {
        Landmarks {
            mouth_y: mouth_y(),
            mouth_z: base_shape(0.0, MOUTH_PHI).z,
            corner: base_shape(MOUTH_HALF, MOUTH_PHI),
            eye: eye_center(),
            cheek: base_shape(0.55, -0.55),
            nose_wing: base_shape(0.12, -0.5),
            nose_side: base_shape(0.1, -0.35),
            cavity: cavity_center(),
            tongue: tongue_center(),
            jaw_cos: cos(JAW_ANGLE),
            jaw_sin: sin(JAW_ANGLE),
            mouth_curve: {
                // Sampled beside the lips, so their cushion does not count.
                let (a, b) = (base_shape(0.45, MOUTH_PHI), base_shape(0.7, MOUTH_PHI));
                (a.z - b.z) / (b.x * b.x - a.x * a.x)
            },
        }
    }

    /// A sideways slide of the skin by `dx` (m) that stays on the face: the depth follows the
    /// face's curvature, so skin sliding towards the centre line rises with it instead of
    /// sinking behind the surface (and the mouth cavity) it slides over.
    fn slide(&self, p: Vec3, dx: f32) -> Vec3 {
        Vec3::new(dx, 0.0, -self.mouth_curve * (2.0 * p.x * dx + dx * dx))
    }

    /// Where the jaw's motion (rotation about the hinge plus a slight forward glide) takes `p`,
    /// minus `p`.
    fn jaw_open(&self, p: Vec3) -> Vec3 {
        let d = p - JAW_PIVOT;
        let r = Vec3::new(
            d.x,
            d.y * self.jaw_cos - d.z * self.jaw_sin,
            d.y * self.jaw_sin + d.z * self.jaw_cos + JAW_SLIDE,
        );
        r - d
    }

    /// The whole `jawOpen` delta of a skin vertex: the jaw's motion where the jaw carries the
    /// skin, the upper lip's lift, and the corners drawing in a little.
    fn jaw_open_skin(&self, v: &SkinVertex, p: Vec3) -> Vec3 {
        let lift = JAW_UPPER_LIP * upper_lip_weight(v);
        let narrow = -0.08 * p.x * self.lips(p);
        self.jaw_open(p) * jaw_weight(v) + Vec3::new(narrow, lift, 0.0)
    }

    /// The middle of the closed lips.
    fn lip_centre(&self) -> Vec3 {
        Vec3::new(0.0, self.mouth_y, self.mouth_z)
    }

    /// 1 on the lips, fading over the skin around them.
    fn lips(&self, p: Vec3) -> f32 {
        let e = (sq(p.x / 0.017) + sq((p.y - self.mouth_y) / 0.011)).sqrt();
        bump(e, 1.0) * self.front(p)
    }

    /// The lips gathered into a pout: like [`Self::lips`] but with a flatter top, so the whole
    /// mouth moves together.
    fn pout(&self, p: Vec3) -> f32 {
        let e = (sq(p.x / 0.02) + sq((p.y - self.mouth_y) / 0.013)).sqrt();
        smoothstep(1.0, 0.35, e) * self.front(p)
    }

    /// Like [`Self::lips`] but reaching further down towards the chin.
    fn lips_tall(&self, p: Vec3) -> f32 {
        let e = (sq(p.x / 0.018) + sq((p.y - self.mouth_y) / 0.017)).sqrt();
        bump(e, 1.0) * self.front(p)
    }

    /// The mouth and the cheeks beside it.
    fn mouth_wide(&self, p: Vec3) -> f32 {
        let e = (sq(p.x / 0.03) + sq((p.y - self.mouth_y) / 0.022)).sqrt();
        bump(e, 1.0) * self.front(p)
    }

    /// Excludes the back of the head from mouth fields.
    fn front(&self, p: Vec3) -> f32 {
        smoothstep(self.mouth_z - 0.035, self.mouth_z - 0.015, p.z)
    }

    /// Around the left mouth corner: short reach towards the mouth's centre, long reach
    /// outwards over the cheek.
    fn corner(&self, p: Vec3) -> f32 {
        let d = p - self.corner;
        let sx = if d.x < 0.0 { 0.0095 } else { 0.022 };
        let e = (sq(d.x / sx) + sq(d.y / 0.018) + sq(d.z / 0.02)).sqrt();
        bump(e, 1.0)
    }

    /// 0 on the lids and the skin right around the eyeball, so that fields that are not about
    /// the eyes never pull a lid off its eyeball.
    fn eye_guard(&self, p: Vec3) -> f32 {
        let e = Vec3::new(self.eye.x * p.x.signum(), self.eye.y, self.eye.z);
        smoothstep(0.002, 0.010, (p - e).length() - EYE_RADIUS)
    }
}

/// The lips' opening profile across the mouth: 1 in the middle, 0 at the corners, shaped like
/// half an ellipse, so parted lips form an oval with soft corners.
pub(super) fn lip_arch(theta: f32) -> f32 {
    let u = theta / MOUTH_HALF;
    (1.0 - u * u).max(0.0).sqrt()
}

/// Jaw weight of a skin vertex: 1 on the chin, 0 above the mouth. The lower lip's edge follows
/// the jaw along [`lip_arch`] (fully in the middle, not at all at the corners); the skin right
/// under it along a wider, smooth profile ([`JAW_LIP_SPREAD`]) that relaxes over the rows below
/// ([`JAW_LIP_RELAX`]); below that the weight blends into the chin's rigid motion over
/// [`JAW_LIP_BAND`], and beside the corners it fades in below a line that runs back and
/// slightly down. Every part of the field off the lip's edge is smooth (the arch's steep ends
/// are confined to the edge itself), so the jaw's motion never folds the skin into a crease at
/// the corners or down the chin.
pub(super) fn jaw_weight(v: &SkinVertex) -> f32 {
    let at = v.theta.abs();
    let dp = v.phi - MOUTH_PHI;
    match v.slit {
        Slit::MouthEdge { upper } | Slit::MouthInner { upper } => {
            return if upper { 0.0 } else { lip_arch(at) }
        }
        _ => {}
    }
    let lateral = smoothstep(1.75, 1.2, at);
    // A soft ramp of the distance beyond the corner, so the fade-in line bends down smoothly.
    let x = at - MOUTH_HALF;
    let beyond = 0.5 * (x + (x * x + sq(JAW_CORNER_BAND)).sqrt());
    let below = -(dp + 0.3 * beyond);
    let chin = smoothstep(0.0, JAW_LIP_BAND, below);
    // The lower lip's own drop: the arch on the lip's edge; under it the wider profile, relaxing
    // over the rows below into one that reaches the corners with zero slope.
    let lip = if dp < 0.0 {
        let u = at / MOUTH_HALF;
        let soft = sq((1.0 - u * u).max(0.0));
        let w = at / JAW_LIP_SPREAD;
        let spread = sq((1.0 - w * w).max(0.0));
        lerp(spread, soft, smoothstep(0.0, -JAW_LIP_RELAX, dp))
    } else {
        0.0
    };
    lateral * (1.0 - (1.0 - chin) * (1.0 - lip))
}

/// Weight of the upper lip's lift when the jaw opens: the lip's arch, fading upwards.
pub(super) fn upper_lip_weight(v: &SkinVertex) -> f32 {
    let dp = v.phi - MOUTH_PHI;
    match v.slit {
        Slit::MouthEdge { upper: true } | Slit::MouthInner { upper: true } => lip_arch(v.theta),
        Slit::None if dp > 0.0 => lip_arch(v.theta) * bump(dp, 0.12),
        _ => 0.0,
    }
}

/// A bump in grid coordinates around (`theta`, `phi`).
fn grid_bump(v: &SkinVertex, theta: f32, phi: f32, r_theta: f32, r_phi: f32) -> f32 {
    bump(
        (sq((v.theta - theta) / r_theta) + sq((v.phi - phi) / r_phi)).sqrt(),
        1.0,
    )
}

/// Keeps brow fields off the lids and away from the hair.
fn brow_guard(v: &SkinVertex) -> f32 {
    smoothstep(0.32, 0.18, v.phi) * smoothstep(EYE_PHI + 0.10, EYE_PHI + 0.24, v.phi)
}

/// Lid state of the left eye for an eye channel, if it is one.
fn lid_state(channel: Channel) -> Option<Lids> {
    use Channel::*;
    let (upper, lower, shift) = match channel {
        EyeBlinkLeft => (0.0, 0.0, 0.0),
        EyeLookDownLeft => (0.55, 0.85, 0.0),
        EyeLookInLeft => (1.0, 1.0, 0.3),
        EyeLookOutLeft => (1.0, 1.0, -0.3),
        EyeLookUpLeft => (1.1, 1.06, 0.0),
        EyeSquintLeft => (0.85, 0.45, 0.0),
        EyeWideLeft => (1.14, 1.22, 0.0),
        _ => return None,
    };
    Some(Lids {
        upper,
        lower,
        shift,
    })
}

/// Delta of one skin grid vertex (neutral position `p`) for a left or unsided channel.
pub(super) fn skin_delta(lm: &Landmarks, channel: Channel, v: &SkinVertex, p: Vec3) -> Vec3 {
    use Channel::*;
    if let Some(lids) = lid_state(channel) {
        let open = [Lids::OPEN; 2];
        return skin_point(v, &[lids, Lids::OPEN]) - skin_point(v, &open);
    }
    let jaw = jaw_weight(v);
    let lips = lm.lips(p);
    // Sided lip fields stop exactly at the centre line, so a Left target never moves the
    // avatar's right half.
    let left = smoothstep(0.0, 0.012, p.x);
    let guard = lm.eye_guard(p);
    match channel {
        JawOpen => lm.jaw_open_skin(v, p),
        JawForward => Vec3::new(0.0, 0.0, 0.007) * jaw,
        JawLeft => Vec3::new(0.008, 0.0, 0.0) * jaw,
        MouthClose => {
            // Undoes jawOpen on the lips, so the two together close the lips over the open jaw,
            // and moves both lips down and back alike by most of the jaw's motion, so the closed
            // lips meet low, near where the lower lip dropped to. With linear blending the lower
            // lip alone must still rise by the whole opening relative to the upper lip. Meeting
            // low keeps that rise small, the upper lip's wide falloff spreads its stretch over
            // the skin below the nose, and a slight forward push of the upper lip above its edge
            // keeps the rising lower lip tucked behind it, so alone the mouth reads as pressed
            // shut instead of the lower lip arching over the upper one.
            let jaw = lm.jaw_open(lm.lip_centre());
            let meet = Vec3::new(0.0, MOUTH_CLOSE_MEET * jaw.y, jaw.z);
            let dp = v.phi - MOUTH_PHI;
            let upper = match v.slit {
                Slit::MouthEdge { upper } | Slit::MouthInner { upper } => upper,
                _ => dp >= 0.0,
            };
            let reach = if upper {
                MOUTH_CLOSE_UPPER_REACH
            } else {
                MOUTH_CLOSE_LOWER_REACH
            };
            let w = bump(dp.abs(), reach)
                * smoothstep(MOUTH_HALF + 0.12, MOUTH_HALF - 0.04, v.theta.abs());
            // Zero on the lip's edge (so the lips still meet with jawOpen), peaking above it.
            let overlap = match v.slit {
                Slit::None if dp > 0.0 => smoothstep(0.0, 0.1, dp) * bump(dp, 0.32),
                _ => 0.0,
            } * lip_arch(v.theta.abs().min(MOUTH_HALF));
            (meet - lm.jaw_open_skin(v, p)) * w + Vec3::new(0.0, 0.0, MOUTH_CLOSE_TUCK * overlap)
        }
        MouthFunnel => {
            // The lips part into a rounded opening and push forwards while the corners draw in.
            let side = 1.0 - 2.0 * jaw;
            let round = (1.0 - sq(p.x / 0.013)).max(0.0).sqrt();
            Vec3::new(-0.22 * p.x, side * 0.0026 * round, 0.006) * lips
        }
        MouthPucker => {
            // A small round pout: the lips gather towards the middle and push well forwards.
            let pout = lm.pout(p);
            Vec3::new(-0.5 * p.x, -(p.y - lm.mouth_y) * 0.3, 0.012) * pout
        }
        MouthLeft => lm.slide(p, 0.007 * lm.mouth_wide(p)),
        MouthSmileLeft => {
            let cheek = bump((p - lm.cheek).length(), 0.028) * guard;
            Vec3::new(0.0025, 0.0065, -0.0012) * lm.corner(p)
                + Vec3::new(0.0, 0.0025, 0.0012) * cheek
        }
        MouthFrownLeft => Vec3::new(0.0008, -0.0055, -0.0005) * lm.corner(p),
        MouthDimpleLeft => Vec3::new(0.0025, 0.0005, -0.0035) * lm.corner(p),
        MouthStretchLeft => Vec3::new(0.0055, -0.0025, -0.0015) * lm.corner(p),
        // Rolling curls a lip in over the teeth: its red turns up (or down) and back under the
        // other lip, so it thins to a line.
        MouthRollLower => Vec3::new(0.0, 0.004, -0.0028) * lip_rows(v, Some(false), 0.11),
        MouthRollUpper => Vec3::new(0.0, -0.0042, -0.0055) * lip_rows(v, Some(true), 0.11),
        MouthShrugLower => {
            // The chin and the lower lip push up and out, carrying the closed lip line up.
            let w = shrug(v, false, 0.3, 0.2, 0.06, 0.08);
            Vec3::new(0.0, 0.0045, 0.003) * w
        }
        MouthShrugUpper => {
            // The upper lip pushes up and out, and the closed lip line follows it.
            let w = shrug(v, true, 0.3, 0.14, 0.04, 0.06);
            Vec3::new(0.0, 0.0035, 0.0022) * w
        }
        MouthPressLeft => {
            // The lips press together on that side: they flatten towards the lip line, thin, and
            // the corner pulls outwards.
            let thin = -(p.y - lm.mouth_y) * 0.6;
            Vec3::new(0.0, thin, -0.0016) * (lm.lips_tall(p) * left)
                + Vec3::new(0.0025, -0.0006, -0.0006) * lm.corner(p)
        }
        MouthLowerDownLeft => Vec3::new(0.0, -0.0045, 0.0006) * (jaw * lm.lips_tall(p) * left),
        MouthUpperUpLeft => Vec3::new(0.0, 0.0042, 0.0006) * ((1.0 - jaw) * lips * left),
        BrowDownLeft => {
            Vec3::new(-0.0018, -0.0045, -0.0006)
                * (grid_bump(v, 0.35, 0.07, 0.32, 0.17) * brow_guard(v) * guard)
        }
        BrowInnerUp => {
            let mirrored = SkinVertex {
                theta: v.theta.abs(),
                ..*v
            };
            Vec3::new(0.0, 0.0065, 0.0005)
                * (grid_bump(&mirrored, 0.16, 0.06, 0.26, 0.18) * brow_guard(v) * guard)
        }
        BrowOuterUpLeft => {
            Vec3::new(0.0, 0.0065, 0.0)
                * (grid_bump(v, 0.62, 0.08, 0.26, 0.18) * brow_guard(v) * guard)
        }
        CheekPuff => {
            let mirrored = SkinVertex {
                theta: v.theta.abs(),
                ..*v
            };
            let out = Vec3::new(p.x, 0.0, p.z + 0.01).normalize_or_zero();
            out * (0.008 * grid_bump(&mirrored, 0.55, -0.62, 0.42, 0.3) * (1.0 - lips) * guard)
        }
        CheekSquintLeft => {
            Vec3::new(0.0, 0.0038, 0.0012) * (grid_bump(v, 0.55, -0.5, 0.3, 0.22) * guard)
        }
        NoseSneerLeft => {
            // The nose wing lifts and wrinkles up towards the eye, and the upper lip on that
            // side rises with it.
            let wing = bump((p - lm.nose_wing).length(), 0.013);
            let side = bump((p - lm.nose_side).length(), 0.017);
            let own_side = smoothstep(0.0, 0.004, p.x);
            let lip = (1.0 - jaw) * lm.lips(p) * left;
            (Vec3::new(0.0012, 0.0058, 0.0012) * wing + Vec3::new(0.0004, 0.0028, -0.0004) * side)
                * (guard * own_side)
                + Vec3::new(0.0, 0.003, 0.0004) * lip
        }
        TongueOut => lm.jaw_open_skin(v, p) * TONGUE_JAW,
        _ => Vec3::ZERO,
    }
}

/// Weight of the lip rows around the mouth slit: 1 on the slit, fading over `reach` radians of
/// latitude and beyond the corners. `upper` picks one lip (the other gets 0); `None` takes both.
fn lip_rows(v: &SkinVertex, upper: Option<bool>, reach: f32) -> f32 {
    let dp = v.phi - MOUTH_PHI;
    let on_upper = match v.slit {
        Slit::MouthEdge { upper } | Slit::MouthInner { upper } => Some(upper),
        _ if dp > 0.0 => Some(true),
        _ if dp < 0.0 => Some(false),
        _ => None,
    };
    if let (Some(want), Some(is)) = (upper, on_upper) {
        if want != is {
            return 0.0;
        }
    }
    bump(dp.abs(), reach) * smoothstep(MOUTH_HALF + 0.12, MOUTH_HALF - 0.04, v.theta.abs())
}

/// Weight of a shrug: a bump on one lip's side of the slit (`upper`), `r_theta` wide and
/// `r_phi` tall, centred `offset` away from the slit. On the other side the value at the slit
/// fades over `fade`, so the closed lips move together and never cross.
fn shrug(v: &SkinVertex, upper: bool, r_theta: f32, r_phi: f32, offset: f32, fade: f32) -> f32 {
    let dp = v.phi - MOUTH_PHI;
    let s = if upper { 1.0 } else { -1.0 };
    let own = match v.slit {
        Slit::MouthEdge { .. } | Slit::MouthInner { .. } => 0.0,
        _ => dp * s,
    };
    let at = |d: f32| {
        bump(
            (sq(v.theta / r_theta) + sq((d - offset) / r_phi)).sqrt(),
            1.0,
        )
    };
    if own >= 0.0 {
        at(own)
    } else {
        at(0.0) * bump(-own, fade)
    }
}

/// How far the cavity's front follows a pout whose lips the jaw parts (`jawOpen` with
/// `mouthPucker`, a pair corrective): the pout pushes the lips 12 mm forwards, so a turned head
/// looking into the opening sees the cavity behind the lips, never the inside of the head past
/// its front. With the jaw closed the lips hide the cavity and it stays where it is, so a
/// narrow or thin-lipped look never has it showing through the pouting skin.
pub(super) fn pout_cavity(lm: &Landmarks, p: Vec3) -> Vec3 {
    let front = smoothstep(lm.cavity.z, lm.cavity.z + 0.012, p.z);
    let u = p.x / lm.corner.x;
    let inside = (1.0 - u * u).max(0.0);
    Vec3::new(0.0, 0.0, 0.012) * (front * inside * lm.pout(p))
}

/// Delta of one mouth-interior vertex for a left or unsided channel.
fn mouth_delta(lm: &Landmarks, channel: Channel, part: MouthPart, p: Vec3) -> Vec3 {
    use Channel::*;
    let jaw = match part {
        // The cavity's floor follows the jaw where the lower lip does (fully in the middle, less
        // towards the corners), so it never swings out through the skin beside the mouth.
        MouthPart::Cavity => {
            let u = p.x / (1.25 * lm.corner.x);
            smoothstep(lm.cavity.y + 0.003, lm.cavity.y - 0.004, p.y)
                * (1.0 - u * u).max(0.0).sqrt()
        }
        MouthPart::UpperTeeth => 0.0,
        MouthPart::LowerTeeth | MouthPart::Tongue => 1.0,
    };
    // The cavity's front follows lips that push forwards, so no gap opens behind them.
    let front = match part {
        MouthPart::Cavity => smoothstep(lm.cavity.z, lm.cavity.z + 0.012, p.z),
        _ => 0.0,
    };
    match channel {
        JawOpen => lm.jaw_open(p) * jaw,
        JawForward => {
            // The skin below the lips carries the jaw forwards less towards the corners (the
            // corners stay joined to the upper lip), so the parts behind it follow the same
            // profile and never poke through.
            let u = p.x / lm.corner.x;
            Vec3::new(0.0, 0.0, 0.007) * (jaw * sq((1.0 - u * u).max(0.0)))
        }
        JawLeft => Vec3::new(0.008, 0.0, 0.0) * jaw,
        MouthFunnel => {
            let u = p.x / lm.corner.x;
            let inside = (1.0 - u * u).max(0.0);
            Vec3::new(0.0, 0.0, 0.005) * (front * inside * lm.lips(p))
        }
        TongueOut => {
            // The jaw drops a little so the lips part, and the tongue slides out over the lower
            // lip: raised into the opening, flattened, and pushed forwards.
            let mut d = lm.jaw_open(p) * (TONGUE_JAW * jaw);
            if part == MouthPart::Tongue {
                let w = smoothstep(lm.tongue.z - 0.012, lm.tongue.z + 0.010, p.z);
                d += Vec3::new(0.0, 0.0085 - 0.3 * (p.y - lm.tongue.y), 0.022) * w;
            }
            d
        }
        _ => Vec3::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_maps_are_involutions_that_pair_every_off_centre_vertex() {
        let rig = Rig::new(0);
        for (prim, map) in rig.primitives().iter().zip(&rig.mirrors) {
            for (i, &m) in map.iter().enumerate() {
                assert_eq!(map[m as usize] as usize, i);
                let p = prim.positions[i];
                if p.x != 0.0 {
                    assert_ne!(m as usize, i, "vertex {i} at {p:?} has no mirror partner");
                }
            }
        }
    }

    #[test]
    fn jaw_weight_splits_the_lips() {
        let up = SkinVertex {
            theta: 0.0,
            phi: MOUTH_PHI,
            slit: Slit::MouthEdge { upper: true },
        };
        let lo = SkinVertex {
            slit: Slit::MouthEdge { upper: false },
            ..up
        };
        assert_eq!(jaw_weight(&up), 0.0);
        assert_eq!(jaw_weight(&lo), 1.0);
    }

    #[test]
    fn jaw_forward_blends_smoothly_into_the_corners_and_cheeks() {
        // Across any skin edge of the lower face off the lip line the forward motion changes by
        // well under its 7 mm: no step at the mouth corners.
        let rig = Rig::new(0);
        let d = &rig.deltas(Channel::JawForward)[0];
        let mut worst = 0.0f32;
        for t in rig.skin.indices.chunks(3) {
            for k in 0..3 {
                let (a, b) = (t[k] as usize, t[(k + 1) % 3] as usize);
                let (Some(va), Some(vb)) = (rig.grid.get(a), rig.grid.get(b)) else {
                    continue;
                };
                let straddles = (va.phi - MOUTH_PHI) * (vb.phi - MOUTH_PHI) <= 0.0
                    && va.theta.abs().min(vb.theta.abs()) <= MOUTH_HALF;
                // Only the front of the face, around the mouth and the chin.
                let hidden = va.phi.min(vb.phi) < -1.3 || va.theta.abs().max(vb.theta.abs()) > 0.9;
                if va.slit != Slit::None || vb.slit != Slit::None || straddles || hidden {
                    continue;
                }
                worst = worst.max((d[a] - d[b]).length());
            }
        }
        assert!(
            worst < 0.003,
            "jawForward steps by {worst} m across one edge"
        );
    }

    #[test]
    fn every_channel_moves_something() {
        let rig = Rig::new(0);
        for ch in Channel::ALL {
            let d = rig.deltas(ch);
            let moved = d.iter().flatten().filter(|v| v.length() > 1e-4).count();
            assert!(moved > 0, "{ch} is empty");
        }
    }
}
