//! The head's shape: proportions, the skin surface as a function of longitude and latitude, the
//! eyelid and lip slits, the eyeball wrap and the skin texture mapping.
//!
//! The skin is one latitude/longitude grid. Longitude `theta` is 0 at the front (+Z) and grows
//! towards the head's own left (+X); latitude `phi` runs from -π/2 under the chin to π/2 at the
//! crown. The eyes and the mouth are horizontal slits in that grid: along the slit row the
//! vertices are split into an upper and a lower copy, so the lids and lips can part. Features are
//! placed in (theta, phi), which makes the texture painter, the shape and the morph targets agree
//! on where everything is.

use glam::{Vec2, Vec3};

use super::math::{bump, cos, lerp, sgn, sin, smooth_max, smoothstep, sq};
use super::mesh::MeshBuilder;

/// Vertical centre of the skull ellipsoid (m).
pub const CENTER_Y: f32 = 0.148;
/// Vertical radius of the skull (m).
pub const RADIUS_Y: f32 = 0.102;
/// Half-width of the skull at the equator (m).
pub const RADIUS_X: f32 = 0.078;
/// Depth of the face half of the skull (m).
pub const DEPTH_FRONT: f32 = 0.090;
/// Depth of the back half of the skull (m).
pub const DEPTH_BACK: f32 = 0.096;

/// Latitude of the eye slits.
pub const EYE_PHI: f32 = -0.22;
/// Longitude of the inner eye corner (left eye; the right eye mirrors it).
pub const EYE_INNER: f32 = 0.25;
/// Longitude of the outer eye corner.
pub const EYE_OUTER: f32 = 0.70;
/// Longitude of the eye centre.
pub const EYE_THETA: f32 = 0.468;
/// How far the open upper lid edge rises above the slit (radians of latitude).
pub const LID_UP: f32 = 0.16;
/// How far the open lower lid edge drops below the slit.
pub const LID_DOWN: f32 = 0.115;
/// Latitude band over which the upper lid displacement fades out.
pub const LID_UP_FALLOFF: f32 = 0.34;
/// Latitude band over which the lower lid displacement fades out.
pub const LID_DOWN_FALLOFF: f32 = 0.22;
/// Where closed lids meet, as a fraction of the open lower lid's drop.
pub const LID_CLOSED: f32 = 0.7;
/// Eyeball radius (m).
pub const EYE_RADIUS: f32 = 0.0165;
/// How far the eyeball's front pokes out of the unwrapped skin (m).
pub const EYE_BULGE: f32 = 0.0035;
/// Gap between eyeball and lid skin (m).
pub const LID_GAP: f32 = 0.0010;
/// Gap between the eyeball and a lid's very edge (m): tighter than [`LID_GAP`], so a raised lid
/// shows no dark margin between its edge and the eyeball.
pub const LID_EDGE_GAP: f32 = 0.0003;
/// Depth of the lid margin: the inner copy of a lid edge sits this far inside the eyeball (m).
pub const LID_MARGIN: f32 = 0.0008;

/// Longitude of the ears' centres.
pub const EAR_THETA: f32 = 1.55;
/// Latitude of the ears' centres.
pub const EAR_PHI: f32 = -0.27;

/// Latitude of the mouth slit.
pub const MOUTH_PHI: f32 = -0.79;
/// Longitude of the mouth corners (half the mouth's angular width).
pub const MOUTH_HALF: f32 = 0.25;
/// How deep the lips' inner surfaces reach back into the mouth (m).
pub const LIP_DEPTH: f32 = 0.0065;

/// Texture rows (as a fraction of the atlas height) used by the skin; the rest holds the eye,
/// hair and mouth swatches.
pub const SKIN_V: f32 = 0.625;
/// Latitude offset of the texture coordinates of a slit's two sides, so neither samples the
/// other's texels across the cut.
pub const SLIT_UV_EPS: f32 = 0.0067;

