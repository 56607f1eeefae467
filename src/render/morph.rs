//! The two morph paths: the path decision, per-frame weight sanitising, the CPU path's sparse
//! blend and upload of changed meshes, and the GPU path's delta buffer textures and lists of
//! active targets.

#![expect(unsafe_code)]

use std::rc::Rc;

use glam::Vec3;
use glow::HasContext;

use super::objects::{bytes_of, Buffer, Texture};
use super::renderer::Renderer;
use super::{check_gl, sanitize_weight, MorphMode, MorphPath, RenderError};
use crate::avatar::blend::{CpuBlender, WEIGHT_EPSILON};
use crate::avatar::{Avatar, Pose, Primitive};

/// The most non-zero weights one mesh can send to the GPU path's shader in a frame. Beyond
/// this, the largest weights (by magnitude) are kept.
pub const MAX_ACTIVE_TARGETS: usize = 128;

/// A primitive's morph data.
pub(super) enum PrimitiveMorph {
    /// No targets.
    None,
    /// CPU path: the sparse blender and its interleaved output buffer.
    Cpu {
        blender: CpuBlender,
        scratch: Vec<f32>,
    },
    /// GPU path: the deltas buffer and the buffer texture that views it.
    Gpu { _buffer: Buffer, texture: Texture },
}

/// Resolves `morph` against `GL_RENDERER` (see [`MorphMode::resolve`]); the GPU path falls back
/// to the CPU path, with a warning, when a primitive's deltas exceed the driver's buffer-texture
/// size.
pub(super) fn resolve_path(
    gl: &glow::Context,
    avatar: &Avatar,
    morph: MorphMode,
    renderer_name: &str,
) -> MorphPath {
    let mut path = morph.resolve(renderer_name);
    if path == MorphPath::Gpu {
        // SAFETY: querying a limit on the current context.
        let limit = unsafe { gl.get_parameter_i32(glow::MAX_TEXTURE_BUFFER_SIZE) };
        if let Some((texels, name)) = largest_delta_texels(avatar) {
            if texels > limit.max(0) as u64 {
                tracing::warn!(
                    texels,
                    limit,
                    mesh = %name,
                    "morph deltas exceed the driver's buffer texture size; using the CPU morph path"
                );
                path = MorphPath::Cpu;
            }
        }
    }
    path
}

impl Renderer {
    /// Copies the pose's weights into each mesh's sanitised weight array.
    pub(super) fn update_weights(&mut self, pose: &Pose) {
        for (index, mesh) in self.meshes.iter_mut().enumerate() {
            let given = pose.weights.get(index).map_or(&[][..], Vec::as_slice);
            for (t, w) in mesh.weights.iter_mut().enumerate() {
                *w = given.get(t).copied().map_or(0.0, sanitize_weight);
            }
        }
    }

    /// CPU path: re-blends and uploads the primitives of meshes whose weights changed, among
    /// the meshes drawn this frame.
    pub(super) fn upload_cpu_morphs(&mut self) {
        let gl = &*self.gl;
        for (index, mesh) in self.meshes.iter_mut().enumerate() {
            // A mesh no drawn node shows keeps its old vertices until one does.
            let drawn = self.lods.mesh_drawn.get(index).copied().unwrap_or(true);
            if !drawn || mesh.weights == mesh.uploaded {
                continue;
            }
            for prim in &mut mesh.primitives {
                if let PrimitiveMorph::Cpu { blender, scratch } = &mut prim.morph {
                    if let Err(e) = blender.blend_interleaved(&mesh.weights, scratch) {
                        // The scratch buffer is sized from the same vertex count at
                        // construction, so this cannot happen; never upload stale sizes.
                        tracing::error!(error = %e, "CPU blend buffer mismatch; frame not morphed");
                        continue;
                    }
                    // SAFETY: the buffer was allocated with exactly `scratch.len()` floats at
                    // construction, so the sub-upload stays in range.
                    unsafe {
                        gl.bind_buffer(glow::ARRAY_BUFFER, Some(prim.vertex_buffer.raw()));
                        gl.buffer_sub_data_u8_slice(glow::ARRAY_BUFFER, 0, bytes_of(scratch));
                    }
                }
            }
            mesh.uploaded.copy_from_slice(&mesh.weights);
        }
        check_gl!(gl, "uploading CPU-blended vertices");
    }

