//! What a material draws with this frame beyond its fixed parameters: the colours and texture
//! offset VRM expressions' material binds move (from [`Pose::materials`]), and the emission,
//! MToon rim light and matcap, all sanitised before they reach the GPU.

#![expect(unsafe_code)]

use std::rc::Rc;

use glam::{Mat3, Vec2};
use glow::HasContext;

use super::objects::Texture;
use super::renderer::Renderer;
use super::variants::{Uniforms, UNIT_EMISSIVE, UNIT_MATCAP, UNIT_RIM};
use crate::avatar::material_binds::{binds_property, MaterialProperty};
use crate::avatar::{Avatar, Material, MaterialOverride, Pose, TextureTransform};

/// A material's fixed emission, rim and matcap parameters, and its own values of what
/// expressions can move.
pub(super) struct GpuEffects {
    /// The material's own colours and UV scale and offset.
    rest: MaterialOverride,
    /// The base colour texture transform's rotation (expressions move scale and offset only).
    uv_rotation: f32,
    /// Index into `Renderer::textures` of the emissive texture.
    emissive_texture: Option<usize>,
    /// Index into `Renderer::textures` of the MToon rim multiply texture.
    rim_texture: Option<usize>,
    /// Index into `Renderer::textures` of the MToon matcap texture.
    matcap_texture: Option<usize>,
    /// Rim fresnel power, at least a small positive number (a power of 0 makes NaN).
    rim_power: f32,
    /// Rim lift, -1 to 1.
    rim_lift: f32,
    /// How much the light dims the rim, 0 to 1.
    rim_mix: f32,
}

/// A material's colours and UV transform for this frame, sanitised: colours within 0..=1 (a
/// non-finite channel takes the material's own value), the transform finite.
#[derive(Clone, Copy)]
pub(super) struct LiveMaterial {
    /// Linear RGBA base colour factor.
    pub(super) base_color: [f32; 4],
    /// Linear emissive colour.
    pub(super) emissive: [f32; 3],
    /// Linear MToon shade colour.
    pub(super) shade_color: [f32; 3],
    /// Linear MToon matcap factor.
    pub(super) matcap_color: [f32; 3],
    /// Linear MToon rim colour.
    pub(super) rim_color: [f32; 3],
    /// Linear MToon outline colour.
    pub(super) outline_color: [f32; 3],
    /// The base colour texture transform, column-major.
    pub(super) uv_transform: [f32; 9],
}

/// `c` within 0..=1, or `fallback` when it is not finite.
fn unit(c: f32, fallback: f32) -> f32 {
    if c.is_finite() {
        c.clamp(0.0, 1.0)
    } else {
        fallback.clamp(0.0, 1.0)
    }
}

/// Every channel of `c` within 0..=1 (non-finite ones from `rest`, else 0).
fn colour<const N: usize>(c: [f32; N], rest: [f32; N]) -> [f32; N] {
    std::array::from_fn(|k| unit(c[k], if rest[k].is_finite() { rest[k] } else { 0.0 }))
}

/// `v` if finite, else `fallback`.
fn finite_or(v: f32, fallback: f32) -> f32 {
    if v.is_finite() {
        v
    } else {
        fallback
    }
}

impl GpuEffects {
    /// The fixed parameters of `m`; dangling textures are dropped.
    pub(super) fn new(m: &Material, textures: &[Option<Rc<Texture>>]) -> GpuEffects {
        let usable = |t: Option<usize>| t.filter(|&t| textures.get(t).is_some_and(Option::is_some));
        let toon = m.toon.as_ref();
        GpuEffects {
            rest: MaterialOverride::rest(m),
            uv_rotation: finite_or(m.base_color_transform.rotation, 0.0),
            emissive_texture: usable(m.emissive_texture),
            rim_texture: usable(toon.and_then(|t| t.rim_texture)),
            matcap_texture: usable(toon.and_then(|t| t.matcap_texture)),
            rim_power: toon.map_or(1.0, |t| {
                finite_or(t.rim_fresnel_power, 5.0).clamp(1e-5, 100.0)
            }),
            rim_lift: toon.map_or(0.0, |t| finite_or(t.rim_lift, 0.0).clamp(-1.0, 1.0)),
            rim_mix: toon.map_or(1.0, |t| unit(t.rim_lighting_mix, 1.0)),
        }
    }

    /// The material drawn with `values` (its own values where `values` is `None`).
    pub(super) fn live(&self, values: Option<&MaterialOverride>) -> LiveMaterial {
        let rest = &self.rest;
        let o = values.unwrap_or(rest);
        let uv = TextureTransform {
            offset: Vec2::new(
                finite_or(o.uv_offset.x, rest.uv_offset.x),
                finite_or(o.uv_offset.y, rest.uv_offset.y),
            ),
            rotation: self.uv_rotation,
            scale: Vec2::new(
                finite_or(o.uv_scale.x, rest.uv_scale.x),
                finite_or(o.uv_scale.y, rest.uv_scale.y),
            ),
        }
        .matrix();
        LiveMaterial {
            base_color: colour(o.base_color, rest.base_color),
            emissive: colour(o.emissive, rest.emissive),
            shade_color: colour(o.shade_color, rest.shade_color),
            matcap_color: colour(o.matcap_color, rest.matcap_color),
            rim_color: colour(o.rim_color, rest.rim_color),
            outline_color: colour(o.outline_color, rest.outline_color),
            uv_transform: if uv.is_finite() {
                uv.to_cols_array()
            } else {
                Mat3::IDENTITY.to_cols_array()
            },
        }
    }
}

