//! Small glTF documents built in memory for the loader's unit tests.

/// A minimal glTF JSON document around one base64 buffer.
pub(super) fn gltf_json(buffer: &[u8], body: &str) -> Vec<u8> {
    let b64 = base64_encode(buffer);
    format!(
        r#"{{"asset":{{"version":"2.0"}},"buffers":[{{"byteLength":{},"uri":"data:application/octet-stream;base64,{b64}"}}],{body}}}"#,
        buffer.len()
    )
    .into_bytes()
}

fn base64_encode(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(super) fn floats(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// One triangle without normals or indices, with one morph target lifting vertex 2.
pub(super) fn triangle_doc(delta_count: usize, extra_mesh: &str) -> Vec<u8> {
    let mut bin = floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    bin.extend(floats(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]));
    let body = format!(
        r#""bufferViews":[{{"buffer":0,"byteLength":36}},{{"buffer":0,"byteOffset":36,"byteLength":36}}],
            "accessors":[
              {{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}},
              {{"bufferView":1,"componentType":5126,"count":{delta_count},"type":"VEC3"}}],
            "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"targets":[{{"POSITION":1}}]}}]{extra_mesh}}}],
            "nodes":[{{"mesh":0}}],"scenes":[{{"nodes":[0]}}]"#
    );
    gltf_json(&bin, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_helper_matches_known_vectors() {
        assert_eq!(base64_encode(b"Man"), "TWFu");
        assert_eq!(base64_encode(b"Ma"), "TWE=");
        assert_eq!(base64_encode(b"M"), "TQ==");
    }
}
