//! A camera frame as the camera gave it (Motion JPEG, YUYV, NV12, RGB, BGR, grey) and its
//! decoding to RGB, within bounds: whatever a camera or a driver hands over decodes or is refused,
//! never a panic.

use super::frame::Frame;

/// The largest frame accepted from a camera, in pixels a side.
pub const MAX_SIDE: u32 = 8192;

/// How a camera lays out a frame's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelLayout {
    /// Motion JPEG: each frame a JPEG image (often without its Huffman tables).
    Mjpeg,
    /// Packed 4:2:2 YUV, Y0 U Y1 V for each two pixels (BT.601, limited range).
    Yuyv,
    /// 8-bit RGB.
    Rgb,
    /// 8-bit BGR.
    Bgr,
    /// 4:2:0 YUV: the Y plane, then U and V interleaved at half the size (BT.601, limited
    /// range).
    Nv12,
    /// 8-bit grey.
    Gray,
}

impl PixelLayout {
    /// Every layout facewire reads, best first.
    pub const ALL: [PixelLayout; 6] = [
        PixelLayout::Mjpeg,
        PixelLayout::Yuyv,
        PixelLayout::Rgb,
        PixelLayout::Bgr,
        PixelLayout::Nv12,
        PixelLayout::Gray,
    ];

    /// The name `webcam --list` and the messages show.
    pub fn name(self) -> &'static str {
        match self {
            PixelLayout::Mjpeg => "MJPEG",
            PixelLayout::Yuyv => "YUYV",
            PixelLayout::Rgb => "RGB",
            PixelLayout::Bgr => "BGR",
            PixelLayout::Nv12 => "NV12",
            PixelLayout::Gray => "GREY",
        }
    }
}

/// One frame as the camera gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    /// The bytes' layout.
    pub layout: PixelLayout,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes from one row's start to the next (YUYV and RGB; 0 means packed rows).
    pub stride: usize,
    /// The frame's bytes.
    pub data: Vec<u8>,
}

/// Why a camera frame cannot be turned into RGB.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The frame's size is zero or past [`MAX_SIDE`].
    #[error("a {width}x{height} frame is outside 1..{MAX_SIDE} pixels a side")]
    Size {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// The frame has fewer bytes than its size needs.
    #[error("a {layout} frame of {width}x{height} needs {needed} bytes, the camera gave {given}")]
    Short {
        /// The layout's name.
        layout: &'static str,
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        given: usize,
    },
    /// A JPEG frame that does not decode.
    #[error("a JPEG frame does not decode: {0}")]
    Jpeg(String),
}

impl RawFrame {
    /// The frame as 8-bit RGB.
    pub fn decode(&self) -> Result<Frame, DecodeError> {
        let (width, height) = (self.width, self.height);
        if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
            return Err(DecodeError::Size { width, height });
        }
        match self.layout {
            PixelLayout::Mjpeg => decode_mjpeg(&self.data),
            PixelLayout::Yuyv => {
                let stride = self.row_bytes(2);
                self.check_len(stride)?;
                Ok(yuyv_to_rgb(&self.data, width, height, stride))
            }
            PixelLayout::Rgb | PixelLayout::Bgr | PixelLayout::Gray => {
                let per_pixel = if self.layout == PixelLayout::Gray {
                    1
                } else {
                    3
                };
                let stride = self.row_bytes(per_pixel);
                self.check_len(stride)?;
                let (w, h) = (width as usize, height as usize);
                let mut rgb = Vec::with_capacity(w * h * 3);
                for y in 0..h {
                    let row = &self.data[y * stride..y * stride + w * per_pixel];
                    match self.layout {
                        PixelLayout::Rgb => rgb.extend_from_slice(row),
                        PixelLayout::Bgr => {
                            for p in row.chunks_exact(3) {
                                rgb.extend_from_slice(&[p[2], p[1], p[0]]);
                            }
                        }
                        _ => {
                            for &v in row {
                                rgb.extend_from_slice(&[v, v, v]);
                            }
                        }
                    }
                }
                Ok(Frame { width, height, rgb })
            }
            PixelLayout::Nv12 => {
                let stride = self.row_bytes(1);
                self.check_len(stride)?;
                Ok(nv12_to_rgb(&self.data, width, height, stride))
            }
        }
    }

    /// Bytes a row takes: the stride given, else `bytes_per_pixel` times the width.
    fn row_bytes(&self, bytes_per_pixel: usize) -> usize {
        let packed = self.width as usize * bytes_per_pixel;
        if self.stride >= packed {
            self.stride
        } else {
            packed
        }
    }

    fn check_len(&self, stride: usize) -> Result<(), DecodeError> {
        let (w, h) = (self.width as usize, self.height as usize);
        // The last row needs only its pixels, not the padding after them.
        let needed = match self.layout {
            PixelLayout::Yuyv => stride * (h - 1) + w * 2,
            PixelLayout::Nv12 => stride * (h + h.div_ceil(2) - 1) + w.div_ceil(2) * 2,
            PixelLayout::Gray => stride * (h - 1) + w,
            PixelLayout::Rgb | PixelLayout::Bgr | PixelLayout::Mjpeg => stride * (h - 1) + w * 3,
        };
        if self.data.len() < needed {
            return Err(DecodeError::Short {
                layout: self.layout.name(),
                width: self.width,
                height: self.height,
                needed,
                given: self.data.len(),
            });
        }
        Ok(())
    }
}

