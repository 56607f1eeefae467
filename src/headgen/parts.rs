//! The head's other pieces: neck, mouth interior (cavity, teeth, tongue), hair cap and eyeball.

use std::f32::consts::{FRAC_PI_2, PI};

use glam::{Vec2, Vec3};

use super::face::{
    base_shape, lod_steps, lod_steps_even, mouth_y, symmetric_steps, EYE_RADIUS, LIP_DEPTH,
    MOUTH_PHI, TAG_SEAM,
};
use super::math::{cos, lerp, sin, smoothstep};
use super::mesh::MeshBuilder;
use super::texture::{
    skin_uv_of, Rect, BAG_RECT, EYE_CENTER, EYE_RHO, HAIR_RECT, TEETH_RECT, TONGUE_RECT,
};

/// Part tag of the neck.
pub const TAG_NECK: u32 = 2 << 4;
/// Part tag of the mouth cavity.
pub const TAG_BAG: u32 = 3 << 4;
/// Part tag of the upper teeth.
pub const TAG_TEETH_UP: u32 = 4 << 4;
/// Part tag of the lower teeth.
pub const TAG_TEETH_LO: u32 = 5 << 4;
/// Part tag of the tongue.
pub const TAG_TONGUE: u32 = 6 << 4;
/// Part tag of the hair.
pub const TAG_HAIR: u32 = 7 << 4;

/// Which piece of the mouth interior a vertex belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouthPart {
    /// The dark cavity behind the lips.
    Cavity,
    /// Upper teeth (fixed to the skull).
    UpperTeeth,
    /// Lower teeth (ride on the jaw).
    LowerTeeth,
    /// The tongue (rides on the jaw).
    Tongue,
}

/// Sine and cosine of a symmetric angle, exact on the centre line and the back seam.
fn sincos(theta: f32) -> (f32, f32) {
    if theta == 0.0 {
        (0.0, 1.0)
    } else if theta.abs() >= PI {
        (0.0, -1.0)
    } else {
        (sin(theta), cos(theta))
    }
}

/// A latitude/longitude ellipsoid (poles on ±Y) without a UV seam; `uv` maps each position to
/// texture coordinates.
fn ellipsoid(
    center: Vec3,
    radii: Vec3,
    rings: usize,
    segments: usize,
    tag: u32,
    uv: impl Fn(Vec3) -> Vec2,
) -> MeshBuilder {
    let mut b = MeshBuilder::default();
    let angles = symmetric_steps(segments, PI);
    let angles = &angles[..segments];
    let vertex = |b: &mut MeshBuilder, p: Vec3| b.vertex(p, uv(p), tag);
    let bottom = vertex(&mut b, center - Vec3::Y * radii.y);
    let mut ring_ids = Vec::new();
    for k in 1..rings {
        let phi = -FRAC_PI_2 + PI * k as f32 / rings as f32;
        let (sp, cp) = (sin(phi), cos(phi));
        let ids: Vec<u32> = angles
            .iter()
            .map(|&t| {
                let (st, ct) = sincos(t);
                let p = center + Vec3::new(radii.x * cp * st, radii.y * sp, radii.z * cp * ct);
                vertex(&mut b, p)
            })
            .collect();
        ring_ids.push(ids);
    }
    let top = vertex(&mut b, center + Vec3::Y * radii.y);
    for j in 0..segments {
        let j1 = (j + 1) % segments;
        b.tri(bottom, ring_ids[0][j1], ring_ids[0][j]);
        let last = ring_ids.len() - 1;
        b.tri(ring_ids[last][j], ring_ids[last][j1], top);
        for k in 0..last {
            b.quad(
                ring_ids[k][j],
                ring_ids[k][j1],
                ring_ids[k + 1][j1],
                ring_ids[k + 1][j],
            );
        }
    }
    b
}

/// Texture coordinates inside `rect`, `s`/`t` in [0, 1].
fn in_rect(rect: Rect, s: f32, t: f32) -> Vec2 {
    Vec2::new(
        rect.x0 + (rect.x1 - rect.x0) * s.clamp(0.0, 1.0),
        rect.y0 + (rect.y1 - rect.y0) * t.clamp(0.0, 1.0),
    )
}