    /// GPU path: lists each mesh's non-zero weights in increasing target order, keeping the
    /// largest [`MAX_ACTIVE_TARGETS`] (by magnitude) when there are more. "Non-zero" means at
    /// least [`WEIGHT_EPSILON`] in magnitude, the same threshold [`CpuBlender`] skips below, so
    /// both paths sum the same targets.
    /// Meshes no drawn node shows keep their old lists.
    pub(super) fn build_active_lists(&mut self) {
        for (index, mesh) in self.meshes.iter_mut().enumerate() {
            if !self.lods.mesh_drawn.get(index).copied().unwrap_or(true) {
                continue;
            }
            let (count, dropped) = fill_active_list(
                &mesh.weights,
                &mut mesh.order,
                &mut mesh.active_index,
                &mut mesh.active_weight,
            );
            if dropped > 0 && !mesh.warned_active {
                tracing::warn!(
                    active = count + dropped,
                    max = mesh.active_index.len(),
                    "more non-zero morph weights than the GPU path takes; the smallest are dropped"
                );
                mesh.warned_active = true;
            }
            mesh.active_count = count as i32;
        }
    }
}

/// Lists the weights of at least [`WEIGHT_EPSILON`] magnitude into `index`/`weight` (both the
/// same length, the list's capacity), in increasing target order, zero-padded. When there are
/// more than fit, the largest by magnitude are kept. `order` is scratch space. Returns how many
/// were listed and how many were dropped.
fn fill_active_list(
    weights: &[f32],
    order: &mut Vec<u32>,
    index: &mut [i32],
    weight: &mut [f32],
) -> (usize, usize) {
    let max = index.len().min(weight.len());
    order.clear();
    order.extend(
        weights
            .iter()
            .enumerate()
            .filter(|(_, w)| w.abs() >= WEIGHT_EPSILON)
            .map(|(t, _)| t as u32),
    );
    let mut dropped = 0;
    if order.len() > max {
        dropped = order.len() - max;
        if max > 0 {
            order.select_nth_unstable_by(max - 1, |a, b| {
                weights[*b as usize]
                    .abs()
                    .total_cmp(&weights[*a as usize].abs())
            });
        }
        order.truncate(max);
        order.sort_unstable();
    }
    index.fill(0);
    weight.fill(0.0);
    for (slot, &t) in order.iter().enumerate() {
        index[slot] = t as i32;
        weight[slot] = weights[t as usize];
    }
    (order.len(), dropped)
}

/// The largest number of buffer-texture texels one primitive's deltas need, with its mesh's
/// name, or `None` when no primitive has targets.
fn largest_delta_texels(avatar: &Avatar) -> Option<(u64, String)> {
    avatar
        .meshes
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            m.primitives.iter().map(move |p| {
                let targets = p.targets.len().max(m.target_count());
                let texels = p.positions.len() as u64 * targets as u64 * 2;
                (texels, m.name.clone().unwrap_or_else(|| format!("#{i}")))
            })
        })
        .filter(|(t, _)| *t > 0)
        .max_by_key(|(t, _)| *t)
}

/// CPU path: the sparse blender of `prim` (`count` vertices) with `scratch`, its interleaved
/// output buffer.
pub(super) fn cpu_morph(prim: &Primitive, count: usize, scratch: Vec<f32>) -> PrimitiveMorph {
    // The blender copies its base from the primitive; give it the same fallback
    // normals as the vertex buffer so a blend never writes zero-length normals.
    let blender = if prim.normals.len() == count {
        CpuBlender::new(prim)
    } else {
        let mut fixed = prim.clone();
        fixed.normals = vec![Vec3::Z; count];
        CpuBlender::new(&fixed)
    };
    PrimitiveMorph::Cpu { blender, scratch }
}

