//! `EXT_meshopt_compression`: buffer views stored compressed are decoded, and unfiltered, into
//! one new in-memory buffer before any accessor reads them.
//!
//! The bitstreams and filters are meshoptimizer's, decoded by the `meshopt` crate (the reference
//! C++ decoder, which is written to be safe on untrusted input once its preconditions hold; they
//! are all checked here first, since a failed precondition is an `assert`, not an error).
//! Buffers that only back compressed views (the extension's "fallback" buffers, often declared
//! with a length but no data) are never loaded.
//!
//! See: <https://github.com/KhronosGroup/glTF/tree/main/extensions/2.0/Vendor/EXT_meshopt_compression>

use gltf::buffer::Data;
use gltf::json;
use serde::Deserialize;

/// The extension's name, as it keys buffer and buffer view extension objects.
pub(super) const NAME: &str = "EXT_meshopt_compression";

/// A buffer view's `EXT_meshopt_compression` object.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Compressed {
    /// The buffer holding the compressed bytes.
    buffer: usize,
    /// Where the compressed bytes start in that buffer.
    #[serde(default)]
    byte_offset: usize,
    /// How many compressed bytes there are.
    byte_length: usize,
    /// The size of one decoded element, in bytes.
    byte_stride: usize,
    /// How many elements the view decodes to.
    count: usize,
    /// The bitstream.
    mode: Mode,
    /// What to apply to the decoded elements.
    #[serde(default)]
    filter: Filter,
}

/// The extension's bitstream modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Mode {
    /// Vertex attributes (or any other fixed-size elements).
    Attributes,
    /// A triangle list's indices.
    Triangles,
    /// Any other index sequence.
    Indices,
}

/// The extension's post-decoding filters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Filter {
    /// The decoded elements are the data.
    #[default]
    None,
    /// Octahedral unit vectors: signed normalised bytes or shorts, `w` kept.
    Octahedral,
    /// Quaternions: three 16-bit components and the index of the fourth.
    Quaternion,
    /// Floats as a shared 8-bit exponent and a 24-bit mantissa per 32-bit word.
    Exponential,
}

/// The extension object of a buffer view, if it has one.
fn extension(view: &json::buffer::View) -> Option<&serde_json::Value> {
    view.extensions.as_ref()?.others.get(NAME)
}

/// Whether any buffer view of `root` is compressed.
pub(super) fn has_compressed_views(root: &json::Root) -> bool {
    root.buffer_views
        .iter()
        .any(|view| extension(view).is_some())
}

