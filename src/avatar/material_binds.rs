//! VRM expressions' material binds: which material property a bind moves, resolving its
//! material (by index or by name) once, and the per-frame colours and texture offset of every
//! material ([`MaterialOverride`]) the binds move by their expressions' weights.
//!
//! VRM 1.0's rule: a property ends at `base + Σ (target − base) · weight` over the expressions
//! that bind it. A texture transform bind moves the material's UV scale and offset the same way.
//!
//! See: <https://github.com/vrm-c/vrm-specification/blob/master/specification/VRMC_vrm-1.0/expressions.md>

use glam::Vec2;

use super::mtoon::srgb_to_linear;
use super::vrm::{MaterialBind, MaterialRef};
use super::Material;

/// A material property an expression can move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaterialProperty {
    /// The base colour factor, RGBA (1.0 `color`, 0.x `_Color`).
    Color,
    /// The emissive colour (1.0 `emissionColor`, 0.x `_EmissionColor`).
    EmissionColor,
    /// MToon's shade colour (1.0 `shadeColor`, 0.x `_ShadeColor`).
    ShadeColor,
    /// MToon's matcap factor (1.0 `matcapColor`).
    MatcapColor,
    /// MToon's parametric rim colour (1.0 `rimColor`, 0.x `_RimColor`).
    RimColor,
    /// MToon's outline colour (1.0 `outlineColor`, 0.x `_OutlineColor`).
    OutlineColor,
    /// The UV scale and offset (1.0 `textureTransformBinds`, 0.x `_MainTex_ST`).
    TextureTransform,
}

impl MaterialProperty {
    /// The property a VRM 1.0 `type` or VRM 0.x `propertyName` names, and whether its value is
    /// a VRM 0.x one (colours gamma-encoded, texture offsets from the bottom).
    pub fn parse(name: &str) -> Option<(MaterialProperty, bool)> {
        use MaterialProperty::*;
        Some(match name {
            "color" => (Color, false),
            "emissionColor" => (EmissionColor, false),
            "shadeColor" => (ShadeColor, false),
            "matcapColor" => (MatcapColor, false),
            "rimColor" => (RimColor, false),
            "outlineColor" => (OutlineColor, false),
            "textureTransform" => (TextureTransform, false),
            "_Color" => (Color, true),
            "_EmissionColor" => (EmissionColor, true),
            "_ShadeColor" => (ShadeColor, true),
            "_RimColor" => (RimColor, true),
            "_OutlineColor" => (OutlineColor, true),
            "_MainTex_ST" => (TextureTransform, true),
            _ => return None,
        })
    }
}

/// The colours and texture offset one material is drawn with in one frame: its own values at
/// rest, moved by the material binds of the expressions in use. Colours are linear; a renderer
/// clamps them before drawing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaterialOverride {
    /// RGBA base colour factor.
    pub base_color: [f32; 4],
    /// RGB emissive colour.
    pub emissive: [f32; 3],
    /// RGB MToon shade colour.
    pub shade_color: [f32; 3],
    /// RGB MToon matcap factor.
    pub matcap_color: [f32; 3],
    /// RGB MToon parametric rim colour.
    pub rim_color: [f32; 3],
    /// RGB MToon outline colour.
    pub outline_color: [f32; 3],
    /// Scale of the base colour texture's UVs (and of every texture read through them).
    pub uv_scale: Vec2,
    /// Offset of those UVs.
    pub uv_offset: Vec2,
}

impl MaterialOverride {
    /// `material`'s own values (MToon's where it has none: black shade, rim and outline, white
    /// matcap).
    pub fn rest(material: &Material) -> MaterialOverride {
        let toon = material.toon.as_ref();
        MaterialOverride {
            base_color: material.base_color,
            emissive: material.emissive,
            shade_color: toon.map_or([0.0; 3], |t| t.shade_color),
            matcap_color: toon.map_or([1.0; 3], |t| t.matcap_color),
            rim_color: toon.map_or([0.0; 3], |t| t.rim_color),
            outline_color: toon.and_then(|t| t.outline).map_or([0.0; 3], |o| o.color),
            uv_scale: material.base_color_transform.scale,
            uv_offset: material.base_color_transform.offset,
        }
    }

    /// The four numbers `property` covers (colours padded with 0; the texture transform as
    /// scale x, scale y, offset x, offset y).
    fn get(&self, property: MaterialProperty) -> [f32; 4] {
        use MaterialProperty::*;
        let rgb = |c: [f32; 3]| [c[0], c[1], c[2], 0.0];
        match property {
            Color => self.base_color,
            EmissionColor => rgb(self.emissive),
            ShadeColor => rgb(self.shade_color),
            MatcapColor => rgb(self.matcap_color),
            RimColor => rgb(self.rim_color),
            OutlineColor => rgb(self.outline_color),
            TextureTransform => [
                self.uv_scale.x,
                self.uv_scale.y,
                self.uv_offset.x,
                self.uv_offset.y,
            ],
        }
    }