/// The APP0 segment that marks a JPEG as Motion JPEG ("AVI1"), after which the decoder uses
/// the standard Huffman tables (JPEG Annex K.3) for any the frame leaves out, as USB cameras do.
const AVI1_SEGMENT: [u8; 9] = [0xFF, 0xE0, 0x00, 0x07, b'A', b'V', b'I', b'1', 0];

/// Decodes one Motion JPEG frame to RGB, the standard Huffman tables supplied when it has none.
pub fn decode_mjpeg(data: &[u8]) -> Result<Frame, DecodeError> {
    let patched;
    let bytes = if data.len() > 2 && data[..2] == [0xFF, 0xD8] && !has_huffman_tables(data) {
        let mut with = Vec::with_capacity(data.len() + AVI1_SEGMENT.len());
        with.extend_from_slice(&data[..2]);
        with.extend_from_slice(&AVI1_SEGMENT);
        with.extend_from_slice(&data[2..]);
        patched = with;
        &patched[..]
    } else {
        data
    };
    let image = image::load_from_memory_with_format(bytes, image::ImageFormat::Jpeg)
        .map_err(|e| DecodeError::Jpeg(e.to_string()))?;
    let (width, height) = (image.width(), image.height());
    if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
        return Err(DecodeError::Size { width, height });
    }
    Ok(Frame {
        width,
        height,
        rgb: image.into_rgb8().into_raw(),
    })
}

/// Whether a JPEG has a Huffman table segment (DHT) before its first scan, or says it is
/// Motion JPEG already (its decoder then fills missing tables in).
fn has_huffman_tables(data: &[u8]) -> bool {
    let mut i = 2;
    while i + 4 <= data.len() {
        if data[i] != 0xFF {
            return false;
        }
        let marker = data[i + 1];
        match marker {
            // Fill bytes.
            0xFF => {
                i += 1;
                continue;
            }
            0xC4 => return true,
            // Start of scan: no tables before it.
            0xDA | 0xD9 => return false,
            _ => {}
        }
        let length = usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]]));
        if marker == 0xE0 && data.get(i + 4..i + 8) == Some(b"AVI1") {
            return true;
        }
        i += 2 + length;
    }
    false
}

/// Packed YUYV (BT.601, limited range) to RGB.
fn yuyv_to_rgb(data: &[u8], width: u32, height: u32, stride: usize) -> Frame {
    let (w, h) = (width as usize, height as usize);
    let mut rgb = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        let row = &data[y * stride..y * stride + w * 2];
        for x in 0..w {
            let luma = row[x * 2];
            let pair = x & !1;
            let u = i32::from(row[pair * 2 + 1]) - 128;
            let v = if pair * 2 + 3 < row.len() {
                i32::from(row[pair * 2 + 3]) - 128
            } else {
                0
            };
            yuv_pixel(luma, u, v, &mut rgb);
        }
    }
    Frame { width, height, rgb }
}

/// One pixel of BT.601 limited-range YUV (chroma centred on 0) as RGB.
fn yuv_pixel(luma: u8, u: i32, v: i32, out: &mut Vec<u8>) {
    let c = 298 * (i32::from(luma) - 16);
    let clamp = |value: i32| ((value + 128) >> 8).clamp(0, 255) as u8;
    out.push(clamp(c + 409 * v));
    out.push(clamp(c - 100 * u - 208 * v));
    out.push(clamp(c + 516 * u));
}

