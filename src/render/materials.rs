//! Materials and textures: the sanitised parameters each material draws with (MToon's
//! included), the program variant it needs, and the texture uploads.

#![expect(unsafe_code)]

use std::collections::HashMap;
use std::rc::Rc;

use glam::Mat3;
use glow::HasContext;

use super::objects::Texture;
use super::renderer::Renderer;
use super::variants::{SHADING_STANDARD, SHADING_TOON, SHADING_UNLIT};
use super::{check_gl, RenderError};
use crate::avatar::{AlphaMode, Avatar, MagFilter, MinFilter, OutlineMode, Sampler, Wrap};

/// What a material needs at draw time.
pub(super) struct GpuMaterial {
    /// Linear RGBA base colour factor.
    pub(super) base_color: [f32; 4],
    /// Index into `Renderer::textures`, if the material has a usable texture.
    pub(super) texture: Option<usize>,
    /// Whether back faces are drawn.
    pub(super) double_sided: bool,
    /// glTF alpha mode.
    pub(super) alpha_mode: AlphaMode,
    /// Mask cutoff.
    pub(super) alpha_cutoff: f32,
    /// The base colour texture transform, column-major.
    pub(super) uv_transform: [f32; 9],
    /// The program variant, `SHADING_*`.
    pub(super) shading: usize,
    /// MToon parameters, when `shading` is `SHADING_TOON`.
    pub(super) toon: Option<GpuToon>,
}

/// MToon parameters, sanitised.
pub(super) struct GpuToon {
    /// Linear shade colour factor.
    pub(super) shade_color: [f32; 3],
    /// Index into `Renderer::textures` of the shade texture.
    pub(super) shade_texture: Option<usize>,
    /// Ramp shift.
    pub(super) shift: f32,
    /// Ramp toony factor.
    pub(super) toony: f32,
    /// Outline: mode (1 world, 2 screen), width, colour, lighting mix.
    pub(super) outline: Option<(i32, f32, [f32; 3], f32)>,
    /// Blend materials: depth writes stay on.
    pub(super) z_write: bool,
    /// Blend order offset.
    pub(super) queue: i32,
}

impl Renderer {
    /// The uploaded texture `index`, or the white placeholder.
    pub(super) fn texture_or_white(&self, index: Option<usize>) -> &Texture {
        index
            .and_then(|t| self.textures.get(t))
            .and_then(Option::as_deref)
            .unwrap_or(&self.white)
    }
}

/// A colour channel made safe for the GPU: finite and within 0..=1 (non-finite becomes `fallback`).
fn unit(c: f32, fallback: f32) -> f32 {
    if c.is_finite() {
        c.clamp(0.0, 1.0)
    } else {
        fallback
    }
}

/// What a material needs at draw time, sanitised: colours clamped to 0..=1, dangling textures
/// dropped (white is used), a non-finite cutoff or texture transform replaced by the default.
pub(super) fn gpu_material(
    m: &crate::avatar::Material,
    textures: &[Option<Rc<Texture>>],
) -> GpuMaterial {
    let usable = |t: Option<usize>| t.filter(|&t| textures.get(t).is_some_and(Option::is_some));
    let uv = m.base_color_transform.matrix();
    let toon = m.toon.as_ref().map(|t| GpuToon {
        shade_color: t.shade_color.map(|c| unit(c, 0.0)),
        shade_texture: usable(t.shade_texture),
        shift: if t.shading_shift.is_finite() {
            t.shading_shift.clamp(-2.0, 2.0)
        } else {
            0.0
        },
        toony: unit(t.shading_toony, 0.9),
        outline: t
            .outline
            .filter(|o| o.width.is_finite() && o.width > 0.0)
            .map(|o| {
                let mode = match o.mode {
                    OutlineMode::World => 1,
                    OutlineMode::Screen => 2,
                };
                // Beyond a tenth of the screen (or ten centimetres) an outline is a mistake.
                let width = o.width.min(0.1);
                (
                    mode,
                    width,
                    o.color.map(|c| unit(c, 0.0)),
                    unit(o.lighting_mix, 1.0),
                )
            }),
        z_write: t.transparent_with_z_write,
        queue: t.render_queue_offset.clamp(-9, 9),
    });
    GpuMaterial {
        base_color: m.base_color.map(|c| unit(c, 1.0)),
        texture: usable(m.base_color_texture),
        double_sided: m.double_sided,
        alpha_mode: m.alpha_mode,
        alpha_cutoff: if m.alpha_cutoff.is_finite() {
            m.alpha_cutoff
        } else {
            0.5
        },
        uv_transform: if uv.is_finite() {
            uv.to_cols_array()
        } else {
            Mat3::IDENTITY.to_cols_array()
        },
        shading: material_shading(m),
        toon,
    }
}

