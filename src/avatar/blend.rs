//! The CPU blend: `p = p0 + Σ w_i δ_i` per vertex, as a plain reference and as a sparse,
//! allocation-free per-frame evaluator ([`CpuBlender`]); and the reference skinning that follows
//! it ([`skin_reference`]), which the renderer does on the GPU on both morph paths.
//!
//! Blended normals are **not** renormalised here: a sum of normal deltas is only approximately
//! unit length, and the vertex or fragment shader renormalises anyway, so doing it on the CPU
//! would be wasted work every frame.

use super::{Deltas, Primitive};
use glam::{Mat4, Vec3, Vec4};

/// Weights with a magnitude below this are treated as zero and their targets skipped.
pub const WEIGHT_EPSILON: f32 = 1e-6;

/// The straightforward blend `out[j] = base[j] + Σ_i weights[i] * targets[i][j]`, the reference the
/// optimised paths are tested against.
///
/// Every weight is applied, including zeros and non-finite ones. Vertices beyond `out.len()` or
/// `base.len()` are not touched, a target shorter than the base contributes nothing to the missing
/// vertices, and targets without a weight (or weights without a target) are ignored.
pub fn blend_reference(base: &[Vec3], targets: &[&[Vec3]], weights: &[f32], out: &mut [Vec3]) {
    for (j, (out, &p0)) in out.iter_mut().zip(base).enumerate() {
        let mut p = p0;
        for (target, &w) in targets.iter().zip(weights) {
            if let Some(&delta) = target.get(j) {
                p += w * delta;
            }
        }
        *out = p;
    }
}

/// The skin matrix of one vertex: `Σ weights[i] * matrices[joints[i]]` over its four
/// influences. Influences with a zero weight or a joint outside `matrices` are skipped; when no
/// weight remains the vertex follows `fallback` (its mesh node's world transform), as a vertex
/// with all-zero weights does.
pub fn skin_matrix(joints: [u16; 4], weights: Vec4, matrices: &[Mat4], fallback: Mat4) -> Mat4 {
    let mut sum = Mat4::ZERO;
    let mut total = 0.0;
    for (&joint, w) in joints.iter().zip(weights.to_array()) {
        if w == 0.0 {
            continue;
        }
        if let Some(m) = matrices.get(usize::from(joint)) {
            sum += *m * w;
            total += w;
        }
    }
    if total > 0.0 {
        sum
    } else {
        fallback
    }
}

/// The reference linear blend skinning, applied after morphing as glTF orders it: each of
/// `positions` (the primitive's positions, usually morphed) is transformed by its
/// [`skin_matrix`] from `prim`'s joints and weights, and each of `normals` by the matrix's
/// upper 3x3, then normalised (left as given where that is zero). Vertices without joints or
/// weights follow `fallback`. Returns the skinned positions and normals, as many as given.
pub fn skin_reference(
    prim: &Primitive,
    positions: &[Vec3],
    normals: &[Vec3],
    matrices: &[Mat4],
    fallback: Mat4,
) -> (Vec<Vec3>, Vec<Vec3>) {
    let matrix = |v: usize| match (prim.joints.get(v), prim.joint_weights.get(v)) {
        (Some(&j), Some(&w)) => skin_matrix(j, w, matrices, fallback),
        _ => fallback,
    };
    let out_positions = positions
        .iter()
        .enumerate()
        .map(|(v, p)| matrix(v).transform_point3(*p))
        .collect();
    let out_normals = normals
        .iter()
        .enumerate()
        .map(|(v, n)| matrix(v).transform_vector3(*n).normalize_or(*n))
        .collect();
    (out_positions, out_normals)
}

/// An output buffer handed to [`CpuBlender`] has the wrong length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{what} output holds {actual} elements, the primitive needs {expected}")]
pub struct LengthMismatch {
    /// Which output: `"positions"`, `"normals"`, `"interleaved"`, ...
    pub what: &'static str,
    /// The length required.
    pub expected: usize,
    /// The length given.
    pub actual: usize,
}

fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<(), LengthMismatch> {
    if expected == actual {
        Ok(())
    } else {
        Err(LengthMismatch {
            what,
            expected,
            actual,
        })
    }
}

