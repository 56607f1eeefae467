//! Wrinkle normal maps: the avatar textures a mapping file names as wrinkle maps, uploaded as
//! linear data (not sRGB colour), and the per-material weights and texture units they are drawn
//! with. The programs get the `WRINKLES` define only while some map is set, so an avatar
//! without wrinkle maps draws with exactly the plain shader.

#![expect(unsafe_code)]

use glow::HasContext;

use super::materials::upload_texture_as;
use super::objects::Texture;
use super::renderer::Renderer;
use super::variants::{build_programs, ShaderVariant, Uniforms, UNIT_WRINKLES};
use super::RenderError;
use crate::avatar::{Avatar, MAX_WRINKLE_MAPS};

/// One wrinkle map as the renderer draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrinkleMap {
    /// The avatar texture holding the map.
    pub texture: usize,
    /// Whether the map is in the texture's blue and alpha channels (else red and green).
    pub blue_alpha: bool,
    /// The materials it shades (indices into [`Avatar::materials`]).
    pub materials: Vec<usize>,
}

impl From<&crate::mapping::wrinkles::CompiledWrinkle> for WrinkleMap {
    fn from(w: &crate::mapping::wrinkles::CompiledWrinkle) -> WrinkleMap {
        WrinkleMap {
            texture: w.texture,
            blue_alpha: w.blue_alpha,
            materials: w.materials.clone(),
        }
    }
}

/// The wrinkle maps in use, their textures uploaded once each.
#[derive(Default)]
pub(super) struct GpuWrinkles {
    /// The maps, in the order of [`crate::avatar::Pose::wrinkles`].
    maps: Vec<WrinkleMap>,
    /// Per map, its texture's index in `textures` (its unit).
    slots: Vec<usize>,
    /// The uploaded textures (one per distinct avatar texture).
    textures: Vec<(usize, Texture)>,
    /// Per texture, the rectangles of texture coordinates (u0, v0, u1, v1) outside which its
    /// red-green and its blue-alpha maps are flat; an empty one (u0 > u1) where a map is flat
    /// everywhere.
    rects: [[[f32; 4]; 2]; MAX_WRINKLE_MAPS],
    /// This frame's weights (sanitised), in map order.
    pub(super) weights: [f32; MAX_WRINKLE_MAPS],
    /// The program variants with `WRINKLES` (and `WRINKLE_TEXTURES`, the number of
    /// `textures`), and for each shading its index among them; built while some map is set. A
    /// draw uses them only when a map shows on its material: a software rasteriser runs both
    /// sides of a branch, so the plain programs cost nothing extra for the frames and
    /// materials without wrinkles, and a texture no map uses is not sampled at all.
    programs: Option<(Vec<ShaderVariant>, [usize; 3])>,
}

impl GpuWrinkles {
    /// The `WRINKLES` programs, while some map is set.
    pub(super) fn programs(&self) -> Option<(&[ShaderVariant], &[usize; 3])> {
        self.programs.as_ref().map(|(p, f)| (&p[..], f))
    }
}

/// Strengths below this draw no wrinkle (invisible, and the plain program is cheaper).
const MIN_STRENGTH: f32 = 0.01;

/// Texels a map's rectangle reaches past its last non-flat texel: the lower mipmap levels
/// spread a line a little.
const RECT_MARGIN: u32 = 6;