/// The neck with a hint of collar, in the `Neck` node's frame (the model's frame: the `Neck`
/// node sits at the origin and does not turn with the head).
///
/// It rises from a flared collar at y = 0 to well inside the skull, so that whichever way the
/// head turns (±35° yaw, ±20° pitch, ±15° roll about [`super::HEAD_PIVOT`]) the top of the
/// neck stays hidden inside the head's closed underside and no gap opens at the junction.
/// The bottom is closed by a cap. Textured with the shaded skin under the jaw, well away
/// from the atlas's other swatches so no other colour bleeds in.
pub fn neck() -> MeshBuilder {
    let mut b = MeshBuilder::default();
    let segments = 32;
    // (height, width scale, depth scale): a collar that flares into the shoulders' start.
    let rows_def: [(f32, f32, f32); 8] = [
        (0.0, 2.05, 1.45),
        (0.006, 1.8, 1.33),
        (0.014, 1.42, 1.16),
        (0.026, 1.12, 1.03),
        (0.042, 1.0, 1.0),
        (0.062, 0.98, 0.98),
        (0.08, 0.98, 0.98),
        (0.102, 0.96, 0.96),
    ];
    let angles = symmetric_steps(segments, PI);
    let mut rows = Vec::new();
    for (k, &(y, sx, sz)) in rows_def.iter().enumerate() {
        let ids: Vec<u32> = angles
            .iter()
            .enumerate()
            .map(|(j, &t)| {
                let (st, ct) = sincos(t);
                // The collar dips a little at the front and back like a neckline.
                let dip = 0.004 * smoothstep(0.03, 0.0, y) * ct * ct;
                let p = Vec3::new(0.029 * sx * st, y - dip, -0.014 + 0.030 * sz * ct);
                let v = lerp(-1.34, -1.16, k as f32 / (rows_def.len() - 1) as f32);
                let seam = if j == segments { TAG_SEAM } else { 0 };
                b.vertex(p, skin_uv_of(t, v), TAG_NECK | seam)
            })
            .collect();
        let (first, last) = (ids[0], ids[segments]);
        b.groups[last as usize] = first;
        rows.push(ids);
    }
    for k in 0..rows.len() - 1 {
        for j in 0..segments {
            b.quad(
                rows[k][j],
                rows[k][j + 1],
                rows[k + 1][j + 1],
                rows[k + 1][j],
            );
        }
    }
    // A cap under the collar, with its own vertices so its shading does not bleed into the sides.
    let centre = b.vertex(
        Vec3::new(0.0, -0.002, -0.014),
        skin_uv_of(0.0, -1.34),
        TAG_NECK | 8,
    );
    let rim: Vec<u32> = rows[0]
        .iter()
        .take(segments)
        .map(|&i| {
            let p = b.positions[i as usize];
            b.vertex(p, b.uvs[i as usize], TAG_NECK | 8)
        })
        .collect();
    for j in 0..segments {
        b.tri(centre, rim[(j + 1) % segments], rim[j]);
    }
    b
}

/// Centre of the mouth cavity. The cavity is wide and deep enough that its front reaches the
/// lips' inner surfaces and its sides the mouth corners, so an open mouth never shows through to
/// the inside of the head, even from the side.
pub fn cavity_center() -> Vec3 {
    let m = base_shape(0.0, MOUTH_PHI);
    Vec3::new(0.0, m.y - 0.002, m.z - 0.0175)
}

/// Centre of the tongue.
pub fn tongue_center() -> Vec3 {
    let m = base_shape(0.0, MOUTH_PHI);
    Vec3::new(0.0, m.y - 0.0082, m.z - 0.019)
}

