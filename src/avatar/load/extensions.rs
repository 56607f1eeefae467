//! Which glTF extensions facewire reads, and the policy for the others.
//!
//! A file that lists an extension in `extensionsRequired` cannot be drawn correctly without it,
//! so an unsupported required extension refuses the file, naming the extension. One that is only
//! in `extensionsUsed` is optional by definition: the loader skips it with a warning. The `gltf`
//! crate's validator rejects every required extension outside its own feature list (which knows
//! neither `KHR_mesh_quantization` nor `EXT_meshopt_compression`), so the supported ones are
//! taken out of `extensionsRequired` before it runs; the unsupported ones never reach it.

/// Extensions facewire reads: mesh quantization and meshopt compression (decoded by the
/// loader), WebP and KTX2/Basis Universal images (decoded by the loader), the texture transform
/// and unlit materials, levels of detail on nodes, and VRM 0.x.
const SUPPORTED: &[&str] = &[
    "KHR_mesh_quantization",
    "EXT_meshopt_compression",
    "EXT_texture_webp",
    "KHR_texture_basisu",
    "KHR_texture_transform",
    "KHR_materials_unlit",
    "MSFT_lod",
    "VRM",
];

/// Families of supported extensions: VRM 1.0 (`VRMC_vrm`, `VRMC_materials_mtoon`,
/// `VRMC_springBone`, …). The VRM extensions add to a model that draws without them, so files
/// do not require them in practice; what facewire does not use of them is ignored.
const SUPPORTED_PREFIXES: &[&str] = &["VRMC_"];

/// Whether facewire reads (or knowingly ignores) the extension `name`.
pub(super) fn is_supported(name: &str) -> bool {
    SUPPORTED.contains(&name) || SUPPORTED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Applies the extension policy to a parsed document: returns the first required extension
/// facewire does not support as the error; otherwise empties `extensionsRequired` (every entry
/// is supported) and returns the unsupported extensions that are only used, each once, in the
/// file's order, for the caller to warn about.
pub(super) fn check(root: &mut gltf::json::Root) -> Result<Vec<String>, String> {
    if let Some(required) = root
        .extensions_required
        .iter()
        .find(|name| !is_supported(name))
    {
        return Err(required.clone());
    }
    root.extensions_required.clear();
    let mut skipped: Vec<String> = Vec::new();
    for name in &root.extensions_used {
        if !is_supported(name) && !skipped.contains(name) {
            skipped.push(name.clone());
        }
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(used: &[&str], required: &[&str]) -> gltf::json::Root {
        let json = serde_json::json!({
            "asset": {"version": "2.0"},
            "extensionsUsed": used,
            "extensionsRequired": required,
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn supported_required_extensions_are_taken_out_for_the_validator() {
        let mut r = root(
            &[
                "KHR_mesh_quantization",
                "EXT_meshopt_compression",
                "VRMC_vrm",
            ],
            &[
                "KHR_mesh_quantization",
                "EXT_meshopt_compression",
                "EXT_texture_webp",
                "KHR_texture_basisu",
            ],
        );
        assert_eq!(check(&mut r), Ok(Vec::new()));
        assert!(r.extensions_required.is_empty());
        assert_eq!(r.extensions_used.len(), 3, "extensionsUsed is left alone");
    }

    #[test]
    fn an_unsupported_required_extension_is_the_error() {
        let mut r = root(
            &["KHR_draco_mesh_compression", "KHR_mesh_quantization"],
            &["KHR_mesh_quantization", "KHR_draco_mesh_compression"],
        );
        assert_eq!(check(&mut r), Err("KHR_draco_mesh_compression".to_owned()));
    }

    #[test]
    fn unknown_used_extensions_are_listed_once() {
        let mut r = root(
            &[
                "KHR_lights_punctual",
                "KHR_materials_unlit",
                "KHR_lights_punctual",
                "MSFT_texture_dds",
                "EXT_texture_webp",
                "VRM",
            ],
            &[],
        );
        assert_eq!(
            check(&mut r),
            Ok(vec![
                "KHR_lights_punctual".to_owned(),
                "MSFT_texture_dds".to_owned()
            ])
        );
    }
}