/// The rectangle of texture coordinates holding every non-flat texel (a channel pair not both
/// exactly 128) of the two channels from `first` of `rgba`, widened by [`RECT_MARGIN`] texels;
/// an empty rectangle when the map is flat.
pub(super) fn flat_outside(rgba: &[u8], width: u32, height: u32, first: usize) -> [f32; 4] {
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for (i, texel) in rgba.chunks_exact(4).enumerate() {
        if texel[first] != 128 || texel[first + 1] != 128 {
            let (x, y) = (i as u32 % width.max(1), i as u32 / width.max(1));
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    if x0 > x1 {
        return [1.0, 1.0, 0.0, 0.0];
    }
    let (w, h) = (width.max(1) as f32, height.max(1) as f32);
    [
        x0.saturating_sub(RECT_MARGIN) as f32 / w,
        y0.saturating_sub(RECT_MARGIN) as f32 / h,
        (x1 + 1 + RECT_MARGIN).min(width) as f32 / w,
        (y1 + 1 + RECT_MARGIN).min(height) as f32 / h,
    ]
}

impl Renderer {
    /// Sets the wrinkle maps to draw (at most [`MAX_WRINKLE_MAPS`]; an empty list removes
    /// them). Each texture must still hold its pixels (textures no material samples keep them,
    /// see [`Avatar::release_texture_pixels`]); it is uploaded once as linear data with
    /// mipmaps, and where each map is flat is found from its pixels. The programs are rebuilt
    /// when wrinkles switch on or off. On an error nothing changes.
    pub fn set_wrinkles(
        &mut self,
        avatar: &Avatar,
        maps: &[WrinkleMap],
    ) -> Result<(), RenderError> {
        if maps.len() > MAX_WRINKLE_MAPS {
            return Err(RenderError::Texture(format!(
                "{} wrinkle maps; at most {MAX_WRINKLE_MAPS} can be drawn",
                maps.len()
            )));
        }
        let mut textures: Vec<(usize, Texture)> = Vec::new();
        let mut rects = [[[1.0, 1.0, 0.0, 0.0]; 2]; MAX_WRINKLE_MAPS];
        let mut slots = Vec::with_capacity(maps.len());
        for map in maps {
            let texture = avatar.textures.get(map.texture).ok_or_else(|| {
                RenderError::Texture(format!("the model has no texture {}", map.texture))
            })?;
            let expected = texture.width as u64 * texture.height as u64 * 4;
            if texture.width == 0 || texture.rgba.len() as u64 != expected {
                return Err(RenderError::Texture(format!(
                    "texture {} has no pixels to use as a wrinkle map (a texture a material \
                     samples cannot be one)",
                    map.texture
                )));
            }
            let slot = match textures.iter().position(|(t, _)| *t == map.texture) {
                Some(at) => at,
                None => {
                    let uploaded = upload_texture_as(
                        &self.gl,
                        texture.width,
                        texture.height,
                        &texture.rgba,
                        texture.sampler,
                        false,
                    )?;
                    textures.push((map.texture, uploaded));
                    textures.len() - 1
                }
            };
            let pair = usize::from(map.blue_alpha);
            rects[slot][pair] =
                flat_outside(&texture.rgba, texture.width, texture.height, 2 * pair);
            slots.push(slot);
        }
        self.put_wrinkled_triangles_first(avatar, maps, &slots, &rects);
        // The programs sample only the textures in use, so they are rebuilt when that number
        // changes.
        let reuse = self.wrinkles.textures.len() == textures.len();
        let programs = match self.wrinkles.programs.take() {
            _ if maps.is_empty() => None,
            Some(built) if reuse => Some(built),
            _ => Some(build_programs(
                &self.gl,
                avatar,
                self.path,
                self.max_active,
                textures.len(),
            )?),
        };
        self.wrinkles = GpuWrinkles {
            maps: maps.to_vec(),
            slots,
            textures,
            rects,
            weights: [0.0; MAX_WRINKLE_MAPS],
            programs,
        };
        tracing::info!(maps = maps.len(), "wrinkle maps set");
        Ok(())
    }

    /// Reorders the triangles of every primitive some of `maps` shade so that those whose
    /// texture coordinates reach into one of the maps' rectangles come first, and records how
    /// many indices they take (`GpuPrimitive::wrinkle_indices`): the rest are flat under every
    /// map, so they draw with the plain program, which a software rasteriser runs far faster.
    fn put_wrinkled_triangles_first(
        &mut self,
        avatar: &Avatar,
        maps: &[WrinkleMap],
        slots: &[usize],
        rects: &[[[f32; 4]; 2]; MAX_WRINKLE_MAPS],
    ) {
        for (gpu_mesh, mesh) in self.meshes.iter_mut().zip(&avatar.meshes) {
            for prim in &mut gpu_mesh.primitives {
                let Some(material) = prim.material else {
                    continue;
                };
                let shading: Vec<[f32; 4]> = maps
                    .iter()
                    .zip(slots)
                    .filter(|(map, _)| map.materials.contains(&material))
                    .map(|(map, &slot)| rects[slot][usize::from(map.blue_alpha)])
                    .collect();
                let Some(source) = mesh.primitives.get(prim.source) else {
                    continue;
                };
                if shading.is_empty() || source.indices.len() < prim.index_count as usize {
                    prim.wrinkle_indices = prim.index_count;
                    continue;
                }
                let indices = &source.indices[..prim.index_count as usize];
                let (ordered, wrinkled) = wrinkled_first(indices, &source.uvs, &shading);
                // SAFETY: the vertex array and its index buffer were created on this context
                // and are owned by the primitive; the new list has the same length as the one
                // uploaded, and indexes the same vertices.
                unsafe {
                    self.gl.bind_vertex_array(Some(prim.vao.raw()));
                    self.gl
                        .bind_buffer(glow::ELEMENT_ARRAY_BUFFER, Some(prim.index_buffer.raw()));
                    self.gl.buffer_sub_data_u8_slice(
                        glow::ELEMENT_ARRAY_BUFFER,
                        0,
                        super::objects::bytes_of(&ordered),
                    );
                    self.gl.bind_vertex_array(None);
                    self.gl.bind_buffer(glow::ELEMENT_ARRAY_BUFFER, None);
                }
                prim.wrinkle_indices = wrinkled as i32;
            }
        }
    }

    /// Whether some wrinkle map shows on `material` this frame.
    pub(super) fn wrinkled(&self, material: Option<usize>) -> bool {
        let w = &self.wrinkles;
        material.is_some_and(|m| {
            w.maps
                .iter()
                .zip(&w.weights)
                .any(|(map, &weight)| weight > 0.0 && map.materials.contains(&m))
        })
    }

    /// Sets the wrinkle uniforms of the program in use for a primitive of `material`, binding
    /// the textures of the maps that show on it.
    pub(super) fn set_wrinkle_uniforms(&self, u: &Uniforms, material: Option<usize>) {
        if !self.wrinkled(material) {
            return;
        }
        let w = &self.wrinkles;
        let mut rg = [0.0f32; MAX_WRINKLE_MAPS];
        let mut ba = [0.0f32; MAX_WRINKLE_MAPS];
        for (i, map) in w.maps.iter().enumerate() {
            let applies = material.is_some_and(|m| map.materials.contains(&m));
            if applies && w.weights[i] > 0.0 {
                let slot = w.slots[i];
                let weight = if map.blue_alpha {
                    &mut ba[slot]
                } else {
                    &mut rg[slot]
                };
                *weight = (*weight + w.weights[i]).min(1.0);
            }
        }
        let mut rect_rg = [0.0f32; 4 * MAX_WRINKLE_MAPS];
        let mut rect_ba = [0.0f32; 4 * MAX_WRINKLE_MAPS];
        for (slot, (texture_rects, (_, texture))) in w.rects.iter().zip(&w.textures).enumerate() {
            rect_rg[4 * slot..4 * slot + 4].copy_from_slice(&texture_rects[0]);
            rect_ba[4 * slot..4 * slot + 4].copy_from_slice(&texture_rects[1]);
            if rg[slot] + ba[slot] > 0.0 {
                // SAFETY: the texture was created on this context and is owned by self; the
                // unit is one of the program's wrinkle units.
                unsafe {
                    self.gl
                        .active_texture(glow::TEXTURE0 + UNIT_WRINKLES + slot as u32);
                    self.gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
                    self.gl.active_texture(glow::TEXTURE0);
                }
            }
        }
        // SAFETY: the program is in use and the locations belong to it.
        unsafe {
            self.gl.uniform_4_f32_slice(u.wrinkle_rg.as_ref(), &rg);
            self.gl.uniform_4_f32_slice(u.wrinkle_ba.as_ref(), &ba);
            self.gl
                .uniform_4_f32_slice(u.wrinkle_rect_rg.as_ref(), &rect_rg);
            self.gl
                .uniform_4_f32_slice(u.wrinkle_rect_ba.as_ref(), &rect_ba);
        }
    }
}

/// How far past a map's rectangle (in texture coordinates) a triangle still counts as reaching
/// into it: room for the rounding of interpolated coordinates.
const RECT_SLACK: f32 = 1e-4;

/// `indices` (whole triangles) reordered so that the triangles whose texture coordinates'
/// bounds meet one of `rects` (u0, v0, u1, v1; empty ones never) come first, each group in its
/// original order, and how many indices the first group takes. A vertex without coordinates
/// counts as (0, 0), as the renderer uploads it.
pub(super) fn wrinkled_first(
    indices: &[u32],
    uvs: &[glam::Vec2],
    rects: &[[f32; 4]],
) -> (Vec<u32>, usize) {
    let uv = |i: u32| uvs.get(i as usize).copied().unwrap_or(glam::Vec2::ZERO);
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for tri in indices.chunks_exact(3) {
        let (a, b, c) = (uv(tri[0]), uv(tri[1]), uv(tri[2]));
        let (lo, hi) = (a.min(b).min(c), a.max(b).max(c));
        let meets = rects.iter().any(|r| {
            r[0] <= r[2]
                && r[1] <= r[3]
                && hi.x >= r[0] - RECT_SLACK
                && lo.x <= r[2] + RECT_SLACK
                && hi.y >= r[1] - RECT_SLACK
                && lo.y <= r[3] + RECT_SLACK
        });
        // A triangle with a coordinate that is not a number goes with the wrinkled ones: the
        // wrinkle program decides per fragment.
        let unknown = !(a.is_finite() && b.is_finite() && c.is_finite());
        if meets || unknown {
            inside.extend_from_slice(tri);
        } else {
            outside.extend_from_slice(tri);
        }
    }
    let count = inside.len();
    inside.extend(outside);
    (inside, count)
}

/// A wrinkle weight made finite and clamped to [0, 1]; strengths below [`MIN_STRENGTH`]
/// count as 0.
pub(super) fn sanitize(weights: &[f32; MAX_WRINKLE_MAPS]) -> [f32; MAX_WRINKLE_MAPS] {
    weights.map(|w| {
        if w.is_finite() && w >= MIN_STRENGTH {
            w.min(1.0)
        } else {
            0.0
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triangles_reaching_into_a_rectangle_come_first() {
        use glam::Vec2;
        // Vertices 0-2 inside the rectangle, 3-5 outside it, 6 on its edge, 7 without
        // coordinates (counts as the origin), 8 not a number.
        let uvs = [
            Vec2::new(0.5, 0.5),
            Vec2::new(0.6, 0.5),
            Vec2::new(0.5, 0.6),
            Vec2::new(0.9, 0.9),
            Vec2::new(0.95, 0.9),
            Vec2::new(0.9, 0.95),
            Vec2::new(0.7, 0.7),
            Vec2::new(0.0, 0.0),
            Vec2::new(f32::NAN, 0.0),
        ];
        let rect = [[0.4, 0.4, 0.7, 0.7]];
        let indices = [3, 4, 5, 0, 1, 2, 3, 4, 6, 7, 8, 7];
        let (ordered, count) = wrinkled_first(&indices, &uvs[..8], &rect);
        // Vertex 8 is past the coordinates given: it counts as the origin, outside.
        assert_eq!(ordered, [0, 1, 2, 3, 4, 6, 3, 4, 5, 7, 8, 7]);
        assert_eq!(count, 6);
        let (ordered, count) = wrinkled_first(&indices, &uvs, &rect);
        assert_eq!(ordered, [0, 1, 2, 3, 4, 6, 7, 8, 7, 3, 4, 5]);
        assert_eq!(count, 9);
        // A triangle whose bounds span the rectangle meets it, though no corner is inside.
        let (_, count) = wrinkled_first(&[7, 3, 4], &uvs, &rect);
        assert_eq!(count, 3);
        // An empty rectangle (a flat map) takes nothing; no rectangle, nothing.
        let (_, count) = wrinkled_first(&indices, &uvs[..8], &[[1.0, 1.0, 0.0, 0.0]]);
        assert_eq!(count, 0);
        let (ordered, count) = wrinkled_first(&indices, &uvs[..8], &[]);
        assert_eq!((ordered.as_slice(), count), (&indices[..], 0));
    }

    #[test]
    fn a_map_is_flat_outside_the_rectangle_of_its_non_flat_texels() {
        let (w, h) = (64u32, 32u32);
        let mut rgba = vec![128u8; (w * h * 4) as usize];
        // A red-green texel at (20, 10); the blue-alpha map stays flat.
        let i = ((10 * w + 20) * 4) as usize;
        rgba[i + 1] = 140;
        let rg = flat_outside(&rgba, w, h, 0);
        let m = RECT_MARGIN as f32;
        assert_eq!(
            rg,
            [
                (20.0 - m) / 64.0,
                (10.0 - m) / 32.0,
                (21.0 + m) / 64.0,
                (11.0 + m) / 32.0
            ]
        );
        let ba = flat_outside(&rgba, w, h, 2);
        assert!(ba[0] > ba[2], "a flat map has an empty rectangle: {ba:?}");
        // At the edge the rectangle stops at the texture's border.
        rgba[0] = 0;
        let rg = flat_outside(&rgba, w, h, 0);
        assert_eq!((rg[0], rg[1]), (0.0, 0.0));
    }
}