/// Which side of a slit a skin vertex belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slit {
    /// An ordinary grid vertex.
    None,
    /// An eyelid edge (`upper` or lower lid).
    EyeEdge {
        /// Upper lid.
        upper: bool,
    },
    /// The lid margin behind an eyelid edge, tucked against the eyeball.
    EyeInner {
        /// Upper lid.
        upper: bool,
    },
    /// A lip edge.
    MouthEdge {
        /// Upper lip.
        upper: bool,
    },
    /// The inner surface of a lip, reaching into the mouth.
    MouthInner {
        /// Upper lip.
        upper: bool,
    },
}

impl Slit {
    /// The vertex tag suffix: coincident vertices on different sides get different tags.
    pub fn code(self) -> u32 {
        match self {
            Slit::None => 0,
            Slit::EyeEdge { upper } | Slit::MouthEdge { upper } => 1 + u32::from(!upper),
            Slit::EyeInner { upper } | Slit::MouthInner { upper } => 3 + u32::from(!upper),
        }
    }
}

/// Where a skin vertex sits in the grid.
#[derive(Debug, Clone, Copy)]
pub struct SkinVertex {
    /// Longitude.
    pub theta: f32,
    /// Latitude.
    pub phi: f32,
    /// Slit side.
    pub slit: Slit,
}

/// The state of one eye's lids: 1/1/0 is the neutral open eye.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lids {
    /// Upper lid: 1 open (neutral), 0 closed, above 1 wider.
    pub upper: f32,
    /// Lower lid: 1 neutral, 0 raised to the closed line.
    pub lower: f32,
    /// Moves the lids' highest point towards the inner (positive) or outer corner.
    pub shift: f32,
}

impl Lids {
    /// Neutral, open lids.
    pub const OPEN: Lids = Lids {
        upper: 1.0,
        lower: 1.0,
        shift: 0.0,
    };
}

/// Symmetric angles `half * (2i - n) / n` for i in 0..=n, exactly negated pairwise.
pub fn symmetric_steps(n: usize, half: f32) -> Vec<f32> {
    (0..=n)
        .map(|i| half * (2 * i as i64 - n as i64) as f32 / n as f32)
        .collect()
}

/// Piecewise uniform samples: `keys` are (value, steps to the next key); the last key's step
/// count is ignored. Every key value is hit exactly.
pub fn piecewise(keys: &[(f32, usize)]) -> Vec<f32> {
    let mut out = Vec::new();
    for pair in keys.windows(2) {
        let (a, n) = pair[0];
        let b = pair[1].0;
        for i in 0..n {
            out.push(if i == 0 {
                a
            } else {
                a + (b - a) * i as f32 / n as f32
            });
        }
    }
    if let Some(&(last, _)) = keys.last() {
        out.push(last);
    }
    out
}

/// How many levels of detail the generator builds: level 0 is the full mesh, each further level
/// has about half the triangles of the one before.
pub const LEVELS: usize = 3;

/// The step count of a key span (or the resolution of a part) at level of detail `lod`: `n` at
/// level 0, scaled by 2^(-lod/2) beyond (so a grid scaled in both directions loses about half
/// its triangles per level), rounded, and never below `min`.
pub fn lod_steps(n: usize, lod: usize, min: usize) -> usize {
    let halved = n >> (lod / 2);
    let scaled = if lod % 2 == 1 {
        (halved * 707 + 500) / 1000
    } else {
        halved
    };
    scaled.max(min)
}

/// Like [`lod_steps`], rounded up to an even count (for rings and rows that must keep a
/// vertex on the centre line).
pub fn lod_steps_even(n: usize, lod: usize, min: usize) -> usize {
    let s = lod_steps(n, lod, min);
    s + s % 2
}