/// One morph target in sparse form: only the vertices whose position or normal delta is non-zero.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseTarget {
    indices: Vec<u32>,
    pos: Vec<Vec3>,
    nrm: Vec<Vec3>,
}

impl SparseTarget {
    /// The vertices this target moves, ascending.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Position deltas, parallel to [`SparseTarget::indices`].
    pub fn positions(&self) -> &[Vec3] {
        &self.pos
    }

    /// Normal deltas, parallel to [`SparseTarget::indices`] (zeros where the target has none).
    pub fn normals(&self) -> &[Vec3] {
        &self.nrm
    }

    /// Number of vertices this target moves.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether this target moves nothing.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// The vertices below `n` that `positions` or `normals` moves (a delta other than zero), merged
/// from the two sparse lists; entries past `n` are ignored and a missing delta counts as zero.
fn sparse_target(positions: &Deltas, normals: &Deltas, n: usize) -> SparseTarget {
    let (mut p, mut q) = (positions.entries().peekable(), normals.entries().peekable());
    let mut sparse = SparseTarget::default();
    loop {
        let (j, dp, dn) = match (p.peek().copied(), q.peek().copied()) {
            (None, None) => break,
            (Some((i, d)), None) => {
                p.next();
                (i, d, Vec3::ZERO)
            }
            (None, Some((i, d))) => {
                q.next();
                (i, Vec3::ZERO, d)
            }
            (Some((i, dp)), Some((k, dn))) => match i.cmp(&k) {
                std::cmp::Ordering::Less => {
                    p.next();
                    (i, dp, Vec3::ZERO)
                }
                std::cmp::Ordering::Greater => {
                    q.next();
                    (k, Vec3::ZERO, dn)
                }
                std::cmp::Ordering::Equal => {
                    p.next();
                    q.next();
                    (i, dp, dn)
                }
            },
        };
        if j as usize >= n {
            break;
        }
        if dp != Vec3::ZERO || dn != Vec3::ZERO {
            sparse.indices.push(j);
            sparse.pos.push(dp);
            sparse.nrm.push(dn);
        }
    }
    sparse.indices.shrink_to_fit();
    sparse.pos.shrink_to_fit();
    sparse.nrm.shrink_to_fit();
    sparse
}

/// Evaluates one primitive's morph targets on the CPU every frame.
///
/// Built once per primitive: it copies the base positions and normals and stores the targets
/// target-major and sparse. Each blend copies the base into the caller's buffers, then, for every
/// target whose weight is finite and at least [`WEIGHT_EPSILON`] in magnitude, adds `w * delta`
/// at that target's vertices. Nothing is allocated per call; cost is the vertex count plus the
/// touched entries of the active targets.
///
/// Weights map to targets by position; missing weights count as zero and extra ones are ignored.
/// Normals are blended like positions and **not** renormalised (the shader does that).
#[derive(Debug, Clone, Default)]
pub struct CpuBlender {
    base_positions: Vec<Vec3>,
    base_normals: Vec<Vec3>,
    targets: Vec<SparseTarget>,
}

impl CpuBlender {
    /// Builds the sparse view of `prim`'s targets. Missing normals (or normal deltas, or delta
    /// entries beyond a target's length) count as zero.
    pub fn new(prim: &Primitive) -> CpuBlender {
        let n = prim.positions.len();
        let base_normals = if prim.normals.len() == n {
            prim.normals.clone()
        } else {
            tracing::warn!(
                vertices = n,
                normals = prim.normals.len(),
                "primitive normals do not match its vertices; blending zero normals"
            );
            vec![Vec3::ZERO; n]
        };
        let targets = prim
            .targets
            .iter()
            .map(|target| sparse_target(&target.positions, &target.normals, n))
            .collect();
        CpuBlender {
            base_positions: prim.positions.clone(),
            base_normals,
            targets,
        }
    }

    /// Number of vertices (the required length of each output).
    pub fn vertex_count(&self) -> usize {
        self.base_positions.len()
    }

    /// Number of targets (the weights consumed).
    pub fn target_count(&self) -> usize {
        self.targets.len()
    }

    /// The sparse targets, in target order.
    pub fn targets(&self) -> &[SparseTarget] {
        &self.targets
    }

