//! MToon, VRM's toon material: its parameters, read from VRM 0.x (`VRM.materialProperties`) and
//! from VRM 1.0 (`VRMC_materials_mtoon` on a glTF material), in one form with VRM 1.0 meanings.
//!
//! VRM 0.x stores Unity material properties: colours gamma-encoded (sRGB), the shading ramp as
//! `_ShadeShift`/`_ShadeToony` with their own meaning, and widths in centimetres. They are
//! converted the way the VRM reference implementation (three-vrm's v0 compatibility plugin)
//! converts them, so a 0.x and a 1.0 export of one model shade alike.
//!
//! See: <https://github.com/vrm-c/vrm-specification/blob/master/specification/VRMC_materials_mtoon-1.0/README.md>

use glam::Vec2;
use serde_json::Value;

use super::{AlphaMode, Material, TextureTransform};

/// MToon's toon shading of one material: a lit and a shade colour, mixed by a ramp over
/// `N·L`, and an optional inverted-hull outline.
///
/// The lit colour is the material's base colour (factor times texture). With `s` the ramp
/// `linearstep(-1 + toony, 1 - toony, N·L + shift)`, the surface colour is
/// `mix(shade, lit, s)` times the light.
#[derive(Debug, Clone, PartialEq)]
pub struct Toon {
    /// Linear RGB shade colour factor.
    pub shade_color: [f32; 3],
    /// Index into [`super::Avatar::textures`] of the texture multiplied into the shade colour;
    /// without one, the shade colour is the factor alone.
    pub shade_texture: Option<usize>,
    /// Moves the lit/shade boundary: added to `N·L` (positive widens the lit side).
    pub shading_shift: f32,
    /// Narrows the boundary's feather, from 0 (smooth Lambert-like) to 1 (a hard edge).
    pub shading_toony: f32,
    /// The outline, if the material has one.
    pub outline: Option<Outline>,
    /// For [`AlphaMode::Blend`]: whether depth is written anyway.
    pub transparent_with_z_write: bool,
    /// Draw order among blended materials (-9 to 9, later when higher).
    pub render_queue_offset: i32,
    /// Linear RGB parametric rim colour, added where the surface turns away from the camera
    /// (black: no rim).
    pub rim_color: [f32; 3],
    /// The rim's fresnel power: `pow(saturate(1 - N·V + lift), power)`.
    pub rim_fresnel_power: f32,
    /// The rim's lift, added to `1 - N·V`.
    pub rim_lift: f32,
    /// How much the light on the surface dims the rim (and the matcap), 0 (like an emission)
    /// to 1.
    pub rim_lighting_mix: f32,
    /// Index into [`super::Avatar::textures`] of the texture multiplied into the rim (and the
    /// matcap), read through the base colour's UVs.
    pub rim_texture: Option<usize>,
    /// Linear RGB factor multiplied into the matcap texture.
    pub matcap_color: [f32; 3],
    /// Index into [`super::Avatar::textures`] of the matcap texture, read by the view-space
    /// normal and added (none: no matcap).
    pub matcap_texture: Option<usize>,
}

impl Default for Toon {
    /// The extension's defaults: a black shade colour, no shift, toony 0.9, no outline, no
    /// rim (black, power 5, lift 0, mix 1), no matcap (factor white).
    fn default() -> Self {
        Toon {
            shade_color: [0.0; 3],
            shade_texture: None,
            shading_shift: 0.0,
            shading_toony: 0.9,
            outline: None,
            transparent_with_z_write: false,
            render_queue_offset: 0,
            rim_color: [0.0; 3],
            rim_fresnel_power: 5.0,
            rim_lift: 0.0,
            rim_lighting_mix: 1.0,
            rim_texture: None,
            matcap_color: [1.0; 3],
            matcap_texture: None,
        }
    }
}

/// How an outline's width is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutlineMode {
    /// In metres, in the world.
    World,
    /// As a fraction of the viewport's height, whatever the distance.
    Screen,
}

/// An inverted-hull outline: the back faces pushed out along their normals, in one colour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outline {
    /// How `width` is measured.
    pub mode: OutlineMode,
    /// The width: metres ([`OutlineMode::World`]) or a fraction of the viewport height
    /// ([`OutlineMode::Screen`]). Always positive.
    pub width: f32,
    /// Linear RGB outline colour.
    pub color: [f32; 3],
    /// How much the surface's lighting tints the outline, 0 (flat colour) to 1.
    pub lighting_mix: f32,
}