/// [`piecewise`] with every span's step count scaled to level of detail `lod` (at least one
/// step per span, so every key is still hit exactly). Each key is `(value, steps, floor)`: the
/// span that starts there never has fewer than `floor` steps, which keeps the eyes' spans fine
/// enough at the coarse levels that a closed lid still covers the eyeball.
pub fn piecewise_lod(keys: &[(f32, usize, usize)], lod: usize) -> Vec<f32> {
    let scaled: Vec<(f32, usize)> = keys
        .iter()
        .map(|&(value, steps, floor)| (value, lod_steps(steps, lod, floor.max(1))))
        .collect();
    piecewise(&scaled)
}

/// The fewest steps the spans around the eyes keep at any level: those of level 1.
fn eye_floor(steps: usize) -> usize {
    lod_steps(steps, 1, 1)
}

/// Grid longitudes at level of detail `lod`: dense across the face, sparse at the back;
/// exactly symmetric.
pub fn grid_thetas(lod: usize) -> Vec<f32> {
    use std::f32::consts::PI;
    let half = piecewise_lod(
        &[
            (0.0, 8, 0),
            (MOUTH_HALF, 14, eye_floor(14)),
            (EYE_OUTER, 12, 0),
            (1.3, 10, 0),
            (1.85, 10, 0),
            (PI, 0, 0),
        ],
        lod,
    );
    let mut all: Vec<f32> = half.iter().skip(1).rev().map(|t| -t).collect();
    all.extend_from_slice(&half);
    all
}

/// Grid latitudes at level of detail `lod`, pole to pole, with rows exactly on the mouth and
/// eye slits.
pub fn grid_phis(lod: usize) -> Vec<f32> {
    use std::f32::consts::FRAC_PI_2;
    piecewise_lod(
        &[
            (-FRAC_PI_2, 6, 0),
            (-1.15, 10, 0),
            (MOUTH_PHI, 10, 0),
            (-0.55, 12, eye_floor(12)),
            (EYE_PHI, 12, eye_floor(12)),
            (0.1, 8, 0),
            (0.5, 8, 0),
            (FRAC_PI_2, 0, 0),
        ],
        lod,
    )
}

/// The texture warp: odd, monotone, 1.5 times denser around 0 than at ±1.
fn warp(x: f32) -> f32 {
    x * (1.5 - 0.5 * x * x)
}

/// Inverse of [`warp`] on [-1, 1] (Newton iterations).
pub fn unwarp(w: f32) -> f32 {
    let w = w.clamp(-1.0, 1.0);
    let mut x = w;
    for _ in 0..30 {
        let f = warp(x) - w;
        let d = (1.5 - 1.5 * x * x).max(0.05);
        x = (x - f / d).clamp(-1.0, 1.0);
    }
    x
}

/// Skin texture coordinates of a grid point.
pub fn skin_uv(theta: f32, phi: f32) -> Vec2 {
    use std::f32::consts::{FRAC_PI_2, PI};
    Vec2::new(
        0.5 + 0.5 * warp(theta / PI),
        SKIN_V * (0.5 - 0.5 * warp(phi / FRAC_PI_2)),
    )
}

/// Grid point of skin texture coordinates (the inverse of [`skin_uv`]).
pub fn skin_param(uv: Vec2) -> (f32, f32) {
    use std::f32::consts::{FRAC_PI_2, PI};
    (
        unwarp(uv.x * 2.0 - 1.0) * PI,
        unwarp(1.0 - 2.0 * uv.y / SKIN_V) * FRAC_PI_2,
    )
}

