//! Draw order: opaque and masked primitives in node order, then blended ones sorted by render
//! queue and depth; and drawing one primitive with its material, MToon outline and morph
//! deltas.

#![expect(unsafe_code)]

use glam::Vec3;
use glow::HasContext;

use super::effects::LiveMaterial;
use super::materials::GpuMaterial;
use super::morph::PrimitiveMorph;
use super::nodes::NodeInfo;
use super::primitives::{GpuMesh, GpuPrimitive};
use super::renderer::Renderer;
use super::variants::{Bound, Uniforms, UNIT_DELTAS, UNIT_SHADE};
use super::{Camera, MorphPath};
use crate::avatar::AlphaMode;

/// One blended primitive of this frame.
#[derive(Clone, Copy)]
pub(super) struct BlendedDraw {
    /// The material's render queue offset (earlier when lower).
    pub(super) queue: i32,
    /// Distance of the centroid along the view direction (farther first).
    pub(super) depth: f32,
    /// The node drawing it.
    pub(super) node: usize,
    /// The primitive's index in its mesh.
    pub(super) primitive: usize,
}

/// How many blended primitives the nodes draw in all: the capacity that keeps sorting them from
/// allocating.
pub(super) fn count_blended(
    nodes: &[NodeInfo],
    meshes: &[GpuMesh],
    materials: &[GpuMaterial],
) -> usize {
    nodes
        .iter()
        .filter_map(|n| n.mesh.and_then(|m| meshes.get(m)))
        .map(|m| {
            m.primitives
                .iter()
                .filter(|p| {
                    p.material
                        .and_then(|i| materials.get(i))
                        .is_some_and(|m| m.alpha_mode == AlphaMode::Blend)
                })
                .count()
        })
        .sum()
}

/// The texture transform that leaves coordinates as they are (column-major 3x3).
const IDENTITY_UV: [f32; 9] = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];

impl Renderer {
    /// Draws the opaque and masked primitives of the nodes reached this frame and not hidden by
    /// a level-of-detail choice, in node order,
    /// each MToon outline right after its surface; lists the blended ones in `blended` (cleared
    /// first) for [`Renderer::draw_blended`].
    pub(super) fn draw_opaque(
        &self,
        bound: &mut Bound,
        blended: &mut Vec<BlendedDraw>,
        camera: &Camera,
        forward: Vec3,
    ) {
        blended.clear();
        for (index, node) in self.nodes.iter().enumerate() {
            let Some(mesh_index) = node.mesh else {
                continue;
            };
            if !self.visited[index] || self.lod_hidden(index) {
                continue;
            }
            let Some(mesh) = self.meshes.get(mesh_index) else {
                continue;
            };
            for (p, prim) in mesh.primitives.iter().enumerate() {
                let material = prim.material.and_then(|m| self.materials.get(m));
                if material.is_some_and(|m| m.alpha_mode == AlphaMode::Blend) {
                    blended.push(BlendedDraw {
                        queue: material
                            .and_then(|m| m.toon.as_ref())
                            .map_or(0, |t| t.queue),
                        depth: (self.centroid(index, prim) - camera.eye).dot(forward),
                        node: index,
                        primitive: p,
                    });
                    continue;
                }
                let wrinkled = self.wrinkled(prim.material.filter(|_| material.is_some()));
                // The triangles no wrinkle map reaches draw with the plain program (the split
                // holds while the texture coordinates are drawn as they are stored).
                let split = if wrinkled && self.uv_untransformed(prim, material) {
                    prim.wrinkle_indices
                } else if wrinkled {
                    prim.index_count
                } else {
                    0
                };
                if split > 0 {
                    let u = self.bind(bound, material, true, index, mesh);
                    self.draw_range(u, index, prim, material, false, 0..split);
                }
                if split < prim.index_count {
                    let u = self.bind(bound, material, false, index, mesh);
                    self.draw_range(u, index, prim, material, false, split..prim.index_count);
                }
                if material
                    .and_then(|m| m.toon.as_ref())
                    .is_some_and(|t| t.outline.is_some())
                {
                    let u = self.bind(bound, material, wrinkled, index, mesh);
                    self.draw_range(u, index, prim, material, true, 0..prim.index_count);
                }
            }
        }
    }