    /// Adds `delta · weight` to `property`.
    fn add(&mut self, property: MaterialProperty, delta: [f32; 4], weight: f32) {
        use MaterialProperty::*;
        let d = delta.map(|d| d * weight);
        let rgb = |c: &mut [f32; 3]| {
            for (c, d) in c.iter_mut().zip(d) {
                *c += d;
            }
        };
        match property {
            Color => {
                for (c, d) in self.base_color.iter_mut().zip(d) {
                    *c += d;
                }
            }
            EmissionColor => rgb(&mut self.emissive),
            ShadeColor => rgb(&mut self.shade_color),
            MatcapColor => rgb(&mut self.matcap_color),
            RimColor => rgb(&mut self.rim_color),
            OutlineColor => rgb(&mut self.outline_color),
            TextureTransform => {
                self.uv_scale += Vec2::new(d[0], d[1]);
                self.uv_offset += Vec2::new(d[2], d[3]);
            }
        }
    }
}

/// A material bind resolved against an avatar's materials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResolvedBind {
    /// Index into [`super::Avatar::materials`].
    pub material: usize,
    /// What it moves.
    pub property: MaterialProperty,
    /// The change at expression weight 1: target minus the material's own value (finite).
    pub delta: [f32; 4],
}

impl ResolvedBind {
    /// Adds this bind's change at expression weight `weight` to `materials` (one entry per
    /// avatar material; a material past its end is left alone).
    pub fn apply(&self, weight: f32, materials: &mut [MaterialOverride]) {
        if let Some(m) = materials.get_mut(self.material) {
            m.add(self.property, self.delta, weight);
        }
    }
}

/// Why a material bind cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MaterialBindError {
    /// The bind names a material the avatar does not have.
    #[error("no material is named `{0}`")]
    UnknownName(String),
    /// The bind's material index is out of range.
    #[error("material {index} does not exist (the avatar has {count})")]
    NoSuchMaterial {
        /// The index given.
        index: usize,
        /// How many materials the avatar has.
        count: usize,
    },
    /// The property is not one facewire draws.
    #[error("property `{0}` is not a colour or texture transform facewire draws")]
    UnknownProperty(String),
    /// The value has too few numbers, or one is not finite.
    #[error("`{property}` needs {needed} finite numbers, got {got:?}")]
    BadValue {
        /// The property.
        property: String,
        /// How many numbers it needs.
        needed: usize,
        /// What the file gave.
        got: Vec<f32>,
    },
}

/// Resolves `bind` against `materials`: the material by index, or by name (exactly, else
/// ignoring ASCII case); the change it makes at weight 1 from the material's own value. VRM 0.x
/// values are converted as VRM 0.x materials are: colours from gamma-encoded to linear (alpha
/// stays), `_MainTex_ST` offsets from a bottom to a top origin.
pub fn resolve(
    bind: &MaterialBind,
    materials: &[Material],
) -> Result<ResolvedBind, MaterialBindError> {
    let index = match &bind.material {
        MaterialRef::Index(index) => (*index < materials.len()).then_some(*index).ok_or(
            MaterialBindError::NoSuchMaterial {
                index: *index,
                count: materials.len(),
            },
        )?,
        MaterialRef::Name(name) => {
            let named = |exact: bool| {
                materials.iter().position(|m| {
                    m.name.as_deref().is_some_and(|own| {
                        if exact {
                            own == name
                        } else {
                            own.eq_ignore_ascii_case(name)
                        }
                    })
                })
            };
            named(true)
                .or_else(|| named(false))
                .ok_or_else(|| MaterialBindError::UnknownName(name.clone()))?
        }
    };
    let (property, v0) = MaterialProperty::parse(&bind.property)
        .ok_or_else(|| MaterialBindError::UnknownProperty(bind.property.clone()))?;
    let needed = match property {
        MaterialProperty::TextureTransform => 4,
        _ => 3,
    };
    let value = &bind.value;
    if value.len() < needed || value.iter().any(|v| !v.is_finite()) {
        return Err(MaterialBindError::BadValue {
            property: bind.property.clone(),
            needed,
            got: value.clone(),
        });
    }
    let base = MaterialOverride::rest(&materials[index]).get(property);
    let mut target = [0.0; 4];
    target[..needed].copy_from_slice(&value[..needed]);
    match property {
        MaterialProperty::TextureTransform => {
            if v0 {
                // Unity's [scale x, scale y, offset x, offset y] with the origin at the bottom.
                target[3] = 1.0 - target[1] - target[3];
            }
        }
        _ => {
            if v0 {
                for c in &mut target[..3] {
                    *c = srgb_to_linear(*c);
                }
            }
            // A colour's fourth number counts only for the base colour's alpha.
            target[3] = match (property, value.get(3)) {
                (MaterialProperty::Color, Some(&a)) => a,
                _ => base[3],
            };
        }
    }
    let delta = std::array::from_fn(|k| target[k] - base[k]);
    Ok(ResolvedBind {
        material: index,
        property,
        delta,
    })
}