/// The static skin surface (no lids, no eye wrap): skull, jaw taper, face flattening, nose,
/// lips and ears.
pub fn base_shape(theta: f32, phi: f32) -> Vec3 {
    let (sp, cp) = (sin(phi), cos(phi).max(0.0));
    let (st, ct) = (sin(theta), cos(theta));
    let at = theta.abs();
    let y = CENTER_Y + RADIUS_Y * sp;
    let taper = 1.0 - 0.30 * smoothstep(-0.1, -1.1, phi);
    let half_width = RADIUS_X * cp * taper;
    let front = if phi >= 0.0 {
        DEPTH_FRONT * cp
    } else {
        // A steeper front profile below the eyes keeps the mouth and chin facing forwards.
        let s = cp.sqrt();
        DEPTH_FRONT * lerp(s, s.sqrt(), 0.6)
    };
    let back = DEPTH_BACK * cp;
    let mut z = ct * lerp(back, front, smoothstep(-0.35, 0.35, ct));
    // Anime faces are flat across the eyes and cheeks: give back part of the fall-off.
    let band = smoothstep(-1.2, -0.7, phi) * smoothstep(0.45, 0.1, phi);
    z += 0.32 * front * (1.0 - ct) * smoothstep(1.25, 0.45, at) * band;
    let mut x = half_width * st;

    // Nose: a small wedge rising from the bridge to a tip just above the mouth.
    let tip_y = 0.101;
    let rise = if y > tip_y {
        smoothstep(0.136, tip_y, y)
    } else {
        smoothstep(0.093, tip_y, y)
    };
    let nose_width = 0.005 + 0.006 * smoothstep(0.13, 0.095, y);
    z += 0.0085 * rise * rise * bump(x.abs(), nose_width) * smoothstep(0.3, 0.8, ct);

    // Lips: a soft cushion around the mouth line.
    let mouth_y = CENTER_Y + RADIUS_Y * sin(MOUTH_PHI);
    let lips = bump((sq(x / 0.016) + sq((y - mouth_y) / 0.009)).sqrt(), 1.0);
    z += 0.0022 * lips * smoothstep(0.3, 0.8, ct);
    // A friendly hint of a smile: the mouth corners sit a little higher.
    let corner = sq(x / 0.0096).min(1.6);
    let mouth_zone = bump((y - mouth_y).abs(), 0.014) * bump(x.abs(), 0.02);
    let y = y + 0.0016 * corner * mouth_zone * smoothstep(0.3, 0.8, ct);

    // Ears: rounded shells on the sides, flat-topped so they stand out from the head, with a
    // shallow bowl inside the rim, leaning back a little.
    let e = (sq((at - EAR_THETA) / 0.17) + sq((phi - EAR_PHI) / 0.22)).sqrt();
    let ear = smoothstep(1.0, 0.55, e);
    let bowl = bump(
        (sq((at - EAR_THETA + 0.02) / 0.09) + sq((phi - EAR_PHI + 0.02) / 0.13)).sqrt(),
        1.0,
    );
    x += sgn(x) * (0.0125 * ear - 0.004 * bowl);
    z -= 0.006 * ear;
    Vec3::new(x, y, z)
}

/// The mouth line's height (m).
pub fn mouth_y() -> f32 {
    base_shape(0.0, MOUTH_PHI).y
}

/// Centre of the left eyeball (the right one mirrors it).
pub fn eye_center() -> Vec3 {
    let p = base_shape(EYE_THETA, EYE_PHI);
    Vec3::new(p.x, p.y, p.z - (EYE_RADIUS - EYE_BULGE))
}

/// Centre of the eyeball on the vertex's side of the face (`None` on the centre line).
fn eye_for(x: f32) -> Option<Vec3> {
    let e = eye_center();
    match sgn(x) {
        s if s > 0.0 => Some(e),
        s if s < 0.0 => Some(Vec3::new(-e.x, e.y, e.z)),
        _ => None,
    }
}

/// Latitude offset the lids apply to a grid point.
fn lid_offset(v: &SkinVertex, lids: &[Lids; 2]) -> f32 {
    let (lid, at) = if v.theta >= 0.0 {
        (lids[0], v.theta)
    } else {
        (lids[1], -v.theta)
    };
    let t = (at - EYE_INNER) / (EYE_OUTER - EYE_INNER);
    if t <= 0.0 || t >= 1.0 {
        return 0.0;
    }
    let tw = t + lid.shift * t * (1.0 - t);
    let para = 4.0 * tw * (1.0 - tw);
    let g_up = para.max(0.0).sqrt();
    let g_lo = para;
    let closed = -LID_CLOSED * LID_DOWN * g_lo;
    let up_edge = closed + lid.upper * (LID_UP * g_up - closed);
    let lo_edge = closed + lid.lower * (-LID_DOWN * g_lo - closed);
    match v.slit {
        Slit::EyeEdge { upper } | Slit::EyeInner { upper } => {
            if upper {
                up_edge
            } else {
                lo_edge
            }
        }
        _ if v.phi > EYE_PHI => up_edge * (1.0 - smoothstep(0.0, LID_UP_FALLOFF, v.phi - EYE_PHI)),
        _ if v.phi < EYE_PHI => {
            lo_edge * (1.0 - smoothstep(0.0, LID_DOWN_FALLOFF, EYE_PHI - v.phi))
        }
        _ => 0.0,
    }
}

