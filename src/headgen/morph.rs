//! A morph target from position deltas against a base mesh: short deltas dropped, the normal deltas of the moved surface.
//!
//! The default head ([`face_mesh`](super::face_mesh)) and `facewire import-obj`
//! ([`objimport`](crate::objimport)) build every target this way; each brings its own smooth
//! normals, so the same deltas shade the way its base mesh does.

use glam::Vec3;

use super::glb::TargetDef;

/// Normal deltas shorter than this are dropped (normals are unit length).
pub const NORMAL_EPS: f32 = 1e-4;

/// Sets the deltas shorter than `eps` to zero: below it they are noise, and a zero delta is a
/// vertex the target does not move (left out of its sparse accessor).
pub fn drop_short(deltas: &mut [Vec3], eps: f32) {
    for d in deltas {
        if d.length() < eps {
            *d = Vec3::ZERO;
        }
    }
}

/// The target that moves `base` by `deltas`: the deltas shorter than `position_eps` dropped,
/// and the normal deltas of the moved surface (`normals_of` it minus `base_normals`, those
/// shorter than `normal_eps` dropped). `normal_eps` `None` gives a target without normal deltas.
pub fn target(
    base: &[Vec3],
    base_normals: &[Vec3],
    mut deltas: Vec<Vec3>,
    position_eps: f32,
    normal_eps: Option<f32>,
    normals_of: impl FnOnce(&[Vec3]) -> Vec<Vec3>,
) -> TargetDef {
    drop_short(&mut deltas, position_eps);
    let Some(normal_eps) = normal_eps else {
        return TargetDef {
            positions: deltas,
            normals: Vec::new(),
        };
    };
    let moved: Vec<Vec3> = base.iter().zip(&deltas).map(|(p, d)| *p + *d).collect();
    let mut normals: Vec<Vec3> = normals_of(&moved)
        .iter()
        .zip(base_normals)
        .map(|(n, n0)| *n - *n0)
        .collect();
    drop_short(&mut normals, normal_eps);
    TargetDef {
        positions: deltas,
        normals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A normal per vertex: the unit vector from the origin (a sphere's normals).
    fn radial(positions: &[Vec3]) -> Vec<Vec3> {
        positions.iter().map(|p| p.normalize_or(Vec3::Y)).collect()
    }

    #[test]
    fn short_deltas_are_dropped_and_the_rest_kept_exactly() {
        let mut deltas = [
            Vec3::new(0.5e-6, 0.0, 0.0),
            Vec3::new(1e-6, 0.0, 0.0),
            Vec3::new(0.0, -0.25, 0.125),
        ];
        drop_short(&mut deltas, 1e-6);
        assert_eq!(
            deltas,
            [
                Vec3::ZERO,
                Vec3::new(1e-6, 0.0, 0.0),
                Vec3::new(0.0, -0.25, 0.125)
            ]
        );
    }

    #[test]
    fn a_target_carries_the_normal_deltas_of_the_moved_surface() {
        let base = [Vec3::X, Vec3::Y, Vec3::Z];
        let base_normals = radial(&base);
        let deltas = vec![
            Vec3::new(-1.0, 1.0, 0.0),
            Vec3::new(0.0, 1e-7, 0.0),
            Vec3::ZERO,
        ];
        let t = target(&base, &base_normals, deltas, 1e-6, Some(NORMAL_EPS), radial);
        assert_eq!(
            t.positions,
            [Vec3::new(-1.0, 1.0, 0.0), Vec3::ZERO, Vec3::ZERO]
        );
        // Vertex 0 moved from +X to +Y: its normal turned with it; the others did not move.
        assert_eq!(t.normals, [Vec3::Y - Vec3::X, Vec3::ZERO, Vec3::ZERO]);
    }

    #[test]
    fn without_a_normal_threshold_a_target_has_no_normal_deltas() {
        let base = [Vec3::X];
        let t = target(&base, &radial(&base), vec![Vec3::Y], 1e-6, None, |_| {
            unreachable!("no normals are computed")
        });
        assert_eq!(t.positions, [Vec3::Y]);
        assert!(t.normals.is_empty());
    }
}
