//! Wrinkle normal maps: the avatar textures a mapping file names as wrinkle maps, uploaded as
//! linear data (not sRGB colour), and the per-material weights and texture units they are drawn
//! with. The programs get the `WRINKLES` define only while some map is set, so an avatar
//! without wrinkle maps draws with exactly the plain shader.

#![allow(unsafe_code)]

use glow::HasContext;

use super::materials::upload_texture_as;
use super::objects::Texture;
use super::renderer::Renderer;
use super::variants::{build_programs, Uniforms, UNIT_WRINKLES};
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
    /// Per map, its uploaded texture's index in `textures`.
    slots: Vec<usize>,
    /// The uploaded textures (one per distinct avatar texture).
    textures: Vec<(usize, Texture)>,
    /// This frame's weights (sanitised), in map order.
    pub(super) weights: [f32; MAX_WRINKLE_MAPS],
}

impl GpuWrinkles {
    /// Whether any map is set (the programs then carry `WRINKLES`).
    pub(super) fn active(&self) -> bool {
        !self.maps.is_empty()
    }
}

impl Renderer {
    /// Sets the wrinkle maps to draw (at most [`MAX_WRINKLE_MAPS`]; an empty list removes
    /// them). Each texture must still hold its pixels (textures no material samples keep them,
    /// see [`Avatar::release_texture_pixels`]); it is uploaded as linear data with mipmaps.
    /// The programs are rebuilt when wrinkles switch on or off. On an error nothing changes.
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
        let mut slots = Vec::with_capacity(maps.len());
        for map in maps {
            if let Some(at) = textures.iter().position(|(t, _)| *t == map.texture) {
                slots.push(at);
                continue;
            }
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
            let uploaded = upload_texture_as(
                &self.gl,
                texture.width,
                texture.height,
                &texture.rgba,
                texture.sampler,
                false,
            )?;
            slots.push(textures.len());
            textures.push((map.texture, uploaded));
        }
        let wanted = !maps.is_empty();
        if self.wrinkles.active() != wanted {
            let (programs, program_for) = build_programs(
                &self.gl,
                avatar,
                self.path,
                self.max_active,
                !maps.is_empty(),
            )?;
            self.programs = programs;
            self.program_for = program_for;
        }
        self.wrinkles = GpuWrinkles {
            maps: maps.to_vec(),
            slots,
            textures,
            weights: [0.0; MAX_WRINKLE_MAPS],
        };
        tracing::info!(maps = maps.len(), "wrinkle maps set");
        Ok(())
    }

    /// Sets the wrinkle uniforms of the program in use for a primitive of `material`, binding
    /// the textures of the maps that show on it.
    pub(super) fn set_wrinkle_uniforms(&self, u: &Uniforms, material: Option<usize>) {
        if !self.wrinkles.active() {
            return;
        }
        let w = &self.wrinkles;
        let mut weights = [0.0f32; MAX_WRINKLE_MAPS];
        let mut alpha = [0.0f32; MAX_WRINKLE_MAPS];
        for (i, map) in w.maps.iter().enumerate() {
            let applies = material.is_some_and(|m| map.materials.contains(&m));
            if applies && w.weights[i] > 0.0 {
                weights[i] = w.weights[i];
                alpha[i] = if map.blue_alpha { 1.0 } else { 0.0 };
                let texture = &w.textures[w.slots[i]].1;
                // SAFETY: the texture was created on this context and is owned by self; the
                // unit is one of the program's wrinkle units.
                unsafe {
                    self.gl
                        .active_texture(glow::TEXTURE0 + UNIT_WRINKLES + i as u32);
                    self.gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
                    self.gl.active_texture(glow::TEXTURE0);
                }
            }
        }
        // SAFETY: the program is in use and the locations belong to it.
        unsafe {
            self.gl
                .uniform_4_f32_slice(u.wrinkle_weight.as_ref(), &weights);
            self.gl
                .uniform_4_f32_slice(u.wrinkle_alpha.as_ref(), &alpha);
        }
    }
}

/// A wrinkle weight made finite and clamped to [0, 1].
pub(super) fn sanitize(weights: &[f32; MAX_WRINKLE_MAPS]) -> [f32; MAX_WRINKLE_MAPS] {
    weights.map(|w| {
        if w.is_finite() {
            w.clamp(0.0, 1.0)
        } else {
            0.0
        }
    })
}