/// One row of teeth at level of detail `lod`: a curved slab (front, biting edge and back faces).
fn teeth(upper: bool, lod: usize) -> MeshBuilder {
    let mut b = MeshBuilder::default();
    let m = base_shape(0.0, MOUTH_PHI);
    let my = mouth_y();
    let n = lod_steps_even(16, lod, 4);
    let xs = symmetric_steps(n, 0.0102);
    let (s, tag) = if upper {
        (1.0, TAG_TEETH_UP)
    } else {
        (-1.0, TAG_TEETH_LO)
    };
    // Cross-section: (height above/below the mouth line, depth behind the front face).
    let profile = [
        (0.0048, 0.0),
        (0.0007, 0.0),
        (0.0007, 0.0024),
        (0.0048, 0.0024),
    ];
    let mut rows = Vec::new();
    for (k, &(h, d)) in profile.iter().enumerate() {
        let ids: Vec<u32> = xs
            .iter()
            .enumerate()
            .map(|(j, &x)| {
                let z = m.z - LIP_DEPTH - 0.0009 - 36.0 * x * x - d;
                let p = Vec3::new(x, my + s * h, z);
                b.vertex(
                    p,
                    in_rect(TEETH_RECT, j as f32 / n as f32, k as f32 / 3.0),
                    tag,
                )
            })
            .collect();
        rows.push(ids);
    }
    for r in 0..3 {
        for j in 0..n {
            let (a, bb) = (rows[r][j], rows[r][j + 1]);
            let (c, d) = (rows[r + 1][j + 1], rows[r + 1][j]);
            if upper {
                b.quad(d, c, bb, a);
            } else {
                b.quad(a, bb, c, d);
            }
        }
    }
    b
}

/// The mouth interior at level of detail `lod` (0 is the full mesh): cavity (seen from
/// inside), teeth and tongue, with each vertex's part.
pub fn mouth_interior(lod: usize) -> (MeshBuilder, Vec<MouthPart>) {
    let mut b = MeshBuilder::default();
    let mut parts = Vec::new();
    let c = cavity_center();
    let mut cavity = ellipsoid(
        c,
        Vec3::new(0.0162, 0.0105, 0.012),
        lod_steps(10, lod, 4),
        lod_steps_even(24, lod, 8),
        TAG_BAG,
        |p| in_rect(BAG_RECT, 0.5 + (p.x - c.x) / 0.04, 0.5 - (p.y - c.y) / 0.03),
    );
    cavity.flip();
    b.append(&cavity);
    parts.resize(b.len(), MouthPart::Cavity);
    b.append(&teeth(true, lod));
    parts.resize(b.len(), MouthPart::UpperTeeth);
    b.append(&teeth(false, lod));
    parts.resize(b.len(), MouthPart::LowerTeeth);
    let t = tongue_center();
    let tongue = ellipsoid(
        t,
        Vec3::new(0.0095, 0.004, 0.0085),
        lod_steps(8, lod, 4),
        lod_steps_even(20, lod, 8),
        TAG_TONGUE,
        |p| {
            in_rect(
                TONGUE_RECT,
                0.5 + (p.x - t.x) / 0.025,
                0.5 - (p.z - t.z) / 0.025,
            )
        },
    );
    b.append(&tongue);
    parts.resize(b.len(), MouthPart::Tongue);
    (b, parts)
}

/// Latitude of the hair's lower edge at longitude `theta`: bangs over the forehead, locks
/// beside the cheeks, the nape at the back.
pub fn hairline(theta: f32) -> f32 {
    let a = theta.abs();
    // Behind the cheek locks the hair sweeps up over the ears and is tucked behind them, so the
    // ears show from the side and from three-quarter views.
    let keys: [(f32, f32); 10] = [
        (0.0, 0.25),
        (0.55, 0.23),
        (0.86, 0.12),
        (1.02, -0.55),
        (1.2, -0.72),
        (1.34, 0.0),
        (1.62, 0.05),
        (1.86, -0.1),
        (2.35, -0.8),
        (PI, -0.86),
    ];
    let mut phi = keys[keys.len() - 1].1;
    for w in keys.windows(2) {
        if a <= w[1].0 {
            phi = lerp(w[0].1, w[1].1, smoothstep(w[0].0, w[1].0, a));
            break;
        }
    }
    // Bangs: pointed locks hanging over the forehead.
    let period = 0.27;
    let f = a / period + 0.5;
    let tri = 1.0 - (2.0 * (f - f.floor()) - 1.0).abs();
    phi - 0.10 * tri * tri * tri * smoothstep(0.98, 0.8, a)
}