/// Whether any material of `avatar` emits light, or an expression can make one emit.
pub(super) fn uses_emission(avatar: &Avatar) -> bool {
    avatar
        .materials
        .iter()
        .any(|m| m.emissive_texture.is_some() || m.emissive.iter().any(|&c| c > 0.0))
        || binds_property(avatar, MaterialProperty::EmissionColor)
}

/// Whether any MToon material of `avatar` has a rim light or a matcap, or an expression can
/// give it one.
pub(super) fn uses_rim(avatar: &Avatar) -> bool {
    avatar
        .materials
        .iter()
        .filter_map(|m| m.toon.as_ref())
        .any(|t| t.matcap_texture.is_some() || t.rim_color.iter().any(|&c| c > 0.0))
        || binds_property(avatar, MaterialProperty::RimColor)
}

/// Whether an expression of `avatar` moves a texture transform.
pub(super) fn moves_uvs(avatar: &Avatar) -> bool {
    binds_property(avatar, MaterialProperty::TextureTransform)
}

impl Renderer {
    /// Takes this frame's material colours and UV offsets from `pose` (materials it lacks keep
    /// their own). Allocates nothing.
    pub(super) fn update_materials(&mut self, pose: &Pose) {
        for (index, (live, effects)) in self.live.iter_mut().zip(&self.effects).enumerate() {
            *live = effects.live(pose.materials.get(index));
        }
    }

    /// Sets material `material`'s emission, rim and matcap uniforms on the program in use and
    /// binds their textures (units `UNIT_EMISSIVE`, `UNIT_RIM` and `UNIT_MATCAP`; the active
    /// unit is left at 0). A primitive without a material emits nothing and has no rim.
    pub(super) fn set_effects(&self, u: &Uniforms, material: Option<usize>) {
        let gl = &*self.gl;
        let effects = material.and_then(|m| self.effects.get(m));
        let live = material.and_then(|m| self.live.get(m));
        let black = [0.0; 3];
        let emissive = live.map_or(&black, |l| &l.emissive);
        let rim_color = live.map_or(&black, |l| &l.rim_color);
        let matcap_color = live.map_or(&black, |l| &l.matcap_color);
        let bind = |unit: u32, texture: Option<usize>| -> i32 {
            match texture {
                None => 0,
                Some(t) => {
                    // SAFETY: the texture was created on this context and is owned by self.
                    unsafe {
                        gl.active_texture(glow::TEXTURE0 + unit);
                        gl.bind_texture(
                            glow::TEXTURE_2D,
                            Some(self.texture_or_white(Some(t)).raw()),
                        );
                        gl.active_texture(glow::TEXTURE0);
                    }
                    1
                }
            }
        };
        if u.emissive.is_some() {
            let source = bind(UNIT_EMISSIVE, effects.and_then(|e| e.emissive_texture));
            // SAFETY: the program is in use and every location belongs to it.
            unsafe {
                gl.uniform_3_f32_slice(u.emissive.as_ref(), emissive);
                gl.uniform_1_i32(u.emissive_source.as_ref(), source);
            }
        }
        if u.rim_color.is_some() || u.matcap_color.is_some() {
            let rim_source = bind(UNIT_RIM, effects.and_then(|e| e.rim_texture));
            let matcap_source = bind(UNIT_MATCAP, effects.and_then(|e| e.matcap_texture));
            // SAFETY: as above.
            unsafe {
                gl.uniform_3_f32_slice(u.rim_color.as_ref(), rim_color);
                gl.uniform_1_f32(u.rim_power.as_ref(), effects.map_or(1.0, |e| e.rim_power));
                gl.uniform_1_f32(u.rim_lift.as_ref(), effects.map_or(0.0, |e| e.rim_lift));
                gl.uniform_1_f32(u.rim_mix.as_ref(), effects.map_or(1.0, |e| e.rim_mix));
                gl.uniform_1_i32(u.rim_source.as_ref(), rim_source);
                gl.uniform_3_f32_slice(u.matcap_color.as_ref(), matcap_color);
                gl.uniform_1_i32(u.matcap_source.as_ref(), matcap_source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_values_are_clamped_and_non_finite_ones_fall_back() {
        let material = Material {
            base_color: [0.5, 0.5, 0.5, 1.0],
            emissive: [0.25, 0.0, 0.0],
            ..Material::default()
        };
        let effects = GpuEffects::new(&material, &[]);
        let mut o = MaterialOverride::rest(&material);
        o.base_color = [2.0, -1.0, f32::NAN, 1.0];
        o.emissive = [f32::INFINITY, 0.5, 0.0];
        o.uv_offset = Vec2::new(f32::NAN, 0.25);
        let live = effects.live(Some(&o));
        assert_eq!(live.base_color, [1.0, 0.0, 0.5, 1.0]);
        assert_eq!(live.emissive, [0.25, 0.5, 0.0]);
        assert_eq!(live.uv_transform[6..8], [0.0, 0.25]);
        let rest = effects.live(None);
        assert_eq!(rest.base_color, material.base_color);
        assert_eq!(rest.uv_transform, Mat3::IDENTITY.to_cols_array());
    }
}