/// A finite number at `key`.
fn number(object: &Value, key: &str) -> Option<f32> {
    let v = object.get(key)?.as_f64()? as f32;
    v.is_finite().then_some(v)
}

/// The first `N` numbers of the array at `key`, if there are at least `N` and all are finite.
fn numbers<const N: usize>(object: &Value, key: &str) -> Option<[f32; N]> {
    let array = object.get(key)?.as_array()?;
    let mut out = [0.0; N];
    for (slot, value) in out.iter_mut().zip(array) {
        *slot = value.as_f64()? as f32;
    }
    (array.len() >= N && out.iter().all(|v| v.is_finite())).then_some(out)
}

/// A texture index that exists among `textures`, from a number.
fn texture_index(value: Option<&Value>, textures: usize) -> Option<usize> {
    let index = usize::try_from(value?.as_u64()?).ok()?;
    (index < textures).then_some(index)
}

/// The sRGB transfer function's inverse (gamma-encoded to linear), for one channel.
pub(crate) fn srgb_to_linear(c: f32) -> f32 {
    let c = c.max(0.0);
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// Reads a VRM 1.0 `VRMC_materials_mtoon` object. Missing or invalid values take the extension's
/// defaults; texture indices must be below `textures`.
pub fn from_vrmc(ext: &Value, textures: usize) -> Toon {
    let defaults = Toon::default();
    let texture = |key: &str| texture_index(ext.get(key).and_then(|t| t.get("index")), textures);
    let mode = match ext.get("outlineWidthMode").and_then(Value::as_str) {
        Some("worldCoordinates") => Some(OutlineMode::World),
        Some("screenCoordinates") => Some(OutlineMode::Screen),
        _ => None,
    };
    let width = number(ext, "outlineWidthFactor").unwrap_or(0.0);
    let outline = mode.filter(|_| width > 0.0).map(|mode| Outline {
        mode,
        width,
        color: numbers(ext, "outlineColorFactor").unwrap_or([0.0; 3]),
        lighting_mix: number(ext, "outlineLightingMixFactor")
            .unwrap_or(1.0)
            .clamp(0.0, 1.0),
    });
    Toon {
        shade_color: numbers(ext, "shadeColorFactor").unwrap_or(defaults.shade_color),
        shade_texture: texture("shadeMultiplyTexture"),
        shading_shift: number(ext, "shadingShiftFactor").unwrap_or(defaults.shading_shift),
        shading_toony: number(ext, "shadingToonyFactor")
            .unwrap_or(defaults.shading_toony)
            .clamp(0.0, 1.0),
        outline,
        transparent_with_z_write: ext
            .get("transparentWithZWrite")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        render_queue_offset: ext
            .get("renderQueueOffsetNumber")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .clamp(-9, 9) as i32,
        rim_color: numbers(ext, "parametricRimColorFactor").unwrap_or(defaults.rim_color),
        rim_fresnel_power: number(ext, "parametricRimFresnelPowerFactor")
            .unwrap_or(defaults.rim_fresnel_power)
            .max(0.0),
        rim_lift: number(ext, "parametricRimLiftFactor").unwrap_or(defaults.rim_lift),
        rim_lighting_mix: number(ext, "rimLightingMixFactor")
            .unwrap_or(defaults.rim_lighting_mix)
            .clamp(0.0, 1.0),
        rim_texture: texture("rimMultiplyTexture"),
        matcap_color: numbers(ext, "matcapFactor").unwrap_or(defaults.matcap_color),
        matcap_texture: texture("matcapTexture"),
    }
}

/// Applies VRM 0.x `materialProperties` (the `VRM` root extension, `vrm`) to `materials`.
///
/// Each entry finds its material by name, else by its own position in the list. `VRM/MToon`
/// entries replace the material's base colour, texture, texture transform, alpha mode, cutoff
/// and culling with their own (as VRM 0.x viewers do) and add a [`Toon`]; `VRM/Unlit*` entries
/// make the material unlit; `VRM_USE_GLTFSHADER` keeps the glTF material. Anything else is left
/// alone with a warning. Returns how many materials became MToon.
pub fn apply_vrm0(vrm: &Value, materials: &mut [Material], textures: usize, file: &str) -> usize {
    let Some(entries) = vrm.get("materialProperties").and_then(Value::as_array) else {
        return 0;
    };
    let mut toon = 0;
    for (position, entry) in entries.iter().enumerate() {
        let name = entry.get("name").and_then(Value::as_str);
        let target = name
            .and_then(|name| {
                materials
                    .iter()
                    .position(|m| m.name.as_deref() == Some(name))
            })
            .or_else(|| (position < materials.len()).then_some(position));
        let Some(index) = target else {
            tracing::warn!(
                file,
                entry = position,
                name,
                "VRM materialProperties entry matches no material; ignored"
            );
            continue;
        };
        let material = &mut materials[index];
        match entry.get("shader").and_then(Value::as_str) {
            Some("VRM/MToon") => {
                apply_v0_mtoon(entry, material, textures);
                toon += 1;
            }
            Some(shader) if shader.starts_with("VRM/Unlit") => {
                apply_v0_unlit(entry, shader, material, textures);
            }
            Some("VRM_USE_GLTFSHADER") => {}
            shader => tracing::warn!(
                file,
                material = index,
                shader,
                "unknown VRM 0.x shader; drawing the glTF material"
            ),
        }
    }
    toon
}

/// The `floatProperties`, `vectorProperties`, `textureProperties` and `keywordMap` objects of a
/// VRM 0.x material entry (`Value::Null` where absent).
struct V0<'a> {
    floats: &'a Value,
    vectors: &'a Value,
    textures: &'a Value,
    keywords: &'a Value,
    tags: &'a Value,
}

