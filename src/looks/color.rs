//! sRGB colours as look presets write them: `"#rrggbb"`.

use std::fmt;
use std::str::FromStr;

/// The form a colour is written in, for error messages.
pub const COLOR_FORM: &str = "\"#rrggbb\" (hexadecimal sRGB, such as \"#f1c6a8\") or \"#rgb\"";

/// An 8-bit sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