    /// Draws the blended primitives: lower queues first, then far to near, without depth writes
    /// (unless an MToon material asks for them), over what is already drawn.
    pub(super) fn draw_blended(&self, bound: &mut Bound, blended: &mut [BlendedDraw]) {
        let gl = &*self.gl;
        if !blended.is_empty() {
            blended.sort_unstable_by(|a, b| {
                a.queue
                    .cmp(&b.queue)
                    .then_with(|| b.depth.total_cmp(&a.depth))
            });
            // SAFETY: plain state changes on the current context.
            unsafe {
                gl.enable(glow::BLEND);
                gl.blend_func(glow::ONE, glow::ONE_MINUS_SRC_ALPHA);
            }
            for draw in blended.iter() {
                let Some(mesh) = self.nodes[draw.node].mesh.and_then(|m| self.meshes.get(m)) else {
                    continue;
                };
                let Some(prim) = mesh.primitives.get(draw.primitive) else {
                    continue;
                };
                let material = prim.material.and_then(|m| self.materials.get(m));
                let z_write = material
                    .and_then(|m| m.toon.as_ref())
                    .is_some_and(|t| t.z_write);
                let wrinkled = self.wrinkled(prim.material.filter(|_| material.is_some()));
                let u = self.bind(bound, material, wrinkled, draw.node, mesh);
                // SAFETY: as above.
                unsafe { gl.depth_mask(z_write) };
                self.draw_range(u, draw.node, prim, material, false, 0..prim.index_count);
            }
            // SAFETY: as above.
            unsafe {
                gl.disable(glow::BLEND);
                gl.depth_mask(true);
            }
        }
    }

    /// This frame's world-space centroid of `prim` drawn by node `node`.
    pub(super) fn centroid(&self, node: usize, prim: &GpuPrimitive) -> Vec3 {
        self.placement(node, prim).transform_point3(prim.centroid)
    }

    /// Whether `prim`'s texture coordinates are drawn as stored this frame (no texture
    /// transform on its material, none animated by an expression).
    pub(super) fn uv_untransformed(
        &self,
        prim: &GpuPrimitive,
        material: Option<&GpuMaterial>,
    ) -> bool {
        *self.uv_transform(prim, material) == IDENTITY_UV
    }

    /// This frame's colours and UV transform of `prim`'s material (its material binds,
    /// sanitised), or `None` where the material has no entry.
    fn live_material(
        &self,
        prim: &GpuPrimitive,
        material: Option<&GpuMaterial>,
    ) -> Option<&LiveMaterial> {
        prim.material
            .and_then(|m| self.live.get(m))
            .filter(|_| material.is_some())
    }