    /// The targets that contribute under `weights`, each with its weight.
    fn active<'a>(
        &'a self,
        weights: &'a [f32],
    ) -> impl Iterator<Item = (&'a SparseTarget, f32)> + 'a {
        self.targets
            .iter()
            .zip(weights)
            .filter(|(target, w)| w.is_finite() && w.abs() >= WEIGHT_EPSILON && !target.is_empty())
            .map(|(target, &w)| (target, w))
    }

    /// Writes the blended positions and normals. Both outputs must hold exactly
    /// [`CpuBlender::vertex_count`] elements; they are fully overwritten. With all weights zero the
    /// outputs are bitwise copies of the base.
    pub fn blend(
        &self,
        weights: &[f32],
        positions: &mut [Vec3],
        normals: &mut [Vec3],
    ) -> Result<(), LengthMismatch> {
        let n = self.vertex_count();
        check_len("positions", n, positions.len())?;
        check_len("normals", n, normals.len())?;
        positions.copy_from_slice(&self.base_positions);
        normals.copy_from_slice(&self.base_normals);
        for (target, w) in self.active(weights) {
            for ((&j, &dp), &dn) in target.indices.iter().zip(&target.pos).zip(&target.nrm) {
                let j = j as usize;
                if let (Some(p), Some(nm)) = (positions.get_mut(j), normals.get_mut(j)) {
                    *p += w * dp;
                    *nm += w * dn;
                }
            }
        }
        Ok(())
    }

    /// Writes the blended vertices interleaved as `[px, py, pz, nx, ny, nz]` per vertex, ready for
    /// one `glBufferSubData` into a buffer with a 24-byte stride (position at offset 0, normal at
    /// offset 12). `out` must hold exactly `6 * vertex_count` floats.
    pub fn blend_interleaved(
        &self,
        weights: &[f32],
        out: &mut [f32],
    ) -> Result<(), LengthMismatch> {
        let n = self.vertex_count();
        check_len("interleaved", n.saturating_mul(6), out.len())?;
        for ((vertex, p), nm) in out
            .chunks_exact_mut(6)
            .zip(&self.base_positions)
            .zip(&self.base_normals)
        {
            vertex[..3].copy_from_slice(&p.to_array());
            vertex[3..].copy_from_slice(&nm.to_array());
        }
        for (target, w) in self.active(weights) {
            for ((&j, &dp), &dn) in target.indices.iter().zip(&target.pos).zip(&target.nrm) {
                let start = j as usize * 6;
                if let Some(vertex) = out.get_mut(start..start + 6) {
                    let p = Vec3::from_slice(&vertex[..3]) + w * dp;
                    let nm = Vec3::from_slice(&vertex[3..]) + w * dn;
                    p.write_to_slice(&mut vertex[..3]);
                    nm.write_to_slice(&mut vertex[3..]);
                }
            }
        }
        Ok(())
    }

    /// Writes only the offsets `Σ w_i δ_i` (no base), for a renderer that keeps the base mesh on
    /// the GPU and adds an offset buffer in the vertex shader. Both outputs must hold exactly
    /// [`CpuBlender::vertex_count`] elements; they are fully overwritten.
    pub fn blend_offsets(
        &self,
        weights: &[f32],
        position_offsets: &mut [Vec3],
        normal_offsets: &mut [Vec3],
    ) -> Result<(), LengthMismatch> {
        let n = self.vertex_count();
        check_len("position offsets", n, position_offsets.len())?;
        check_len("normal offsets", n, normal_offsets.len())?;
        position_offsets.fill(Vec3::ZERO);
        normal_offsets.fill(Vec3::ZERO);
        for (target, w) in self.active(weights) {
            for ((&j, &dp), &dn) in target.indices.iter().zip(&target.pos).zip(&target.nrm) {
                let j = j as usize;
                if let (Some(p), Some(nm)) =
                    (position_offsets.get_mut(j), normal_offsets.get_mut(j))
                {
                    *p += w * dp;
                    *nm += w * dn;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::MorphTarget;
    use proptest::prelude::*;

    fn prim(base: Vec<Vec3>, normals: Vec<Vec3>, targets: Vec<MorphTarget>) -> Primitive {
        Primitive {
            positions: base,
            normals,
            targets,
            ..Primitive::default()
        }
    }

    fn target(positions: Vec<Vec3>, normals: Vec<Vec3>) -> MorphTarget {
        MorphTarget {
            positions: positions.into(),
            normals: normals.into(),
            ..MorphTarget::default()
        }
    }

    fn bits(v: &[Vec3]) -> Vec<[u32; 3]> {
        v.iter().map(|p| p.to_array().map(f32::to_bits)).collect()
    }

    #[test]
    fn zero_weights_reproduce_the_base_bitwise() {
        let base = vec![
            Vec3::new(-0.0, 1.0e-30, 3.5),
            Vec3::new(f32::MIN_POSITIVE, -2.0, 0.1),
        ];
        let normals = vec![Vec3::new(-0.0, 0.0, 1.0), Vec3::Y];
        let p = prim(
            base.clone(),
            normals.clone(),
            vec![
                target(
                    vec![Vec3::splat(0.3), Vec3::splat(-0.7)],
                    vec![Vec3::X, Vec3::Z],
                ),
                target(vec![Vec3::ZERO, Vec3::splat(1e-3)], vec![]),
            ],
        );
        let blender = CpuBlender::new(&p);
        let (mut pos, mut nrm) = (vec![Vec3::NAN; 2], vec![Vec3::NAN; 2]);
        for weights in [
            &[0.0, 0.0][..],
            &[],
            &[1e-7, -1e-7],
            &[f32::NAN, f32::INFINITY],
        ] {
            blender.blend(weights, &mut pos, &mut nrm).unwrap();
            assert_eq!(bits(&pos), bits(&base));
            assert_eq!(bits(&nrm), bits(&normals));
            let mut interleaved = vec![f32::NAN; 12];
            blender
                .blend_interleaved(weights, &mut interleaved)
                .unwrap();
            let expected: Vec<u32> = (0..2)
                .flat_map(|j| base[j].to_array().into_iter().chain(normals[j].to_array()))
                .map(f32::to_bits)
                .collect();
            assert_eq!(
                interleaved.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                expected
            );
            let (mut po, mut no) = (vec![Vec3::NAN; 2], vec![Vec3::NAN; 2]);
            blender.blend_offsets(weights, &mut po, &mut no).unwrap();
            assert_eq!(po, vec![Vec3::ZERO; 2]);
            assert_eq!(no, vec![Vec3::ZERO; 2]);
        }
        let mut reference = vec![Vec3::NAN; 2];
        let dense: Vec<Vec<Vec3>> = p.targets.iter().map(|t| t.positions.to_vec()).collect();
        let deltas: Vec<&[Vec3]> = dense.iter().map(Vec::as_slice).collect();
        blend_reference(&base, &deltas, &[0.0, 0.0], &mut reference);
        assert_eq!(reference, base);
    }

    #[test]
    fn one_full_weight_isolates_its_target() {
        let base = vec![
            Vec3::new(1.0, 2.0, 3.0),
            Vec3::new(-1.0, 0.5, 0.0),
            Vec3::ZERO,
        ];
        let a = target(
            vec![
                Vec3::new(0.1, 0.0, 0.0),
                Vec3::ZERO,
                Vec3::new(0.0, 0.0, 2.0),
            ],
            vec![Vec3::new(0.0, 0.5, 0.0), Vec3::ZERO, Vec3::ZERO],
        );
        let b = target(
            vec![
                Vec3::ZERO,
                Vec3::new(0.0, -4.0, 0.0),
                Vec3::new(9.0, 9.0, 9.0),
            ],
            vec![Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0), Vec3::ZERO],
        );
        let normals = vec![Vec3::Z; 3];
        let p = prim(base.clone(), normals.clone(), vec![a.clone(), b.clone()]);
        let blender = CpuBlender::new(&p);
        assert_eq!(blender.targets()[0].indices(), &[0, 2]);
        assert_eq!(blender.targets()[1].indices(), &[1, 2]);
        let (mut pos, mut nrm) = (vec![Vec3::ZERO; 3], vec![Vec3::ZERO; 3]);
        for (weights, t) in [([1.0, 0.0], &a), ([0.0, 1.0], &b)] {
            blender.blend(&weights, &mut pos, &mut nrm).unwrap();
            for j in 0..3 {
                assert_eq!(pos[j], base[j] + t.positions[j]);
                assert_eq!(nrm[j], normals[j] + t.normals[j]);
            }
        }
    }

    #[test]
    fn seeds_worked_example() {
        let p = prim(
            vec![Vec3::new(1.0, 0.0, 0.0)],
            vec![Vec3::X],
            vec![
                target(vec![Vec3::new(0.0, 0.2, 0.0)], vec![]),
                target(vec![Vec3::new(0.0, 0.0, 0.4)], vec![]),
            ],
        );
        let weights = [0.5, 0.25];
        let expected = Vec3::new(1.0, 0.1, 0.1);

        let mut reference = [Vec3::ZERO];
        let dense: Vec<Vec<Vec3>> = p.targets.iter().map(|t| t.positions.to_vec()).collect();
        let deltas: Vec<&[Vec3]> = dense.iter().map(Vec::as_slice).collect();
        blend_reference(&p.positions, &deltas, &weights, &mut reference);
        assert!(
            (reference[0] - expected).abs().max_element() < 1e-6,
            "{:?}",
            reference[0]
        );

        let blender = CpuBlender::new(&p);
        let (mut pos, mut nrm) = ([Vec3::ZERO], [Vec3::ZERO]);
        blender.blend(&weights, &mut pos, &mut nrm).unwrap();
        assert!(
            (pos[0] - expected).abs().max_element() < 1e-6,
            "{:?}",
            pos[0]
        );
        assert_eq!(
            nrm[0],
            Vec3::X,
            "targets without normal deltas leave normals alone"
        );

        let mut interleaved = [0.0; 6];
        blender
            .blend_interleaved(&weights, &mut interleaved)
            .unwrap();
        assert!(
            (Vec3::from_slice(&interleaved) - expected)
                .abs()
                .max_element()
                < 1e-6
        );
        let (mut po, mut no) = ([Vec3::ZERO], [Vec3::ONE]);
        blender.blend_offsets(&weights, &mut po, &mut no).unwrap();
        assert!((po[0] - Vec3::new(0.0, 0.1, 0.1)).abs().max_element() < 1e-6);
        assert_eq!(no[0], Vec3::ZERO);
    }

    #[test]
    fn normals_are_blended_but_not_renormalised() {
        let p = prim(
            vec![Vec3::ZERO],
            vec![Vec3::Z],
            vec![target(vec![Vec3::ZERO], vec![Vec3::X])],
        );
        let blender = CpuBlender::new(&p);
        let (mut pos, mut nrm) = ([Vec3::ZERO], [Vec3::ZERO]);
        blender.blend(&[1.0], &mut pos, &mut nrm).unwrap();
        assert_eq!(nrm[0], Vec3::new(1.0, 0.0, 1.0));
        assert_eq!(
            blender.targets()[0].indices(),
            &[0],
            "a normal-only delta is kept"
        );
    }

    #[test]
    fn wrong_output_lengths_are_reported_not_panicked() {
        let p = prim(vec![Vec3::ZERO; 3], vec![Vec3::Z; 3], vec![]);
        let blender = CpuBlender::new(&p);
        let (mut short, mut ok) = (vec![Vec3::ZERO; 2], vec![Vec3::ZERO; 3]);
        let error = blender.blend(&[], &mut short, &mut ok).unwrap_err();
        assert_eq!(
            (error.what, error.expected, error.actual),
            ("positions", 3, 2)
        );
        assert!(blender.blend(&[], &mut ok.clone(), &mut short).is_err());
        assert!(blender.blend_interleaved(&[], &mut [0.0; 17]).is_err());
        assert!(blender
            .blend_offsets(&[], &mut short.clone(), &mut ok)
            .is_err());
    }

    #[test]
    fn mismatched_normals_blend_as_zero() {
        let p = prim(
            vec![Vec3::ONE; 2],
            vec![Vec3::Z],
            vec![target(vec![Vec3::X; 2], vec![])],
        );
        let blender = CpuBlender::new(&p);
        let (mut pos, mut nrm) = (vec![Vec3::ZERO; 2], vec![Vec3::ONE; 2]);
        blender.blend(&[2.0], &mut pos, &mut nrm).unwrap();
        assert_eq!(pos, vec![Vec3::new(3.0, 1.0, 1.0); 2]);
        assert_eq!(nrm, vec![Vec3::ZERO; 2]);
    }

    /// A primitive with `vertices` vertices and `targets` targets, about half of each target's
    /// deltas zero so the sparse path is exercised, plus weights including skipped ones.
    fn random_case() -> impl Strategy<Value = (Primitive, Vec<f32>)> {
        (1usize..40, 0usize..6).prop_flat_map(|(vertices, targets)| {
            let v3 = || prop::array::uniform3(-10.0f32..10.0).prop_map(Vec3::from);
            let sparse_v3 = move || prop_oneof![Just(Vec3::ZERO), v3()];
            let target = move || {
                (
                    prop::collection::vec(sparse_v3(), vertices),
                    prop::collection::vec(sparse_v3(), vertices),
                )
                    .prop_map(|(positions, normals)| MorphTarget {
                        positions: positions.into(),
                        normals: normals.into(),
                        ..MorphTarget::default()
                    })
            };
            let weight = prop_oneof![Just(0.0f32), Just(1e-7f32), Just(f32::NAN), -1.5f32..1.5,];
            (
                prop::collection::vec(v3(), vertices),
                prop::collection::vec(v3(), vertices),
                prop::collection::vec(target(), targets),
                prop::collection::vec(weight, 0..targets + 2),
            )
                .prop_map(|(positions, normals, targets, weights)| {
                    (prim(positions, normals, targets), weights)
                })
        })
    }

    proptest! {
        #[test]
        fn cpu_blender_agrees_with_the_reference((p, weights) in random_case()) {
            // The reference applies every weight; the blender skips tiny and non-finite ones,
            // so compare against the reference fed the weights the blender honours.
            let honoured: Vec<f32> = weights
                .iter()
                .map(|&w| if w.is_finite() && w.abs() >= WEIGHT_EPSILON { w } else { 0.0 })
                .collect();
            let n = p.positions.len();
            let pos_dense: Vec<Vec<Vec3>> = p.targets.iter().map(|t| t.positions.to_vec()).collect();
            let nrm_dense: Vec<Vec<Vec3>> = p.targets.iter().map(|t| t.normals.to_vec()).collect();
            let pos_deltas: Vec<&[Vec3]> = pos_dense.iter().map(Vec::as_slice).collect();
            let nrm_deltas: Vec<&[Vec3]> = nrm_dense.iter().map(Vec::as_slice).collect();
            let mut want_pos = vec![Vec3::ZERO; n];
            let mut want_nrm = vec![Vec3::ZERO; n];
            blend_reference(&p.positions, &pos_deltas, &honoured, &mut want_pos);
            blend_reference(&p.normals, &nrm_deltas, &honoured, &mut want_nrm);

            let blender = CpuBlender::new(&p);
            let mut pos = vec![Vec3::NAN; n];
            let mut nrm = vec![Vec3::NAN; n];
            blender.blend(&weights, &mut pos, &mut nrm).unwrap();
            let mut interleaved = vec![f32::NAN; 6 * n];
            blender.blend_interleaved(&weights, &mut interleaved).unwrap();
            let mut pos_off = vec![Vec3::NAN; n];
            let mut nrm_off = vec![Vec3::NAN; n];
            blender.blend_offsets(&weights, &mut pos_off, &mut nrm_off).unwrap();
            for j in 0..n {
                // Both add the targets in order with the same operations; skipping zero weights
                // and zero deltas only drops additions of ±0, so the results are equal.
                prop_assert_eq!(pos[j], want_pos[j]);
                prop_assert_eq!(nrm[j], want_nrm[j]);
                let tol = 1e-4;
                prop_assert_eq!(Vec3::from_slice(&interleaved[6 * j..]), pos[j]);
                prop_assert_eq!(Vec3::from_slice(&interleaved[6 * j + 3..]), nrm[j]);
                prop_assert!((p.positions[j] + pos_off[j] - pos[j]).abs().max_element() < tol);
                prop_assert!((p.normals[j] + nrm_off[j] - nrm[j]).abs().max_element() < tol);
            }
        }
    }
}