/// GPU path: puts every target's position and normal deltas into one RGBA32F buffer texture,
/// target-major (`(t * vertices + v) * 2` and `+ 1`). Like [`CpuBlender`], entries missing from
/// a short target count as zero and extra ones are ignored; targets the mesh names but the
/// primitive lacks are zeros.
pub(super) fn upload_deltas(
    gl: &Rc<glow::Context>,
    prim: &Primitive,
    count: usize,
    mesh_targets: usize,
    mesh: usize,
    primitive: usize,
) -> Result<PrimitiveMorph, RenderError> {
    // Room for every target the mesh's weights can name, so no index the shader gets reads
    // past the buffer, even when this primitive lists fewer targets than its mesh.
    let mut data = vec![0.0f32; prim.targets.len().max(mesh_targets) * count * 8];
    for (t, target) in prim.targets.iter().enumerate() {
        if target.positions.len() != count
            || !(target.normals.is_empty() || target.normals.len() == count)
        {
            tracing::warn!(
                mesh,
                primitive,
                target = t,
                positions = target.positions.len(),
                normals = target.normals.len(),
                vertices = count,
                "morph target size does not match the vertices; missing deltas count as zero"
            );
        }
        // Only the vertices the target moves are stored; every other texel stays zero.
        for (offset, deltas) in [(0, &target.positions), (4, &target.normals)] {
            for (v, d) in deltas.entries().filter(|&(v, _)| (v as usize) < count) {
                let at = (t * count + v as usize) * 8 + offset;
                data[at..at + 3].copy_from_slice(&d.to_array());
            }
        }
    }
    let buffer = Buffer::new(gl)?;
    let texture = Texture::new(gl)?;
    // SAFETY: fresh objects owned here; the buffer texture views the whole buffer.
    unsafe {
        gl.bind_buffer(glow::TEXTURE_BUFFER, Some(buffer.raw()));
        gl.buffer_data_u8_slice(glow::TEXTURE_BUFFER, bytes_of(&data), glow::STATIC_DRAW);
        gl.bind_buffer(glow::TEXTURE_BUFFER, None);
        gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture.raw()));
        gl.tex_buffer(glow::TEXTURE_BUFFER, glow::RGBA32F, Some(buffer.raw()));
        gl.bind_texture(glow::TEXTURE_BUFFER, None);
    }
    check_gl!(gl, "uploading morph deltas");
    Ok(PrimitiveMorph::Gpu {
        _buffer: buffer,
        texture,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::Mesh;

    #[test]
    fn active_list_keeps_order_and_the_largest_weights() {
        let mut order = Vec::new();
        let (mut index, mut weight) = (vec![9; 4], vec![9.0; 4]);
        let weights = [0.0, 0.5, 1e-9, -0.25];
        assert_eq!(
            fill_active_list(&weights, &mut order, &mut index, &mut weight),
            (2, 0)
        );
        assert_eq!(index, [1, 3, 0, 0]);
        assert_eq!(weight, [0.5, -0.25, 0.0, 0.0]);

        let weights = [0.1, -0.9, 0.3, 0.2, 0.05, 0.8, -0.4];
        assert_eq!(
            fill_active_list(&weights, &mut order, &mut index, &mut weight),
            (4, 3)
        );
        assert_eq!(index, [1, 2, 5, 6]);
        assert_eq!(weight, [-0.9, 0.3, 0.8, -0.4]);
    }

    #[test]
    fn largest_delta_texels_counts_two_per_vertex_and_target() {
        let mut avatar = Avatar::default();
        assert!(largest_delta_texels(&avatar).is_none());
        avatar.meshes.push(Mesh {
            name: Some("head".into()),
            target_names: vec!["a".into(), "b".into()],
            default_weights: vec![0.0; 2],
            primitives: vec![Primitive {
                positions: vec![Vec3::ZERO; 10],
                targets: vec![Default::default(), Default::default()],
                ..Default::default()
            }],
        });
        assert_eq!(largest_delta_texels(&avatar), Some((40, "head".into())));
    }
}
