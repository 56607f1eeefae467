//! KTX 2.0 images (`KHR_texture_basisu`): Basis Universal ETC1S (BasisLZ) and UASTC (raw or
//! Zstandard-supercompressed) transcoded to RGBA8 on the CPU, and uncompressed RGBA8 levels.
//!
//! Only the base level is read: the renderer makes its own mipmaps, as it does for PNG. The
//! container is parsed and bounded here (with the `ktx2` crate) before the transcoder (the pure
//! Rust `basisu` crate) sees it, because the transcoder trusts the sizes a file declares: a
//! hostile header could otherwise make it allocate what the file claims.

use super::texture::{check_size, Decoded};
use ktx2::Format;

/// Bytes per 4×4 block of UASTC, the largest Basis block; ETC1S decodes from BasisLZ codebooks
/// whose sizes the format bounds (16-bit counts).
const UASTC_BLOCK_BYTES: u64 = 16;

/// The size of a KTX 2.0 file's base level, from its header, checked to be a 2D image within
/// the size limit.
pub(super) fn declared_size(bytes: &[u8]) -> Result<(u32, u32), String> {
    let reader = ktx2::Reader::new(bytes).map_err(|e| format!("KTX2: {e}"))?;
    size_of(&reader)
}

/// The base level's size of an open KTX 2.0 file (see [`declared_size`]).
fn size_of(reader: &ktx2::Reader<&[u8]>) -> Result<(u32, u32), String> {
    let header = reader.header();
    check_size(header.pixel_width, header.pixel_height).map_err(|e| format!("KTX2: {e}"))?;
    if header.pixel_depth > 1 || header.layer_count > 1 || header.face_count != 1 {
        return Err(format!(
            "KTX2: a {}-deep, {}-layer, {}-face texture is not a 2D image",
            header.pixel_depth, header.layer_count, header.face_count
        ));
    }
    Ok((header.pixel_width, header.pixel_height))
}

/// Decodes a KTX 2.0 file's base level to RGBA8.
pub(super) fn decode_ktx2(bytes: &[u8]) -> Result<Decoded, String> {
    let reader = ktx2::Reader::new(bytes).map_err(|e| format!("KTX2: {e}"))?;
    let (width, height) = size_of(&reader)?;
    let rgba = match reader.header().format {
        None => transcode_basis(&reader, bytes, width, height)?,
        Some(format) => uncompressed(&reader, format, width, height)?,
    };
    Ok(Decoded {
        width,
        height,
        rgba,
    })
}

/// Transcodes a Basis Universal payload (the `VK_FORMAT_UNDEFINED` KTX2 that
/// `KHR_texture_basisu` requires) to RGBA8, after bounding what each level may decompress to.
fn transcode_basis(
    reader: &ktx2::Reader<&[u8]>,
    bytes: &[u8],
    width: u32,
    height: u32,
) -> Result<Vec<u8>, String> {
    let blocks = u64::from(width.div_ceil(4)) * u64::from(height.div_ceil(4));
    let most = blocks * UASTC_BLOCK_BYTES;
    if let Some(level) = reader
        .levels()
        .find(|level| level.uncompressed_byte_length > most)
    {
        return Err(format!(
            "KTX2: a level declares {} uncompressed bytes, more than a {width}×{height} UASTC \
             image holds ({most})",
            level.uncompressed_byte_length
        ));
    }
    let transcoder =
        basisu::Transcoder::new(bytes).map_err(|e| format!("KTX2 (Basis Universal): {e:?}"))?;
    if transcoder.base_dimensions() != (width, height) {
        return Err(format!(
            "KTX2 (Basis Universal): the payload is {:?}, the header says {width}×{height}",
            transcoder.base_dimensions()
        ));
    }
    let rgba = transcoder
        .transcode(0, basisu::TargetFormat::Rgba32, basisu::DecodeFlags::NONE)
        .map_err(|e| format!("KTX2 (Basis Universal): {e:?}"))?;
    let expected = width as usize * height as usize * 4;
    if rgba.len() != expected {
        return Err(format!(
            "KTX2 (Basis Universal): transcoded {} bytes, expected {expected}",
            rgba.len()
        ));
    }
    Ok(rgba)
}