/// Which buffers of `root` only back compressed views, by buffer index: those referenced by
/// compressed views (or tagged `fallback`) and neither by an uncompressed view nor as the source
/// of compressed data. Their bytes are never read, so they need not exist.
pub(super) fn placeholder_buffers(root: &json::Root) -> Vec<bool> {
    let count = root.buffers.len();
    let mut backs_compressed = vec![false; count];
    let mut needed = vec![false; count];
    for (b, buffer) in root.buffers.iter().enumerate() {
        let tagged = buffer
            .extensions
            .as_ref()
            .and_then(|e| e.others.get(NAME))
            .and_then(|ext| ext.get("fallback"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        backs_compressed[b] = tagged;
    }
    for view in &root.buffer_views {
        let parent = view.buffer.value();
        match extension(view) {
            Some(ext) => {
                if let Some(b) = backs_compressed.get_mut(parent) {
                    *b = true;
                }
                let source = ext.get("buffer").and_then(serde_json::Value::as_u64);
                if let Some(n) = source.and_then(|s| needed.get_mut(s as usize)) {
                    *n = true;
                }
            }
            None => {
                if let Some(n) = needed.get_mut(parent) {
                    *n = true;
                }
            }
        }
    }
    backs_compressed
        .iter()
        .zip(&needed)
        .map(|(&backs, &needed)| backs && !needed)
        .collect()
}

/// Decodes every compressed view of `root` from `buffers` (indexed like `root.buffers`), appends
/// the decoded bytes to `buffers` as one new buffer (also declared in `root`), and points each
/// view at its decoded bytes, without its extension. At most `limit` bytes are decoded in all.
/// On failure returns the buffer view's index and what is wrong.
pub(super) fn decode_views(
    root: &mut json::Root,
    buffers: &mut Vec<Data>,
    limit: usize,
) -> Result<(), (usize, String)> {
    if buffers.len() != root.buffers.len() {
        return Err((0, "buffers were not all loaded".into()));
    }
    let mut decoded: Vec<u8> = Vec::new();
    let mut moved: Vec<(usize, usize)> = Vec::new();
    for (index, view) in root.buffer_views.iter().enumerate() {
        let Some(value) = extension(view) else {
            continue;
        };
        let error = |detail: String| (index, detail);
        let compressed = Compressed::deserialize(value)
            .map_err(|e| error(format!("malformed extension object: {e}")))?;
        let budget = limit.saturating_sub(decoded.len());
        let bytes = decode_view(&compressed, view, buffers, budget).map_err(error)?;
        // Views start 4-byte aligned, as accessors of 4-byte components need.
        decoded.resize(decoded.len().next_multiple_of(4), 0);
        moved.push((index, decoded.len()));
        decoded.extend_from_slice(&bytes);
    }
    if moved.is_empty() {
        return Ok(());
    }
    let buffer_index = root.buffers.len();
    let declared = serde_json::json!({ "byteLength": decoded.len() });
    let buffer: json::Buffer = serde_json::from_value(declared).map_err(|e| {
        (
            moved[0].0,
            format!("cannot declare the decoded buffer: {e}"),
        )
    })?;
    let buffer_ref = u32::try_from(buffer_index)
        .map(json::Index::new)
        .map_err(|_| (moved[0].0, "too many buffers".to_string()))?;
    root.buffers.push(buffer);
    for (index, offset) in moved {
        let view = &mut root.buffer_views[index];
        view.buffer = buffer_ref;
        view.byte_offset = Some(json::validation::USize64(offset as u64));
        if let Some(extensions) = view.extensions.as_mut() {
            extensions.others.remove(NAME);
        }
    }
    buffers.push(Data(decoded));
    Ok(())
}

/// Decodes one compressed view after checking everything the decoder takes for granted.
fn decode_view(
    compressed: &Compressed,
    view: &json::buffer::View,
    buffers: &[Data],
    budget: usize,
) -> Result<Vec<u8>, String> {
    let Compressed {
        buffer,
        byte_offset,
        byte_length,
        byte_stride: stride,
        count,
        mode,
        filter,
    } = *compressed;
    if count == 0 {
        return Err("count is 0".into());
    }
    let size = count
        .checked_mul(stride)
        .ok_or_else(|| format!("count {count} × byteStride {stride} overflows"))?;
    if size as u64 != view.byte_length.0 {
        return Err(format!(
            "count {count} × byteStride {stride} is {size} bytes, but the buffer view's byteLength is {}",
            view.byte_length.0
        ));
    }
    if let Some(own) = view.byte_stride {
        if own.0 != stride {
            return Err(format!(
                "byteStride {stride} differs from the buffer view's byteStride {}",
                own.0
            ));
        }
    }
    if size > budget {
        return Err(format!(
            "decompresses to {size} bytes, past the {budget} bytes left of the loader's limit"
        ));
    }
    let data = buffers.get(buffer).ok_or_else(|| {
        format!("its compressed data is in buffer {buffer}, which does not exist")
    })?;
    let source = byte_offset
        .checked_add(byte_length)
        .and_then(|end| data.get(byte_offset..end))
        .ok_or_else(|| {
            format!(
                "its compressed bytes (offset {byte_offset}, length {byte_length}) run past the end of buffer {buffer} ({} bytes)",
                data.len()
            )
        })?;
    match mode {
        Mode::Attributes => {
            if stride == 0 || stride % 4 != 0 || stride > 256 {
                return Err(format!(
                    "byteStride {stride} is not a multiple of 4 from 4 to 256, as ATTRIBUTES needs"
                ));
            }
            match (filter, stride) {
                (Filter::Octahedral, 4 | 8) | (Filter::Quaternion, 8) => {}
                (Filter::Octahedral, _) => {
                    return Err(format!(
                        "the OCTAHEDRAL filter needs a byteStride of 4 or 8, not {stride}"
                    ));
                }
                (Filter::Quaternion, _) => {
                    return Err(format!(
                        "the QUATERNION filter needs a byteStride of 8, not {stride}"
                    ));
                }
                (Filter::None | Filter::Exponential, _) => {}
            }
            let mut bytes = decode_attributes(source, count, stride)?;
            unfilter(filter, stride, &mut bytes);
            Ok(bytes)
        }
        Mode::Triangles | Mode::Indices => {
            if filter != Filter::None {
                return Err(format!("{mode:?} data cannot have the {filter:?} filter"));
            }
            if mode == Mode::Triangles && count % 3 != 0 {
                return Err(format!(
                    "TRIANGLES needs a count divisible by 3, not {count}"
                ));
            }
            match (mode, stride) {
                (Mode::Triangles, 2) => words(::meshopt::decode_index_buffer::<u16>(source, count)),
                (Mode::Triangles, 4) => words(::meshopt::decode_index_buffer::<u32>(source, count)),
                (Mode::Indices, 2) => words(::meshopt::decode_index_sequence::<u16>(source, count)),
                (Mode::Indices, 4) => words(::meshopt::decode_index_sequence::<u32>(source, count)),
                _ => Err(format!(
                    "byteStride {stride} is neither 2 nor 4, as {mode:?} needs"
                )),
            }
        }
    }
}

/// Explains a decoder failure: the reference decoder only says that the bytes do not decode.
fn corrupt(error: ::meshopt::Error) -> String {
    format!("the compressed data is corrupt or truncated ({error})")
}

/// Little-endian bytes of decoded indices.
fn words<T: WordBytes>(decoded: ::meshopt::Result<Vec<T>>) -> Result<Vec<u8>, String> {
    let decoded = decoded.map_err(corrupt)?;
    Ok(decoded.iter().flat_map(|w| w.le_bytes()).collect())
}

/// An index word's little-endian bytes.
trait WordBytes {
    /// The bytes, least significant first.
    fn le_bytes(&self) -> Vec<u8>;
}

impl WordBytes for u16 {
    fn le_bytes(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

impl WordBytes for u32 {
    fn le_bytes(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

/// One decoded element of `N` bytes (the decoder takes the element size from the type).
#[derive(Clone)]
struct Element<const N: usize>([u8; N]);

impl<const N: usize> Default for Element<N> {
    fn default() -> Self {
        Element([0; N])
    }
}

/// Decodes `count` elements of `N` bytes.
fn decode_elements<const N: usize>(source: &[u8], count: usize) -> Result<Vec<u8>, String> {
    let elements = ::meshopt::decode_vertex_buffer::<Element<N>>(source, count).map_err(corrupt)?;
    let mut bytes = Vec::with_capacity(count * N);
    for element in &elements {
        bytes.extend_from_slice(&element.0);
    }
    Ok(bytes)
}

/// Decodes an ATTRIBUTES stream of `count` elements of `stride` bytes (a multiple of 4 up to
/// 256, checked by the caller).
fn decode_attributes(source: &[u8], count: usize, stride: usize) -> Result<Vec<u8>, String> {
    macro_rules! by_stride {
        ($($n:literal)*) => {
            match stride {
                $($n => decode_elements::<$n>(source, count),)*
                other => Err(format!("byteStride {other} is not supported")),
            }
        };
    }
    by_stride!(
        4 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64
        68 72 76 80 84 88 92 96 100 104 108 112 116 120 124 128
        132 136 140 144 148 152 156 160 164 168 172 176 180 184 188 192
        196 200 204 208 212 216 220 224 228 232 236 240 244 248 252 256
    )
}

/// Applies `filter`'s decoding to decoded elements, in place. The caller has checked the
/// element size: 4 or 8 bytes for OCTAHEDRAL (bytes or shorts), 8 for QUATERNION.
fn unfilter(filter: Filter, stride: usize, bytes: &mut [u8]) {
    match (filter, stride) {
        (Filter::Octahedral, 4) => {
            let mut vectors: Vec<[i8; 4]> = bytes
                .chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]].map(|b| b as i8))
                .collect();
            ::meshopt::decode_filter_oct(&mut vectors);
            for (out, v) in bytes.chunks_exact_mut(4).zip(&vectors) {
                out.copy_from_slice(&v.map(|c| c as u8));
            }
        }
        (Filter::Octahedral, 8) | (Filter::Quaternion, 8) => {
            let mut vectors: Vec<[i16; 4]> = bytes
                .chunks_exact(8)
                .map(|c| [0, 2, 4, 6].map(|k| i16::from_le_bytes([c[k], c[k + 1]])))
                .collect();
            if filter == Filter::Octahedral {
                ::meshopt::decode_filter_oct(&mut vectors);
            } else {
                ::meshopt::decode_filter_quat(&mut vectors);
            }
            for (out, v) in bytes.chunks_exact_mut(8).zip(&vectors) {
                for (k, c) in v.iter().enumerate() {
                    out[2 * k..2 * k + 2].copy_from_slice(&c.to_le_bytes());
                }
            }
        }
        (Filter::Exponential, _) => {
            // Each 32-bit word decodes on its own, whatever the stride (a multiple of 4).
            let mut values: Vec<[u32; 1]> = bytes
                .chunks_exact(4)
                .map(|c| [u32::from_le_bytes([c[0], c[1], c[2], c[3]])])
                .collect();
            ::meshopt::decode_filter_exp(&mut values);
            for (out, v) in bytes.chunks_exact_mut(4).zip(&values) {
                out.copy_from_slice(&v[0].to_le_bytes());
            }
        }
        // No filter, or a layout the caller has refused.
        (Filter::None | Filter::Octahedral | Filter::Quaternion, _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compressed(
        mode: Mode,
        filter: Filter,
        stride: usize,
        count: usize,
        len: usize,
    ) -> Compressed {
        Compressed {
            buffer: 0,
            byte_offset: 0,
            byte_length: len,
            byte_stride: stride,
            count,
            mode,
            filter,
        }
    }

    fn view(length: usize, stride: Option<usize>) -> json::buffer::View {
        let mut json = serde_json::json!({ "buffer": 0, "byteLength": length });
        if let Some(stride) = stride {
            json["byteStride"] = stride.into();
        }
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn attributes_round_trip_at_several_strides() {
        for stride in [4usize, 12, 20, 64, 256] {
            let count = 37;
            let original: Vec<u8> = (0..count * stride).map(|i| (i * 7 % 251) as u8).collect();
            // The encoder takes its element size from the type, like the decoder.
            let encoded = match stride {
                4 => ::meshopt::encode_vertex_buffer(&Element::<4>::from_bytes(&original)),
                12 => ::meshopt::encode_vertex_buffer(&Element::<12>::from_bytes(&original)),
                20 => ::meshopt::encode_vertex_buffer(&Element::<20>::from_bytes(&original)),
                64 => ::meshopt::encode_vertex_buffer(&Element::<64>::from_bytes(&original)),
                _ => ::meshopt::encode_vertex_buffer(&Element::<256>::from_bytes(&original)),
            }
            .unwrap();
            let c = compressed(Mode::Attributes, Filter::None, stride, count, encoded.len());
            let out = decode_view(
                &c,
                &view(count * stride, None),
                &[Data(encoded)],
                usize::MAX,
            )
            .unwrap();
            assert_eq!(out, original, "stride {stride}");
        }
    }

    impl<const N: usize> Element<N> {
        fn from_bytes(bytes: &[u8]) -> Vec<Element<N>> {
            bytes
                .chunks_exact(N)
                .map(|c| Element(c.try_into().unwrap()))
                .collect()
        }
    }

    #[test]
    fn quaternion_filter_restores_unit_quaternions() {
        let quats: Vec<[f32; 4]> = (0..20)
            .map(|i| {
                let q = glam::Quat::from_euler(
                    glam::EulerRot::YXZ,
                    i as f32 * 0.3,
                    i as f32 * -0.17,
                    0.5,
                );
                q.to_array()
            })
            .collect();
        let filtered = ::meshopt::encode_filter_quat(&quats, 12);
        let encoded = ::meshopt::encode_vertex_buffer(&filtered).unwrap();
        let c = compressed(Mode::Attributes, Filter::Quaternion, 8, 20, encoded.len());
        let out = decode_view(&c, &view(160, None), &[Data(encoded)], usize::MAX).unwrap();
        for (q, bytes) in quats.iter().zip(out.chunks_exact(8)) {
            let decoded: Vec<f32> = (0..4)
                .map(|k| f32::from(i16::from_le_bytes([bytes[2 * k], bytes[2 * k + 1]])) / 32767.0)
                .collect();
            let decoded = glam::Quat::from_slice(&decoded);
            let q = glam::Quat::from_array(*q);
            // 12-bit components: the same rotation (q or -q) within a few thousandths.
            assert!(q.dot(decoded).abs() > 1.0 - 1e-4, "{q} vs {decoded}");
        }
    }

    #[test]
    fn preconditions_are_errors_not_asserts() {
        let data = [Data(vec![0xa0; 64])];
        let cases = [
            (
                compressed(Mode::Attributes, Filter::None, 6, 2, 64),
                view(12, None),
                "multiple of 4",
            ),
            (
                compressed(Mode::Attributes, Filter::None, 260, 1, 64),
                view(260, None),
                "multiple of 4",
            ),
            (
                compressed(Mode::Triangles, Filter::None, 2, 4, 64),
                view(8, None),
                "divisible by 3",
            ),
            (
                compressed(Mode::Indices, Filter::None, 8, 3, 64),
                view(24, None),
                "neither 2 nor 4",
            ),
            (
                compressed(Mode::Triangles, Filter::Octahedral, 4, 3, 64),
                view(12, None),
                "filter",
            ),
            (
                compressed(Mode::Attributes, Filter::Octahedral, 12, 1, 64),
                view(12, None),
                "4 or 8",
            ),
            (
                compressed(Mode::Attributes, Filter::Quaternion, 4, 1, 64),
                view(4, None),
                "of 8",
            ),
            (
                compressed(Mode::Attributes, Filter::None, 4, 3, 64),
                view(16, None),
                "byteLength",
            ),
            (
                compressed(Mode::Attributes, Filter::None, 4, 3, 64),
                view(12, Some(8)),
                "byteStride 8",
            ),
            (
                compressed(Mode::Attributes, Filter::None, 4, 3, 65),
                view(12, None),
                "run past",
            ),
            (
                compressed(Mode::Attributes, Filter::None, 4, 0, 64),
                view(0, None),
                "count is 0",
            ),
            (
                compressed(Mode::Attributes, Filter::None, 4, usize::MAX, 64),
                view(4, None),
                "overflows",
            ),
        ];
        for (c, v, needle) in cases {
            let error = decode_view(&c, &v, &data, usize::MAX).unwrap_err();
            assert!(error.contains(needle), "{c:?}: {error}");
        }
        let c = compressed(Mode::Attributes, Filter::None, 4, 1000, 64);
        let error = decode_view(&c, &view(4000, None), &data, 3999).unwrap_err();
        assert!(error.contains("limit"), "{error}");
    }

    #[test]
    fn placeholder_buffers_are_those_only_compressed_views_use() {
        let root: json::Root = serde_json::from_value(serde_json::json!({
            "asset": {"version": "2.0"},
            "buffers": [
                {"byteLength": 100},
                {"byteLength": 1000},
                {"byteLength": 10, "extensions": {NAME: {"fallback": true}}},
                {"byteLength": 10, "extensions": {NAME: {"fallback": true}}},
                {"byteLength": 10}
            ],
            "bufferViews": [
                {"buffer": 1, "byteLength": 40, "extensions": {NAME: {
                    "buffer": 0, "byteLength": 30, "byteStride": 4, "count": 10, "mode": "ATTRIBUTES"}}},
                {"buffer": 3, "byteLength": 4},
                {"buffer": 4, "byteLength": 4}
            ]
        }))
        .unwrap();
        // 0 holds compressed data, 1 backs a compressed view, 2 is a tagged fallback nothing
        // uses, 3 is tagged but read by a plain view, 4 is an ordinary buffer.
        assert_eq!(
            placeholder_buffers(&root),
            vec![false, true, true, false, false]
        );
        assert!(has_compressed_views(&root));
    }
}