/// The program variant a material is drawn with: MToon takes precedence over unlit.
pub(super) fn material_shading(m: &crate::avatar::Material) -> usize {
    if m.toon.is_some() {
        SHADING_TOON
    } else if m.unlit {
        SHADING_UNLIT
    } else {
        SHADING_STANDARD
    }
}

/// Uploads every avatar texture; unusable ones (wrong byte count, zero or too large a size)
/// become `None` with a warning, and their materials use white. Textures drawn from one image
/// with the same sampler share one GL texture, as they share their decoded pixels.
pub(super) fn upload_textures(
    gl: &Rc<glow::Context>,
    avatar: &Avatar,
) -> Result<Vec<Option<Rc<Texture>>>, RenderError> {
    // SAFETY: querying a limit on the current context.
    let max = unsafe { gl.get_parameter_i32(glow::MAX_TEXTURE_SIZE) }.max(1) as u32;
    let mut uploaded: HashMap<(usize, Sampler), Rc<Texture>> = HashMap::new();
    avatar
        .textures
        .iter()
        .enumerate()
        .map(|(index, t)| {
            if !avatar.texture_sampled(index) {
                // A wrinkle map, or a texture nothing draws: uploaded when a mapping asks.
                tracing::debug!(texture = index, "texture no material samples; not uploaded");
                return Ok(None);
            }
            let expected = t.width as u64 * t.height as u64 * 4;
            if t.width == 0 || t.height == 0 || t.rgba.len() as u64 != expected {
                tracing::warn!(
                    texture = index,
                    width = t.width,
                    height = t.height,
                    bytes = t.rgba.len(),
                    "texture data does not match its size; using white"
                );
                return Ok(None);
            }
            if t.width > max || t.height > max {
                tracing::warn!(
                    texture = index,
                    width = t.width,
                    height = t.height,
                    max,
                    "texture larger than the driver allows; using white"
                );
                return Ok(None);
            }
            if let Some(shared) = uploaded.get(&(t.rgba.id(), t.sampler)) {
                return Ok(Some(Rc::clone(shared)));
            }
            let texture = Rc::new(upload_texture(gl, t.width, t.height, &t.rgba, t.sampler)?);
            uploaded.insert((t.rgba.id(), t.sampler), Rc::clone(&texture));
            Ok(Some(texture))
        })
        .collect()
}

/// The GL wrap mode of a glTF wrap mode.
fn gl_wrap(wrap: Wrap) -> u32 {
    match wrap {
        Wrap::Repeat => glow::REPEAT,
        Wrap::ClampToEdge => glow::CLAMP_TO_EDGE,
        Wrap::MirroredRepeat => glow::MIRRORED_REPEAT,
    }
}

/// The GL magnification filter of a glTF one.
fn gl_mag_filter(filter: MagFilter) -> u32 {
    match filter {
        MagFilter::Nearest => glow::NEAREST,
        MagFilter::Linear => glow::LINEAR,
    }
}