/// Position of a skin grid vertex with the given lids.
pub fn skin_point(v: &SkinVertex, lids: &[Lids; 2]) -> Vec3 {
    let phi = v.phi + lid_offset(v, lids);
    let mut p = base_shape(v.theta, phi);
    if let Some(e) = eye_for(p.x) {
        // The skin wraps over the eyeball: nothing within the eyeball's radius plus a gap.
        let d = p - e;
        let r = d.length();
        if r > 0.0 {
            let wrapped = smooth_max(r, EYE_RADIUS + LID_GAP, 0.005);
            p = e + d * (wrapped / r);
            match v.slit {
                // The lid's edge hugs the eyeball, so no gap shows under a raised lid.
                Slit::EyeEdge { .. } => {
                    p = e + d * (smooth_max(r, EYE_RADIUS + LID_EDGE_GAP, 0.0012) / r);
                }
                // The margin tucks into the eyeball behind the edge (inwards and backwards), so
                // from the front it stays hidden behind the edge instead of showing as a band.
                Slit::EyeInner { .. } => {
                    p = e + d * ((EYE_RADIUS - LID_MARGIN) / r);
                }
                _ => {}
            }
        }
    }
    if matches!(v.slit, Slit::MouthInner { .. }) {
        p.z -= LIP_DEPTH;
    }
    p
}

/// Part tag of the skin in [`MeshBuilder::tags`].
pub const TAG_SKIN: u32 = 1 << 4;
/// Tag suffix of the duplicated seam column at θ = π.
pub const TAG_SEAM: u32 = 7;

/// The skin grid: its builder and each vertex's grid placement.
#[derive(Debug, Clone, Default)]
pub struct Skin {
    /// Geometry at neutral.
    pub mesh: MeshBuilder,
    /// Grid placement, one per vertex.
    pub vertices: Vec<SkinVertex>,
}

impl Skin {
    fn add(&mut self, v: SkinVertex, tag_extra: u32) -> u32 {
        let mut p = skin_point(&v, &[Lids::OPEN; 2]);
        // The centre line and the back seam lie exactly on x = 0, so mirroring pairs them.
        if v.theta == 0.0 || v.theta.abs() >= std::f32::consts::PI {
            p.x = 0.0;
        }
        let eps = match v.slit {
            Slit::None => 0.0,
            Slit::EyeEdge { upper }
            | Slit::EyeInner { upper }
            | Slit::MouthEdge { upper }
            | Slit::MouthInner { upper } => {
                if upper {
                    SLIT_UV_EPS
                } else {
                    -SLIT_UV_EPS
                }
            }
        };
        let uv = skin_uv(v.theta, v.phi + eps);
        self.vertices.push(v);
        self.mesh
            .vertex(p, uv, TAG_SKIN | v.slit.code() | tag_extra)
    }
}

/// Whether column longitude `theta` lies strictly inside an eye slit.
fn in_eye_slit(theta: f32) -> bool {
    let a = theta.abs();
    a > EYE_INNER && a < EYE_OUTER
}

/// Whether column longitude `theta` lies strictly inside the mouth slit.
fn in_mouth_slit(theta: f32) -> bool {
    theta.abs() < MOUTH_HALF
}

