//! Conversion of decoded glTF images (any `gltf::image::Format`) to the RGBA8 [`Texture`].

use crate::avatar::Texture;
use gltf::image::{Data, Format};

/// A 1×1 opaque white texture, standing in for an image that could not be decoded so that
/// texture indices stay aligned with the file's.
pub(super) fn placeholder() -> Texture {
    Texture {
        width: 1,
        height: 1,
        rgba: vec![255; 4],
    }
}

/// Converts decoded pixels of any format to RGBA8: grey is replicated into RGB, a missing alpha
/// becomes opaque, 16-bit channels keep their high byte (rounded) and float channels are clamped
/// to [0, 1].
pub(super) fn to_rgba8(data: &Data) -> Result<Texture, String> {
    let (channels, bytes_per_channel) = match data.format {
        Format::R8 => (1, 1),
        Format::R8G8 => (2, 1),
        Format::R8G8B8 => (3, 1),
        Format::R8G8B8A8 => (4, 1),
        Format::R16 => (1, 2),
        Format::R16G16 => (2, 2),
        Format::R16G16B16 => (3, 2),
        Format::R16G16B16A16 => (4, 2),
        Format::R32G32B32FLOAT => (3, 4),
        Format::R32G32B32A32FLOAT => (4, 4),
    };
    let pixel_count = (data.width as usize)
        .checked_mul(data.height as usize)
        .ok_or_else(|| format!("{}×{} pixels overflow", data.width, data.height))?;
    let expected = pixel_count
        .checked_mul(channels * bytes_per_channel)
        .ok_or_else(|| format!("{}×{} pixels overflow", data.width, data.height))?;
    if data.pixels.len() != expected || pixel_count == 0 {
        return Err(format!(
            "{}×{} {:?} image has {} bytes of pixels, expected {expected}",
            data.width,
            data.height,
            data.format,
            data.pixels.len()
        ));
    }
    // Decoders hand over 16-bit and float samples in native byte order (`DynamicImage::into_bytes`).
    let sample = |bytes: &[u8]| -> u8 {
        match *bytes {
            [v] => v,
            [a, b] => {
                let v = u32::from(u16::from_ne_bytes([a, b]));
                // Rounds v * 255 / 65535; the result is at most 255.
                ((v * 255 + 32767) / 65535) as u8
            }
            [a, b, c, d] => {
                let v = f32::from_ne_bytes([a, b, c, d]);
                // NaN maps to 0; `as` saturates the rest into 0..=255.
                (if v.is_nan() {
                    0.0
                } else {
                    v.clamp(0.0, 1.0) * 255.0
                })
                .round() as u8
            }
            _ => 0,
        }
    };
    let mut rgba = Vec::with_capacity(pixel_count * 4);
    for pixel in data.pixels.chunks_exact(channels * bytes_per_channel) {
        let mut samples = pixel.chunks_exact(bytes_per_channel).map(sample);
        let out = match channels {
            1 => {
                let l = samples.next().unwrap_or(0);
                [l, l, l, 255]
            }
            2 => {
                let l = samples.next().unwrap_or(0);
                let a = samples.next().unwrap_or(255);
                [l, l, l, a]
            }
            _ => {
                let r = samples.next().unwrap_or(0);
                let g = samples.next().unwrap_or(0);
                let b = samples.next().unwrap_or(0);
                let a = samples.next().unwrap_or(255);
                [r, g, b, a]
            }
        };
        rgba.extend_from_slice(&out);
    }
    Ok(Texture {
        width: data.width,
        height: data.height,
        rgba,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(format: Format, width: u32, height: u32, pixels: Vec<u8>) -> Data {
        Data {
            pixels,
            format,
            width,
            height,
        }
    }

    #[test]
    fn every_eight_bit_layout_becomes_rgba() {
        let grey = to_rgba8(&data(Format::R8, 2, 1, vec![10, 200])).unwrap();
        assert_eq!(grey.rgba, vec![10, 10, 10, 255, 200, 200, 200, 255]);
        let grey_alpha = to_rgba8(&data(Format::R8G8, 1, 1, vec![7, 99])).unwrap();
        assert_eq!(grey_alpha.rgba, vec![7, 7, 7, 99]);
        let rgb = to_rgba8(&data(Format::R8G8B8, 1, 1, vec![1, 2, 3])).unwrap();
        assert_eq!(rgb.rgba, vec![1, 2, 3, 255]);
        let rgba = to_rgba8(&data(Format::R8G8B8A8, 1, 1, vec![1, 2, 3, 4])).unwrap();
        assert_eq!(rgba.rgba, vec![1, 2, 3, 4]);
        assert_eq!((rgba.width, rgba.height), (1, 1));
    }

    #[test]
    fn sixteen_bit_and_float_samples_are_scaled() {
        let mut pixels = Vec::new();
        for v in [0u16, 65535, 32896, 65535] {
            pixels.extend_from_slice(&v.to_ne_bytes());
        }
        let rgba16 = to_rgba8(&data(Format::R16G16B16A16, 1, 1, pixels)).unwrap();
        assert_eq!(rgba16.rgba, vec![0, 255, 128, 255]);

        let mut pixels = Vec::new();
        for v in [-1.0f32, 0.5, 2.0] {
            pixels.extend_from_slice(&v.to_ne_bytes());
        }
        let rgb32 = to_rgba8(&data(Format::R32G32B32FLOAT, 1, 1, pixels)).unwrap();
        assert_eq!(rgb32.rgba, vec![0, 128, 255, 255]);
    }

    #[test]
    fn wrong_pixel_byte_counts_are_errors() {
        assert!(to_rgba8(&data(Format::R8G8B8, 2, 2, vec![0; 11])).is_err());
        assert!(to_rgba8(&data(Format::R8G8B8A8, 0, 0, Vec::new())).is_err());
        assert!(to_rgba8(&data(Format::R8, u32::MAX, u32::MAX, vec![0])).is_err());
    }
}