/// NV12 (BT.601, limited range) to RGB.
fn nv12_to_rgb(data: &[u8], width: u32, height: u32, stride: usize) -> Frame {
    let (w, h) = (width as usize, height as usize);
    let chroma = &data[stride * h..];
    let mut rgb = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        let row = &data[y * stride..y * stride + w];
        let uv = &chroma[(y / 2) * stride..];
        for (x, &luma) in row.iter().enumerate() {
            let pair = (x / 2) * 2;
            let (u, v) = (i32::from(uv[pair]) - 128, i32::from(uv[pair + 1]) - 128);
            yuv_pixel(luma, u, v, &mut rgb);
        }
    }
    Frame { width, height, rgb }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JPEG of `frame` as the image crate writes it (with its Huffman tables).
    fn jpeg(frame: &Frame) -> Vec<u8> {
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95)
            .encode(
                &frame.rgb,
                frame.width,
                frame.height,
                image::ExtendedColorType::Rgb8,
            )
            .unwrap();
        out
    }

    /// The same JPEG with its Huffman table segments taken out, as USB cameras send frames.
    fn without_tables(jpeg: &[u8]) -> Vec<u8> {
        let mut out = jpeg[..2].to_vec();
        let mut i = 2;
        loop {
            let marker = jpeg[i + 1];
            if marker == 0xDA {
                out.extend_from_slice(&jpeg[i..]);
                return out;
            }
            let length = usize::from(u16::from_be_bytes([jpeg[i + 2], jpeg[i + 3]]));
            if marker != 0xC4 {
                out.extend_from_slice(&jpeg[i..i + 2 + length]);
            }
            i += 2 + length;
        }
    }

    fn gradient(width: u32, height: u32) -> Frame {
        let mut rgb = Vec::new();
        for y in 0..height {
            for x in 0..width {
                rgb.extend_from_slice(&[(x * 255 / width) as u8, (y * 255 / height) as u8, 90]);
            }
        }
        Frame { width, height, rgb }
    }

    fn mean_difference(a: &Frame, b: &Frame) -> f64 {
        assert_eq!((a.width, a.height), (b.width, b.height));
        a.rgb
            .iter()
            .zip(&b.rgb)
            .map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs())
            .sum::<f64>()
            / a.rgb.len() as f64
    }

    #[test]
    fn motion_jpeg_without_huffman_tables_decodes_like_the_full_jpeg() {
        let frame = gradient(64, 48);
        let full = jpeg(&frame);
        let bare = without_tables(&full);
        assert!(bare.len() < full.len() - 100, "the tables were taken out");
        assert!(
            image::load_from_memory_with_format(&bare, image::ImageFormat::Jpeg).is_err(),
            "a plain decoder cannot read a frame without tables"
        );
        let decoded = decode_mjpeg(&bare).unwrap();
        let reference = decode_mjpeg(&full).unwrap();
        assert_eq!(decoded, reference);
        assert!(mean_difference(&decoded, &frame) < 3.0);
        assert!(matches!(
            decode_mjpeg(&[0xFF, 0xD8, 0xFF]),
            Err(DecodeError::Jpeg(_))
        ));
        assert!(decode_mjpeg(&[]).is_err());
    }

    /// `frame` as YUYV bytes (BT.601, limited range), rows `stride` bytes apart.
    fn to_yuyv(frame: &Frame, stride: usize) -> Vec<u8> {
        let mut out = vec![0u8; stride * frame.height as usize];
        for y in 0..frame.height {
            for x in 0..frame.width {
                let [r, g, b] = frame.pixel(x, y).map(f32::from);
                let luma = 16.0 + 0.257 * r + 0.504 * g + 0.098 * b;
                let u = 128.0 - 0.148 * r - 0.291 * g + 0.439 * b;
                let v = 128.0 + 0.439 * r - 0.368 * g - 0.071 * b;
                let at = y as usize * stride + x as usize * 2;
                out[at] = luma.round() as u8;
                out[at + 1] = if x % 2 == 0 { u } else { v }.round() as u8;
            }
        }
        out
    }

    #[test]
    fn yuyv_frames_come_back_as_their_colours() {
        // Flat colour pairs, so that the shared chroma is exact.
        let mut frame = Frame::filled(8, 4, [200, 40, 90]);
        for x in 4..8 {
            for y in 0..4 {
                let i = (y * 8 + x) * 3;
                frame.rgb[i..i + 3].copy_from_slice(&[30, 160, 220]);
            }
        }
        for stride in [16, 24] {
            let raw = RawFrame {
                layout: PixelLayout::Yuyv,
                width: 8,
                height: 4,
                stride,
                data: to_yuyv(&frame, stride),
            };
            let back = raw.decode().unwrap();
            assert!(mean_difference(&back, &frame) < 2.0, "stride {stride}");
        }
        let short = RawFrame {
            layout: PixelLayout::Yuyv,
            width: 8,
            height: 4,
            stride: 0,
            data: vec![0; 60],
        };
        assert!(matches!(
            short.decode(),
            Err(DecodeError::Short { needed: 64, .. })
        ));
        let huge = RawFrame {
            width: MAX_SIDE + 1,
            ..short
        };
        assert!(matches!(huge.decode(), Err(DecodeError::Size { .. })));
    }

    #[test]
    fn nv12_grey_and_bgr_frames_come_back_as_their_colours() {
        // Flat 2x2 blocks, so that the shared chroma is exact.
        let colours = [
            [200u8, 40, 90],
            [30, 160, 220],
            [90, 90, 90],
            [250, 250, 20],
        ];
        let mut frame = Frame::filled(4, 4, [0, 0, 0]);
        for y in 0..4usize {
            for x in 0..4usize {
                let i = (y * 4 + x) * 3;
                frame.rgb[i..i + 3].copy_from_slice(&colours[(y / 2) * 2 + x / 2]);
            }
        }
        let stride = 6;
        let mut data = vec![0u8; stride * 6];
        for y in 0..4u32 {
            for x in 0..4u32 {
                let [r, g, b] = frame.pixel(x, y).map(f32::from);
                data[y as usize * stride + x as usize] =
                    (16.0 + 0.257 * r + 0.504 * g + 0.098 * b).round() as u8;
                if x % 2 == 0 && y % 2 == 0 {
                    let at = stride * 4 + (y as usize / 2) * stride + x as usize;
                    data[at] = (128.0 - 0.148 * r - 0.291 * g + 0.439 * b).round() as u8;
                    data[at + 1] = (128.0 + 0.439 * r - 0.368 * g - 0.071 * b).round() as u8;
                }
            }
        }
        let nv12 = RawFrame {
            layout: PixelLayout::Nv12,
            width: 4,
            height: 4,
            stride,
            data,
        };
        assert!(mean_difference(&nv12.decode().unwrap(), &frame) < 2.0);
        let short = RawFrame {
            data: vec![0; 30],
            ..nv12
        };
        assert!(matches!(
            short.decode(),
            Err(DecodeError::Short { needed: 34, .. })
        ));

        let bgr: Vec<u8> = frame
            .rgb
            .chunks(3)
            .flat_map(|p| [p[2], p[1], p[0]])
            .collect();
        let from_bgr = RawFrame {
            layout: PixelLayout::Bgr,
            width: 4,
            height: 4,
            stride: 0,
            data: bgr,
        };
        assert_eq!(from_bgr.decode().unwrap(), frame);
        let grey = RawFrame {
            layout: PixelLayout::Gray,
            width: 2,
            height: 1,
            stride: 0,
            data: vec![10, 200],
        };
        assert_eq!(grey.decode().unwrap().rgb, [10, 10, 10, 200, 200, 200]);
    }

    proptest::proptest! {
        /// Whatever a camera (or a driver) hands over, decoding answers without panicking, and
        /// a frame that decodes has its size's worth of pixels.
        #[test]
        fn any_frame_decodes_or_is_refused(
            layout in 0..PixelLayout::ALL.len(),
            width in 0u32..24,
            height in 0u32..24,
            stride in 0usize..80,
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2400),
        ) {
            let layout = PixelLayout::ALL[layout];
            let raw = RawFrame { layout, width, height, stride, data };
            if let Ok(frame) = raw.decode() {
                proptest::prop_assert_eq!(
                    frame.rgb.len(),
                    frame.width as usize * frame.height as usize * 3
                );
            }
        }
    }

    #[test]
    fn rgb_frames_lose_their_row_padding() {
        let frame = gradient(5, 3);
        let mut data = Vec::new();
        for row in frame.rgb.chunks(15) {
            data.extend_from_slice(row);
            data.extend_from_slice(&[7, 7, 7]);
        }
        let raw = RawFrame {
            layout: PixelLayout::Rgb,
            width: 5,
            height: 3,
            stride: 18,
            data,
        };
        assert_eq!(raw.decode().unwrap(), frame);
    }
}
