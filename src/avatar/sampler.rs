//! How a texture is sampled: the glTF sampler's wrap and filter modes as plain enums, which
//! `render` maps to GL.

/// How texture coordinates outside 0..1 are brought back into the image (glTF `wrapS`/`wrapT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Wrap {
    /// The image tiles (glTF 10497, the default).
    #[default]
    Repeat,
    /// Coordinates are clamped, so the edge texels stretch outwards (glTF 33071).
    ClampToEdge,
    /// The image tiles, every other copy mirrored (glTF 33648).
    MirroredRepeat,
}

/// How a texture is filtered when a texel covers more than a pixel (glTF `magFilter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MagFilter {
    /// The nearest texel: hard texel edges, as pixel art wants (glTF 9728).
    Nearest,
    /// Bilinear interpolation of the four nearest texels (glTF 9729, the default).
    #[default]
    Linear,
}

/// How a texture is filtered when a pixel covers more than a texel (glTF `minFilter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MinFilter {
    /// The nearest texel of the full image (glTF 9728).
    Nearest,
    /// Bilinear in the full image (glTF 9729).
    Linear,
    /// The nearest texel of the nearest mipmap (glTF 9984).
    NearestMipmapNearest,
    /// Bilinear in the nearest mipmap (glTF 9985).
    LinearMipmapNearest,
    /// The nearest texel of the two nearest mipmaps, blended (glTF 9986).
    NearestMipmapLinear,
    /// Trilinear: bilinear in the two nearest mipmaps, blended (glTF 9987, the default when the
    /// file leaves it unset).
    #[default]
    LinearMipmapLinear,
}

impl MinFilter {
    /// Whether this filter reads mipmaps, so that the texture needs them generated.
    pub fn uses_mipmaps(self) -> bool {
        !matches!(self, MinFilter::Nearest | MinFilter::Linear)
    }
}

/// A texture's sampler: wrap modes per axis and filters. The default (no sampler in the file,
/// or unset fields) repeats and filters trilinearly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sampler {
    /// Wrapping of the horizontal (u) coordinate.
    pub wrap_s: Wrap,
    /// Wrapping of the vertical (v) coordinate.
    pub wrap_t: Wrap,
    /// Magnification filter.
    pub mag_filter: MagFilter,
    /// Minification filter.
    pub min_filter: MinFilter,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_mipmap_filters_use_mipmaps() {
        assert!(!MinFilter::Nearest.uses_mipmaps());
        assert!(!MinFilter::Linear.uses_mipmaps());
        assert!(MinFilter::NearestMipmapNearest.uses_mipmaps());
        assert!(MinFilter::LinearMipmapNearest.uses_mipmaps());
        assert!(MinFilter::NearestMipmapLinear.uses_mipmaps());
        assert!(MinFilter::LinearMipmapLinear.uses_mipmaps());
        assert!(Sampler::default().min_filter.uses_mipmaps());
        assert_eq!(Sampler::default().wrap_s, Wrap::Repeat);
    }
}
