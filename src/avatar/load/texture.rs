//! Image decoding into RGBA8: PNG and JPEG through the `image` crate, WebP (`EXT_texture_webp`)
//! through `image-webp`, the sniffing that tells the encodings apart, the size an image's header
//! declares (read before any pixel is decoded), and shrinking a decoded image. KTX2 lives in
//! `ktx`.

use crate::avatar::{MagFilter, MinFilter, Sampler, Texture, Wrap};
use gltf::image::{Data, Format};
use gltf::json::texture as json;
use gltf::json::validation::Checked;
use std::io::Cursor;

pub(super) use crate::image::MAX_SIDE;

/// The encodings a glTF image can hold, told apart by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    /// A RIFF container of type `WEBP`.
    WebP,
    /// A KTX 2.0 container (Basis Universal or uncompressed).
    Ktx2,
    /// Anything else: PNG or JPEG, told apart by the `image` crate.
    Other,
}

/// Which encoding `bytes` hold, from their signature (the `mimeType` is advisory in practice:
/// exporters get it wrong).
pub(super) fn sniff(bytes: &[u8]) -> Encoding {
    const KTX2: &[u8; 12] = b"\xABKTX 20\xBB\r\n\x1A\n";
    if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Encoding::WebP
    } else if bytes.starts_with(KTX2) {
        Encoding::Ktx2
    } else {
        Encoding::Other
    }
}

/// Checks a decoded size against [`MAX_SIDE`] (and against emptiness).
pub(super) fn check_size(width: u32, height: u32) -> Result<(), String> {
    if width == 0 || height == 0 {
        return Err(format!("{width}×{height} image is empty"));
    }
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(format!(
            "{width}×{height} image is larger than the {MAX_SIDE}×{MAX_SIDE} facewire decodes"
        ));
    }
    Ok(())
}

/// An image decoded to RGBA8 (sRGB colour, rows top to bottom), before it is shared.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Decoded {
    /// Width in pixels.
    pub(super) width: u32,
    /// Height in pixels.
    pub(super) height: u32,
    /// `width * height * 4` bytes.
    pub(super) rgba: Vec<u8>,
}

impl Decoded {
    /// The image box-filtered down to `width` × `height` (each no larger than its own).
    pub(super) fn shrunk(self, width: u32, height: u32) -> Result<Decoded, String> {
        let Decoded {
            width: w,
            height: h,
            rgba,
        } = self;
        let image = ::image::RgbaImage::from_raw(w, h, rgba)
            .ok_or_else(|| format!("{w}×{h} image has the wrong number of bytes"))?;
        let small = ::image::imageops::thumbnail(&image, width, height);
        Ok(Decoded {
            width,
            height,
            rgba: small.into_raw(),
        })
    }

    /// The texture of these pixels, sampled with the default sampler.
    pub(super) fn into_texture(self) -> Texture {
        Texture {
            width: self.width,
            height: self.height,
            rgba: self.rgba.into(),
            sampler: Sampler::default(),
        }
    }
}

/// The size an image's header declares, read without decoding a pixel: PNG, JPEG, WebP or
/// KTX2, checked against [`MAX_SIDE`].
pub(super) fn declared_size(bytes: &[u8]) -> Result<(u32, u32), String> {
    let (width, height) = match sniff(bytes) {
        Encoding::WebP => image_webp::WebPDecoder::new(Cursor::new(bytes))
            .map_err(|e| format!("WebP: {e}"))?
            .dimensions(),
        Encoding::Ktx2 => super::ktx::declared_size(bytes)?,
        Encoding::Other => png_or_jpeg(bytes)?
            .into_dimensions()
            .map_err(|e| e.to_string())?,
    };
    check_size(width, height)?;
    Ok((width, height))
}

/// Decodes an image of any encoding facewire reads to RGBA8.
pub(super) fn decode(bytes: &[u8]) -> Result<Decoded, String> {
    match sniff(bytes) {
        Encoding::WebP => decode_webp(bytes),
        Encoding::Ktx2 => super::ktx::decode_ktx2(bytes),
        Encoding::Other => decode_png_or_jpeg(bytes),
    }
}

