//! The container and its sources: GLB header and POSITION reference checks made before the
//! `gltf` crate parses, URI checks, and loading the buffers.

use super::{label, AvatarError};
use gltf::mesh::Semantic;
use std::path::Path;

/// Checks a GLB container before the `gltf` crate splits it: the header's version and declared
/// length (which that crate subtracts from unchecked) and each chunk's type and length, with
/// messages that give the lengths. JSON text (not starting with `glTF`) passes.
pub(super) fn check_glb_header(bytes: &[u8]) -> Result<(), String> {
    glb_chunks(bytes).map(|_| ())
}

/// The chunks of a GLB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Chunks<'a> {
    /// The JSON chunk's data.
    pub(super) json: &'a [u8],
    /// The binary chunk's data, if the file has one.
    pub(super) bin: Option<&'a [u8]>,
}

/// A GLB's JSON chunk and binary chunk (if any), checked as the `gltf` crate reads them: the
/// chunks follow the 12-byte header, a JSON chunk first, then optionally a binary one; `None`
/// for bytes that are not a GLB.
pub(super) fn glb_chunks(bytes: &[u8]) -> Result<Option<Chunks<'_>>, String> {
    if !bytes.starts_with(b"glTF") {
        return Ok(None);
    }
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(version), Some(length)) = (word(4), word(8)) else {
        return Err(format!(
            "only {} bytes, shorter than the 12-byte header",
            bytes.len()
        ));
    };
    let length = length as usize;
    if length < 20 {
        return Err(format!(
            "declared length {length} cannot hold a header and a JSON chunk"
        ));
    }
    if length > bytes.len() {
        return Err(format!(
            "declared length {length} exceeds the {} bytes present (truncated?)",
            bytes.len()
        ));
    }
    if version != 2 {
        return Err(format!("version {version}; facewire reads GLB version 2"));
    }
    let json = chunk(bytes, 12, *b"JSON", "the JSON chunk")?;
    let after = 20 + json.len();
    let bin = if after < bytes.len() {
        Some(chunk(bytes, after, *b"BIN\0", "the binary chunk")?)
    } else {
        None
    };
    Ok(Some(Chunks { json, bin }))
}

/// The data of the chunk whose header is at byte `at`, which must be of type `ty` (`what`
/// names it) and fit in `bytes`.
fn chunk<'a>(bytes: &'a [u8], at: usize, ty: [u8; 4], what: &str) -> Result<&'a [u8], String> {
    let Some(header) = bytes.get(at..at + 8) else {
        return Err(format!(
            "{what} needs an 8-byte header at byte {at}, but the file ends {} bytes later",
            bytes.len() - at
        ));
    };
    let length = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    if header[4..8] != ty {
        return Err(format!(
            "{what} belongs at byte {at}, but the chunk there is of type {}",
            chunk_type(&header[4..8])
        ));
    }
    let available = bytes.len() - at - 8;
    if length > available {
        return Err(format!(
            "{what} declares {length} bytes, but only {available} follow its header at byte \
             {at} (the file has {} bytes; truncated?)",
            bytes.len()
        ));
    }
    Ok(&bytes[at + 8..at + 8 + length])
}

/// A chunk type for messages: `JSON`, `BIN` (the binary chunk's `BIN` and a zero byte), or its
/// bytes in hexadecimal.
fn chunk_type(ty: &[u8]) -> String {
    match ty {
        b"JSON" => "JSON".to_owned(),
        b"BIN\0" => "BIN (binary)".to_owned(),
        _ if ty.iter().all(|b| b.is_ascii_alphanumeric()) => {
            format!("\"{}\"", String::from_utf8_lossy(ty))
        }
        _ => format!(
            "0x{}",
            ty.iter().map(|b| format!("{b:02X}")).collect::<String>()
        ),
    }
}

/// Where a glTF's JSON (`bytes`: JSON text, or a GLB) fails to deserialize: the JSON path of
/// the value (`nodes[12].children[0]`) and what is wrong with it, without serde_json's line and
/// column (a GLB's JSON is one line). `None` when it deserializes.
pub(super) fn json_error_place(bytes: &[u8]) -> Option<(String, String)> {
    let json = match glb_chunks(bytes) {
        Ok(Some(chunks)) => chunks.json,
        Ok(None) => bytes,
        Err(_) => return None,
    };
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let error = serde_path_to_error::deserialize::<_, gltf::json::Root>(&mut deserializer).err()?;
    let inner = error.inner();
    let text = inner.to_string();
    let detail = match text.rfind(" at line ") {
        Some(end) if inner.line() > 0 => text[..end].to_owned(),
        _ => text.clone(),
    };
    let path = error.path().to_string();
    let place = if path == "." {
        // Not inside any value: a syntax error before the first key, say.
        let offset = line_offset(json, inner.line(), inner.column());
        format!("byte {offset} of the JSON")
    } else {
        path
    };
    Some((place, detail))
}