/// Whether any expression of `avatar` has a material bind that moves `property` (so a renderer
/// knows which features to compile in).
pub fn binds_property(avatar: &super::Avatar, property: MaterialProperty) -> bool {
    avatar.vrm.as_ref().is_some_and(|vrm| {
        vrm.expressions
            .iter()
            .flat_map(|e| &e.material_binds)
            .any(|b| MaterialProperty::parse(&b.property).is_some_and(|(p, _)| p == property))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{TextureTransform, Toon};

    fn bind(material: MaterialRef, property: &str, value: &[f32]) -> MaterialBind {
        MaterialBind {
            material,
            property: property.into(),
            value: value.to_vec(),
        }
    }

    fn materials() -> Vec<Material> {
        vec![
            Material {
                name: Some("Face".into()),
                base_color: [1.0, 1.0, 1.0, 1.0],
                toon: Some(Toon {
                    shade_color: [0.2, 0.2, 0.2],
                    ..Toon::default()
                }),
                ..Material::default()
            },
            Material {
                name: Some("Eyes".into()),
                base_color_transform: TextureTransform {
                    offset: Vec2::new(0.5, 0.0),
                    rotation: 0.0,
                    scale: Vec2::splat(0.5),
                },
                ..Material::default()
            },
        ]
    }

    #[test]
    fn colour_binds_move_from_the_material_value_by_the_weight() {
        let m = materials();
        let red = resolve(
            &bind(MaterialRef::Index(0), "color", &[1.0, 0.0, 0.0, 1.0]),
            &m,
        )
        .unwrap();
        assert_eq!(red.delta, [0.0, -1.0, -1.0, 0.0]);
        let shade = resolve(
            &bind(
                MaterialRef::Name("face".into()),
                "shadeColor",
                &[1.0, 0.2, 0.2],
            ),
            &m,
        )
        .unwrap();
        assert_eq!(
            (shade.material, shade.property),
            (0, MaterialProperty::ShadeColor)
        );
        let mut pose: Vec<MaterialOverride> = m.iter().map(MaterialOverride::rest).collect();
        red.apply(0.5, &mut pose);
        shade.apply(0.25, &mut pose);
        assert_eq!(pose[0].base_color, [1.0, 0.5, 0.5, 1.0]);
        assert!((pose[0].shade_color[0] - 0.4).abs() < 1e-6, "{:?}", pose[0]);
        assert_eq!(pose[1], MaterialOverride::rest(&m[1]));
    }

    #[test]
    fn vrm0_values_are_decoded_and_flipped() {
        let m = materials();
        let color = resolve(
            &bind(
                MaterialRef::Name("Face".into()),
                "_Color",
                &[0.5, 1.0, 1.0, 0.25],
            ),
            &m,
        )
        .unwrap();
        assert!((color.delta[0] - (0.214_041_14 - 1.0)).abs() < 1e-5);
        assert_eq!(color.delta[3], -0.75, "alpha is linear already");
        // Scale 0.5 and an offset of 0.25 from the bottom: 0.25 from the top as well.
        let st = resolve(
            &bind(
                MaterialRef::Name("Eyes".into()),
                "_MainTex_ST",
                &[0.5, 0.5, 0.5, 0.25],
            ),
            &m,
        )
        .unwrap();
        assert_eq!(st.delta, [0.0, 0.0, 0.0, 0.25]);
    }

    #[test]
    fn texture_transform_binds_shift_the_uv_offset() {
        let m = materials();
        let shift = resolve(
            &bind(
                MaterialRef::Index(1),
                "textureTransform",
                &[1.0, 1.0, 0.75, 0.5],
            ),
            &m,
        )
        .unwrap();
        let mut pose: Vec<MaterialOverride> = m.iter().map(MaterialOverride::rest).collect();
        shift.apply(1.0, &mut pose);
        assert_eq!(pose[1].uv_offset, Vec2::new(0.75, 0.5));
        assert_eq!(pose[1].uv_scale, Vec2::ONE);
    }

    #[test]
    fn unknown_materials_properties_and_values_are_errors() {
        let m = materials();
        let err = |b: MaterialBind| resolve(&b, &m).unwrap_err();
        assert_eq!(
            err(bind(MaterialRef::Name("Hair".into()), "_Color", &[1.0; 4])),
            MaterialBindError::UnknownName("Hair".into())
        );
        assert!(matches!(
            err(bind(MaterialRef::Index(2), "color", &[1.0; 4])),
            MaterialBindError::NoSuchMaterial { index: 2, count: 2 }
        ));
        assert!(matches!(
            err(bind(MaterialRef::Index(0), "_Glossiness", &[1.0])),
            MaterialBindError::UnknownProperty(_)
        ));
        assert!(matches!(
            err(bind(
                MaterialRef::Index(0),
                "rimColor",
                &[1.0, f32::NAN, 0.0]
            )),
            MaterialBindError::BadValue { .. }
        ));
    }
}
