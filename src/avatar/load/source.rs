//! The container and its sources: GLB header and POSITION reference checks made before the
//! `gltf` crate parses, URI checks, and loading the buffers.

use super::{label, AvatarError};
use gltf::mesh::Semantic;
use std::path::Path;

/// Checks the GLB header's declared length, which the `gltf` crate subtracts from unchecked.
pub(super) fn check_glb_header(bytes: &[u8]) -> Result<(), String> {
    if !bytes.starts_with(b"glTF") {
        return Ok(());
    }
    let Some(length) = bytes.get(8..12) else {
        return Err(format!(
            "only {} bytes, shorter than the 12-byte header",
            bytes.len()
        ));
    };
    let length = u32::from_le_bytes([length[0], length[1], length[2], length[3]]) as usize;
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
    Ok(())
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