/// A reader of `bytes` when they hold a PNG or a JPEG, bounded to [`MAX_SIDE`] on each side.
fn png_or_jpeg(bytes: &[u8]) -> Result<::image::ImageReader<Cursor<&[u8]>>, String> {
    let mut reader = ::image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| e.to_string())?;
    match reader.format() {
        Some(::image::ImageFormat::Png | ::image::ImageFormat::Jpeg) => {}
        _ => return Err("not a PNG, JPEG, WebP or KTX2 image".into()),
    }
    // 512 MiB in all, the image crate's own default.
    reader.limits(crate::image::decode_limits(512 << 20));
    Ok(reader)
}

/// Decodes a PNG or JPEG to RGBA8. Eight-bit images are converted by the `image` crate (grey
/// replicated, a missing alpha opaque); 16-bit ones through [`to_rgba8`], which rounds.
fn decode_png_or_jpeg(bytes: &[u8]) -> Result<Decoded, String> {
    use ::image::DynamicImage;
    let image = png_or_jpeg(bytes)?.decode().map_err(|e| e.to_string())?;
    let (width, height) = (image.width(), image.height());
    check_size(width, height)?;
    let format = match &image {
        DynamicImage::ImageLuma16(_) => Some(Format::R16),
        DynamicImage::ImageLumaA16(_) => Some(Format::R16G16),
        DynamicImage::ImageRgb16(_) => Some(Format::R16G16B16),
        DynamicImage::ImageRgba16(_) => Some(Format::R16G16B16A16),
        DynamicImage::ImageRgb32F(_) => Some(Format::R32G32B32FLOAT),
        DynamicImage::ImageRgba32F(_) => Some(Format::R32G32B32A32FLOAT),
        _ => None,
    };
    match format {
        Some(format) => to_rgba8(&Data {
            pixels: image.into_bytes(),
            format,
            width,
            height,
        }),
        None => Ok(Decoded {
            width,
            height,
            rgba: image.into_rgba8().into_raw(),
        }),
    }
}

/// Decodes a WebP image (lossy or lossless, with or without alpha; the first frame of an
/// animation) to RGBA8, refusing sizes past [`MAX_SIDE`] before decoding.
pub(super) fn decode_webp(bytes: &[u8]) -> Result<Decoded, String> {
    let mut decoder =
        image_webp::WebPDecoder::new(Cursor::new(bytes)).map_err(|e| format!("WebP: {e}"))?;
    let (width, height) = decoder.dimensions();
    check_size(width, height)?;
    let size = decoder
        .output_buffer_size()
        .ok_or_else(|| format!("WebP: {width}×{height} overflows"))?;
    let mut pixels = vec![0; size];
    decoder
        .read_image(&mut pixels)
        .map_err(|e| format!("WebP: {e}"))?;
    let rgba = if decoder.has_alpha() {
        pixels
    } else {
        pixels
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect()
    };
    Ok(Decoded {
        width,
        height,
        rgba,
    })
}