/// The base level of an uncompressed RGBA8 KTX2 (UNORM or sRGB; both are taken as the sRGB
/// colour glTF base colour textures hold).
fn uncompressed(
    reader: &ktx2::Reader<&[u8]>,
    format: Format,
    width: u32,
    height: u32,
) -> Result<Vec<u8>, String> {
    if format != Format::R8G8B8A8_UNORM && format != Format::R8G8B8A8_SRGB {
        return Err(format!(
            "KTX2: format {format:?} is neither Basis Universal nor RGBA8"
        ));
    }
    if let Some(scheme) = reader.header().supercompression_scheme {
        return Err(format!(
            "KTX2: supercompression {scheme:?} of an RGBA8 texture is not supported"
        ));
    }
    let level = reader
        .levels()
        .next()
        .ok_or_else(|| "KTX2: no levels".to_string())?;
    let expected = width as usize * height as usize * 4;
    if level.data.len() != expected {
        return Err(format!(
            "KTX2: base level holds {} bytes, a {width}×{height} RGBA8 image {expected}",
            level.data.len()
        ));
    }
    Ok(level.data.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An uncompressed RGBA8 KTX2 file of one level, as the KTX 2.0 specification lays it out:
    /// header, level index, a minimal data format descriptor, then the pixels.
    pub(crate) fn rgba8_ktx2(width: u32, height: u32, pixels: &[u8]) -> Vec<u8> {
        // The basic descriptor block: RGBSDA colour model, BT.709 primaries, sRGB transfer, four
        // bytes per texel in one plane, then one sample per channel (alpha is channel 15).
        let mut dfd: Vec<u32> = vec![92, 0, 2 | (88 << 16), 1 | (1 << 8) | (2 << 16), 0, 4, 0];
        for (channel, offset) in [(0u32, 0u32), (1, 8), (2, 16), (15, 24)] {
            dfd.extend([offset | (7 << 16) | (channel << 24), 0, 0, 255]);
        }
        let dfd: Vec<u8> = dfd.iter().flat_map(|w| w.to_le_bytes()).collect();
        let dfd_offset = 80 + 24;
        let data_offset = (dfd_offset + dfd.len()).next_multiple_of(16);
        let mut out = Vec::new();
        out.extend_from_slice(b"\xABKTX 20\xBB\r\n\x1A\n");
        for word in [43u32, 1, width, height, 0, 0, 1, 1, 0] {
            out.extend(word.to_le_bytes());
        }
        for word in [dfd_offset as u32, dfd.len() as u32, 0, 0] {
            out.extend(word.to_le_bytes());
        }
        out.extend(0u64.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        for word in [data_offset as u64, pixels.len() as u64, pixels.len() as u64] {
            out.extend(word.to_le_bytes());
        }
        out.extend(dfd);
        out.resize(data_offset, 0);
        out.extend_from_slice(pixels);
        out
    }

    #[test]
    fn uncompressed_rgba8_is_read_exactly() {
        let pixels: Vec<u8> = (0..2 * 3 * 4).map(|i| i as u8 * 10).collect();
        let texture = decode_ktx2(&rgba8_ktx2(2, 3, &pixels)).unwrap();
        assert_eq!((texture.width, texture.height), (2, 3));
        assert_eq!(texture.rgba, pixels);
    }

    #[test]
    fn oversized_and_short_files_are_errors() {
        let huge = rgba8_ktx2(100_000, 4, &[0; 16]);
        let error = decode_ktx2(&huge).unwrap_err();
        assert!(error.contains("larger than"), "{error}");
        let short = rgba8_ktx2(4, 4, &[0; 16]);
        assert!(decode_ktx2(&short).is_err());
        let file = rgba8_ktx2(2, 2, &[7; 16]);
        for cut in [0, 11, 40, 80, file.len() - 1] {
            assert!(decode_ktx2(&file[..cut]).is_err(), "cut at {cut}");
        }
    }
}