impl<'a> V0<'a> {
    fn new(entry: &'a Value) -> V0<'a> {
        let get = |key: &str| entry.get(key).unwrap_or(&Value::Null);
        V0 {
            floats: get("floatProperties"),
            vectors: get("vectorProperties"),
            textures: get("textureProperties"),
            keywords: get("keywordMap"),
            tags: get("tagMap"),
        }
    }

    fn float(&self, key: &str) -> Option<f32> {
        number(self.floats, key)
    }

    /// A gamma-encoded colour property as linear RGB.
    fn linear_rgb(&self, key: &str) -> Option<[f32; 3]> {
        numbers::<3>(self.vectors, key).map(|c| c.map(srgb_to_linear))
    }

    fn keyword(&self, key: &str) -> bool {
        self.keywords
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The base colour: `_Color`, gamma-encoded RGB with linear alpha.
    fn base_color(&self) -> Option<[f32; 4]> {
        numbers::<4>(self.vectors, "_Color").map(|[r, g, b, a]| {
            [
                srgb_to_linear(r),
                srgb_to_linear(g),
                srgb_to_linear(b),
                a.clamp(0.0, 1.0),
            ]
        })
    }

    /// `_MainTex`'s Unity scale and offset (`[offset x, offset y, scale x, scale y]`, origin at
    /// the bottom) as a glTF texture transform (origin at the top).
    fn main_transform(&self) -> TextureTransform {
        match numbers::<4>(self.vectors, "_MainTex") {
            Some([ox, oy, sx, sy]) => TextureTransform {
                offset: Vec2::new(ox, 1.0 - sy - oy),
                rotation: 0.0,
                scale: Vec2::new(sx, sy),
            },
            None => TextureTransform::IDENTITY,
        }
    }

    /// The alpha mode and whether blending writes depth, from `_BlendMode` (0 opaque, 1 cutout,
    /// 2 transparent, 3 transparent with depth writes), else the keywords, else `RenderType`.
    fn alpha(&self) -> (AlphaMode, bool) {
        let z_write = self.float("_ZWrite") == Some(1.0);
        if let Some(mode) = self.float("_BlendMode") {
            return match mode as i32 {
                1 => (AlphaMode::Mask, false),
                2 => (AlphaMode::Blend, z_write),
                3 => (AlphaMode::Blend, true),
                _ => (AlphaMode::Opaque, false),
            };
        }
        if self.keyword("_ALPHABLEND_ON") {
            return (AlphaMode::Blend, z_write);
        }
        if self.keyword("_ALPHATEST_ON") {
            return (AlphaMode::Mask, false);
        }
        match self.tags.get("RenderType").and_then(Value::as_str) {
            Some("TransparentCutout") => (AlphaMode::Mask, false),
            Some("Transparent") => (AlphaMode::Blend, z_write),
            _ => (AlphaMode::Opaque, false),
        }
    }

    fn texture(&self, key: &str, textures: usize) -> Option<usize> {
        texture_index(self.textures.get(key), textures)
    }
}

/// Applies one `VRM/MToon` entry.
fn apply_v0_mtoon(entry: &Value, material: &mut Material, textures: usize) {
    let v0 = V0::new(entry);
    let (alpha_mode, z_write) = v0.alpha();
    material.alpha_mode = alpha_mode;
    if let Some(cutoff) = v0.float("_Cutoff") {
        material.alpha_cutoff = cutoff;
    }
    if let Some(color) = v0.base_color() {
        material.base_color = color;
    }
    material.base_color_texture = v0.texture("_MainTex", textures);
    material.base_color_tex_coord = 0;
    material.base_color_transform = v0.main_transform();
    // Unity's _CullMode: 0 off, 1 front, 2 back.
    if let Some(cull) = v0.float("_CullMode") {
        material.double_sided = cull == 0.0;
    }
    material.unlit = false;

    // The 0.x ramp `smoothstep over (N·L) with _ShadeShift and _ShadeToony` becomes the 1.0
    // ramp exactly by this change of variables (three-vrm's conversion).
    let shift = v0.float("_ShadeShift").unwrap_or(0.0);
    let toony = v0.float("_ShadeToony").unwrap_or(0.9).clamp(0.0, 1.0);
    let toony = toony + (1.0 - toony) * (0.5 + 0.5 * shift);
    let shift = -shift - (1.0 - toony);

    let mode = match v0.float("_OutlineWidthMode").map(|m| m as i32) {
        Some(1) => Some(OutlineMode::World),
        Some(2) => Some(OutlineMode::Screen),
        _ => None,
    };
    // 0.x widths are in centimetres (world) or hundredths of the screen (screen).
    let width = 0.01 * v0.float("_OutlineWidth").unwrap_or(0.0);
    let outline = mode.filter(|_| width > 0.0).map(|mode| Outline {
        mode,
        width,
        color: v0.linear_rgb("_OutlineColor").unwrap_or([0.0; 3]),
        // _OutlineColorMode: 0 fixed colour, 1 mixed with the lighting.
        lighting_mix: if v0.float("_OutlineColorMode") == Some(1.0) {
            v0.float("_OutlineLightingMix")
                .unwrap_or(1.0)
                .clamp(0.0, 1.0)
        } else {
            0.0
        },
    });
    material.toon = Some(Toon {
        shade_color: v0.linear_rgb("_ShadeColor").unwrap_or([
            srgb_to_linear(0.97),
            srgb_to_linear(0.81),
            srgb_to_linear(0.86),
        ]),
        shade_texture: v0.texture("_ShadeTexture", textures),
        shading_shift: shift,
        shading_toony: toony.clamp(0.0, 1.0),
        outline,
        transparent_with_z_write: alpha_mode == AlphaMode::Blend && z_write,
        render_queue_offset: 0,
        // three-vrm's VRM 0.x defaults: no rim, power 1, lift 0, mix 0; `_SphereAdd` is the
        // matcap, at full strength.
        rim_color: v0.linear_rgb("_RimColor").unwrap_or([0.0; 3]),
        rim_fresnel_power: v0.float("_RimFresnelPower").unwrap_or(1.0).max(0.0),
        rim_lift: v0.float("_RimLift").unwrap_or(0.0),
        rim_lighting_mix: v0.float("_RimLightingMix").unwrap_or(0.0).clamp(0.0, 1.0),
        rim_texture: v0.texture("_RimTexture", textures),
        matcap_color: [1.0; 3],
        matcap_texture: v0.texture("_SphereAdd", textures),
    });
    material.emissive = v0.linear_rgb("_EmissionColor").unwrap_or([0.0; 3]);
    material.emissive_texture = v0.texture("_EmissionMap", textures);
}

/// Applies one `VRM/Unlit*` entry (`UnlitTexture`, `UnlitCutout`, `UnlitTransparent`,
/// `UnlitTransparentZWrite`).
fn apply_v0_unlit(entry: &Value, shader: &str, material: &mut Material, textures: usize) {
    let v0 = V0::new(entry);
    material.alpha_mode = match shader {
        "VRM/UnlitCutout" => AlphaMode::Mask,
        "VRM/UnlitTransparent" | "VRM/UnlitTransparentZWrite" => AlphaMode::Blend,
        _ => AlphaMode::Opaque,
    };
    if let Some(cutoff) = v0.float("_Cutoff") {
        material.alpha_cutoff = cutoff;
    }
    if let Some(color) = v0.base_color() {
        material.base_color = color;
    }
    material.base_color_texture = v0.texture("_MainTex", textures);
    material.base_color_tex_coord = 0;
    material.base_color_transform = v0.main_transform();
    material.unlit = true;
    material.toon = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn vrm1_extension_reads_with_defaults_and_rejects_bad_values() {
        let toon = from_vrmc(
            &json!({
                "specVersion": "1.0",
                "shadeColorFactor": [0.5, 0.25, 1.0],
                "shadeMultiplyTexture": {"index": 1},
                "shadingShiftFactor": -0.2,
                "shadingToonyFactor": 0.7,
                "outlineWidthMode": "worldCoordinates",
                "outlineWidthFactor": 0.01,
                "outlineColorFactor": [0.1, 0.2, 0.3],
                "renderQueueOffsetNumber": 42
            }),
            2,
        );
        assert_eq!(toon.shade_color, [0.5, 0.25, 1.0]);
        assert_eq!(toon.shade_texture, Some(1));
        assert_eq!((toon.shading_shift, toon.shading_toony), (-0.2, 0.7));
        let outline = toon.outline.unwrap();
        assert_eq!(outline.mode, OutlineMode::World);
        assert_eq!(outline.color, [0.1, 0.2, 0.3]);
        assert_eq!(outline.lighting_mix, 1.0);
        assert_eq!(toon.render_queue_offset, 9);

        let hostile = from_vrmc(
            &json!({
                "shadeColorFactor": [1.0, "x"],
                "shadeMultiplyTexture": {"index": 7},
                "shadingToonyFactor": 30.0,
                "outlineWidthMode": "screenCoordinates",
                "outlineWidthFactor": -1.0
            }),
            2,
        );
        assert_eq!(hostile.shade_color, [0.0; 3]);
        assert_eq!(hostile.shade_texture, None);
        assert_eq!(hostile.shading_toony, 1.0);
        assert_eq!(hostile.outline, None);
        assert_eq!(from_vrmc(&json!("not an object"), 0), Toon::default());
    }

    #[test]
    fn vrm0_properties_convert_colours_ramp_and_alpha() {
        let vrm = json!({"materialProperties": [
            {"name": "Hair", "shader": "VRM/MToon",
             "keywordMap": {"_ALPHATEST_ON": true},
             "floatProperties": {"_Cutoff": 0.3, "_ShadeShift": -0.45, "_ShadeToony": 0.8,
                                 "_CullMode": 0, "_OutlineWidthMode": 2, "_OutlineWidth": 0.25,
                                 "_OutlineColorMode": 1, "_OutlineLightingMix": 0.5},
             "vectorProperties": {"_Color": [1, 0.5, 0, 0.75], "_ShadeColor": [0.5, 0.5, 0.5, 1],
                                  "_OutlineColor": [0, 0, 0, 1], "_MainTex": [0, 0, 1, 1]},
             "textureProperties": {"_MainTex": 0, "_ShadeTexture": 5}},
            {"name": "Logo", "shader": "VRM_USE_GLTFSHADER"},
            {"name": "Eyes", "shader": "VRM/UnlitTransparent",
             "vectorProperties": {"_Color": [1, 1, 1, 1]}}
        ]});
        let mut materials = vec![
            Material {
                name: Some("Eyes".into()),
                ..Material::default()
            },
            Material {
                name: Some("Hair".into()),
                base_color_texture: Some(1),
                ..Material::default()
            },
            Material {
                name: Some("Logo".into()),
                ..Material::default()
            },
        ];
        assert_eq!(apply_vrm0(&vrm, &mut materials, 2, "test"), 1);
        let hair = &materials[1];
        assert_eq!(hair.alpha_mode, AlphaMode::Mask);
        assert_eq!(hair.alpha_cutoff, 0.3);
        assert!(hair.double_sided);
        assert_eq!(hair.base_color_texture, Some(0));
        assert!(
            close(hair.base_color[1], 0.214_041_14),
            "{:?}",
            hair.base_color
        );
        assert_eq!(hair.base_color[3], 0.75, "alpha is linear already");
        assert!(hair.base_color_transform.is_identity());
        let toon = hair.toon.as_ref().unwrap();
        assert!(close(toon.shade_color[0], 0.214_041_14));
        assert_eq!(toon.shade_texture, None, "texture 5 does not exist");
        // toony' = lerp(0.8, 1, 0.5 + 0.5 * -0.45) = 0.855; shift' = 0.45 - (1 - 0.855).
        assert!(close(toon.shading_toony, 0.855), "{}", toon.shading_toony);
        assert!(close(toon.shading_shift, 0.305), "{}", toon.shading_shift);
        let outline = toon.outline.unwrap();
        assert_eq!(outline.mode, OutlineMode::Screen);
        assert!(close(outline.width, 0.0025));
        assert_eq!(outline.lighting_mix, 0.5);

        assert_eq!(
            materials[2],
            Material {
                name: Some("Logo".into()),
                ..Material::default()
            }
        );
        let eyes = &materials[0];
        assert!(eyes.unlit && eyes.toon.is_none());
        assert_eq!(eyes.alpha_mode, AlphaMode::Blend);
    }

    #[test]
    fn rim_matcap_and_emission_read_from_both_versions() {
        let toon = from_vrmc(
            &json!({
                "parametricRimColorFactor": [0.0, 1.0, 0.5],
                "parametricRimFresnelPowerFactor": 3.0,
                "parametricRimLiftFactor": 0.1,
                "rimLightingMixFactor": 7.0,
                "rimMultiplyTexture": {"index": 0},
                "matcapFactor": [0.5, 0.5, 0.5],
                "matcapTexture": {"index": 1}
            }),
            2,
        );
        assert_eq!(toon.rim_color, [0.0, 1.0, 0.5]);
        assert_eq!((toon.rim_fresnel_power, toon.rim_lift), (3.0, 0.1));
        assert_eq!(toon.rim_lighting_mix, 1.0, "clamped");
        assert_eq!((toon.rim_texture, toon.matcap_texture), (Some(0), Some(1)));
        assert_eq!(toon.matcap_color, [0.5; 3]);
        let plain = from_vrmc(&json!({}), 0);
        assert_eq!((plain.rim_color, plain.rim_fresnel_power), ([0.0; 3], 5.0));
        assert_eq!(plain.matcap_texture, None);

        let vrm = json!({"materialProperties": [{"name": "Body", "shader": "VRM/MToon",
            "floatProperties": {"_RimFresnelPower": 2.0, "_RimLift": 0.2},
            "vectorProperties": {"_RimColor": [0.5, 0, 0, 1], "_EmissionColor": [1, 0.5, 0, 1]},
            "textureProperties": {"_SphereAdd": 0, "_EmissionMap": 1, "_RimTexture": 9}}]});
        let mut materials = vec![Material {
            name: Some("Body".into()),
            ..Material::default()
        }];
        apply_vrm0(&vrm, &mut materials, 2, "test");
        let body = &materials[0];
        assert!(close(body.emissive[1], 0.214_041_14), "{:?}", body.emissive);
        assert_eq!(body.emissive_texture, Some(1));
        let toon = body.toon.as_ref().unwrap();
        assert!(close(toon.rim_color[0], 0.214_041_14));
        assert_eq!((toon.rim_fresnel_power, toon.rim_lift), (2.0, 0.2));
        assert_eq!(toon.rim_lighting_mix, 0.0, "VRM 0.x default");
        assert_eq!((toon.matcap_texture, toon.rim_texture), (Some(0), None));
        assert_eq!(toon.matcap_color, [1.0; 3]);
    }

    #[test]
    fn vrm0_main_texture_offset_flips_to_the_top_origin() {
        let v0 = json!({"vectorProperties": {"_MainTex": [0.25, 0.1, 0.5, 0.5]}});
        let t = V0::new(&v0).main_transform();
        assert_eq!(t.scale, Vec2::splat(0.5));
        assert!((t.offset - Vec2::new(0.25, 0.4)).length() < 1e-6);
    }

    #[test]
    fn srgb_decoding_matches_known_values() {
        assert_eq!(srgb_to_linear(0.0), 0.0);
        assert!(close(srgb_to_linear(1.0), 1.0));
        assert!(close(srgb_to_linear(0.5), 0.214_041_14));
        assert_eq!(srgb_to_linear(-3.0), 0.0);
    }
}
