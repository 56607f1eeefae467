//! RGBA8 images: PNG reading and writing (atomically) and per-pixel comparison for snapshots.

use std::fs;
use std::io;
use std::path::Path;

/// The longest side, in pixels, of an image facewire decodes (textures, video frames, image
/// files) or draws offscreen. Larger images are refused before any pixel memory is allocated
/// (8192² RGBA8 is 256 MiB), so a hostile header cannot ask for gigabytes; real avatar textures
/// stop at 4096.
pub const MAX_SIDE: u32 = 8192;

/// Limits for the `image` crate's decoders: at most [`MAX_SIDE`] a side, and `max_alloc` bytes
/// allocated in all.
pub fn decode_limits(max_alloc: u64) -> ::image::Limits {
    let mut limits = ::image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(max_alloc);
    limits
}

/// Encodes `width` x `height` RGBA8 pixels as PNG at `compression`; the same pixels and
/// compression always give the same bytes.
pub fn encode_png(
    width: u32,
    height: u32,
    rgba: &[u8],
    compression: png::Compression,
) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(compression);
        let mut writer = encoder.write_header().map_err(ImageError::Encode)?;
        writer.write_image_data(rgba).map_err(ImageError::Encode)?;
        writer.finish().map_err(ImageError::Encode)?;
    }
    Ok(out)
}

/// Errors reading or writing an image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The file could not be read or written.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error; part of the message, so not a `source()`.
        cause: io::Error,
    },
    /// The PNG could not be decoded.
    #[error("{path}: not a PNG we can read: {cause}")]
    Decode {
        /// The file.
        path: String,
        /// The decoder's error; part of the message, so not a `source()`.
        cause: png::DecodingError,
    },
    /// The PNG could not be encoded (the encoder's error is part of the message, so not a
    /// `source()`).
    #[error("encoding PNG: {0}")]
    Encode(png::EncodingError),
}

/// An RGBA8 image, rows top to bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbaImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub data: Vec<u8>,
}

/// How two images of the same size differ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// Pixels whose largest channel difference exceeds the tolerance.
    pub pixels_over: usize,
    /// All pixels compared.
    pub pixels: usize,
    /// The largest channel difference anywhere.
    pub max_channel: u8,
}

impl Difference {
    /// The share of pixels within tolerance, 0 to 1.
    pub fn fraction_within(&self) -> f64 {
        if self.pixels == 0 {
            return 1.0;
        }
        1.0 - self.pixels_over as f64 / self.pixels as f64
    }
}

impl RgbaImage {
    /// A `width` x `height` image filled with `rgba`.
    pub fn filled(width: u32, height: u32, rgba: [u8; 4]) -> RgbaImage {
        RgbaImage {
            width,
            height,
            data: rgba.repeat(width as usize * height as usize),
        }
    }

    /// The pixel at (`x`, `y`), top-left origin.
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = (y as usize * self.width as usize + x as usize) * 4;
        [
            self.data[i],
            self.data[i + 1],
            self.data[i + 2],
            self.data[i + 3],
        ]
    }

    /// Encodes the image as PNG bytes.
    pub fn to_png(&self) -> Result<Vec<u8>, ImageError> {
        encode_png(
            self.width,
            self.height,
            &self.data,
            png::Compression::default(),
        )
    }

    /// Writes the image as a PNG, atomically (a temporary file renamed into place).
    pub fn save_png(&self, path: &Path) -> Result<(), ImageError> {
        let bytes = self.to_png()?;
        crate::fsutil::write_atomic(path, &bytes).map_err(|cause| ImageError::Io {
            path: path.display().to_string(),
            cause,
        })
    }

    /// Reads a PNG of any colour type and bit depth into RGBA8.
    pub fn load_png(path: &Path) -> Result<RgbaImage, ImageError> {
        let bytes = fs::read(path).map_err(|cause| ImageError::Io {
            path: path.display().to_string(),
            cause,
        })?;
        Self::from_png(&bytes).map_err(|cause| ImageError::Decode {
            path: path.display().to_string(),
            cause,
        })
    }

    /// Decodes PNG bytes of any colour type and bit depth into RGBA8.
    pub fn from_png(bytes: &[u8]) -> Result<RgbaImage, png::DecodingError> {
        let mut decoder = png::Decoder::new(io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info()?;
        let mut buf = vec![0; reader.output_buffer_size().unwrap_or(0)];
        let info = reader.next_frame(&mut buf)?;
        buf.truncate(info.buffer_size());
        let (width, height) = (info.width, info.height);
        let pixels = width as usize * height as usize;
        let data = match info.color_type {
            png::ColorType::Rgba => buf,
            png::ColorType::Rgb => buf
                .chunks_exact(3)
                .flat_map(|c| [c[0], c[1], c[2], 255])
                .collect(),
            png::ColorType::GrayscaleAlpha => buf
                .chunks_exact(2)
                .flat_map(|c| [c[0], c[0], c[0], c[1]])
                .collect(),
            png::ColorType::Grayscale => buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
            png::ColorType::Indexed => unreachable!("EXPAND turns palettes into RGB(A)"),
        };
        debug_assert_eq!(data.len(), pixels * 4);
        Ok(RgbaImage {
            width,
            height,
            data,
        })
    }

    /// Compares with `other` pixel by pixel: a pixel is over when any channel differs by more
    /// than `tolerance`. Returns `None` when the sizes differ.
    pub fn compare(&self, other: &RgbaImage, tolerance: u8) -> Option<Difference> {
        if (self.width, self.height) != (other.width, other.height) {
            return None;
        }
        let mut diff = Difference {
            pixels_over: 0,
            pixels: self.data.len() / 4,
            max_channel: 0,
        };
        for (a, b) in self.data.chunks_exact(4).zip(other.data.chunks_exact(4)) {
            let d = a
                .iter()
                .zip(b)
                .map(|(x, y)| x.abs_diff(*y))
                .max()
                .unwrap_or(0);
            diff.max_channel = diff.max_channel.max(d);
            if d > tolerance {
                diff.pixels_over += 1;
            }
        }
        Some(diff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_round_trip() {
        let mut img = RgbaImage::filled(3, 2, [10, 20, 30, 255]);
        img.data[4..8].copy_from_slice(&[1, 2, 3, 4]);
        let back = RgbaImage::from_png(&img.to_png().unwrap()).unwrap();
        assert_eq!(back, img);
        assert_eq!(back.pixel(1, 0), [1, 2, 3, 4]);
    }

    #[test]
    fn compare_counts_pixels_over_tolerance() {
        let a = RgbaImage::filled(2, 2, [100, 100, 100, 255]);
        let mut b = a.clone();
        b.data[0] = 101;
        b.data[4] = 110;
        let d = a.compare(&b, 1).unwrap();
        assert_eq!(d.pixels_over, 1);
        assert_eq!(d.max_channel, 10);
        assert!((d.fraction_within() - 0.75).abs() < 1e-9);
        assert!(a.compare(&RgbaImage::filled(1, 1, [0; 4]), 0).is_none());
    }
}