/// Builds the skin grid at level of detail `lod` (0 is the full mesh) with its slits and
/// lid/lip margins.
pub fn build_skin(lod: usize) -> Skin {
    use std::f32::consts::FRAC_PI_2;
    let thetas = grid_thetas(lod);
    let phis = grid_phis(lod);
    let nc = thetas.len();
    let nr = phis.len();
    let mut skin = Skin::default();

    // (lower-facing, upper-facing) vertex of every interior grid point; equal off the slits.
    let mut rows: Vec<Vec<(u32, u32)>> = Vec::with_capacity(nr);
    let bottom = skin.add(
        SkinVertex {
            theta: 0.0,
            phi: -FRAC_PI_2,
            slit: Slit::None,
        },
        0,
    );
    for &phi in phis.iter().take(nr - 1).skip(1) {
        let mut row = Vec::with_capacity(nc);
        for (c, &theta) in thetas.iter().enumerate() {
            let seam = if c == nc - 1 { TAG_SEAM } else { 0 };
            let slit_row = (phi == EYE_PHI && in_eye_slit(theta))
                || (phi == MOUTH_PHI && in_mouth_slit(theta));
            if slit_row {
                let eye = phi == EYE_PHI;
                let edge = |upper| {
                    if eye {
                        Slit::EyeEdge { upper }
                    } else {
                        Slit::MouthEdge { upper }
                    }
                };
                let lo = skin.add(
                    SkinVertex {
                        theta,
                        phi,
                        slit: edge(false),
                    },
                    0,
                );
                let up = skin.add(
                    SkinVertex {
                        theta,
                        phi,
                        slit: edge(true),
                    },
                    0,
                );
                row.push((lo, up));
            } else {
                let v = skin.add(
                    SkinVertex {
                        theta,
                        phi,
                        slit: Slit::None,
                    },
                    seam,
                );
                if c == nc - 1 {
                    // Weld the seam's normals to the first column's.
                    let first = row[0].0;
                    skin.mesh.groups[v as usize] = first;
                }
                row.push((v, v));
            }
        }
        rows.push(row);
    }
    let top = skin.add(
        SkinVertex {
            theta: 0.0,
            phi: FRAC_PI_2,
            slit: Slit::None,
        },
        0,
    );

    // Quads between consecutive interior rows, fans at the poles.
    for c in 0..nc - 1 {
        skin.mesh.tri(bottom, rows[0][c + 1].0, rows[0][c].0);
        let last = rows.len() - 1;
        skin.mesh.tri(rows[last][c].1, rows[last][c + 1].1, top);
        for r in 0..last {
            let (a, b) = (rows[r][c].1, rows[r][c + 1].1);
            let (d, e) = (rows[r + 1][c].0, rows[r + 1][c + 1].0);
            skin.mesh.quad(a, b, e, d);
        }
    }

    // Lid margins and inner lips: a strip from each slit edge to its inner copy.
    for (ri, &phi) in phis.iter().enumerate().take(nr - 1).skip(1) {
        let row = &rows[ri - 1];
        let eye = phi == EYE_PHI;
        if !eye && phi != MOUTH_PHI {
            continue;
        }
        let inside = |theta: f32| {
            if eye {
                in_eye_slit(theta)
            } else {
                in_mouth_slit(theta)
            }
        };
        // Inner copies of the slit's edges, per lip or lid.
        let mut inners: [Vec<Option<u32>>; 2] = [vec![None; nc], vec![None; nc]];
        for (k, upper) in [false, true].into_iter().enumerate() {
            for (c, &theta) in thetas.iter().enumerate() {
                if inside(theta) {
                    let slit = if eye {
                        Slit::EyeInner { upper }
                    } else {
                        Slit::MouthInner { upper }
                    };
                    inners[k][c] = Some(skin.add(SkinVertex { theta, phi, slit }, 0));
                }
            }
        }
        for (k, upper) in [false, true].into_iter().enumerate() {
            let inner = &inners[k];
            for c in 0..nc - 1 {
                if inner[c].is_none() && inner[c + 1].is_none() {
                    continue;
                }
                let edge = |c: usize| if upper { row[c].1 } else { row[c].0 };
                let (e0, e1) = (edge(c), edge(c + 1));
                // At the corners the inner strip closes onto the shared corner vertex.
                let i0 = inner[c].unwrap_or(e0);
                let i1 = inner[c + 1].unwrap_or(e1);
                if upper {
                    skin.mesh.quad(e0, i0, i1, e1);
                } else {
                    skin.mesh.quad(e0, e1, i1, i0);
                }
            }
        }
        // A corner wall from each slit corner to the first inner copies beside it. The two strips
        // meet at the corner vertex, so without it the tunnel behind the slit stays open at its
        // end: where the corner lies outside the eyeball (or in front of the mouth cavity), a
        // side view would look through the slit into the head. The wall is wound like its
        // neighbours, so the skin stays one consistently oriented surface.
        let [lower, upper] = &inners;
        for c in 0..nc - 1 {
            match (upper[c], upper[c + 1], lower[c], lower[c + 1]) {
                // The corner is column c, the slit starts at c + 1.
                (None, Some(up), None, Some(lo)) => skin.mesh.tri(row[c].0, lo, up),
                // The slit ends at c, the corner is column c + 1.
                (Some(up), None, Some(lo), None) => skin.mesh.tri(row[c + 1].0, up, lo),
                _ => {}
            }
        }
    }
    skin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_is_symmetric_and_hits_the_slits() {
        for lod in 0..LEVELS {
            let t = grid_thetas(lod);
            for (a, b) in t.iter().zip(t.iter().rev()) {
                assert!(*a == -*b);
            }
            let p = grid_phis(lod);
            assert!(p.contains(&EYE_PHI) && p.contains(&MOUTH_PHI));
            assert!(t.contains(&MOUTH_HALF) && t.contains(&EYE_OUTER));
            assert!(p.windows(2).all(|w| w[0] < w[1]));
            assert!(t.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn coarser_levels_have_fewer_grid_lines() {
        let counts: Vec<(usize, usize)> = (0..LEVELS)
            .map(|lod| (grid_thetas(lod).len(), grid_phis(lod).len()))
            .collect();
        assert_eq!(counts[0], (109, 67));
        for w in counts.windows(2) {
            assert!(w[1].0 < w[0].0 && w[1].1 < w[0].1, "{counts:?}");
        }
    }

    #[test]
    fn texture_mapping_round_trips() {
        for (theta, phi) in [(0.3, -0.2), (-2.0, 1.0), (1.0, -1.3)] {
            let (t, p) = skin_param(skin_uv(theta, phi));
            assert!((t - theta).abs() < 1e-4 && (p - phi).abs() < 1e-4);
        }
    }

    #[test]
    fn head_has_the_requested_size_and_the_lips_meet() {
        let skin = build_skin(0);
        let (mut lo, mut hi) = (f32::MAX, f32::MIN);
        for p in &skin.mesh.positions {
            lo = lo.min(p.y);
            hi = hi.max(p.y);
        }
        assert!((0.19..0.25).contains(&(hi - lo)), "height {}", hi - lo);
        let up = skin
            .vertices
            .iter()
            .position(|v| v.slit == Slit::MouthEdge { upper: true });
        let lo = skin
            .vertices
            .iter()
            .position(|v| v.slit == Slit::MouthEdge { upper: false });
        let (up, lo) = (up.unwrap(), lo.unwrap());
        assert_eq!(skin.mesh.positions[up], skin.mesh.positions[lo]);
    }

    #[test]
    fn open_eye_keeps_the_skin_off_the_eyeball() {
        let skin = build_skin(0);
        let e = eye_center();
        for (v, p) in skin.vertices.iter().zip(&skin.mesh.positions) {
            if p.x > 0.0 && !matches!(v.slit, Slit::EyeInner { .. }) {
                assert!((*p - e).length() >= EYE_RADIUS, "{v:?}");
            }
        }
    }
}