/// The plain form of a glTF sampler. Unset fields take the defaults (repeat, trilinear); the
/// validator has already refused values outside the enums, and any it let through are read as
/// unset.
pub(super) fn sampler(json: Option<&json::Sampler>) -> Sampler {
    let Some(json) = json else {
        return Sampler::default();
    };
    let wrap = |mode: &Checked<json::WrappingMode>| match mode {
        Checked::Valid(json::WrappingMode::ClampToEdge) => Wrap::ClampToEdge,
        Checked::Valid(json::WrappingMode::MirroredRepeat) => Wrap::MirroredRepeat,
        _ => Wrap::Repeat,
    };
    let mag_filter = match json.mag_filter {
        Some(Checked::Valid(json::MagFilter::Nearest)) => MagFilter::Nearest,
        _ => MagFilter::Linear,
    };
    let min_filter = match json.min_filter {
        Some(Checked::Valid(filter)) => match filter {
            json::MinFilter::Nearest => MinFilter::Nearest,
            json::MinFilter::Linear => MinFilter::Linear,
            json::MinFilter::NearestMipmapNearest => MinFilter::NearestMipmapNearest,
            json::MinFilter::LinearMipmapNearest => MinFilter::LinearMipmapNearest,
            json::MinFilter::NearestMipmapLinear => MinFilter::NearestMipmapLinear,
            json::MinFilter::LinearMipmapLinear => MinFilter::LinearMipmapLinear,
        },
        _ => MinFilter::LinearMipmapLinear,
    };
    Sampler {
        wrap_s: wrap(&json.wrap_s),
        wrap_t: wrap(&json.wrap_t),
        mag_filter,
        min_filter,
    }
}

/// A 1×1 opaque white texture, standing in for an image that could not be decoded so that
/// texture indices stay aligned with the file's.
pub(super) fn placeholder() -> Texture {
    Texture {
        width: 1,
        height: 1,
        rgba: vec![255; 4].into(),
        sampler: Sampler::default(),
    }
}

/// Converts decoded pixels of any format to RGBA8: grey is replicated into RGB, a missing alpha
/// becomes opaque, 16-bit channels keep their high byte (rounded) and float channels are clamped
/// to [0, 1].
pub(super) fn to_rgba8(data: &Data) -> Result<Decoded, String> {
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
    Ok(Decoded {
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
    fn encodings_are_told_by_their_signatures() {
        assert_eq!(sniff(b"RIFF\x10\0\0\0WEBPVP8L"), Encoding::WebP);
        assert_eq!(sniff(b"RIFF\x10\0\0\0WAVEfmt "), Encoding::Other);
        assert_eq!(sniff(b"\xABKTX 20\xBB\r\n\x1A\n\0\0"), Encoding::Ktx2);
        assert_eq!(sniff(b"\xABKTX 11\xBB\r\n\x1A\n\0\0"), Encoding::Other);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n"), Encoding::Other);
        assert_eq!(sniff(b"RIFF"), Encoding::Other);
    }

    #[test]
    fn samplers_read_every_field_and_default_the_rest() {
        assert_eq!(sampler(None), Sampler::default());
        let json: json::Sampler = serde_json::from_str(
            r#"{"wrapS":33071,"wrapT":33648,"magFilter":9728,"minFilter":9984}"#,
        )
        .unwrap();
        assert_eq!(
            sampler(Some(&json)),
            Sampler {
                wrap_s: Wrap::ClampToEdge,
                wrap_t: Wrap::MirroredRepeat,
                mag_filter: MagFilter::Nearest,
                min_filter: MinFilter::NearestMipmapNearest,
            }
        );
        let unset: json::Sampler = serde_json::from_str("{}").unwrap();
        assert_eq!(sampler(Some(&unset)), Sampler::default());
        let bad: json::Sampler = serde_json::from_str(r#"{"wrapS":1,"magFilter":7}"#).unwrap();
        assert_eq!(sampler(Some(&bad)), Sampler::default());
    }

    #[test]
    fn sizes_past_the_limit_are_refused() {
        assert!(check_size(MAX_SIDE, MAX_SIDE).is_ok());
        assert!(check_size(MAX_SIDE + 1, 1).is_err());
        assert!(check_size(1, MAX_SIDE + 1).is_err());
        assert!(check_size(0, 4).is_err());
    }

    #[test]
    fn wrong_pixel_byte_counts_are_errors() {
        assert!(to_rgba8(&data(Format::R8G8B8, 2, 2, vec![0; 11])).is_err());
        assert!(to_rgba8(&data(Format::R8G8B8A8, 0, 0, Vec::new())).is_err());
        assert!(to_rgba8(&data(Format::R8, u32::MAX, u32::MAX, vec![0])).is_err());
    }
}