/// The GL minification filter of a glTF one.
fn gl_min_filter(filter: MinFilter) -> u32 {
    match filter {
        MinFilter::Nearest => glow::NEAREST,
        MinFilter::Linear => glow::LINEAR,
        MinFilter::NearestMipmapNearest => glow::NEAREST_MIPMAP_NEAREST,
        MinFilter::LinearMipmapNearest => glow::LINEAR_MIPMAP_NEAREST,
        MinFilter::NearestMipmapLinear => glow::NEAREST_MIPMAP_LINEAR,
        MinFilter::LinearMipmapLinear => glow::LINEAR_MIPMAP_LINEAR,
    }
}

/// Uploads one sRGB RGBA8 texture (rows top to bottom, as glTF UVs expect: v = 0 is the first
/// row) sampled as `sampler` says; mipmaps are generated only when its minification filter
/// reads them.
pub(super) fn upload_texture(
    gl: &Rc<glow::Context>,
    width: u32,
    height: u32,
    rgba: &[u8],
    sampler: Sampler,
) -> Result<Texture, RenderError> {
    upload_texture_as(gl, width, height, rgba, sampler, true)
}

/// [`upload_texture`] for colour (`srgb`) or for data read as is (normal maps).
pub(super) fn upload_texture_as(
    gl: &Rc<glow::Context>,
    width: u32,
    height: u32,
    rgba: &[u8],
    sampler: Sampler,
    srgb: bool,
) -> Result<Texture, RenderError> {
    let format = if srgb {
        glow::SRGB8_ALPHA8
    } else {
        glow::RGBA8
    };
    let texture = Texture::new(gl)?;
    // SAFETY: the texture is fresh; `rgba` holds exactly width * height * 4 bytes (checked by
    // the caller) and the unpack alignment is 1, so the driver reads inside the slice.
    unsafe {
        gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
        gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 1);
        gl.tex_image_2d(
            glow::TEXTURE_2D,
            0,
            format as i32,
            width as i32,
            height as i32,
            0,
            glow::RGBA,
            glow::UNSIGNED_BYTE,
            glow::PixelUnpackData::Slice(Some(rgba)),
        );
        if sampler.min_filter.uses_mipmaps() {
            gl.generate_mipmap(glow::TEXTURE_2D);
        }
        let params = [
            (glow::TEXTURE_MIN_FILTER, gl_min_filter(sampler.min_filter)),
            (glow::TEXTURE_MAG_FILTER, gl_mag_filter(sampler.mag_filter)),
            (glow::TEXTURE_WRAP_S, gl_wrap(sampler.wrap_s)),
            (glow::TEXTURE_WRAP_T, gl_wrap(sampler.wrap_t)),
        ];
        for (name, value) in params {
            gl.tex_parameter_i32(glow::TEXTURE_2D, name, value as i32);
        }
        gl.bind_texture(glow::TEXTURE_2D, None);
    }
    check_gl!(gl, "uploading a texture");
    Ok(texture)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers_map_to_the_gl_enums_gltf_names() {
        // glTF writes its sampler modes as the GL enum values themselves.
        assert_eq!(gl_wrap(Wrap::Repeat), 10497);
        assert_eq!(gl_wrap(Wrap::ClampToEdge), 33071);
        assert_eq!(gl_wrap(Wrap::MirroredRepeat), 33648);
        assert_eq!(gl_mag_filter(MagFilter::Nearest), 9728);
        assert_eq!(gl_mag_filter(MagFilter::Linear), 9729);
        let min = [
            (MinFilter::Nearest, 9728),
            (MinFilter::Linear, 9729),
            (MinFilter::NearestMipmapNearest, 9984),
            (MinFilter::LinearMipmapNearest, 9985),
            (MinFilter::NearestMipmapLinear, 9986),
            (MinFilter::LinearMipmapLinear, 9987),
        ];
        for (filter, gl) in min {
            assert_eq!(gl_min_filter(filter), gl, "{filter:?}");
        }
    }
}