/// The hair cap at level of detail `lod` (0 is the full mesh): a shell over the skull from the
/// hairline to the crown.
pub fn hair(lod: usize) -> MeshBuilder {
    let mut b = MeshBuilder::default();
    let segments = lod_steps_even(128, lod, 16);
    let rings = lod_steps(20, lod, 4);
    let thetas = symmetric_steps(segments, PI);
    let pivot = Vec3::new(0.0, 0.15, -0.005);
    let mut rows = Vec::new();
    for k in 0..rings {
        let u = k as f32 / rings as f32;
        let ids: Vec<u32> = thetas
            .iter()
            .enumerate()
            .map(|(j, &theta)| {
                let edge = hairline(theta);
                let phi = edge + (FRAC_PI_2 - edge) * (0.5 * u + 0.5 * u * u);
                let s = base_shape(theta, phi);
                let thick = 0.0025 + 0.0095 * smoothstep(0.0, 0.35, u);
                let mut p = s + (s - pivot).normalize_or_zero() * thick;
                if theta == 0.0 || theta.abs() >= PI {
                    p.x = 0.0;
                }
                let uv = in_rect(HAIR_RECT, j as f32 / segments as f32, 1.0 - u);
                let seam = if j == segments { TAG_SEAM } else { 0 };
                b.vertex(p, uv, TAG_HAIR | seam)
            })
            .collect();
        let (first, last) = (ids[0], ids[segments]);
        b.groups[last as usize] = first;
        rows.push(ids);
    }
    let crown = base_shape(0.0, FRAC_PI_2) + Vec3::new(0.0, 0.012, 0.0);
    let top = b.vertex(
        Vec3::new(0.0, crown.y, crown.z),
        in_rect(HAIR_RECT, 0.5, 0.0),
        TAG_HAIR,
    );
    for j in 0..segments {
        for k in 0..rings - 1 {
            b.quad(
                rows[k][j],
                rows[k][j + 1],
                rows[k + 1][j + 1],
                rows[k + 1][j],
            );
        }
        b.tri(rows[rings - 1][j], rows[rings - 1][j + 1], top);
    }
    b
}

/// The eyeball, centred on the origin and looking down +Z. The texture is laid out
/// azimuthally around the front pole: the iris and pupil sit at [`EYE_CENTER`].
pub fn eyeball() -> MeshBuilder {
    let mut b = MeshBuilder::default();
    let rings = 16;
    let segments = 32;
    let uv = |alpha: f32, beta: f32| {
        let rho = if alpha <= FRAC_PI_2 {
            alpha / FRAC_PI_2 * EYE_RHO
        } else {
            EYE_RHO * 1.04
        };
        EYE_CENTER + Vec2::new(rho * cos(beta), -rho * sin(beta))
    };
    let front = b.vertex(Vec3::Z * EYE_RADIUS, EYE_CENTER, 0);
    let mut rows = Vec::new();
    for k in 1..rings {
        let alpha = PI * k as f32 / rings as f32;
        let ids: Vec<u32> = (0..segments)
            .map(|j| {
                let beta = 2.0 * PI * j as f32 / segments as f32;
                let p = Vec3::new(sin(alpha) * cos(beta), sin(alpha) * sin(beta), cos(alpha))
                    * EYE_RADIUS;
                b.vertex(p, uv(alpha, beta), 0)
            })
            .collect();
        rows.push(ids);
    }
    let back = b.vertex(-Vec3::Z * EYE_RADIUS, uv(PI, 0.0), 0);
    for j in 0..segments {
        let j1 = (j + 1) % segments;
        b.tri(front, rows[0][j], rows[0][j1]);
        let last = rows.len() - 1;
        b.tri(back, rows[last][j1], rows[last][j]);
        for k in 0..last {
            b.quad(rows[k][j], rows[k + 1][j], rows[k + 1][j1], rows[k][j1]);
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eyeball_faces_outwards() {
        let b = eyeball();
        let n = b.normals_of(&b.positions);
        for (p, n) in b.positions.iter().zip(&n) {
            assert!(p.normalize().dot(*n) > 0.9);
        }
    }

    #[test]
    fn hairline_leaves_the_brows_and_eyes_free() {
        for i in 0..=30 {
            let theta = -0.75 + i as f32 * 0.05;
            assert!(hairline(theta) > 0.12, "theta {theta}: {}", hairline(theta));
        }
    }

    #[test]
    fn cavity_is_seen_from_inside() {
        let (b, parts) = mouth_interior(0);
        let n = b.normals_of(&b.positions);
        let c = cavity_center();
        for ((p, n), part) in b.positions.iter().zip(&n).zip(&parts) {
            if *part == MouthPart::Cavity {
                assert!((*p - c).dot(*n) < 0.0);
            }
        }
    }
}