    /// The texture transform `prim` is drawn with this frame.
    fn uv_transform<'a>(
        &'a self,
        prim: &GpuPrimitive,
        material: Option<&'a GpuMaterial>,
    ) -> &'a [f32; 9] {
        self.live_material(prim, material)
            .map_or(material.map_or(&IDENTITY_UV, |m| &m.uv_transform), |l| {
                &l.uv_transform
            })
    }

    /// Draws the indices in `range` (whole triangles) of one primitive with its material: the
    /// surface, or (`outline`) its MToon outline's inverted hull: front faces culled, pushed
    /// out along the normals, in the outline colour.
    pub(super) fn draw_range(
        &self,
        u: &Uniforms,
        node: usize,
        prim: &GpuPrimitive,
        material: Option<&GpuMaterial>,
        outline: bool,
        range: std::ops::Range<i32>,
    ) {
        let gl = &*self.gl;
        // This frame's colours (material binds), sanitised; the material's own where there is
        // no entry for it.
        let live = self.live_material(prim, material);
        let base = live.map_or(material.map_or([1.0; 4], |m| m.base_color), |l| {
            l.base_color
        });
        let texture = self.texture_or_white(material.and_then(|m| m.texture));
        let double_sided = material.is_some_and(|m| m.double_sided);
        let toon = material.and_then(|m| m.toon.as_ref());
        let skinned = self.is_skinned(node, prim);
        // A mirroring transform flips the winding of every triangle (for a skinned primitive,
        // the transform of its dominant joint decides).
        let mirrored = self.placement(node, prim).determinant() < 0.0;
        // SAFETY: the program is in use; every object bound was created on this context and is
        // owned by self.
        unsafe {
            gl.uniform_4_f32(u.base_color.as_ref(), base[0], base[1], base[2], base[3]);
            gl.uniform_matrix_3_f32_slice(
                u.uv_transform.as_ref(),
                false,
                self.uv_transform(prim, material),
            );
            gl.uniform_1_i32(
                u.alpha_mode.as_ref(),
                match material.map_or(AlphaMode::Opaque, |m| m.alpha_mode) {
                    AlphaMode::Opaque => 0,
                    AlphaMode::Mask => 1,
                    AlphaMode::Blend => 2,
                },
            );
            gl.uniform_1_f32(
                u.alpha_cutoff.as_ref(),
                material.map_or(0.5, |m| m.alpha_cutoff),
            );
            gl.uniform_1_i32(u.skinned.as_ref(), i32::from(skinned));
            gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
            if let Some(toon) = toon {
                gl.uniform_3_f32_slice(
                    u.shade_color.as_ref(),
                    live.map_or(&toon.shade_color, |l| &l.shade_color),
                );
                gl.uniform_1_f32(u.shading_shift.as_ref(), toon.shift);
                gl.uniform_1_f32(u.shading_toony.as_ref(), toon.toony);
                // The shade texture is often the base colour texture itself: reuse its sample.
                let source = match toon.shade_texture {
                    None => 0,
                    Some(t) if Some(t) == material.and_then(|m| m.texture) => 1,
                    Some(t) => {
                        gl.active_texture(glow::TEXTURE0 + UNIT_SHADE);
                        gl.bind_texture(
                            glow::TEXTURE_2D,
                            Some(self.texture_or_white(Some(t)).raw()),
                        );
                        gl.active_texture(glow::TEXTURE0);
                        2
                    }
                };
                gl.uniform_1_i32(u.shade_source.as_ref(), source);
            }
            match (outline, toon.and_then(|t| t.outline)) {
                (true, Some((mode, width, color, mix))) => {
                    gl.uniform_1_i32(u.outline.as_ref(), 1);
                    gl.uniform_1_f32(u.outline_width.as_ref(), width);
                    gl.uniform_1_i32(u.outline_mode.as_ref(), mode);
                    gl.uniform_3_f32_slice(
                        u.outline_color.as_ref(),
                        live.map_or(&color, |l| &l.outline_color),
                    );
                    gl.uniform_1_f32(u.outline_mix.as_ref(), mix);
                    gl.enable(glow::CULL_FACE);
                    gl.cull_face(glow::FRONT);
                }
                _ => {
                    if double_sided {
                        gl.disable(glow::CULL_FACE);
                    } else {
                        gl.enable(glow::CULL_FACE);
                        gl.cull_face(glow::BACK);
                    }
                }
            }
            gl.front_face(if mirrored { glow::CW } else { glow::CCW });
            self.set_effects(u, prim.material.filter(|_| material.is_some()));
            self.set_wrinkle_uniforms(u, prim.material.filter(|_| material.is_some()));
            match &prim.morph {
                PrimitiveMorph::Gpu { texture, .. } => {
                    gl.active_texture(glow::TEXTURE0 + UNIT_DELTAS);
                    gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture.raw()));
                    gl.active_texture(glow::TEXTURE0);
                    gl.uniform_1_i32(u.vertex_count.as_ref(), prim.vertex_count);
                }
                PrimitiveMorph::Cpu { .. } | PrimitiveMorph::None => {
                    // A primitive without deltas must not read another's.
                    gl.uniform_1_i32(u.active_count.as_ref(), 0);
                }
            }
            gl.bind_vertex_array(Some(prim.vao.raw()));
            gl.draw_elements(
                glow::TRIANGLES,
                range.end - range.start,
                glow::UNSIGNED_INT,
                range.start * 4,
            );
            if self.path == MorphPath::Gpu && matches!(prim.morph, PrimitiveMorph::None) {
                let mesh_active = self.nodes[node]
                    .mesh
                    .and_then(|m| self.meshes.get(m))
                    .map_or(0, |m| m.active_count);
                gl.uniform_1_i32(u.active_count.as_ref(), mesh_active);
            }
            if outline {
                gl.uniform_1_i32(u.outline.as_ref(), 0);
                gl.uniform_1_f32(u.outline_width.as_ref(), 0.0);
            }
        }
    }
}
