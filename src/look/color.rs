//! sRGB colours as look presets write them: `"#rrggbb"`.

use std::fmt;
use std::str::FromStr;

/// The form a colour is written in, for error messages.
pub const COLOR_FORM: &str = "\"#rrggbb\" (hexadecimal sRGB, such as \"#f1c6a8\") or \"#rgb\"";

/// An 8-bit sRGB colour (black by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Srgb {
    /// Red, sRGB-encoded.
    pub r: u8,
    /// Green, sRGB-encoded.
    pub g: u8,
    /// Blue, sRGB-encoded.
    pub b: u8,
}

impl Srgb {
    /// The colour `0xRRGGBB`.
    pub const fn hex(rgb: u32) -> Srgb {
        Srgb {
            r: (rgb >> 16) as u8,
            g: (rgb >> 8) as u8,
            b: rgb as u8,
        }
    }

    /// Linear RGB in [0, 1], as shaders blend colours.
    pub fn to_linear(self) -> [f32; 3] {
        fn decode(c: u8) -> f32 {
            let c = c as f32 / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        }
        [decode(self.r), decode(self.g), decode(self.b)]
    }
}

/// Why a string is not a colour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a colour; write {COLOR_FORM}")]
pub struct ColorError(pub String);

impl FromStr for Srgb {
    type Err = ColorError;

    /// `#rrggbb` or `#rgb`, in either case.
    fn from_str(s: &str) -> Result<Srgb, ColorError> {
        let bad = || ColorError(s.to_string());
        let digits = s.trim().strip_prefix('#').ok_or_else(bad)?;
        if !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let value = u32::from_str_radix(digits, 16).map_err(|_| bad())?;
        match digits.len() {
            6 => Ok(Srgb::hex(value)),
            3 => {
                let spread = |n: u32| ((n & 0xf) * 0x11) as u8;
                Ok(Srgb {
                    r: spread(value >> 8),
                    g: spread(value >> 4),
                    b: spread(value),
                })
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Srgb {
    /// `#rrggbb`, lower case.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{:02x}{:02x}{:02x}", self.r, self.g, self.b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_parse_in_both_forms_and_print_in_the_long_one() {
        let c: Srgb = "#F1c6a8".parse().unwrap();
        assert_eq!(c, Srgb::hex(0xf1c6a8));
        assert_eq!(c.to_string(), "#f1c6a8");
        assert_eq!("#fa0".parse::<Srgb>().unwrap(), Srgb::hex(0xffaa00));
        for bad in [
            "f1c6a8",
            "#f1c6a",
            "#f1c6a8ff",
            "#ggg",
            "#+1c6a8",
            "",
            "red",
        ] {
            let e = bad.parse::<Srgb>().unwrap_err().to_string();
            assert!(e.contains("\"#rrggbb\""), "{bad}: {e}");
        }
    }

    #[test]
    fn linear_values_follow_the_srgb_curve() {
        assert_eq!(Srgb::hex(0x000000).to_linear(), [0.0; 3]);
        assert_eq!(Srgb::hex(0xffffff).to_linear(), [1.0; 3]);
        let [mid, _, _] = Srgb::hex(0x808080).to_linear();
        assert!((mid - 0.2158605).abs() < 1e-5, "{mid}");
    }
}

/// An 8-bit sRGB colour as the default head's painter takes it.
fn painter_rgb(c: Srgb) -> glam::Vec3 {
    glam::Vec3::new(c.r as f32, c.g as f32, c.b as f32) / 255.0
}

/// The default head painter's palette for a look's colours; unset ones keep the default
/// head's own.
pub fn palette_of(colors: &super::Colors) -> crate::headgen::texture::Palette {
    let d = crate::headgen::texture::Palette::DEFAULT;
    crate::headgen::texture::Palette {
        skin: colors.skin.map_or(d.skin, painter_rgb),
        hair: colors.hair.map_or(d.hair, painter_rgb),
        iris: colors.iris.map_or(d.iris, painter_rgb),
        blush: colors.blush.map_or(d.blush, |b| painter_rgb(b.color)),
        blush_strength: colors.blush.map_or(d.blush_strength, |b| b.strength),
    }
}

/// The default head's colour atlas, which a look's colours repaint: the texture its `Skin`
/// material samples, when `avatar` is the default head (other avatars keep their textures).
pub fn default_head_atlas(avatar: &crate::avatar::Avatar) -> Option<usize> {
    let default_head = avatar.source == crate::headgen::DEFAULT_HEAD
        || avatar.source.ends_with("/default_head.glb");
    if !default_head {
        return None;
    }
    let skin = avatar
        .materials
        .iter()
        .find(|m| m.name.as_deref() == Some("Skin"))?;
    let atlas = skin.base_color_texture?;
    let t = avatar.textures.get(atlas)?;
    let size = crate::headgen::texture::SIZE;
    (t.width == size && t.height == size).then_some(atlas)
}

#[cfg(test)]
mod painter_tests {
    use super::*;
    use crate::headgen::texture::Palette;
    use crate::look::{Blush, Colors};

    #[test]
    fn no_colours_is_the_default_palette() {
        assert_eq!(palette_of(&Colors::default()), Palette::DEFAULT);
        let p = palette_of(&Colors {
            hair: Some(Srgb::hex(0x203040)),
            blush: Some(Blush {
                color: Srgb::hex(0xff0000),
                strength: 0.25,
            }),
            ..Colors::default()
        });
        assert_eq!(p.skin, Palette::DEFAULT.skin);
        assert_eq!(p.hair, glam::Vec3::new(32.0, 48.0, 64.0) / 255.0);
        assert_eq!((p.blush, p.blush_strength), (glam::Vec3::X, 0.25));
    }

    #[test]
    fn only_the_default_head_is_repainted() {
        let head = crate::avatar::load_slice(
            crate::headgen::DEFAULT_HEAD_GLB,
            crate::headgen::DEFAULT_HEAD,
        )
        .unwrap();
        assert!(default_head_atlas(&head).is_some());
        let mut other = head.clone();
        other.source = "avatars/someone.vrm".into();
        assert!(default_head_atlas(&other).is_none());
    }
}