/// The byte offset of 1-based `line` and `column` in `text`.
fn line_offset(text: &[u8], line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive(|&b| b == b'\n')
        .take(line.saturating_sub(1))
        .map(<[u8]>::len)
        .sum();
    start + column.saturating_sub(1)
}

/// Checks that every primitive's POSITION accessor index exists; on failure returns the mesh's
/// label and what is wrong.
pub(super) fn check_position_references(root: &gltf::json::Root) -> Result<(), (String, String)> {
    let position = gltf::json::validation::Checked::Valid(Semantic::Positions);
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (p, primitive) in mesh.primitives.iter().enumerate() {
            if let Some(index) = primitive.attributes.get(&position) {
                if index.value() >= root.accessors.len() {
                    return Err((
                        label("mesh", mesh.name.as_deref(), m),
                        format!(
                            "primitive {p}: POSITION refers to accessor {}, but the file has {}",
                            index.value(),
                            root.accessors.len()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Percent-decodes a relative URI the way the `gltf` importer does, which panics on a result that
/// is not UTF-8; `None` means the importer would have panicked.
fn percent_decode(uri: &str) -> Option<String> {
    fn hex(digit: u8) -> Option<u8> {
        match digit {
            b'0'..=b'9' => Some(digit - b'0'),
            b'A'..=b'F' => Some(digit - b'A' + 10),
            b'a'..=b'f' => Some(digit - b'a' + 10),
            _ => None,
        }
    }
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&hi), Some(&lo)) => hex(hi).zip(hex(lo)).map(|(hi, lo)| (hi << 4) | lo),
            _ => None,
        };
        match decoded {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Checks a buffer or image URI before the importer resolves it; `base` is `None` for in-memory
/// data, where only data URIs can be resolved.
pub(super) fn check_uri(uri: &str, base: Option<&Path>) -> Result<(), String> {
    if uri.starts_with("data:") {
        return Ok(());
    }
    if base.is_none() {
        return Err(format!(
            "refers to the external file \"{uri}\", which in-memory data cannot resolve"
        ));
    }
    if !uri.contains(':') && percent_decode(uri).is_none() {
        return Err(format!("URI \"{uri}\" does not percent-decode to UTF-8"));
    }
    Ok(())
}

/// Loads every buffer (the GLB binary chunk, data URIs or files beside the glTF), except the
/// placeholders (by buffer index) that only back compressed views: those stay empty.
pub(super) fn load_buffers(
    document: &gltf::Document,
    mut blob: Option<Vec<u8>>,
    base: Option<&Path>,
    file: &str,
    placeholders: &[bool],
) -> Result<Vec<gltf::buffer::Data>, AvatarError> {
    let mut buffers = Vec::new();
    for buffer in document.buffers() {
        let error = |detail: String| AvatarError::Buffer {
            file: file.to_owned(),
            buffer: buffer.index(),
            detail,
        };
        if placeholders.get(buffer.index()).copied().unwrap_or(false) {
            // A GLB's binary chunk belongs to buffer 0 alone, even when nothing reads it.
            if buffer.index() == 0 && matches!(buffer.source(), gltf::buffer::Source::Bin) {
                blob = None;
            }
            buffers.push(gltf::buffer::Data(Vec::new()));
            continue;
        }
        if let gltf::buffer::Source::Uri(uri) = buffer.source() {
            check_uri(uri, base).map_err(error)?;
        }
        let data = gltf::buffer::Data::from_source_and_blob(buffer.source(), base, &mut blob)
            .map_err(|e| error(e.to_string()))?;
        if data.len() < buffer.length() {
            return Err(error(format!(
                "declares {} bytes but only {} are present",
                buffer.length(),
                data.len()
            )));
        }
        buffers.push(data);
    }
    Ok(buffers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::load::load_slice;

    #[test]
    fn dangling_position_reference_is_an_error_not_a_validator_panic() {
        let doc = br#"{"asset":{"version":"2.0"},"meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}]}"#;
        let error = load_slice(doc, "dangling").unwrap_err();
        assert!(matches!(error, AvatarError::Mesh { .. }), "{error}");
        assert!(error.to_string().contains("accessor 0"), "{error}");
    }

    #[test]
    fn glb_header_lengths_are_checked() {
        assert!(check_glb_header(b"glTF").is_err());
        let mut header = b"glTF\x02\x00\x00\x00".to_vec();
        header.extend(4u32.to_le_bytes());
        assert!(check_glb_header(&header).is_err());
        assert!(check_glb_header(b"{\"asset\":{}}").is_ok());
    }

    /// A GLB of `json` and a binary chunk declaring `bin_length` bytes that holds `bin`.
    fn glb(json: &[u8], bin_length: u32, bin: &[u8]) -> Vec<u8> {
        let total = 12 + 8 + json.len() + 8 + bin.len();
        let mut out = b"glTF".to_vec();
        out.extend(2u32.to_le_bytes());
        out.extend((total as u32).to_le_bytes());
        out.extend((json.len() as u32).to_le_bytes());
        out.extend_from_slice(b"JSON");
        out.extend_from_slice(json);
        out.extend(bin_length.to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(bin);
        out
    }

    #[test]
    fn chunk_errors_give_the_lengths_and_print_no_raw_bytes() {
        let json = br#"{"asset":{"version":"2.0"}}  "#;
        let file = glb(json, 4, &[1, 2, 3, 4]);
        let chunks = glb_chunks(&file).unwrap().unwrap();
        assert_eq!(chunks.json, &json[..]);
        assert_eq!(chunks.bin, Some(&[1u8, 2, 3, 4][..]));

        let error = glb_chunks(&glb(json, 4000, &[0; 8])).unwrap_err();
        let at = 20 + json.len();
        assert_eq!(
            error,
            format!(
                "the binary chunk declares 4000 bytes, but only 8 follow its header at byte {at} \
                 (the file has {} bytes; truncated?)",
                at + 16
            )
        );
        assert!(!error.contains('\0'));
        let mut long_json = glb(json, 0, &[]);
        long_json[12..16].copy_from_slice(&999u32.to_le_bytes());
        let error = glb_chunks(&long_json).unwrap_err();
        assert!(
            error.contains("the JSON chunk declares 999 bytes"),
            "{error}"
        );
        let mut swapped = glb(json, 0, &[]);
        swapped[16..20].copy_from_slice(b"BIN\0");
        let error = glb_chunks(&swapped).unwrap_err();
        assert!(error.contains("of type BIN (binary)"), "{error}");
        assert!(!error.contains('\0'), "{error:?}");
        let mut odd = glb(json, 0, &[]);
        odd[at + 4..at + 8].copy_from_slice(&[0, 1, 0xff, 7]);
        let error = glb_chunks(&odd).unwrap_err();
        assert!(error.contains("of type 0x0001FF07"), "{error}");
        let mut cut = glb(json, 0, &[]);
        cut.truncate(at + 3);
        cut[8..12].copy_from_slice(&((at + 3) as u32).to_le_bytes());
        let error = glb_chunks(&cut).unwrap_err();
        assert!(error.contains("ends 3 bytes later"), "{error}");
        let mut version = glb(json, 0, &[]);
        version[4] = 1;
        assert!(glb_chunks(&version).unwrap_err().contains("version 1"));
    }

    #[test]
    fn json_errors_name_the_json_path() {
        let json = br#"{"asset":{"version":"2.0"},"nodes":[{},{"children":[3,-1]}]}"#;
        let (path, detail) = json_error_place(json).unwrap();
        assert_eq!(path, "nodes[1].children[1]");
        assert!(detail.contains("-1"), "{detail}");
        assert!(!detail.contains("line"), "{detail}");
        let (path, _) = json_error_place(&glb(json, 0, &[])).unwrap();
        assert_eq!(path, "nodes[1].children[1]");
        let (place, _) = json_error_place(b"  nonsense").unwrap();
        // serde_json notices at the "o" of "nonsense" (it reads a `null`).
        assert_eq!(place, "byte 3 of the JSON");
        assert!(json_error_place(br#"{"asset":{"version":"2.0"}}"#).is_none());
    }

    #[test]
    fn percent_decoding_rejects_non_utf8_only() {
        assert_eq!(percent_decode("a%20b.bin").as_deref(), Some("a b.bin"));
        assert_eq!(percent_decode("50%zz").as_deref(), Some("50%zz"));
        assert_eq!(percent_decode("%").as_deref(), Some("%"));
        assert_eq!(percent_decode("%FF.bin"), None);
        assert!(check_uri("%FF.bin", Some(Path::new("."))).is_err());
        assert!(check_uri("model.bin", None).is_err());
        assert!(check_uri("data:application/octet-stream;base64,AAAA", None).is_ok());
    }
}
